//! Tests of one capability across every format: one module per format in tests/cli/.

mod common;

#[path = "cli/dcfg.rs"]
mod dcfg;

#[path = "cli/folded.rs"]
mod folded;

#[path = "cli/dcpi.rs"]
mod dcpi;

#[path = "cli/dcfg_trace.rs"]
mod dcfg_trace;

#[path = "cli/dot.rs"]
mod dot;

#[path = "cli/callgrind.rs"]
mod callgrind;
#[path = "cli/csi.rs"]
mod csi;
#[path = "cli/symbols.rs"]
mod symbols;

#[path = "cli/bzip2.rs"]
mod bzip2;

#[path = "cli/outputs.rs"]
mod outputs;

#[path = "cli/pprof.rs"]
mod pprof;
#[cfg(feature = "tables")]
#[path = "cli/tables.rs"]
mod tables;

#[path = "cli/bolt.rs"]
mod bolt;

#[path = "cli/stack_values.rs"]
mod stack_values;

#[path = "cli/manual.rs"]
mod manual;

#[path = "cli/guide.rs"]
mod guide;

#[path = "cli/overlap.rs"]
mod overlap;

#[path = "cli/merge.rs"]
mod merge;
