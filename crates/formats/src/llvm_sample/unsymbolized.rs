//! llvm-profgen's unsymbolized profile (see [`super`]).

use std::io::Write;

use super::write::{binary_of, refuse_without_addresses};
use crate::format::WriteOptions;
use cfghub_analysis::addresses::ElfLayout;
use cfghub_analysis::names::choose_binary;
use cfghub_analysis::repeats::add_up;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{EdgeKind, NodeRef, Profile};

/// Writes the chosen binary's executed ranges and taken branches with their counts, in
/// llvm-profgen's unsymbolized form (addresses as the binary states them).
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    refuse_without_addresses(profile, "llvm-unsymbolized")?;
    cfghub_analysis::totals::note_no_events(
        findings,
        "llvm-unsymbolized",
        profile,
        "llvm-profgen's input holds executed ranges and branches with counts, not the events' costs",
    );
    let opts = options.formats.get::<super::Options>();
    let Some(chosen) = choose_binary(profile, opts.image.as_deref(), opts.binary.as_deref())? else {
        return Ok(());
    };
    let (p, i) = chosen.places[0];
    // Addresses as the binary states them, which `--use-offset=0` asks for.
    let layout = binary_of(profile, &profile.processes[p].images[i as usize], options)
        .map_or_else(ElfLayout::default, |(_, layout)| layout);
    // The samples of one image without blocks, when their addresses increase row by row, are
    // the ranges in order already: a map of them took about 55 bytes a sampled address (a
    // 10 MB DCPI profile: 14x its size).
    let ranges_in_order = match chosen.places[..] {
        [(p, i)] if profile.processes[p].images[i as usize].blocks.is_empty() => {
            let image = &profile.processes[p].images[i as usize];
            let event = super::write::event_of(profile, options)?;
            samples_in_order(image, event, &layout).map(|count| (image, event, count))
        }
        _ => None,
    };
    if !chosen.others.is_empty() {
        let name = profile.image_name(&profile.processes[p].images[i as usize]);
        findings.detail(
            None,
            format!(
                "code of images other than {name} left out (the unsymbolized form is of one binary): {}",
                chosen.left_out_note()
            ),
        );
    }
    let io = |e: std::io::Error| Error::io("output", e);
    match ranges_in_order {
        Some((image, event, count)) => {
            // Samples of one image at increasing addresses: written as they are read.
            let mut out = std::io::BufWriter::new(&mut *out);
            writeln!(out, "{count}").map_err(io)?;
            image
                .costs
                .try_for_each_offset_and_value(event, |offset, value| {
                    let a = layout.address(image, offset);
                    match value {
                        0 => Ok(()),
                        _ => writeln!(out, "{a:x}-{a:x}:{value}"),
                    }
                })
                .map_err(io)?;
            out.flush().map_err(io)?;
        }
        None => {
            // The ranges are gathered, written and dropped before the branches are gathered:
            // the 21 MB `cc1plus` Callgrind profile's peak was 4 MB lower than with both
            // lists held at once.
            let mut ranges = Counted::default();
            for &(p, i) in &chosen.places {
                let image = &profile.processes[p].images[i as usize];
                let samples = match image.blocks.is_empty() {
                    true => Some(super::write::event_of(profile, options)?),
                    false => None,
                };
                add_ranges(&mut ranges, image, &layout, samples);
            }
            let ranges = ranges.summed();
            writeln!(out, "{}", ranges.len()).map_err(io)?;
            for ((s, e), c) in ranges {
                writeln!(out, "{s:x}-{e:x}:{c}").map_err(io)?;
            }
        }
    }
    let mut branches = Counted::default();
    for &(p, i) in &chosen.places {
        add_branches(&mut branches, &profile.processes[p], i, &layout);
    }
    let branches = branches.summed();
    writeln!(out, "{}", branches.len()).map_err(io)?;
    for ((s, t), c) in branches {
        writeln!(out, "{s:x}->{t:x}:{c}").map_err(io)?;
    }
    Ok(())
}

/// Counts of address pairs (ranges, branches), gathered as they come and then sorted and
/// summed per pair: 24 bytes a pair, where an ordered map of them took about 49 (the 21 MB
/// `cc1plus` Callgrind profile's 473,000 ranges and branches: 23.2 MB as two maps).
#[derive(Default)]
struct Counted(Vec<((u64, u64), u64)>);

impl Counted {
    fn add(&mut self, pair: (u64, u64), count: u64) {
        self.0.push((pair, count));
    }

    /// The pairs in order, each once with its counts summed (saturating).
    fn summed(mut self) -> Vec<((u64, u64), u64)> {
        add_up(&mut self.0, |&(pair, _)| pair, |kept, later| kept.1 = kept.1.saturating_add(later.1));
        self.0
    }
}

/// The number of `image`'s samples of `event` (rows with an address and a value) when their
/// addresses increase row by row, else `None`.
fn samples_in_order(image: &cfghub_model::ir::Image, event: usize, layout: &ElfLayout) -> Option<usize> {
    let (mut count, mut last) = (0, None);
    let Ok(()) = image.costs.try_for_each_offset_and_value(event, |offset, value| {
        let a = layout.address(image, offset);
        if value == 0 {
            return Ok(());
        }
        if last.is_some_and(|last| last >= a) {
            return Err(());
        }
        (count, last) = (count + 1, Some(a));
        Ok(())
    }) else {
        return None;
    };
    Some(count)
}

/// Adds the ranges of one process's image of the binary: its executed blocks, and the values
/// of event `samples` of its costs when asked.
fn add_ranges(
    ranges: &mut Counted,
    image: &cfghub_model::ir::Image,
    layout: &ElfLayout,
    samples: Option<usize>,
) {
    let address = |offset: u64| layout.address(image, offset);
    for b in image.blocks.iter().filter(|b| b.count.unwrap_or(0) > 0) {
        ranges.add((address(b.offset), address(b.last_instr())), b.count.unwrap_or(0));
    }
    if let Some(event) = samples {
        for cost in &image.costs {
            let (Some(offset), value) = (cost.offset, cost.value(event)) else { continue };
            if value > 0 {
                ranges.add((address(offset), address(offset)), value);
            }
        }
    }
}

/// Adds the branches of one process's image of the binary: its taken edges within it.
fn add_branches(
    branches: &mut Counted,
    process: &cfghub_model::ir::Process,
    image_index: u32,
    layout: &ElfLayout,
) {
    let image = &process.images[image_index as usize];
    let address = |offset: u64| layout.address(image, offset);
    for e in &process.edges {
        if e.kind == EdgeKind::FallThrough || e.kind.is_bypass() || e.kind == EdgeKind::CallBypass {
            continue;
        }
        let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else { continue };
        if s.image != image_index || t.image != image_index || e.total() == 0 {
            continue;
        }
        branches.add((address(process.block(s).last_instr()), address(process.block(t).offset)), e.total());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Cost, Event, Image, Process};

    /// The unsymbolized profile of one image's samples `(offset, value)`, in that row order.
    fn written(rows: &[(u64, u64)]) -> String {
        let mut profile = Profile { events: vec![Event::new("cycles")], ..Profile::default() };
        let mut image = Image { file: Some(profile.files.intern("/bin/app")), ..Image::default() };
        for &(offset, v) in rows {
            image.costs.push(Cost {
                offset: Some(offset),
                values: [v].into_iter().collect(),
                ..Cost::default()
            });
        }
        profile.processes.push(Process { images: vec![image], ..Process::default() });
        let mut out = Vec::new();
        write(&profile, &mut out, &WriteOptions::default(), &mut Findings::default()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn samples_are_ranges_in_address_order_whatever_the_rows_order() {
        // Rows at increasing addresses are written as they are read; others are gathered,
        // sorted and summed: the same text either way.
        assert_eq!(written(&[(0x10, 3), (0x20, 3), (0x30, 0)]), "2\n10-10:3\n20-20:3\n0\n");
        assert_eq!(written(&[(0x20, 3), (0x10, 2), (0x30, 0), (0x10, 1)]), "2\n10-10:3\n20-20:3\n0\n");
    }

    #[test]
    fn counted_pairs_come_out_in_order_each_once_with_saturating_sums() {
        let mut c = Counted::default();
        for (pair, n) in [((2, 1), 5), ((1, 9), 1), ((2, 1), u64::MAX), ((1, 2), 4), ((1, 9), 2)] {
            c.add(pair, n);
        }
        assert_eq!(c.summed(), [((1, 2), 4), ((1, 9), 3), ((2, 1), u64::MAX)]);
    }
}
