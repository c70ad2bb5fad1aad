//! Tests of one capability across every format: one module per format in tests/roundtrip/.

mod common;

#[path = "roundtrip/dcfg.rs"]
mod dcfg;

#[path = "roundtrip/dcfg_trace.rs"]
mod dcfg_trace;
#[path = "roundtrip/folded.rs"]
mod folded;

#[path = "roundtrip/dcpi.rs"]
mod dcpi;

#[path = "roundtrip/dcpicat.rs"]
mod dcpicat;

#[path = "roundtrip/callgrind.rs"]
mod callgrind;

#[path = "roundtrip/csi.rs"]
mod csi;

#[path = "roundtrip/pprof.rs"]
mod pprof;

#[path = "roundtrip/cpuprofile.rs"]
mod cpuprofile;
#[path = "roundtrip/fdata.rs"]
mod fdata;
#[path = "roundtrip/firefox.rs"]
mod firefox;
#[cfg(feature = "tables")]
#[path = "roundtrip/tables.rs"]
mod tables;

#[path = "roundtrip/llvm_sample.rs"]
mod llvm_sample;
