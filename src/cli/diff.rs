//! `cfghub diff BEFORE AFTER`: what changed between two profiles of the same kind.
//!
//! - Stack profiles (folded, DTrace, perf): inferno's differential flame graph (`-o diff.svg`;
//!   red grew, blue shrank, widths from AFTER), or its two-column folded form (`before after`
//!   per stack) with any other output name or on standard output.
//! - Other profiles (DCFG, Callgrind, DCPI, ...): a table of routines with self and inclusive
//!   cost before, after and the change, largest change of inclusive cost first.

pub mod routine_costs;

use std::io::Write;

use clap::Args;

use super::table::Table;
use cfghub_analysis::stacks::WrittenStacks;
use cfghub_formats::convert::{load, Loaded};
use cfghub_formats::format::{ReadOptions, WriteOptions};
use cfghub_formats::svg;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::{write_error, write_output};
use cfghub_model::ir::{decimal_text, Profile, StackValue};
use routine_costs::{routine_costs, uses_blocks, RoutineCost, INSTRUCTIONS};

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The profile before the change.
    pub before: String,
    /// The profile after the change.
    pub after: String,
    /// Output: a name ending in .svg draws a differential flame graph (stack profiles);
    /// anything else, or - (the default), gets text.
    #[arg(short, long, default_value = "-")]
    pub output: String,
    /// Format of both inputs; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// The event to compare (default: the first).
    #[arg(long)]
    pub event: Option<String>,
    /// Stack profiles: scale BEFORE to AFTER's total first, so that only the shape changes.
    #[arg(long)]
    pub normalize: bool,
    /// Title of the flame graph.
    #[arg(long)]
    pub title: Option<String>,
    /// How many routines the table lists (0: all).
    #[arg(long, default_value_t = 0)]
    pub top: usize,
    #[command(flatten)]
    pub symbols: super::symbols::SymbolArgs,
}

pub fn run(args: DiffArgs, quiet: bool) -> Result<i32> {
    let mut inputs = vec![args.before.as_str(), args.after.as_str()];
    inputs.extend(args.symbols.paths());
    cfghub_model::io::check_not_an_input(&args.output, &inputs)?;
    let mut before = load(&args.before, args.from.as_deref(), &ReadOptions::default())?;
    super::check_findings(&args.before, &before.findings, quiet)?;
    args.symbols.apply(&mut before, &args.before, quiet)?;
    let mut after = load(&args.after, args.from.as_deref(), &ReadOptions::default())?;
    super::check_findings(&args.after, &after.findings, quiet)?;
    args.symbols.apply(&mut after, &args.after, quiet)?;
    let stacks = |l: &Loaded| l.profile.processes.iter().any(|p| !p.stacks.is_empty());
    let mut findings = Findings::default();
    match (stacks(&before), stacks(&after)) {
        (true, true) => {
            let old = column(&before.profile, &args.event).map_err(|e| e.in_file(&args.before))?;
            let new = column(&after.profile, &args.event).map_err(|e| e.in_file(&args.after))?;
            let svg_out = args.output.ends_with(".svg");
            write_output(&args.output, &inputs, |out| {
                differential(&before.profile, old, &after.profile, new, &args, svg_out, out, &mut findings)
            })?;
        }
        (false, false) => {
            let table = cost_table(&before.profile, &after.profile, &args)?;
            write_output(&args.output, &inputs, |out| {
                out.write_all(table.as_bytes()).map_err(write_error(&args.output))
            })?;
        }
        _ => {
            let (with, without) =
                if stacks(&before) { (&args.before, &args.after) } else { (&args.after, &args.before) };
            return Err(Error::usage(format!(
                "{with} holds stacks and {without} does not: diff compares two profiles of the same kind"
            ))
            .with_hint(format!(
                "convert {without} to folded stacks first (cfghub convert {without} -o x.folded)"
            )));
        }
    }
    super::check_findings(&args.output, &findings, quiet)?;
    Ok(0)
}

/// The event column to compare: `--event`, else the first.
fn column(profile: &Profile, event: &Option<String>) -> Result<usize> {
    match event {
        Some(name) => profile.event_index(name).ok_or_else(|| {
            let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
            Error::usage(format!("a profile has no event '{name}'"))
                .with_hint(format!("its events: {}", names.join(", ")))
        }),
        None if profile.events.is_empty() => Err(Error::unsupported("a profile has no events to compare")),
        None => Ok(0),
    }
}

/// Feeds both profiles' stacks to inferno's differential folder, then (for SVG) to its flame
/// graph.
#[allow(clippy::too_many_arguments)]
fn differential(
    before: &Profile,
    old: usize,
    after: &Profile,
    new: usize,
    args: &DiffArgs,
    svg_out: bool,
    out: &mut dyn Write,
    findings: &mut Findings,
) -> Result<()> {
    let mut values: Vec<(StackValue, u8)> = Vec::new();
    for (p, e) in [(before, old), (after, new)] {
        for x in &p.processes {
            let places = x.stacks.decimals_of(e);
            values.extend(x.stacks.samples().map(|s| (s.values.get(e).copied().unwrap_or(0), places)));
        }
    }
    let scale = svg::LineUnits::of(values.into_iter());
    if scale.lossy() {
        findings.warn(None, "diff: values with more than 6 decimal digits are rounded to 6");
    }
    let text = |p: &Profile, col: usize| {
        let stacks = WrittenStacks::Model(std::borrow::Cow::Borrowed(p));
        svg::folded_lines(&stacks, &[col], scale).iter().collect::<Vec<_>>().join("\n")
    };
    let (ta, tb) = (text(before, old), text(after, new));
    let options = inferno::differential::Options { normalize: args.normalize, strip_hex: false };
    let mut merged = Vec::new();
    inferno::differential::from_readers(options, ta.as_bytes(), tb.as_bytes(), &mut merged)
        .map_err(|e| Error::io("diff", e))?;
    let merged = String::from_utf8(merged).map_err(|e| Error::input(format!("diff: {e}")))?;
    let mut lines: Vec<&str> = merged.lines().collect();
    lines.sort_unstable();
    if !svg_out {
        // `stack before after`, the counts scaled back to the profiles' own values.
        for l in lines {
            let mut parts = l.rsplitn(3, ' ');
            let (Some(y), Some(x), Some(stack)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            let back = |t: &str| {
                let mut text = Vec::new();
                decimal_text(t.parse::<StackValue>().unwrap_or(0), scale.digits(), &mut text);
                String::from_utf8(text).unwrap_or_default()
            };
            writeln!(out, "{stack} {} {}", back(x), back(y)).map_err(write_error(&args.output))?;
        }
        return Ok(());
    }
    let write_options = WriteOptions::default().with(svg::Options {
        title: Some(args.title.clone().unwrap_or_else(|| "Differential Flame Graph".to_string())),
        ..svg::Options::default()
    });
    let mut opt = svg::inferno_options(after, new, &write_options)?;
    if scale.per_unit() > 1.0 {
        opt.count_name = format!("\u{d7} {} {}", 1.0 / scale.per_unit(), opt.count_name);
    }
    inferno::flamegraph::from_lines(&mut opt, lines, out).map_err(|e| Error::io(&args.output, e))
}

fn cost_table(before: &Profile, after: &Profile, args: &DiffArgs) -> Result<String> {
    let (blocks_a, blocks_b) = (uses_blocks(before), uses_blocks(after));
    if blocks_a != blocks_b {
        return Err(Error::usage(
            "one profile counts instructions in basic blocks and the other holds costs per function: \
             diff compares two profiles of the same kind",
        ));
    }
    let (old, new) = if blocks_a {
        (0, 0)
    } else {
        (
            column(before, &args.event).map_err(|e| e.in_file(&args.before))?,
            column(after, &args.event).map_err(|e| e.in_file(&args.after))?,
        )
    };
    let unit = if blocks_a { INSTRUCTIONS.to_string() } else { after.events[new].name.clone() };
    let a = routine_costs(before, old);
    let b = routine_costs(after, new);
    let mut rows: Vec<(String, RoutineCost, RoutineCost)> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for c in a {
        index.insert(c.name.clone(), rows.len());
        rows.push((c.name.clone(), c, RoutineCost::default()));
    }
    for c in b {
        match index.get(&c.name) {
            Some(&i) => rows[i].2 = c,
            None => rows.push((c.name.clone(), RoutineCost::default(), c)),
        }
    }
    let delta = |x: u64, y: u64| i128::from(y) - i128::from(x);
    rows.sort_by(|x, y| {
        let dx = delta(x.1.inclusive, x.2.inclusive).abs();
        let dy = delta(y.1.inclusive, y.2.inclusive).abs();
        dy.cmp(&dx)
            .then(delta(y.1.self_cost, y.2.self_cost).abs().cmp(&delta(x.1.self_cost, x.2.self_cost).abs()))
            .then(x.0.cmp(&y.0))
    });
    if args.top > 0 {
        rows.truncate(args.top);
    }
    let mut table = Table::new(
        &["routine", "self before", "self after", "self change", "incl before", "incl after", "incl change"],
        &[1, 2, 3, 4, 5, 6],
    );
    let signed = |d: i128| if d > 0 { format!("+{d}") } else { d.to_string() };
    for (name, x, y) in rows {
        table.row(vec![
            name,
            x.self_cost.to_string(),
            y.self_cost.to_string(),
            signed(delta(x.self_cost, y.self_cost)),
            x.inclusive.to_string(),
            y.inclusive.to_string(),
            signed(delta(x.inclusive, y.inclusive)),
        ]);
    }
    let note = if blocks_a {
        "self: instructions executed in the routine; inclusive: the call graph's estimate (callee costs split by call counts)"
    } else {
        "self: the function's own cost; inclusive: self plus the inclusive cost of its calls as the profiles state it"
    };
    Ok(format!("costs in {unit}; {note}\n{}", table.render()))
}
