//! The call-graph view: routines with self and inclusive cost, calls with counts, pruned the
//! way gprof2dot prunes (`--node-fraction`, `--edge-fraction` of the total cost).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::common::{header, heat_attrs, pen_width, quote, thousands, DotText};
use super::Options;
use cfghub_analysis::events::{self, Unnamed};
use cfghub_analysis::{callgraph, names, routines};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{to_f64, Profile, StackValue};

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Writes the call graph of every selected process: from the routines and calls of its blocks,
/// or, for a profile of stacks without blocks (perf, pprof, folded), from its stacks.
pub fn write(
    profile: &Profile,
    options: &Options,
    out: &mut DotText<'_>,
    findings: &mut Findings,
) -> Result<()> {
    let has_blocks = profile.processes.iter().any(|p| p.images.iter().any(|i| !i.blocks.is_empty()));
    if !has_blocks && profile.processes.iter().any(|p| !p.stacks.is_empty()) {
        return write_from_stacks(profile, options, out);
    }
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
        // What --node-fraction and --edge-fraction ask for (gprof2dot's and pprof's defaults).
        findings.detail(
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

/// The call graph of a profile of stacks, as `go tool pprof -dot` draws one: a box per function
/// with its self and total values of one event (`--event`, else the profile's default) and
/// their shares of all samples, an arrow per call with the values of the samples whose stack
/// holds it (each sample once however deep its recursion), functions whose total is below
/// `--node-fraction` of all samples and calls below `--edge-fraction` left out, as pprof's
/// `-nodefraction` and `-edgefraction` leave them out, and a legend that says what is shown.
fn write_from_stacks(profile: &Profile, options: &Options, out: &mut DotText<'_>) -> Result<()> {
    let event = *events::chosen(profile, options.event.as_deref(), Unnamed::StatedDefault)?
        .first()
        .ok_or_else(|| Error::unsupported("the stacks have no event to draw"))?;
    let name = &profile.events[event].name;
    let unit = cfghub_model::ir::event_unit(&profile.meta, name);
    header(out, "callgraph", &format!("call graph of the stacks ({name})"));
    for (pi, process) in profile.processes.iter().enumerate() {
        if process.stacks.is_empty()
            || (!options.processes.is_empty() && !options.processes.contains(&process.pid))
        {
            continue;
        }
        let stacks = &process.stacks;
        let (w, decimals) = (stacks.width(), stacks.decimals_of(event));
        if event >= w {
            continue;
        }
        let value = |v: StackValue| to_f64(v, decimals);
        let sums = cfghub_analysis::stacks::frame_totals(stacks, profile.frames.len());
        let whole = value(sums.totals[event]);
        // Cut-offs in whole units of the event, as pprof truncates them.
        let unit_step = 10f64.powi(-(decimals as i32));
        let cutoff = |fraction: f64| (fraction * whole.abs() / unit_step).trunc() * unit_step;
        let (node_min, edge_min) = (cutoff(options.node_fraction), cutoff(options.edge_fraction));
        let kept: Vec<bool> = (0..profile.frames.len())
            .map(|f| {
                sums.seen[f] && value(sums.total[f * w + event]).abs() >= node_min.max(f64::MIN_POSITIVE)
            })
            .collect();
        // The calls between the functions drawn: where functions left out lie between two
        // drawn ones, the call joins those two (pprof's residual edge, dashed).
        let arcs = cfghub_analysis::stacks::call_arcs(stacks, &|f| kept[f as usize]);
        let mut arcs: Vec<((u32, u32), f64, bool)> = arcs
            .into_iter()
            .map(|(call, arc)| (call, value(arc.values[event]), arc.through_left_out))
            .collect();
        // Heaviest first, then by the callers' and callees' names, as pprof orders a node's calls.
        let names = |call: (u32, u32)| (profile.frames.get(call.0), profile.frames.get(call.1));
        arcs.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then_with(|| names(a.0).cmp(&names(b.0))));
        let prefix = if profile.processes.len() > 1 { format!("p{pi}_") } else { String::new() };
        let heat = |v: f64| heat_attrs(v.abs().round() as u64, whole.abs().round() as u64);
        let share = |v: f64| if whole != 0.0 { v * 100.0 / whole } else { 0.0 };
        let smallest = (0..profile.frames.len())
            .filter(|&f| kept[f])
            .map(|f| match value(sums.self_cost[f * w + event]).abs() {
                0.0 => value(sums.total[f * w + event]).abs(),
                own => own,
            })
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let scale = Scale::of(unit, if smallest.is_finite() { smallest } else { 0.0 }, whole);
        let mut shown = 0.0;
        for f in (0..profile.frames.len()).filter(|&f| kept[f]) {
            let (own, total) = (value(sums.self_cost[f * w + event]), value(sums.total[f * w + event]));
            shown += own;
            let function = profile.frames.get(f as u32);
            let mut label = format!("{function}\n{}", scale.amount(own));
            if own != 0.0 {
                let _ = write!(label, " ({:.2}%)", share(own));
            }
            if total != own {
                let _ = write!(label, "\nof {} ({:.2}%)", scale.amount(total), share(total));
            }
            // The tooltip as pprof writes it: the function and its total.
            let tooltip = format!("{function} ({})", scale.amount(total));
            let _ = writeln!(
                out,
                "  {prefix}f{f} [label={}, tooltip={}, {}];",
                quote(&label),
                quote(&tooltip),
                heat(total)
            );
        }
        let largest = arcs.first().map_or(0.0, |a| a.1.abs());
        let before = arcs.len();
        arcs.retain(|a| a.1.abs() >= edge_min);
        let dropped_arcs = before - arcs.len();
        without_redundant_joins(&mut arcs);
        for &((caller, callee), v, through_left_out) in &arcs {
            let tooltip = format!(
                "{} {} {} ({})",
                profile.frames.get(caller),
                if through_left_out { "..." } else { "->" },
                profile.frames.get(callee),
                scale.amount(v)
            );
            let _ = writeln!(
                out,
                "  {prefix}f{caller} -> {prefix}f{callee} [label={}, tooltip={}, penwidth={}, color=\"#1f3f7f\"{}];",
                quote(&scale.amount(v)),
                quote(&tooltip),
                pen_width(v.abs().round() as u64, largest.round() as u64),
                if through_left_out { ", style=dashed" } else { "" }
            );
        }
        let dropped_nodes = (0..profile.frames.len()).filter(|&f| sums.seen[f] && !kept[f]).count();
        let mut legend = format!(
            "{}Type: {name}\nShowing nodes accounting for {}, {:.2}% of {} total",
            if profile.processes.len() > 1 { format!("process {}\n", process.pid) } else { String::new() },
            scale.amount(shown),
            share(shown),
            scale.amount(whole)
        );
        if dropped_nodes > 0 {
            let _ = write!(legend, "\nDropped {dropped_nodes} nodes (total < {})", scale.amount(node_min));
        }
        if dropped_arcs > 0 {
            let _ = write!(legend, "\nDropped {dropped_arcs} edges (< {})", scale.amount(edge_min));
        }
        let _ = writeln!(out, "  {prefix}legend [shape=note, label={}];", quote(&legend));
    }
    out.push_str("}\n");
    Ok(())
}

/// Leaves out each call that joins two functions through functions left out (a dashed arrow)
/// where the callee can be reached from the caller another way, as pprof simplifies its
/// pictures: for each callee, its lightest incoming calls first, up to the first that is a
/// call seen on the stacks. `arcs` are sorted heaviest first.
fn without_redundant_joins(arcs: &mut Vec<((u32, u32), f64, bool)>) {
    let mut removed = vec![false; arcs.len()];
    let callees: std::collections::BTreeSet<u32> = arcs.iter().map(|a| a.0 .1).collect();
    for callee in callees {
        // Incoming calls, lightest first (the list is heaviest first).
        let incoming: Vec<usize> = (0..arcs.len()).rev().filter(|&k| arcs[k].0 .1 == callee).collect();
        for k in incoming {
            if !arcs[k].2 {
                break;
            }
            // Is the caller reached going back up from the callee without this call?
            let caller = arcs[k].0 .0;
            let mut seen = std::collections::HashSet::from([callee]);
            let mut queue = std::collections::VecDeque::from([callee]);
            let mut reached = false;
            while let Some(n) = queue.pop_front() {
                for j in (0..arcs.len()).filter(|&j| j != k && !removed[j] && arcs[j].0 .1 == n) {
                    let source = arcs[j].0 .0;
                    if source == caller {
                        reached = true;
                        break;
                    }
                    if seen.insert(source) {
                        queue.push_back(source);
                    }
                }
                if reached {
                    break;
                }
            }
            removed[k] = reached;
        }
    }
    let mut k = 0;
    arcs.retain(|_| {
        k += 1;
        !removed[k - 1]
    });
}

/// How a call graph writes values of its event: every value of one graph in one unit, chosen
/// as pprof chooses it (the unit of the smallest value drawn, unless that is a hundredth of
/// the total or less and the total has a larger one): `980ms` and `20ms`, or `14250us` and
/// `250us`. Times scale from the event's unit, bytes by 1024 (`kB`, `MB`); counts are plain.
struct Scale {
    factor: f64,
    suffix: &'static str,
}

impl Scale {
    /// The units of the event's kind, as (size in the event's unit, suffix), smallest first.
    fn units(unit: Option<&str>) -> Vec<(f64, &'static str)> {
        let times = |ns: f64| {
            vec![
                (1.0 / ns, "ns"),
                (1e3 / ns, "us"),
                (1e6 / ns, "ms"),
                (1e9 / ns, "s"),
                (60e9 / ns, "mins"),
                (3600e9 / ns, "hrs"),
            ]
        };
        match unit {
            Some("nanoseconds") => times(1.0),
            Some("microseconds") => times(1e3),
            Some("milliseconds") => times(1e6),
            Some("seconds") => times(1e9),
            Some("bytes") => {
                vec![
                    (1.0, "B"),
                    (1024.0, "kB"),
                    (1048576.0, "MB"),
                    (1073741824.0, "GB"),
                    (1099511627776.0, "TB"),
                ]
            }
            _ => vec![(1.0, "")],
        }
    }

    /// The largest unit in which `v` is at least 1.
    fn fitting(units: &[(f64, &'static str)], v: f64) -> (f64, &'static str) {
        units.iter().rev().find(|(f, _)| v.abs() / f >= 1.0).copied().unwrap_or(units[0])
    }

    fn of(unit: Option<&str>, smallest: f64, total: f64) -> Scale {
        let units = Scale::units(unit);
        let smallest = if smallest > 0.0 { smallest } else { total.abs() };
        let (low, high) = (Scale::fitting(&units, smallest), Scale::fitting(&units, total));
        let (factor, suffix) = if low.1 != high.1 && smallest * 100.0 < total.abs() {
            Scale::fitting(&units, 100.0 * smallest)
        } else {
            low
        };
        Scale { factor, suffix }
    }

    /// `v` in this unit: two decimals, without `.00`; 0 bare.
    fn amount(&self, v: f64) -> String {
        if v == 0.0 {
            return "0".into();
        }
        let s = format!("{:.2}", v / self.factor);
        format!("{}{}", s.strip_suffix(".00").unwrap_or(&s), self.suffix)
    }
}
