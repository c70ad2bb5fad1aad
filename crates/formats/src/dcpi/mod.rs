//! DCPI binary profiles: the per-image sample files of the DIGITAL (later HP) Continuous
//! Profiling Infrastructure, as described by dcpiformat(4).
//!
//! A profile is an ASCII header of `KEY VALUE` lines ended by a line `samples`, then (major
//! version 0: 0.06 and 0.07) a little-endian binary body: chunks `offset number count[number]`
//! giving the samples of `number` consecutive instruction slots from `tstart + offset`, in
//! increasing, non-overlapping order, and a footer `total_offsets total_samples`. Slots are
//! 4 bytes apart on Alpha; [`Options::address_step`] changes that, and the model records the step ([`Meta::address_step`](cfghub_model::ir::Meta)) so
//! that writing back is exact. The body of major version 1 was never documented: such files
//! are refused with a pointer to the `dcpicat` text dump (format `dcpicat`).
//!
//! Model: one process (pid 0), one image (`path`, `tstart`, `tsize`), one event, one
//! [`Cost`](cfghub_model::ir::Cost) per slot at its offset from `tstart`. See docs/formats/dcpi.md.

pub mod by_offset;
pub mod cat;
pub mod model;
pub mod read;
pub mod write;

use crate::format::{Format, Needs};

/// What a DCPI reader can be asked (the dcpicat reader takes the same).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Bytes between consecutive sample slots (`--address-step`); `None` is 4, as on Alpha.
    pub address_step: Option<u64>,
}

/// The DCPI binary profile format.
pub static FORMAT: Format = Format {
    name: "dcpi",
    description: "DCPI binary sample profile (pdb-0.06/0.07; dcpiformat(4))",
    extensions: &[".dcpi"],
    sniffer: Some(sniff),
    reader: Some(read::read),
    writer: Some(write::write),
    needs: Needs::COST_ROWS,
    without_addresses: Some("DCPI samples are by address; these blocks are left out"),
    // `tstart` is the runtime address of the image's text.
    addresses: cfghub_model::ir::AddressKind::TextRuntime,
    ..Format::NONE
};

/// A header line `version pdb-...` at the very start.
fn sniff(head: &[u8]) -> bool {
    head.starts_with(b"version") && {
        let rest = &head[7..];
        let spaces = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        spaces > 0 && rest[spaces..].starts_with(b"pdb-")
    }
}
