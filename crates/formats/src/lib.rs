#![deny(missing_docs)]
//! The formats cfghub reads and writes: one module per format, each declaring its
//! [`format::Format`] as `FORMAT`, with the format list beside them ([`registry`]), as pandoc
//! keeps its readers and writers.
//!
//! - [`format`]: what a format is to the rest of cfghub (name, extensions, sniffer, reader,
//!   writer, what the writer needs from the model).
//! - [`registry`]: every format, and how one is chosen for a file.
//! - [`convert`]: reading a file into the model and writing the model out, whatever the formats.
//! - [`folded_stacks`]: call stacks as stack tools print them, shared by the formats that read or
//!   draw them (folded, DTrace, perf script, flame graphs), so that none depends on another.
//! - [`v8_profile`]: V8's sampled CPU profile (its call tree, samples and time deltas), shared
//!   by the `.cpuprofile` and Chrome trace formats that carry it.
//!
//! No format imports another; shared pieces live in the modules above or in the analysis crate.

pub mod convert;
pub mod folded_stacks;
pub mod format;
pub mod registry;

pub mod bolt;
pub mod callgrind;
pub mod chrome_trace;
pub mod cpuprofile;
pub mod csi;
pub mod dcfg;
pub mod dcfg_trace;
pub mod dcpi;
pub mod dot;
pub mod dtrace;
pub mod firefox;
pub mod folded;
pub mod graphml;
pub mod jfr;
pub mod llvm_sample;
pub mod perf;
pub mod pprof;
pub mod speedscope;
pub mod svg;
pub mod tables;
pub mod v8_profile;

/// The dcpicat text dump is DCPI's text form and lives in its folder; it keeps its own name.
pub use dcpi::cat as dcpicat;
