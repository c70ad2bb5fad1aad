//! Tests of one capability across every format: one module per format in tests/corpus/.

mod common;

#[path = "corpus/dcfg.rs"]
mod dcfg;

#[path = "corpus/dtrace.rs"]
mod dtrace;

#[path = "corpus/perf.rs"]
mod perf;

#[path = "corpus/folded.rs"]
mod folded;

#[path = "corpus/dcpicat.rs"]
mod dcpicat;

#[path = "corpus/callgrind.rs"]
mod callgrind;

#[path = "corpus/dcfg_trace.rs"]
mod dcfg_trace;

#[path = "corpus/analysis.rs"]
mod analysis;

#[path = "corpus/csi.rs"]
mod csi;
#[path = "corpus/dot.rs"]
mod dot;

#[path = "corpus/clients.rs"]
mod clients;

#[path = "corpus/conservation.rs"]
mod conservation;
#[path = "corpus/firefox.rs"]
mod firefox;
#[path = "corpus/perf_data.rs"]
mod perf_data;

#[path = "corpus/speedscope_samples.rs"]
mod speedscope_samples;
