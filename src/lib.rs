#![deny(missing_docs)]
//! cfghub: the interoperability hub for control-flow profiles.
//!
//! Every format is read into one neutral model ([`ir`]) and written out of it, like pandoc:
//! N readers, one model, M writers. Derived facts (routines, dominators, loops, the call graph,
//! inclusive costs) are computed once in [`analysis`] and shared by every writer.
//!
//! The layers are crates, each depending only on those below it: `cfghub-model` (the model,
//! errors, inputs and outputs), `cfghub-analysis` (derived facts and the ELF/DWARF symbolizer),
//! `cfghub-formats` (one module per format and the format list), and this crate, the
//! command-line tool ([`cli`]). This crate also gives library users the layers below under one
//! name.
//!
//! ```no_run
//! use cfghub::{convert, format::{ReadOptions, WriteOptions}};
//! let loaded = convert::load("app.dcfg.json.bz2", None, &ReadOptions::default()).unwrap();
//! println!("{} processes", loaded.profile.processes.len());
//! ```

pub mod cli;

pub use cfghub_analysis as analysis;
pub use cfghub_analysis::{symbolize, synth};
pub use cfghub_formats as formats;
pub use cfghub_formats::{convert, folded_stacks, format, registry};
pub use cfghub_model::{error, io, ir, json, mem};
pub use cfghub_model::{Error, Profile, Result};
