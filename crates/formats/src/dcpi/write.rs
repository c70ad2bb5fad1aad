//! Writing a DCPI binary profile (version 0.07 unless the model says 0.06).
//!
//! The header lines the model kept ([`Meta::headers`](cfghub_model::ir::Meta::headers)) are written
//! back in their order, unknown lines included; the lines the model owns (`version`, `event`,
//! `period`, `tstart`, `tsize`, the first `path`) are written verbatim when the model still
//! agrees with them and from the model otherwise. Required lines the model has no value for
//! are written with neutral values and named in a warning. The `samples` line is padded with
//! spaces so the body starts at a multiple of 4 bytes.

use std::io::Write;

use super::by_offset::ByOffset;
use super::model::{choose_event, choose_image, event_specs, gcd, is_dcpi_family, step_of_gaps};
use super::read::{parse_version, ADDRESS_STEP_KEY, REQUIRED};
use crate::format::WriteOptions;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{Image, Profile};

/// A write failure; the output's name is added by the caller.
pub(crate) fn io_err(e: std::io::Error) -> Error {
    let mut err = Error::io(String::new(), e);
    err.file = None;
    err
}

/// Writes the event `options.event` (or the only event) of the image with the most samples.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    write_to(profile, options.event.as_deref(), out, findings)
}

/// The file [`write`] writes, in memory.
pub fn to_bytes(profile: &Profile, event: Option<&str>, findings: &mut Findings) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    write_to(profile, event, &mut bytes, findings)?;
    Ok(bytes)
}

/// Most slots one chunk holds (its count field is 32 bits).
const MOST_PER_CHUNK: u64 = u32::MAX as u64;

/// Writes the profile's samples of one event as a DCPI file, straight from the model: a first
/// walk over the samples checks that they fit and measures the chunks, a second writes them.
fn write_to(
    profile: &Profile,
    event: Option<&str>,
    out: &mut dyn Write,
    findings: &mut Findings,
) -> Result<()> {
    let event = choose_event(profile, event, findings, "dcpi")?;
    let image = choose_image(profile, &[event], findings, "dcpi")?;
    let slots = Slots { by_offset: ByOffset::new(&image.costs), event };
    if slots.by_offset.without_offset > 0 {
        findings.warn(
            None,
            format!(
                "dcpi: {} cost(s) have no instruction address (function- or line-level costs) and are left out",
                slots.by_offset.without_offset
            ),
        );
    }
    let (step, last) = slots.step_and_last(profile)?;
    let owned = OwnedLines::new(profile, image, event, step, last, findings);
    let header = header_text(&header_lines(profile, image, &owned, findings))?;
    let chunks = slots.chunks(step)?;
    let kept = slots.write_body(out, header, chunks)?;
    let why = "a DCPI file holds the samples at addresses of one event in one image";
    cfghub_analysis::totals::note_kept(
        findings,
        "dcpi",
        profile,
        [(profile.events[event].name.as_str(), kept as f64)],
        why,
    );
    Ok(())
}

/// The slots a DCPI file stores: the image's costs by address, of one event.
struct Slots<'a> {
    by_offset: ByOffset<'a>,
    event: usize,
}

impl Slots<'_> {
    /// Calls `f` with each slot's offset and values, in address order. A cost takes part when
    /// its value for the event is non-zero, or when all its values are zero (a slot a DCPI
    /// chunk stores with count 0).
    fn for_each(&self, f: impl FnMut(u64, &[u64]) -> Result<()>) -> Result<()> {
        let event = self.event;
        let takes_part = move |v: &[u64]| v.get(event).is_some_and(|&x| x != 0) || v.iter().all(|&y| y == 0);
        self.by_offset.try_for_each_address(takes_part, f)
    }

    /// First walk: checks that every slot fits the file's 32-bit offsets and counts; the
    /// distance between slots (the model's address step, else the greatest common divisor of
    /// the gaps; recorded in the header when it is not 4) and the last slot's offset.
    fn step_and_last(&self, profile: &Profile) -> Result<(u64, Option<u64>)> {
        let (mut gaps, mut last) = (0u64, None::<u64>);
        self.for_each(|offset, values| {
            let value = values.get(self.event).copied().unwrap_or(0);
            if offset > u32::MAX as u64 {
                return Err(Error::unsupported(format!(
                    "dcpi: an address {offset:#x} bytes after the text start does not fit DCPI's 32-bit chunk offsets"
                )));
            }
            if value > u32::MAX as u64 {
                return Err(Error::unsupported(format!(
                    "dcpi: {value} samples at offset {offset:#x} do not fit DCPI's 32-bit counts"
                )));
            }
            if let Some(l) = last {
                gaps = gcd(gaps, offset - l);
            }
            last = Some(offset);
            Ok(())
        })?;
        let step = match profile.meta.address_step {
            Some(s) if s > 0 => s,
            _ => step_of_gaps(gaps),
        };
        Ok((step, last))
    }

    /// Second walk: the chunks, each a run of slots `step` apart (at most [`MOST_PER_CHUNK`]),
    /// as offset and length (the length comes before the counts in the file).
    fn chunks(&self, step: u64) -> Result<Vec<(u64, u64)>> {
        let mut chunks = Vec::new();
        let (mut start, mut len, mut prev) = (0u64, 0u64, None::<u64>);
        self.for_each(|offset, _| {
            match prev {
                Some(p) if offset == p + step && len < MOST_PER_CHUNK => len += 1,
                Some(_) => {
                    chunks.push((start, len));
                    (start, len) = (offset, 1);
                }
                None => (start, len) = (offset, 1),
            }
            prev = Some(offset);
            Ok(())
        })?;
        if len > 0 {
            chunks.push((start, len));
        }
        Ok(chunks)
    }

    /// Writes `header`, then each chunk's offset, length and counts, then the count of
    /// non-zero slots and the sum of the counts, through a buffer; the samples written.
    fn write_body(&self, out: &mut dyn Write, header: String, chunks: Vec<(u64, u64)>) -> Result<u64> {
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        buf.extend_from_slice(header.as_bytes());
        let (mut nonzero, mut sum, mut kept) = (0u32, 0u32, 0u64);
        let mut chunks = chunks.into_iter();
        let mut left = 0;
        self.for_each(|_, values| {
            if left == 0 {
                let (offset, len) = chunks.next().expect("a chunk for every slot");
                buf.extend_from_slice(&(offset as u32).to_le_bytes());
                buf.extend_from_slice(&(len as u32).to_le_bytes());
                left = len;
            }
            left -= 1;
            let v = values.get(self.event).copied().unwrap_or(0) as u32;
            kept += u64::from(v);
            nonzero += (v != 0) as u32;
            sum = sum.wrapping_add(v);
            buf.extend_from_slice(&v.to_le_bytes());
            if buf.len() >= 60 * 1024 {
                out.write_all(&buf).map_err(io_err)?;
                buf.clear();
            }
            Ok(())
        })?;
        buf.extend_from_slice(&nonzero.to_le_bytes());
        buf.extend_from_slice(&sum.to_le_bytes());
        out.write_all(&buf).map_err(io_err)?;
        Ok(kept)
    }
}

/// The values of the header lines the model owns (`version`, `event`, `period`, `tstart`,
/// `tsize`, `path`), as the model gives them.
struct OwnedLines {
    /// Bytes between slots: recorded in an `addressstep` line when not Alpha's 4 and the
    /// source recorded it or did not state it (a step given by `--address-step` to read a file
    /// of another tool is that file's, which records none).
    step: Option<u64>,
    version: (u64, u64),
    event: String,
    period: u64,
    load_addr: u64,
    size: u64,
    file: Option<String>,
}

impl OwnedLines {
    /// The owned values for `event` of `image`, with slots `step` apart and the last at
    /// `last`; warns of the size and period the model does not know.
    fn new(
        profile: &Profile,
        image: &Image,
        event: usize,
        step: u64,
        last: Option<u64>,
        findings: &mut Findings,
    ) -> Self {
        let spec = &event_specs(profile)[event];
        let version = match profile.meta.format_version {
            Some(v @ (0, _)) if is_dcpi_family(&profile.meta) => v,
            _ => (0, 7),
        };
        let size = image.size.unwrap_or_else(|| last.map(|l| l + step).unwrap_or(0));
        if image.size.is_none() {
            findings.detail(
                None,
                format!("dcpi: the image size is unknown; wrote tsize {size} (up to the last sample)"),
            );
        }
        let period = match spec.period {
            Some(p) => p,
            None => {
                findings.detail(
                    None,
                    format!("dcpi: the sampling period of '{}' is unknown; wrote period 1", spec.name),
                );
                1
            }
        };
        let stated_apart = profile.meta.address_step.is_some()
            && !profile.meta.headers.iter().any(|(k, _)| k == ADDRESS_STEP_KEY);
        OwnedLines {
            step: (step != 4 && !stated_apart).then_some(step),
            version,
            event: spec.name.clone(),
            period,
            load_addr: image.load_addr,
            size,
            file: image.file.map(|f| profile.file_name(f).to_string()),
        }
    }

    /// Whether `key` is a line the model owns.
    fn owns(key: &str) -> bool {
        matches!(key, "version" | "event" | "period" | "tstart" | "tsize" | "path" | ADDRESS_STEP_KEY)
    }

    /// The model's value of line `key` (`None` for a line it does not own, and for `path`
    /// where the image has no file).
    fn value(&self, key: &str) -> Option<String> {
        match key {
            "version" => Some(format!("pdb-{}.{:02}", self.version.0, self.version.1)),
            "event" => Some(self.event.clone()),
            "period" => Some(self.period.to_string()),
            "tstart" => Some(format!("{:x}", self.load_addr)),
            "tsize" => Some(self.size.to_string()),
            "path" => self.file.clone(),
            ADDRESS_STEP_KEY => self.step.map(|s| s.to_string()),
            _ => None,
        }
    }

    /// Whether the value `kept` of line `key` says what the model says.
    fn agrees(&self, key: &str, kept: &str) -> bool {
        match key {
            "version" => parse_version(kept) == Some(self.version),
            "event" => kept == self.event,
            "period" => kept.parse::<u64>().ok() == Some(self.period),
            "tstart" => u64::from_str_radix(kept, 16).ok() == Some(self.load_addr),
            "tsize" => kept.parse::<u64>().ok() == Some(self.size),
            "path" => self.file.as_deref() == Some(kept),
            _ => true,
        }
    }
}

/// The header lines, key and value: those the model kept, in their order (owned lines from the
/// model where it no longer agrees), then required lines it lacks, invented with a warning.
fn header_lines(
    profile: &Profile,
    image: &Image,
    owned: &OwnedLines,
    findings: &mut Findings,
) -> Vec<(String, String)> {
    let template: &[(String, String)] =
        if is_dcpi_family(&profile.meta) { &profile.meta.headers } else { &[] };
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    if !template.iter().any(|(k, _)| k == "version") {
        lines.push(("version".into(), owned.value("version").unwrap_or_default()));
        done.push("version");
    }
    for (key, kept) in template {
        let key = key.as_str();
        let is_owned = OwnedLines::owns(key);
        let once = is_owned || REQUIRED.contains(&key);
        if once && done.contains(&key) {
            if key == "path" {
                // Repeated `path` lines (as dcpicat shows them) are kept.
                lines.push((key.into(), kept.clone()));
            }
            continue;
        }
        done.push(key);
        if is_owned {
            match owned.value(key) {
                Some(v) if !owned.agrees(key, kept) => lines.push((key.into(), v)),
                Some(_) => lines.push((key.into(), kept.clone())),
                None => {} // a `path` line for an image the model names no file for
            }
        } else {
            lines.push((key.into(), kept.clone()));
        }
    }
    let mut invented = Vec::new();
    for key in REQUIRED.iter().copied().chain(["path", ADDRESS_STEP_KEY]) {
        if done.contains(&key) {
            continue;
        }
        let value = match owned.value(key) {
            Some(v) => v,
            None if key == "path" || key == ADDRESS_STEP_KEY => continue,
            None => {
                let v = match key {
                    "image" => format!("{:020x}", image.id),
                    "epoch" => "0000000000".into(),
                    "platform" => "unknown".into(),
                    _ => "0".into(),
                };
                invented.push(format!("{key} {v}"));
                v
            }
        };
        lines.push((key.into(), value));
    }
    if !invented.is_empty() {
        findings.detail(
            None,
            format!(
                "dcpi: the model does not say what these required header lines hold; wrote {}",
                invented.join(", ")
            ),
        );
    }
    lines
}

/// The header as the file holds it: `KEY VALUE` lines, then the `samples` line padded with
/// spaces so that the body starts at a multiple of 4 bytes.
fn header_text(lines: &[(String, String)]) -> Result<String> {
    let mut header = String::new();
    for (k, v) in lines {
        if v.contains('\n') || k.is_empty() || k.contains([' ', '\t', '\n']) || v.is_empty() {
            return Err(Error::unsupported(format!(
                "dcpi: the header line {k:?} {v:?} cannot be written as KEY VALUE"
            )));
        }
        header.push_str(k);
        header.push(' ');
        header.push_str(v);
        header.push('\n');
    }
    header.push_str("samples");
    while !(header.len() + 1).is_multiple_of(4) {
        header.push(' ');
    }
    header.push('\n');
    Ok(header)
}
