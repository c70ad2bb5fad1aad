//! The call-graph view: routines with self and inclusive cost, calls with counts, pruned the
//! way gprof2dot prunes (`--node-fraction`, `--edge-fraction` of the total cost).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::common::{header, heat_attrs, pen_width, quote, thousands, DotText};
use super::Options;
use cfghub_analysis::{callgraph, names, routines};
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::Profile;

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Writes the call graph of every selected process.
pub fn write(
    profile: &Profile,
    options: &Options,
    out: &mut DotText<'_>,
    findings: &mut Findings,
) -> Result<()> {
    if let Some(ev) = &options.event {
        findings.warn(
            None,
            format!("dot: the call graph measures executed instructions; --event {ev} is ignored"),
        );
    }
    header(out, "callgraph", "call graph (inclusive % (self %), instructions executed)");
    let mut dropped_nodes = 0usize;
    let mut dropped_arcs = 0usize;
    for (pi, process) in profile.processes.iter().enumerate() {
        if !options.processes.is_empty() && !options.processes.contains(&process.pid) {
            continue;
        }
        let rs = routines::derive(process, options.recompute);
        let g = callgraph::build_with(profile, process, &rs);
        let total = g.total_instrs();
        let node_min = (options.node_fraction * total as f64).ceil() as u64;
        let edge_min = (options.edge_fraction * total as f64).ceil() as u64;
        let keep: Vec<bool> =
            g.nodes.iter().map(|n| n.inclusive_instrs >= node_min && n.inclusive_instrs > 0).collect();
        dropped_nodes += keep.iter().filter(|&&k| !k).count();
        // Arcs merged over call sites for the picture.
        let mut merged: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
        for a in &g.arcs {
            let m = merged.entry((a.caller, a.callee)).or_default();
            m.0 = m.0.saturating_add(a.count);
            m.1 = m.1.saturating_add(a.inclusive_instrs);
        }
        let max_arc = merged.values().map(|m| m.1).max().unwrap_or(0);
        let prefix = if profile.processes.len() > 1 { format!("p{pi}_") } else { String::new() };
        for (i, n) in g.nodes.iter().enumerate() {
            if !keep[i] {
                continue;
            }
            let image = &process.images[n.image as usize];
            let mut label = format!(
                "{}\n{}\n{:.2}%\n({:.2}%)\n{} / {} instrs",
                n.name,
                names::image_base_name(profile, image),
                percent(n.inclusive_instrs, total),
                percent(n.self_instrs, total),
                thousands(n.inclusive_instrs),
                thousands(n.self_instrs)
            );
            if let Some(c) = n.cycle {
                let _ = write!(label, "\ncycle {}", c + 1);
            }
            let _ = writeln!(
                out,
                "  {prefix}n{i} [label={}, {}];",
                quote(&label),
                heat_attrs(n.inclusive_instrs, total)
            );
        }
        for (&(caller, callee), &(count, incl)) in &merged {
            if !keep[caller as usize] || !keep[callee as usize] || incl < edge_min {
                dropped_arcs += 1;
                continue;
            }
            let _ = writeln!(
                out,
                "  {prefix}n{caller} -> {prefix}n{callee} [label={}, penwidth={}, color=\"#1f3f7f\"];",
                quote(&format!("{:.2}%\n{}×", percent(incl, total), thousands(count))),
                pen_width(incl, max_arc)
            );
        }
    }
    out.push_str("}\n");
    if dropped_nodes > 0 || dropped_arcs > 0 {
        findings.warn(
            None,
            format!(
                "dot: {dropped_nodes} routine(s) below --node-fraction {} and {dropped_arcs} call arc(s) below \
                 --edge-fraction {} or to hidden routines left out",
                options.node_fraction, options.edge_fraction
            ),
        );
    }
    super::common::warn_without_blocks(profile, findings);
    Ok(())
}
