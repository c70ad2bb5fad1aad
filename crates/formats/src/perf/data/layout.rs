//! The frame of a perf.data file, checked before the records are parsed.
//!
//! The file layout (`perf record -o FILE`) starts with a 104-byte header:
//!
//! ```text
//! magic "PERFILE2" | size 104 | attr_size | attrs {offset, size} | data {offset, size}
//! | event_types {offset, size} | feature bits [4 x u64]
//! ```
//!
//! then the attribute section, the data section (the records) and, right after the data, one
//! `{offset, size}` pair per feature bit that is set, each pointing at a feature section
//! (hostname, build ids, event descriptions, ...). The pipe layout (`perf record -o -`) is a
//! 16-byte header (`magic`, `size 16`) followed by records alone: the attributes and features
//! come as records (`HEADER_ATTR`, `HEADER_FEATURE`) among the others.
//!
//! A record is an 8-byte header `{u32 type, u16 misc, u16 size}` and `size - 8` bytes of body;
//! an `AUXTRACE` record is followed by the trace bytes its body counts. The magic also tells
//! the byte order: `PERFILE2` read as a little-endian u64 is the file's own order, `2ELIFREP`
//! the other.
//!
//! This walk checks every size against the bytes there are (so that no parser is handed a
//! count that runs past the end, and no buffer is sized from one), finds the records of types
//! perf does not define (they are skipped with a warning), and says where the first fault is,
//! as a byte offset.

use cfghub_model::error::{Error, Result};

/// The byte order of a file, from its magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Little-endian: the magic reads `PERFILE2`.
    Little,
    /// Big-endian: the magic reads `2ELIFREP` as a little-endian u64.
    Big,
}

impl Order {
    /// Reads a `u16` in this order from the first 2 bytes of `b` (panics on fewer).
    pub fn u16(self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        match self {
            Order::Little => u16::from_le_bytes(a),
            Order::Big => u16::from_be_bytes(a),
        }
    }
    /// Reads a `u32` in this order from the first 4 bytes of `b` (panics on fewer).
    pub fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            Order::Little => u32::from_le_bytes(a),
            Order::Big => u32::from_be_bytes(a),
        }
    }
    /// Reads a `u64` in this order from the first 8 bytes of `b` (panics on fewer).
    pub fn u64(self, b: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        match self {
            Order::Little => u64::from_le_bytes(a),
            Order::Big => u64::from_be_bytes(a),
        }
    }
}

/// Which of the two layouts a file has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `perf record -o FILE`: the 104-byte header, attribute, data and feature sections.
    File,
    /// `perf record -o -`: the 16-byte header, then records alone.
    Pipe,
}

/// What the walk learnt.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Which layout the file has.
    pub kind: Kind,
    /// The file's byte order.
    pub order: Order,

    /// Where the records are: `[start, end)`.
    pub records: (u64, u64),
    /// Records walked (compressed records count once; their contents are not walked here).
    pub record_count: u64,
    /// Records of types perf does not define: `(type, how many, offset of the first)`.
    pub unknown: Vec<(u32, u64, u64)>,
    /// Whether any record is zstd-compressed.
    pub compressed: bool,
    /// Bytes of zstd data in the compressed records (their bodies).
    pub compressed_bytes: u64,
    /// The mmap size the `HEADER_COMPRESSED` feature states: the most one compressed record
    /// unpacks to, as perf reads it.
    pub compressed_mmap_len: Option<u64>,
    /// The header as the records are to be read with, where the file's own says no records
    /// ([`unterminated_header`]).
    pub patched_header: Option<Vec<u8>>,
}

pub(crate) const HEADER_LEN: usize = 104;
const PIPE_HEADER_LEN: usize = 16;
const RECORD_HEADER_LEN: usize = 8;

/// The record types perf defines: the kernel's (1-22) and perf's own (64-83).
pub(crate) fn is_known_type(t: u32) -> bool {
    (1..=22).contains(&t) || (64..=83).contains(&t)
}

pub(crate) const HEADER_ATTR: u32 = 64;
pub(crate) const BUILD_ID: u32 = 67;
pub(crate) const AUXTRACE: u32 = 71;
pub(crate) const HEADER_FEATURE: u32 = 80;
pub(crate) const COMPRESSED: u32 = 81;
pub(crate) const COMPRESSED2: u32 = 83;
/// The feature bit of the event descriptions (`HEADER_EVENT_DESC`).
pub(crate) const FEATURE_EVENT_DESC: u32 = 12;
/// The feature bit of the compression settings (`HEADER_COMPRESSED`): `u32 version, type,
/// level, ratio, mmap_len`.
pub(crate) const FEATURE_COMPRESSED: u32 = 27;
/// The feature bit of the command line (`HEADER_CMDLINE`).
pub(crate) const FEATURE_CMDLINE: u32 = 11;

/// The byte order a magic states, if it is a perf.data magic.
pub(crate) fn order_of(magic: &[u8]) -> Option<Order> {
    match magic.get(..8)? {
        b"PERFILE2" => Some(Order::Little),
        b"2ELIFREP" => Some(Order::Big),
        _ => None,
    }
}

fn fault(offset: u64, message: impl Into<String>) -> Error {
    Error::input(message).at_byte(offset)
}

/// Checks the frame of a whole perf.data file held in `bytes`.
pub fn check(bytes: &[u8]) -> Result<Layout> {
    let len = bytes.len() as u64;
    let order = order_of(bytes).ok_or_else(|| {
        fault(0, "not a perf.data file: it does not start with the magic `PERFILE2`")
            .with_hint("record with `perf record`; `perf script` text is read as format `perf`")
    })?;
    if bytes.len() < PIPE_HEADER_LEN {
        return Err(fault(len, format!("the file ends after {len} bytes, inside its 16-byte header")));
    }
    let header_size = order.u64(&bytes[8..16]);
    if header_size == PIPE_HEADER_LEN as u64 {
        let mut layout = Layout {
            kind: Kind::Pipe,
            order,
            records: (PIPE_HEADER_LEN as u64, len),
            record_count: 0,
            unknown: Vec::new(),
            compressed: false,
            compressed_bytes: 0,
            compressed_mmap_len: None,
            patched_header: None,
        };
        walk(bytes, &mut layout, true)?;
        return Ok(layout);
    }
    if header_size < HEADER_LEN as u64 {
        return Err(fault(
            8,
            format!("header size {header_size} is neither 16 (pipe layout) nor at least 104"),
        ));
    }
    if bytes.len() < HEADER_LEN {
        return Err(fault(len, format!("the file ends after {len} bytes, inside its 104-byte header")));
    }
    let attr_size = order.u64(&bytes[16..24]);
    let section = |at: usize, name: &str| -> Result<(u64, u64)> {
        let offset = order.u64(&bytes[at..at + 8]);
        let size = order.u64(&bytes[at + 8..at + 16]);
        match offset.checked_add(size) {
            Some(end) if end <= len => Ok((offset, end)),
            _ => Err(fault(
                at as u64,
                format!(
                    "the {name} section (offset {offset}, size {size}) runs past the end of the file ({len} bytes)"
                ),
            )),
        }
    };
    let attrs = section(24, "attribute")?;
    let mut data = section(40, "data")?;
    let patched_header = unterminated_header(bytes, order, &mut data);
    let event_types = section(56, "event types")?;
    // The parser divides the attribute section by the attribute size even when the section
    // is empty: perf never writes a size under the 64 bytes of the first attribute layout.
    if attr_size < 64 {
        return Err(fault(16, format!("attribute size {attr_size} is less than an attribute's 64 bytes")));
    }
    if header_size > len {
        return Err(fault(
            8,
            format!("header size {header_size} runs past the end of the file ({len} bytes)"),
        ));
    }
    if data.0 < header_size {
        return Err(fault(
            40,
            format!("the data section starts at byte {}, inside the {header_size}-byte header", data.0),
        ));
    }
    if attrs.1 > attrs.0 && (attrs.1 - attrs.0) % attr_size != 0 {
        return Err(fault(16, format!("attribute size {attr_size} does not divide the attribute section")));
    }
    if attrs.1 > attrs.0 {
        check_attr_ids(bytes, order, attrs, attr_size)?;
    }
    if event_types.1 > event_types.0 {
        check_event_type_ids(bytes, order, event_types, attr_size)?;
    }
    let compressed_mmap_len = match patched_header {
        None => check_features(bytes, order, data.1)?,
        Some(_) => None,
    };
    let mut layout = Layout {
        kind: Kind::File,
        order,
        records: data,
        record_count: 0,
        unknown: Vec::new(),
        compressed: false,
        compressed_bytes: 0,
        compressed_mmap_len,
        patched_header,
    };
    walk(bytes, &mut layout, false)?;
    Ok(layout)
}

/// A `perf record` that did not end properly (killed, out of memory) leaves the data section's
/// size 0 and the features unwritten (their bits set, their table missing), with its records
/// after the data offset all the same; perf 6.1 then reads nothing ("data size field is 0
/// which is unexpected"). Such a file's records are taken to its end, less a record cut off
/// there: `data` becomes their range, and the header to read them with is returned, stating
/// that size and no features.
fn unterminated_header(bytes: &[u8], order: Order, data: &mut (u64, u64)) -> Option<Vec<u8>> {
    let len = bytes.len() as u64;
    if data.1 != data.0 || data.0 < HEADER_LEN as u64 || data.0 >= len {
        return None;
    }
    let mut end = data.0;
    while len - end >= RECORD_HEADER_LEN as u64 {
        let size = u64::from(order.u16(&bytes[end as usize + 6..]));
        if size < RECORD_HEADER_LEN as u64 || size > len - end {
            break;
        }
        end += size;
    }
    if end == data.0 {
        return None;
    }
    let mut header = bytes[..HEADER_LEN].to_vec();
    let size = end - data.0;
    header[48..56].copy_from_slice(&match order {
        Order::Little => size.to_le_bytes(),
        Order::Big => size.to_be_bytes(),
    });
    header[72..HEADER_LEN].fill(0);
    *data = (data.0, end);
    Some(header)
}

/// Each entry of the attribute section: the attribute, then `{offset, size}` of its ids, all
/// in `attr_size` bytes.
fn check_attr_ids(bytes: &[u8], order: Order, section: (u64, u64), attr_size: u64) -> Result<()> {
    if attr_size < 80 {
        return Err(fault(16, format!("attribute size {attr_size} leaves no room for the ids' section")));
    }
    check_entry_ids(bytes, order, section, attr_size, "an attribute")
}

/// Each entry of the (old) event types section: an attribute of `attr_size` bytes, then
/// `{offset, size}` of its ids.
fn check_event_type_ids(bytes: &[u8], order: Order, section: (u64, u64), attr_size: u64) -> Result<()> {
    let len = bytes.len() as u64;
    let Some(entry) = attr_size.checked_add(16).filter(|&e| e <= len) else {
        return Err(fault(16, format!("attribute size {attr_size} is larger than the file ({len} bytes)")));
    };
    check_entry_ids(bytes, order, section, entry, "an event type")
}

/// Entries of `entry` bytes from `start` to `end`, each ending in `{offset, size}` of ids that
/// must lie inside the file; `what` names an entry in the error.
fn check_entry_ids(
    bytes: &[u8],
    order: Order,
    (start, end): (u64, u64),
    entry: u64,
    what: &str,
) -> Result<()> {
    let len = bytes.len() as u64;
    let mut at = start;
    while at + entry <= end {
        let ids = at + entry - 16;
        let offset = order.u64(&bytes[ids as usize..]);
        let size = order.u64(&bytes[ids as usize + 8..]);
        if offset.checked_add(size).is_none_or(|e| e > len) {
            return Err(fault(
                ids,
                format!("the ids of {what} (offset {offset}, size {size}) run past the end of the file ({len} bytes)"),
            ));
        }
        at += entry;
    }
    Ok(())
}

/// The feature sections named after the data section: each inside the file, and the event
/// descriptions' counts inside their section. Gives the mmap size `HEADER_COMPRESSED` states.
fn check_features(bytes: &[u8], order: Order, table: u64) -> Result<Option<u64>> {
    let len = bytes.len() as u64;
    let mut mmap_len = None;
    let mut at = table;
    for word in 0..4 {
        let bits = order.u64(&bytes[72 + word * 8..]);
        for bit in 0..64 {
            if bits & (1 << bit) == 0 {
                continue;
            }
            let feature = (word * 64 + bit) as u32;
            if at.checked_add(16).is_none_or(|e| e > len) {
                return Err(fault(at, "the table of feature sections runs past the end of the file"));
            }
            let offset = order.u64(&bytes[at as usize..]);
            let size = order.u64(&bytes[at as usize + 8..]);
            let end = offset.checked_add(size).filter(|&e| e <= len).ok_or_else(|| {
                fault(
                    at,
                    format!(
                        "feature section {feature} (offset {offset}, size {size}) runs past the end of the file ({len} bytes)"
                    ),
                )
            })?;
            let body = &bytes[offset as usize..end as usize];
            check_feature(feature, body, order, offset)?;
            mmap_len = mmap_len.or(compressed_mmap_len(feature, body, order));
            at += 16;
        }
    }
    Ok(mmap_len)
}

/// The mmap size a `HEADER_COMPRESSED` feature section states.
fn compressed_mmap_len(feature: u32, body: &[u8], order: Order) -> Option<u64> {
    (feature == FEATURE_COMPRESSED && body.len() >= 20).then(|| u64::from(order.u32(&body[16..])))
}

/// The counts inside a feature section that a parser sizes buffers from.
pub(crate) fn check_feature(feature: u32, body: &[u8], order: Order, base: u64) -> Result<()> {
    let fail =
        |rel: usize, what: &str| fault(base + rel as u64, format!("feature section {feature}: {what}"));
    // Strings (hostname, OS release, version, arch, CPU description, CPU id): `u32 len` then
    // `len` bytes; the command line (11): `u32 nr` such strings.
    const STRINGS: &[u32] = &[3, 4, 5, 6, 8, 9];
    if STRINGS.contains(&feature) || feature == FEATURE_CMDLINE {
        let mut at = 0usize;
        let count = if feature == FEATURE_CMDLINE {
            // The command line: `u32 nr` strings.
            if body.len() < 4 {
                return Err(fail(0, "too short for its count"));
            }
            at = 4;
            order.u32(body) as usize
        } else {
            1
        };
        for _ in 0..count {
            let n = body
                .get(at..at + 4)
                .map(|b| order.u32(b) as usize)
                .ok_or_else(|| fail(at, "a string length runs past the section"))?;
            if n > body.len() - at - 4 {
                return Err(fail(at, &format!("a string of {n} bytes runs past the section")));
            }
            at += 4 + n;
        }
    }
    if feature == FEATURE_EVENT_DESC {
        check_event_desc(body, order).map_err(|(rel, what)| fail(rel, &what))?;
    }
    Ok(())
}

/// `u32 nr, u32 attr_size`, then per event: the attribute, `u32 nr_ids`, a string, the ids.
fn check_event_desc(body: &[u8], order: Order) -> std::result::Result<(), (usize, String)> {
    // In the file's order, as the parser reads them: it reserves room for `nr` events first
    // (16 M of them, a count read in the wrong order, were 2.95 GB).
    let read = |at: usize| -> std::result::Result<usize, (usize, String)> {
        let b = body.get(at..at + 4).ok_or((at, "event descriptions run past the section".to_string()))?;
        Ok(order.u32(b) as usize)
    };
    let (nr, attr_size) = (read(0)?, read(4)?);
    // Each event takes its attribute and two counts at least.
    if attr_size.checked_add(8).and_then(|each| each.checked_mul(nr)).is_none_or(|n| n > body.len() - 8) {
        return Err((
            0,
            format!(
                "{nr} events of {attr_size}-byte attributes do not fit the section's {} bytes",
                body.len()
            ),
        ));
    }
    let mut at = 8usize;
    for _ in 0..nr {
        at = at
            .checked_add(attr_size)
            .filter(|&a| a <= body.len())
            .ok_or((at, "an event's attribute runs past the section".to_string()))?;
        let ids = read(at)?;
        let name = read(at + 4)?;
        at = (at + 8)
            .checked_add(name)
            .filter(|&a| a <= body.len())
            .ok_or((at, format!("an event name of {name} bytes runs past the section")))?;
        at = ids
            .checked_mul(8)
            .and_then(|n| at.checked_add(n))
            .filter(|&a| a <= body.len())
            .ok_or((at, format!("{ids} event ids run past the section")))?;
    }
    Ok(())
}

/// Walks the records from `layout.records.0` to its end, checking each size.
fn walk(bytes: &[u8], layout: &mut Layout, pipe: bool) -> Result<()> {
    let order = layout.order;
    let (mut at, end) = layout.records;
    while at < end {
        if end - at < RECORD_HEADER_LEN as u64 {
            return Err(fault(at, format!("a record header is cut off after {} of its 8 bytes", end - at)));
        }
        let h = &bytes[at as usize..at as usize + RECORD_HEADER_LEN];
        let (kind, size) = (order.u32(h), u64::from(order.u16(&h[6..])));
        if size < RECORD_HEADER_LEN as u64 {
            return Err(fault(
                at,
                format!("a record of type {kind} states its size as {size}, less than its header"),
            ));
        }
        if size > end - at {
            return Err(fault(
                at,
                format!("a record of type {kind} and {size} bytes is cut off after {} bytes: the file is truncated", end - at),
            ));
        }
        let body = &bytes[at as usize + RECORD_HEADER_LEN..(at + size) as usize];
        let mut next = at + size;
        match kind {
            AUXTRACE => {
                let trace = if body.len() >= 8 { order.u64(body) } else { 0 };
                next = next.checked_add(trace).filter(|&n| n <= end).ok_or_else(|| {
                    fault(
                        at,
                        format!(
                            "an AUXTRACE record's {trace} bytes of trace run past the end of the records"
                        ),
                    )
                })?;
            }
            COMPRESSED | COMPRESSED2 => {
                layout.compressed = true;
                layout.compressed_bytes = layout.compressed_bytes.saturating_add(body.len() as u64);
            }
            HEADER_FEATURE if pipe && body.len() >= 8 => {
                let feature = order.u64(body);
                if let Ok(f) = u32::try_from(feature) {
                    check_feature(f, &body[8..], order, at + 16)?;
                    if let Some(n) = compressed_mmap_len(f, &body[8..], order) {
                        layout.compressed_mmap_len = Some(n);
                    }
                }
            }
            HEADER_ATTR if pipe && body.len() < 64 => {
                return Err(fault(at, "a HEADER_ATTR record is too short for an event attribute"));
            }
            _ => {}
        }
        if !is_known_type(kind) {
            match layout.unknown.iter_mut().find(|u| u.0 == kind) {
                Some(u) => u.1 += 1,
                None => layout.unknown.push((kind, 1, at)),
            }
        }
        layout.record_count += 1;
        at = next;
    }
    Ok(())
}
