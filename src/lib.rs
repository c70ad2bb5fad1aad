//! cfghub: the interoperability hub for control-flow profiles.
//!
//! Every format is read into one neutral model ([`ir`]) and written out of it, like pandoc:
//! N readers, one model, M writers. Derived facts (routines, dominators, loops, the call graph,
//! inclusive costs) are computed once in [`analysis`] and shared by every writer.
//!
//! ```no_run
//! use cfghub::{convert, registry::{ReadOptions, WriteOptions}};
//! let loaded = convert::load("app.dcfg.json.bz2", None, &ReadOptions::default()).unwrap();
//! println!("{} processes", loaded.profile.processes.len());
//! ```

pub mod analysis;
pub mod cli;
pub mod convert;
pub mod error;
pub mod folded_stacks;
pub mod io;
pub mod ir;
pub mod json;
pub mod mem;
pub mod registry;
pub mod symbolize;
pub mod synth;

#[path = "../converters/mod.rs"]
pub mod converters;

pub use error::{Error, Result};
pub use ir::Profile;
