//! LLVM sample profiles (AutoFDO): the text form `llvm-profdata` and
//! `clang -fprofile-sample-use` read, and llvm-profgen's unsymbolized form, which leaves the
//! symbolization to `llvm-profgen --unsymbolized-profile`.
//!
//! Text sample profile (LLVM `SampleProfReader.h`): per function
//! `NAME:TOTAL:HEAD`, then body lines ` OFFSET[.DISCRIMINATOR]: COUNT [CALLEE:COUNT ...]`
//! where OFFSET is the source line minus the function's first line (`DW_AT_decl_line`), and
//! for each inlined call site a nested, one-space-deeper block ` OFFSET[.D]: CALLEE:TOTAL`
//! with the callee's own lines below it. Counts are made as llvm-profgen makes them from
//! branch records: a line's count is the most executions of any of its instructions; a
//! function's total is the executions of its bytes (each instruction's count times its
//! size), its inlined callees' included; its head is the calls into it; a call site names its
//! callees with the calls to each.
//!
//! The reader ([`read`]) reads the text form as LLVM does and refuses the binary forms by
//! their magic, with the command that makes the text form.
//!
//! Unsymbolized form (llvm-profgen `UnsymbolizedProfileReader`): a count, that many
//! `START-END:COUNT` ranges (hex addresses; END is the range's last instruction), then a
//! count and that many `SOURCE->TARGET:COUNT` branches. Run
//! `llvm-profgen --binary=BIN --unsymbolized-profile=FILE --use-offset=0 --format=text`.
//!
//! Both are written from the blocks and edges of the profile's binary (the image with `main`,
//! else the busiest): a block is a range run `count` times, a taken edge a branch. Samples
//! without blocks (DCPI, perf, pprof) count as their addresses' executions: one range of one
//! instruction per address. See docs/formats/llvm-sample.md.

pub mod dwarf;
pub mod read;
pub mod unsymbolized;
pub mod write;

use std::path::PathBuf;

use crate::format::{Format, Needs};

/// What the sample profile writers can be told.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The binary (with DWARF) the profile is of (`--symbols PATH`); else the image's own file.
    pub binary: Option<PathBuf>,
    /// The image written (`--image`: its id, path or file base name); default the image of
    /// `binary`, else the main binary.
    pub image: Option<String>,
}

/// LLVM's text sample profile.
pub static FORMAT: Format = Format {
    name: "llvm-sample",
    description: "LLVM text sample profile (AutoFDO; llvm-profdata, clang -fprofile-sample-use)",
    extensions: &[".prof", ".afdo"],
    sniffer: Some(read::sniff),
    reader: Some(read::read),
    writer: Some(write::write),
    needs: Needs::SAMPLE_COUNTS,
    without_addresses: Some("sample profiles are made from addresses; these blocks are left out"),
    ..Format::NONE
};

/// llvm-profgen's unsymbolized profile.
pub(crate) static UNSYMBOLIZED: Format = Format {
    name: "llvm-unsymbolized",
    description: "llvm-profgen unsymbolized profile (address ranges and branches); write only",
    extensions: &[".rawprof"],
    writer: Some(unsymbolized::write),
    needs: Needs::SAMPLE_COUNTS,
    without_addresses: Some("the unsymbolized form is by address; these blocks are left out"),
    ..Format::NONE
};
