//! One folder per format. Each declares its [`crate::registry::Format`] as `FORMAT`;
//! [`ALL`] lists them in the order content sniffing tries them (most distinctive first).

use crate::registry::Format;

pub mod bolt;
pub mod callgrind;
pub mod csi;
pub mod dcfg;
pub mod dcfg_trace;
pub mod dcpi;
pub mod dot;
pub mod dtrace;
pub mod firefox;
pub mod folded;
pub mod graphml;
pub mod llvm_sample;
pub mod perf;
pub mod pprof;
pub mod speedscope;
pub mod svg;
pub mod tables;

/// The dcpicat text dump is DCPI's text form and lives in its folder; it keeps its own name.
pub use dcpi::cat as dcpicat;

/// Every format cfghub knows.
pub static ALL: &[&Format] = &[
    &dcfg::FORMAT,
    &dcfg_trace::FORMAT,
    &callgrind::FORMAT,
    &csi::FORMAT,
    &dcpi::FORMAT,
    &dcpi::cat::FORMAT,
    &dot::FORMAT,
    &graphml::FORMAT,
    &dtrace::FORMAT,
    &firefox::FORMAT,
    &perf::FORMAT,
    &perf::data::FORMAT,
    &pprof::FORMAT,
    &speedscope::FORMAT,
    &bolt::FORMAT,
    &bolt::PREAGGREGATED,
    &llvm_sample::FORMAT,
    &llvm_sample::UNSYMBOLIZED,
    &folded::FORMAT,
    &svg::FORMAT,
    &tables::FORMAT,
];
