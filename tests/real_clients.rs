//! Tests of one capability across every format: one module per format in tests/real_clients/.

mod common;

#[path = "real_clients/dcfg.rs"]
mod dcfg;

#[path = "real_clients/svg.rs"]
mod svg;

#[path = "real_clients/callgrind.rs"]
mod callgrind;

#[path = "real_clients/dcfg_trace.rs"]
mod dcfg_trace;

#[path = "real_clients/folded.rs"]
mod folded;

#[path = "real_clients/dot.rs"]
mod dot;

#[path = "real_clients/graphml.rs"]
mod graphml;

#[path = "real_clients/dcpi.rs"]
mod dcpi;

#[path = "real_clients/csi.rs"]
mod csi;
#[path = "real_clients/symbols.rs"]
mod symbols;

#[path = "real_clients/pprof.rs"]
mod pprof;

#[path = "real_clients/speedscope.rs"]
mod speedscope;

#[path = "real_clients/bzip2.rs"]
mod bzip2;

#[path = "real_clients/bolt.rs"]
mod bolt;
#[path = "real_clients/firefox.rs"]
mod firefox;
#[path = "real_clients/perf_data.rs"]
mod perf_data;
#[cfg(feature = "tables")]
#[path = "real_clients/tables.rs"]
mod tables;
#[path = "real_clients/v8.rs"]
mod v8;

#[path = "real_clients/inference.rs"]
mod inference;

#[path = "real_clients/messages.rs"]
mod messages;

#[path = "real_clients/jfr.rs"]
mod jfr;

#[path = "real_clients/llvm_sample.rs"]
mod llvm_sample;
