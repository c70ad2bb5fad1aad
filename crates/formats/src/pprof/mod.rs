//! pprof's profile.proto: the protocol-buffer profile of Go's `runtime/pprof`, `go tool
//! pprof`, `perf_to_profile` and many other samplers (google/pprof, proto/profile.proto).
//!
//! ```text
//! Profile { sample_type[]  (type, unit: string indices)
//!           sample[]       { location_id[] (leaf first), value[] (one per sample_type), label[] }
//!           mapping[]      { id, memory_start, memory_limit, file_offset, filename, build_id, has_* }
//!           location[]     { id, mapping_id, address, line[] { function_id, line } (last = caller) }
//!           function[]     { id, name, system_name, filename, start_line }
//!           string_table[] (string_table[0] == "")
//!           time_nanos, duration_nanos, period_type, period, comment[], default_sample_type, ... }
//! ```
//!
//! On disk it is usually gzip-compressed (`*.pb.gz`); [`cfghub_model::io`] decompresses by magic
//! bytes on input and compresses by name on output, so this module reads and writes the raw
//! protobuf. The wire format is decoded by hand ([`wire`]): profile.proto needs only varints and
//! length-delimited fields, and a hand decoder names the byte and the message path of every
//! fault. Protobuf has no magic number, so pprof files are recognised by name (`.pb`,
//! `.pb.gz`, `.pprof`) or `--from pprof`. See docs/formats/pprof.md for the mapping.

mod read;
mod wire;
mod write;

use crate::format::{Format, Needs};

pub use read::read_bytes;
pub use write::write;

/// The numeric sample label that carries a stack's thread.
pub(crate) const THREAD_LABEL: &str = "thread";
/// The numeric sample label that carries a stack's process id (profiles of several processes).
pub(crate) const PID_LABEL: &str = "pid";

/// Keys of [`cfghub_model::ir::Meta::headers`] for the top-level fields of profile.proto: the field's
/// name after `pprof.` (other writers show them as descriptions).
pub mod keys {
    /// `"TYPE UNIT"` of one sample type: the model's unit of an event.
    pub const UNIT: &str = cfghub_model::ir::EVENT_UNIT_KEY;
    /// `"TYPE UNIT"` of `period_type`.
    pub(crate) const PERIOD_TYPE: &str = "pprof.period_type";
    /// `period`: the number of events between samples, in `period_type`'s unit.
    pub const PERIOD: &str = "pprof.period";

    pub(crate) const TIME_NANOS: &str = "pprof.time_nanos";
    pub(crate) const DURATION_NANOS: &str = "pprof.duration_nanos";
    pub(crate) const DROP_FRAMES: &str = "pprof.drop_frames";
    pub(crate) const KEEP_FRAMES: &str = "pprof.keep_frames";
    pub(crate) const DEFAULT_SAMPLE_TYPE: &str = cfghub_model::ir::DEFAULT_SAMPLE_TYPE_KEY;
    pub(crate) const DOC_URL: &str = "pprof.doc_url";
    /// One per comment; folded stacks' `# ` comments use the same key.
    pub(crate) const COMMENT: &str = "comment";
}

/// The pprof format.
pub static FORMAT: Format = Format {
    name: "pprof",
    description: "pprof profile.proto (Go runtime/pprof, go tool pprof), gzip-compressed or raw",
    extensions: &[".pb", ".pprof"],
    reader: Some(read::read),
    writer: Some(write::write),
    sniffer: Some(sniff),
    needs: Needs::STACKS,
    ..Format::NONE
};

/// Whether `head` (after any gzip layer) opens a `Profile` message: its first fields (up to 16,
/// or to the end of `head`) are fields of `Profile` (1 to 14), each with the wire type the
/// message gives it, and one of them a `sample_type` (field 1) holding a `ValueType` of
/// varints alone (`type` = 1, `unit` = 2). Producers order the fields as they like (Go writes
/// `time_nanos` or `period_type` first). Text never holds such bytes, and no other binary format
/// opens so: a profile read from standard input is told by its content, as a file is by name.
pub fn sniff(head: &[u8]) -> bool {
    use wire::{Cursor, LEN, VARINT};
    // A `ValueType`: varint fields 1 and 2 alone.
    let value_type = |bytes: &[u8]| {
        let mut c = Cursor::new(bytes, 0);
        while !c.is_empty() {
            match c.varint() {
                Ok(0x08 | 0x10) if c.varint().is_ok() => {}
                _ => return false,
            }
        }
        !bytes.is_empty()
    };
    let mut c = Cursor::new(head, 0);
    let mut sample_type = false;
    for _ in 0..16 {
        // A key or value cut by the end of `head` ends the look, as the end of the input does.
        let Ok(key) = c.varint() else { break };
        let (field, wire) = (key >> 3, (key & 7) as u8);
        let length_delimited = matches!(field, 1..=6 | 11) || (field == 13 && wire == LEN);
        match (field, wire) {
            (1..=14, LEN) if length_delimited => {
                let Ok((bytes, _)) = c.bytes() else { break };
                if field == 1 {
                    if !value_type(bytes) {
                        return false;
                    }
                    sample_type = true;
                }
            }
            (7..=10 | 12..=14, VARINT) => {
                if c.varint().is_err() {
                    break;
                }
            }
            _ => return false,
        }
        if c.is_empty() {
            break;
        }
    }
    sample_type
}
