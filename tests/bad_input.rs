//! Tests of one capability across every format: one module per format in tests/bad_input/.

mod common;

#[path = "bad_input/dcfg.rs"]
mod dcfg;

#[path = "bad_input/folded.rs"]
mod folded;

#[path = "bad_input/dcpi.rs"]
mod dcpi;

#[path = "bad_input/callgrind.rs"]
mod callgrind;

#[path = "bad_input/dot.rs"]
mod dot;

#[path = "bad_input/dcfg_trace.rs"]
mod dcfg_trace;

#[path = "bad_input/csi.rs"]
mod csi;
#[path = "bad_input/symbols.rs"]
mod symbols;

#[path = "bad_input/pprof.rs"]
mod pprof;

#[path = "bad_input/cpuprofile.rs"]
mod cpuprofile;

#[path = "bad_input/bzip2.rs"]
mod bzip2;

#[path = "bad_input/compressed.rs"]
mod compressed;

#[path = "bad_input/hostile.rs"]
mod hostile;

#[path = "bad_input/shapes.rs"]
mod shapes;

#[path = "bad_input/dtrace.rs"]
mod dtrace;

#[path = "bad_input/perf.rs"]
mod perf;

#[path = "bad_input/bolt.rs"]
mod bolt;
#[path = "bad_input/firefox.rs"]
mod firefox;
#[path = "bad_input/perf_data.rs"]
mod perf_data;
#[cfg(feature = "tables")]
#[path = "bad_input/tables.rs"]
mod tables;

#[path = "bad_input/jfr.rs"]
mod jfr;
#[path = "bad_input/llvm_sample.rs"]
mod llvm_sample;
