//! One folder per format. Each exports a unit struct implementing [`crate::registry::Format`];
//! [`ALL`] lists them in the order content sniffing tries them (most distinctive first).

use crate::registry::Format;

pub mod callgrind;
pub mod dcfg;
pub mod dcfg_trace;
pub mod dcpi;
pub mod dcpicat;
pub mod dot;
pub mod dtrace;
pub mod folded;
pub mod graphml;
pub mod perf;
pub mod pprof;
pub mod speedscope;
pub mod svg;

/// Every format cfghub knows.
pub static ALL: &[&dyn Format] = &[
    &dcfg::Dcfg,
    &dcfg_trace::DcfgTrace,
    &callgrind::Callgrind,
    &dcpi::Dcpi,
    &dcpicat::Dcpicat,
    &dot::Dot,
    &graphml::GraphMl,
    &dtrace::Dtrace,
    &perf::Perf,
    &pprof::Pprof,
    &speedscope::Speedscope,
    &folded::Folded,
    &svg::Svg,
];
