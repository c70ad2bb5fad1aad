//! Writing `.fdata` (see the module documentation of [`super`]).

use std::collections::BTreeMap;
use std::io::Write;

use super::records::{binary_image, model_records, refuse_without_addresses, Namer};
use crate::error::{Error, Findings, Result};
use crate::ir::Profile;
use crate::registry::WriteOptions;

/// Writes the LBR form when the profile has edges between blocks, else the `no_lbr` form of
/// its samples at addresses.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    refuse_without_addresses(profile, "fdata")?;
    let records = model_records(profile, true, findings);
    let io = |e: std::io::Error| Error::io("output", e);
    if records.is_empty() {
        return write_no_lbr(profile, out, options, findings);
    }
    let process = &profile.processes[0];
    let namer = Namer::new(profile, &process.images[records[0].from.0 as usize]);
    let mut unnamed = 0u64;
    let mut lines = Vec::with_capacity(records.len());
    for r in &records {
        match (namer.name(r.from.1), namer.name(r.to.1)) {
            (Some((f, fo)), Some((t, to))) if plain(f) && plain(t) => {
                lines.push(format!("1 {f} {fo:x} 1 {t} {to:x} {} {}\n", r.mispredicts, r.count));
            }
            _ => unnamed += 1,
        }
    }
    warn_unnamed(findings, unnamed);
    for l in lines {
        out.write_all(l.as_bytes()).map_err(io)?;
    }
    Ok(())
}

/// `no_lbr EVENT`, then one line per named address with its samples of the event.
fn write_no_lbr(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let event = match &options.event {
        Some(name) => profile
            .event_index(name)
            .ok_or_else(|| Error::usage(format!("the profile has no event '{name}'")))?,
        None => 0,
    };
    let event_name =
        profile.events.get(event).map_or("samples", |e| e.name.as_str()).replace(char::is_whitespace, "_");
    let mut sums: BTreeMap<(String, u64), u64> = BTreeMap::new();
    let mut unnamed = 0u64;
    if let Some(process) = profile.processes.first() {
        if let Some(binary) = binary_image(process) {
            let image = &process.images[binary as usize];
            let namer = Namer::new(profile, image);
            for cost in &image.costs {
                let (Some(offset), value) = (cost.offset, cost.value(event)) else { continue };
                if value == 0 {
                    continue;
                }
                match namer.name(offset) {
                    Some((name, off)) if plain(name) => {
                        let v = sums.entry((name.to_string(), off)).or_default();
                        *v = v.saturating_add(value);
                    }
                    _ => unnamed += 1,
                }
            }
        }
    }
    warn_unnamed(findings, unnamed);
    let io = |e: std::io::Error| Error::io("output", e);
    writeln!(out, "no_lbr {event_name}").map_err(io)?;
    for ((name, off), count) in sums {
        writeln!(out, "1 {name} {off:x} {count}").map_err(io)?;
    }
    Ok(())
}

/// A name BOLT can read back and find in the binary: not empty, no whitespace, not a
/// stand-in for a missing name (`0x401090`).
fn plain(name: &str) -> bool {
    !name.is_empty() && !name.contains(char::is_whitespace) && !crate::symbolize::apply::is_placeholder(name)
}

fn warn_unnamed(findings: &mut Findings, unnamed: u64) {
    if unnamed > 0 {
        findings.warn(
            None,
            format!(
                "{unnamed} records at addresses no symbol covers (or named with spaces) left out: \
                 name them with --symbols BINARY"
            ),
        );
    }
}
