#![deny(missing_docs)]
//! The model of cfghub: one neutral picture of a control-flow profile that every format is read
//! into and written out of, with what every layer above it shares.
//!
//! - [`ir`]: the model itself (processes, images, symbols, blocks, edges, counts, routines,
//!   loops, call stacks), ids interned and indices into vectors.
//! - [`error`]: the one error type, with the place in the input and a hint, and the findings
//!   (warnings and losses) a run reports.
//! - [`io`]: inputs (compression detected by content, standard input, mapped files) and outputs
//!   (written beside the target and renamed on success).
//! - [`json`]: the streaming JSON deserializer the large JSON formats are read through.
//! - [`mem`]: memory helpers (mapped files, huge allocations returned to the system).
//!
//! This crate depends on nothing else of cfghub; the analyses, the formats and the command-line
//! tool are built on it in that order.

pub mod error;
pub mod interrupt;
pub mod io;
pub mod ir;
pub mod json;
pub mod mem;

pub use error::{Error, Result};
pub use ir::Profile;
