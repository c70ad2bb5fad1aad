//! Tests of one capability across every format: one module per format in tests/corpus/.

mod common;

#[path = "corpus/dcfg.rs"]
mod dcfg;

#[path = "corpus/dcpicat.rs"]
mod dcpicat;

#[path = "corpus/callgrind.rs"]
mod callgrind;

#[path = "corpus/analysis.rs"]
mod analysis;
