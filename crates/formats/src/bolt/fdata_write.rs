//! Writing `.fdata` (see the module documentation of [`super`]).

use std::collections::BTreeMap;
use std::io::Write;

use super::records::{add_fall_throughs_inside_blocks, model_records, Namer, Record};
use crate::format::WriteOptions;
use cfghub_analysis::events::{self, Unnamed};
use cfghub_analysis::names::{choose_binary, ChosenBinary};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::Profile;

/// Writes the LBR form when the profile has edges between blocks, else the `no_lbr` form of
/// its samples at addresses.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    cfghub_analysis::names::require_code_addresses(profile, "fdata")?;
    let opts = options.formats.get::<super::Options>();
    let Some(chosen) = choose_binary(profile, opts.image.as_deref(), opts.binary.as_deref())? else {
        return Ok(());
    };
    let mut records = model_records(profile, &chosen, true, findings);
    if records.is_empty() {
        return write_no_lbr(profile, &chosen, out, options, findings);
    }
    let (p, i) = chosen.places[0];
    let namer = Namer::new(profile, &profile.processes[p].images[i as usize], opts.binary.as_deref());
    add_fall_throughs_inside_blocks(profile, &chosen, &namer, &mut records);
    // A branch and a fall-through between the same two instructions (a jump to the next
    // one) are one line, as BOLT adds them up.
    cfghub_analysis::repeats::add_up_runs(&mut records, |r| (r.from, r.to), Record::add);
    let io = |e: std::io::Error| Error::io("output", e);
    let mut unnamed = 0u64;
    // Written as named (the output file is replaced only once all is written): a copy of the
    // text took 14 MB more converting the 21 MB cc1plus Callgrind profile.
    for r in &records {
        match (namer.name(r.from), namer.name(r.to)) {
            (Some((f, fo)), Some((t, to))) if plain(f) && plain(t) => {
                writeln!(out, "1 {f} {fo:x} 1 {t} {to:x} {} {}", r.mispredicts, r.count).map_err(io)?;
            }
            _ => unnamed += 1,
        }
    }
    warn_unnamed(findings, unnamed);
    cfghub_analysis::totals::note_no_events(
        findings,
        "fdata",
        profile,
        "a BOLT profile holds branch and fall-through counts, not the events' costs",
    );
    Ok(())
}

/// `no_lbr EVENT`, then one line per named address with its samples of the event, in the
/// chosen binary of every process.
fn write_no_lbr(
    profile: &Profile,
    chosen: &ChosenBinary,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let event =
        events::chosen(profile, options.event.as_deref(), Unnamed::First)?.first().copied().unwrap_or(0);
    let event_name =
        profile.events.get(event).map_or("samples", |e| e.name.as_str()).replace(char::is_whitespace, "_");
    let mut sums: BTreeMap<(String, u64), u64> = BTreeMap::new();
    let mut unnamed = 0u64;
    let (p, i) = chosen.places[0];
    let binary = options.formats.get::<super::Options>().binary;
    let namer = Namer::new(profile, &profile.processes[p].images[i as usize], binary.as_deref());
    for &(p, i) in &chosen.places {
        for cost in &profile.processes[p].images[i as usize].costs {
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
    warn_unnamed(findings, unnamed);
    let elsewhere = profile.processes.iter().enumerate().any(|(q, process)| {
        process.images.iter().enumerate().any(|(j, image)| {
            !chosen.holds(q, j as u32) && image.costs.iter().any(|c| c.offset.is_some() && c.value(event) > 0)
        })
    });
    if elsewhere {
        let name = profile.image_name(&profile.processes[p].images[i as usize]);
        findings.detail(
            None,
            format!(
                "samples in images other than {name} left out (BOLT optimizes one binary): {}",
                chosen.left_out_note()
            ),
        );
    }
    let written: u64 = sums.values().fold(0u64, |a, &b| a.saturating_add(b));
    let event_label = profile.events.get(event).map_or("samples", |e| e.name.as_str());
    cfghub_analysis::totals::note_left_out(
        findings,
        "fdata",
        &cfghub_analysis::totals::event_totals(profile),
        &[(event_label.to_string(), written as f64)],
        "the no_lbr form holds one event's samples at addresses a symbol names",
    );
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
    !name.is_empty()
        && !name.contains(char::is_whitespace)
        && !cfghub_analysis::symbolize::apply::is_placeholder(name)
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
