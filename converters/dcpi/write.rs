//! Writing a DCPI binary profile (version 0.07 unless the model says 0.06).
//!
//! The header lines the model kept ([`Meta::headers`](crate::ir::Meta::headers)) are written
//! back in their order, unknown lines included; the lines the model owns (`version`, `event`,
//! `period`, `tstart`, `tsize`, the first `path`) are written verbatim when the model still
//! agrees with them and from the model otherwise. Required lines the model has no value for
//! are written with neutral values and named in a warning. The `samples` line is padded with
//! spaces so the body starts at a multiple of 4 bytes.

use std::io::Write;

use super::by_offset::ByOffset;
use super::model::{choose_event, choose_image, event_specs, gcd, is_dcpi_family, step_of_gaps};
use super::read::{parse_version, REQUIRED};
use crate::error::{Error, Findings, Result};
use crate::ir::Profile;
use crate::registry::WriteOptions;

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
    let by_offset = ByOffset::new(&image.costs);
    // A cost takes part when its value for the event is non-zero, or when all its values are
    // zero (a slot a DCPI chunk stores with count 0).
    let takes_part = |v: &[u64]| v.get(event).is_some_and(|&x| x != 0) || v.iter().all(|&y| y == 0);
    if by_offset.without_offset > 0 {
        findings.warn(
            None,
            format!(
                "dcpi: {} cost(s) have no instruction address (function- or line-level costs) and are left out",
                by_offset.without_offset
            ),
        );
    }
    // First walk: what the file cannot hold, the gaps between slots, the last slot.
    let (mut gaps, mut last) = (0u64, None::<u64>);
    by_offset.try_for_each_address(takes_part, |offset, values| {
        let value = values.get(event).copied().unwrap_or(0);
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
    if step != 4 {
        findings.warn(
            None,
            format!("dcpi: sample slots are {step} bytes apart, which the file does not record; read it back with --address-step {step}"),
        );
    }

    let spec = &event_specs(profile)[event];
    let version = match profile.meta.format_version {
        Some(v @ (0, _)) if is_dcpi_family(&profile.meta) => v,
        _ => (0, 7),
    };
    let file = image.file.map(|f| profile.file_name(f).to_string());
    let size = image.size.unwrap_or_else(|| last.map(|l| l + step).unwrap_or(0));
    if image.size.is_none() {
        findings.warn(
            None,
            format!("dcpi: the image size is unknown; wrote tsize {size} (up to the last sample)"),
        );
    }
    let period = match spec.period {
        Some(p) => p,
        None => {
            findings.warn(
                None,
                format!("dcpi: the sampling period of '{}' is unknown; wrote period 1", spec.name),
            );
            1
        }
    };
    let model_value = |key: &str| -> Option<String> {
        match key {
            "version" => Some(format!("pdb-{}.{:02}", version.0, version.1)),
            "event" => Some(spec.name.clone()),
            "period" => Some(period.to_string()),
            "tstart" => Some(format!("{:x}", image.load_addr)),
            "tsize" => Some(size.to_string()),
            "path" => file.clone(),
            _ => None,
        }
    };
    let agrees = |key: &str, kept: &str| -> bool {
        match key {
            "version" => parse_version(kept) == Some(version),
            "event" => kept == spec.name,
            "period" => kept.parse::<u64>().ok() == Some(period),
            "tstart" => u64::from_str_radix(kept, 16).ok() == Some(image.load_addr),
            "tsize" => kept.parse::<u64>().ok() == Some(size),
            "path" => file.as_deref() == Some(kept),
            _ => true,
        }
    };

    let template: &[(String, String)] =
        if is_dcpi_family(&profile.meta) { &profile.meta.headers } else { &[] };
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    if !template.iter().any(|(k, _)| k == "version") {
        lines.push(("version".into(), model_value("version").unwrap_or_default()));
        done.push("version");
    }
    for (key, kept) in template {
        let key = key.as_str();
        let owned = matches!(key, "version" | "event" | "period" | "tstart" | "tsize" | "path");
        let once = owned || REQUIRED.contains(&key);
        if once && done.contains(&key) {
            if key == "path" {
                // Repeated `path` lines (as dcpicat shows them) are kept.
                lines.push((key.into(), kept.clone()));
            }
            continue;
        }
        done.push(key);
        if owned {
            match model_value(key) {
                Some(v) if !agrees(key, kept) => lines.push((key.into(), v)),
                Some(_) => lines.push((key.into(), kept.clone())),
                None => {} // a `path` line for an image the model names no file for
            }
        } else {
            lines.push((key.into(), kept.clone()));
        }
    }
    let mut invented = Vec::new();
    for key in REQUIRED.iter().copied().chain(["path"]) {
        if done.contains(&key) {
            continue;
        }
        let value = match model_value(key) {
            Some(v) => v,
            None if key == "path" => continue,
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
        findings.warn(
            None,
            format!(
                "dcpi: the model does not say what these required header lines hold; wrote {}",
                invented.join(", ")
            ),
        );
    }

    let mut header = String::new();
    for (k, v) in &lines {
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

    // Second walk: the chunks, each a run of slots `step` apart: their lengths first (the
    // length comes before the counts), then the file through a buffer.
    let mut chunks = Vec::new();
    let (mut start, mut len, mut prev) = (0u64, 0u64, None::<u64>);
    by_offset.try_for_each_address(takes_part, |offset, _| {
        match prev {
            Some(p) if offset == p + step && len < MOST_PER_CHUNK => len += 1,
            Some(_) => {
                chunks.push((start, len));
                (start, len) = (offset, 1);
            }
            None => (start, len) = (offset, 1),
        }
        prev = Some(offset);
        Ok::<(), Error>(())
    })?;
    if len > 0 {
        chunks.push((start, len));
    }
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    buf.extend_from_slice(header.as_bytes());
    let (mut nonzero, mut sum, mut kept) = (0u32, 0u32, 0u64);
    let mut chunks = chunks.into_iter();
    let mut left = 0;
    by_offset.try_for_each_address(takes_part, |_, values| {
        if left == 0 {
            let (offset, len) = chunks.next().expect("a chunk for every slot");
            buf.extend_from_slice(&(offset as u32).to_le_bytes());
            buf.extend_from_slice(&(len as u32).to_le_bytes());
            left = len;
        }
        left -= 1;
        let v = values.get(event).copied().unwrap_or(0) as u32;
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
    let why = "a DCPI file holds the samples at addresses of one event in one image";
    crate::analysis::totals::warn_kept(
        findings,
        "dcpi",
        profile,
        [(profile.events[event].name.as_str(), kept as f64)],
        why,
    );
    Ok(())
}
