//! llvm-profgen's unsymbolized profile (see [`super`]).

use std::collections::BTreeMap;
use std::io::Write;

use super::write::{binary_of, refuse_without_addresses};
use crate::analysis::addresses::ElfLayout;
use crate::analysis::names::choose_binary;
use crate::error::{Error, Findings, Result};
use crate::ir::{EdgeKind, NodeRef, Profile};
use crate::registry::WriteOptions;

pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    refuse_without_addresses(profile, "llvm-unsymbolized")?;
    crate::analysis::totals::warn_no_events(
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
    let mut ranges: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut branches: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &(p, i) in &chosen.places {
        add_image(&mut ranges, &mut branches, profile, &profile.processes[p], i, &layout, options)?;
    }
    if !chosen.others.is_empty() {
        let name = profile.image_name(&profile.processes[p].images[i as usize]);
        findings.warn(
            None,
            format!(
                "code of images other than {name} left out (the unsymbolized form is of one binary): {}",
                chosen.left_out_note()
            ),
        );
    }
    let io = |e: std::io::Error| Error::io("output", e);
    writeln!(out, "{}", ranges.len()).map_err(io)?;
    for ((s, e), c) in ranges {
        writeln!(out, "{s:x}-{e:x}:{c}").map_err(io)?;
    }
    writeln!(out, "{}", branches.len()).map_err(io)?;
    for ((s, t), c) in branches {
        writeln!(out, "{s:x}->{t:x}:{c}").map_err(io)?;
    }
    Ok(())
}

/// Adds one process's image of the binary: its blocks (else its samples) as ranges, its taken
/// edges as branches.
fn add_image(
    ranges: &mut BTreeMap<(u64, u64), u64>,
    branches: &mut BTreeMap<(u64, u64), u64>,
    profile: &Profile,
    process: &crate::ir::Process,
    image_index: u32,
    layout: &ElfLayout,
    options: &WriteOptions,
) -> Result<()> {
    let image = &process.images[image_index as usize];
    let address = |offset: u64| layout.address(image, offset);
    for b in image.blocks.iter().filter(|b| b.count.unwrap_or(0) > 0) {
        let v = ranges.entry((address(b.offset), address(b.last_instr()))).or_default();
        *v = v.saturating_add(b.count.unwrap_or(0));
    }
    if image.blocks.is_empty() {
        let event = super::write::event_of(profile, options)?;
        for cost in &image.costs {
            let (Some(offset), value) = (cost.offset, cost.value(event)) else { continue };
            if value > 0 {
                let v = ranges.entry((address(offset), address(offset))).or_default();
                *v = v.saturating_add(value);
            }
        }
    }
    for e in &process.edges {
        if e.kind == EdgeKind::FallThrough || e.kind.is_bypass() || e.kind == EdgeKind::CallBypass {
            continue;
        }
        let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else { continue };
        if s.image != image_index || t.image != image_index || e.total() == 0 {
            continue;
        }
        let key = (address(process.block(s).last_instr()), address(process.block(t).offset));
        let v = branches.entry(key).or_default();
        *v = v.saturating_add(e.total());
    }
    Ok(())
}
