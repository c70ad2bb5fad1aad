//! The dcpicat text dump of a DCPI profile: what DCPI's `dcpicat` prints, and the way in for
//! profiles of major version 1, whose binary body was never documented.
//!
//! ```text
//! name                 xemacs
//! image                19970328081403c0c18b
//! path                 /usr/local/bin/xemacs
//! epoch                199805191724
//! platform             walnut
//! text_start           0x000120000000
//! text_size            0x000000800000
//! event                470352 cycles:63488:10000
//! event                134705 imiss:4096:10000
//! 0x00012006cbb8      29      27
//! ```
//! Header lines `KEY VALUE` (`label` and `path` may repeat), one `event TOTAL
//! NAME[:COUNTER]:PERIOD:FRACTION` line per event, then one line per address, ascending, with
//! one sample column per event in `event` order. FRACTION is 10000 times the share of time the
//! event was monitored. See docs/formats/dcpi.md for the mapping.

pub mod read;
pub mod write;

use crate::format::{Format, Needs};

/// The dcpicat text dump format.
pub static FORMAT: Format = Format {
    name: "dcpicat",
    description: "dcpicat text dump of DCPI profiles (several events)",
    extensions: &[".dcpicat.txt", ".dcpicat"],
    sniffer: Some(sniff),
    reader: Some(|input, _, findings| read::read(input.limit_lines().stream(), findings)),
    writer: Some(|profile, out, _, findings| write::write(profile, out, findings)),
    needs: Needs::COST_ROWS,
    without_addresses: Some("dcpicat samples are by address; these blocks are left out"),
    // `text_start` is the runtime address of the image's text.
    addresses: cfghub_model::ir::AddressKind::TextRuntime,
    ..Format::NONE
};

/// Starts with dcpicat's `name` line, and a `text_start` line follows in the head.
fn sniff(head: &[u8]) -> bool {
    let starts = head.starts_with(b"name ") || head.starts_with(b"name\t");
    starts && memchr::memmem::find(head, b"\ntext_start").is_some()
}
