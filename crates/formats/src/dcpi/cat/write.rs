//! Writing a dcpicat text dump: every event of the image with the most samples.

use std::io::Write;

use crate::dcpi::by_offset::ByOffset;
use crate::dcpi::model::{base_name, choose_image, event_specs, is_dcpi_family};
use crate::dcpi::write::io_err;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::Profile;

/// Header keys of a binary profile that the dump expresses otherwise (or not at all).
const BINARY_ONLY: [&str; 6] = ["version", "tstart", "tsize", "period", "text_start", "text_size"];

/// Writes the dcpicat dump of the profile's image with the most samples: one line per sampled
/// address, a count per event.
pub fn write(profile: &Profile, out: &mut dyn Write, findings: &mut Findings) -> Result<()> {
    let image = choose_image(profile, &[], findings, "dcpicat")?;
    let n = profile.events.len();
    if n == 0 {
        return Err(Error::unsupported("dcpicat: the profile has no events"));
    }
    // One line per address, equal addresses summed, straight from the model: a first walk
    // for the totals the header gives, a second for the lines.
    let by_offset = ByOffset::new(&image.costs);
    if by_offset.without_offset > 0 {
        findings.warn(
            None,
            format!(
                "dcpicat: {} cost(s) have no instruction address and are left out",
                by_offset.without_offset
            ),
        );
    }
    let (totals, last) = totals_and_last(&by_offset, n)?;

    let mut text = String::new();
    let mut line = |k: &str, v: &str| {
        text.push_str(&format!("{k:<20} {v}\n"));
    };
    let file = image.file.map(|f| profile.file_name(f));
    let template: &[(String, String)] =
        if is_dcpi_family(&profile.meta) { &profile.meta.headers } else { &[] };
    if !template.iter().any(|(k, _)| k == "name") {
        if let Some(f) = file {
            line("name", base_name(f));
        }
    }
    let mut wrote_path = false;
    for (k, v) in template {
        if k == "event" || BINARY_ONLY.contains(&k.as_str()) {
            continue;
        }
        if k == "path" && !wrote_path {
            wrote_path = true;
            // The model's file wins over a kept line that no longer agrees.
            line("path", file.unwrap_or(v));
            continue;
        }
        line(k, v);
    }
    if !wrote_path {
        if let Some(f) = file {
            line("path", f);
        }
    }
    line("text_start", &format!("{:#014x}", image.load_addr));
    let size = image.size.unwrap_or_else(|| last.map(|l| l + 4).unwrap_or(0));
    if image.size.is_none() {
        findings.detail(
            None,
            format!("dcpicat: the image size is unknown; wrote text_size {size:#x} (up to the last sample)"),
        );
    }
    line("text_size", &format!("{size:#014x}"));
    event_lines(profile, &totals, &mut line, findings)?;
    let written: Vec<(String, f64)> =
        profile.events.iter().zip(&totals).map(|(e, &t)| (e.name.clone(), t as f64)).collect();
    cfghub_analysis::totals::note_left_out(
        findings,
        "dcpicat",
        &cfghub_analysis::totals::event_totals(profile),
        &written,
        "a dump holds the samples at addresses of one image",
    );
    out.write_all(text.as_bytes()).map_err(io_err)?;
    address_lines(out, &by_offset, image.load_addr, n)
}

/// Each of the `n` events' samples over every address, and the offset of the last address.
fn totals_and_last(by_offset: &ByOffset, n: usize) -> Result<(Vec<u64>, Option<u64>)> {
    let mut totals = vec![0u64; n];
    let mut last = None;
    by_offset.try_for_each_address(
        |_| true,
        |offset, values| {
            for (t, v) in totals.iter_mut().zip(values) {
                *t = t.saturating_add(*v);
            }
            last = Some(offset);
            Ok::<(), Error>(())
        },
    )?;
    Ok((totals, last))
}

/// The `event` lines: each event's total (`totals`) and `NAME:PERIOD:FRACTION`, a fraction of
/// 10000 (monitored all the time) where none is known and the bare name where the period is
/// not, with a warning for those. An event name with white space is refused.
fn event_lines(
    profile: &Profile,
    totals: &[u64],
    line: &mut impl FnMut(&str, &str),
    findings: &mut Findings,
) -> Result<()> {
    let mut guessed = Vec::new();
    let specs = event_specs(profile);
    for (e, spec) in specs.iter().enumerate() {
        if spec.name.contains([' ', '\t', '\n']) {
            return Err(Error::unsupported(format!(
                "dcpicat: the event name {:?} contains white space",
                spec.name
            )));
        }
        let described = match (spec.period, spec.fraction) {
            (Some(p), Some(z)) => format!("{}:{p}:{z}", spec.name),
            (Some(p), None) => {
                guessed.push(spec.name.as_str());
                format!("{}:{p}:10000", spec.name)
            }
            (None, _) => {
                guessed.push(spec.name.as_str());
                spec.name.clone()
            }
        };
        line("event", &format!("{} {described}", totals[e]));
    }
    if !guessed.is_empty() {
        findings.detail(
            None,
            format!(
                "dcpicat: no monitored fraction (or no period) known for {}; wrote 10000 (monitored all the time), or the bare name when the period is unknown",
                guessed.join(", ")
            ),
        );
    }
    Ok(())
}

/// Writes one line per address: the address (`load_addr` plus its offset) and its samples of
/// each of the `n` events, equal addresses summed; written out about 60 KiB at a time.
fn address_lines(out: &mut dyn Write, by_offset: &ByOffset, load_addr: u64, n: usize) -> Result<()> {
    let mut buf = String::with_capacity(64 * 1024);
    by_offset.try_for_each_address(
        |_| true,
        |offset, values| {
            use std::fmt::Write as _;
            let _ = write!(buf, "{:#014x}", load_addr.wrapping_add(offset));
            for e in 0..n {
                let _ = write!(buf, " {:>7}", values.get(e).copied().unwrap_or(0));
            }
            buf.push('\n');
            if buf.len() > 60 * 1024 {
                out.write_all(buf.as_bytes()).map_err(io_err)?;
                buf.clear();
            }
            Ok(())
        },
    )?;
    out.write_all(buf.as_bytes()).map_err(io_err)
}
