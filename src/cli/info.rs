//! `cfghub info FILE`: what a profile holds, as aligned tables or `--json`.
//!
//! The JSON schema (stable; documented in docs/user-guide.md):
//! ```text
//! { "file": str, "format": str, "format_version": str|null, "events": [str],
//!   "processes": [ { "pid": int, "threads": int, "instr_count": int|null,
//!       "thread_instr_counts": [int], "executed_instructions": int,
//!       "images": [ { "id": int, "path": str, "load_address": "0x..", "size": int|null,
//!                     "symbols": int, "blocks": int, "routines": int, "loops": int,
//!                     "source_lines": int, "costs": int } ],
//!       "edges": int, "edges_by_kind": { KIND: { "edges": int, "count": int } },
//!       "stacks": int,
//!       "top_routines": [ { "name": str, "image": str, "entry": "0x..", "blocks": int,
//!                           "instructions": int, "percent": float } ],
//!       "top_loops": [ { "routine": str, "head": int, "address": "0x..", "blocks": int,
//!                        "depth": int, "instructions": int, "percent": float } ] } ] }
//! ```

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;

use super::table::Table;
use crate::analysis::{counts, names, routines};
use crate::convert::load;
use crate::error::Result;
use crate::ir::{Process, Profile};
use crate::registry::ReadOptions;

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Input file, or - for standard input.
    pub input: String,
    /// Input format; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// Print JSON for scripts instead of tables.
    #[arg(long)]
    pub json: bool,
    /// How many routines and loops to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub file: String,
    pub format: String,
    pub format_version: Option<String>,
    pub events: Vec<String>,
    pub processes: Vec<ProcessReport>,
}

#[derive(Serialize, Debug)]
pub struct ProcessReport {
    pub pid: u64,
    pub threads: usize,
    pub instr_count: Option<u64>,
    pub thread_instr_counts: Vec<u64>,
    pub executed_instructions: u64,
    pub images: Vec<ImageReport>,
    pub edges: usize,
    pub edges_by_kind: BTreeMap<String, KindReport>,
    pub stacks: usize,
    pub top_routines: Vec<RoutineReport>,
    pub top_loops: Vec<LoopReport>,
}

#[derive(Serialize, Debug)]
pub struct ImageReport {
    pub id: u64,
    pub path: String,
    pub load_address: String,
    pub size: Option<u64>,
    pub symbols: usize,
    pub blocks: usize,
    pub routines: usize,
    pub loops: usize,
    pub source_lines: usize,
    pub costs: usize,
}

#[derive(Serialize, Debug, Default)]
pub struct KindReport {
    pub edges: usize,
    pub count: u64,
}

#[derive(Serialize, Debug)]
pub struct RoutineReport {
    pub name: String,
    pub image: String,
    pub entry: String,
    pub blocks: usize,
    pub instructions: u64,
    pub percent: f64,
}

#[derive(Serialize, Debug)]
pub struct LoopReport {
    pub routine: String,
    pub head: u64,
    pub address: String,
    pub blocks: usize,
    pub depth: usize,
    pub instructions: u64,
    pub percent: f64,
}

pub fn run(args: InfoArgs, quiet: bool) -> Result<i32> {
    let loaded = load(&args.input, args.from.as_deref(), &ReadOptions::default())?;
    if !quiet {
        for w in loaded.findings.items.iter() {
            eprintln!("cfghub: {}: {w}", args.input);
        }
    }
    let report = build(&args.input, loaded.format.name(), &loaded.profile, args.top);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("report serialises"));
    } else {
        print!("{}", render(&report));
    }
    Ok(0)
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 10000.0 / whole as f64).round() / 100.0
    }
}

/// Builds the report for a profile (`top` routines and loops per process).
pub fn build(file: &str, format: &str, profile: &Profile, top: usize) -> Report {
    Report {
        file: file.to_string(),
        format: format.to_string(),
        format_version: profile.meta.format_version.map(|(a, b)| format!("{a}.{b:02}")),
        events: profile.events.iter().map(|e| e.name.clone()).collect(),
        processes: profile.processes.iter().map(|p| process_report(profile, p, top)).collect(),
    }
}

fn process_report(profile: &Profile, process: &Process, top: usize) -> ProcessReport {
    let executed = counts::executed_instructions(process);
    let all_routines = routines::all(process);
    let mut images = Vec::new();
    for (i, image) in process.images.iter().enumerate() {
        let rs = &all_routines[i];
        images.push(ImageReport {
            id: image.id,
            path: profile.image_name(image),
            load_address: format!("{:#x}", image.load_addr),
            size: image.size,
            symbols: image.symbols.len(),
            blocks: image.blocks.len(),
            routines: rs.len(),
            loops: rs.iter().map(|r| r.loops.len()).sum(),
            source_lines: image.source_lines.len(),
            costs: image.costs.len(),
        });
    }
    let mut by_kind: BTreeMap<String, KindReport> = BTreeMap::new();
    for e in &process.edges {
        let k = by_kind.entry(e.kind.as_str().to_string()).or_default();
        k.edges += 1;
        k.count = k.count.saturating_add(e.total());
    }
    let mut top_routines = Vec::new();
    let mut top_loops = Vec::new();
    for (i, image) in process.images.iter().enumerate() {
        let index = names::SymbolIndex::new(image);
        let base = names::image_base_name(profile, image);
        for r in all_routines[i].iter() {
            let instrs = |nodes: &[u32]| -> u64 {
                nodes.iter().map(|&b| image.blocks[b as usize].executed_instrs()).sum()
            };
            let entry = &image.blocks[r.entry as usize];
            let name = names::code_name(profile, image, &index, entry.offset);
            let instructions = instrs(&r.nodes);
            top_routines.push(RoutineReport {
                name: name.clone(),
                image: base.clone(),
                entry: format!("{:#x}", image.load_addr.wrapping_add(entry.offset)),
                blocks: r.nodes.len(),
                instructions,
                percent: percent(instructions, executed),
            });
            for l in &r.loops {
                let head = &image.blocks[l.head as usize];
                let mut depth = 1;
                let mut parent = l.parent;
                while let Some(p) = parent {
                    depth += 1;
                    if depth > r.loops.len() {
                        break;
                    }
                    parent = r.loops.iter().find(|o| o.head == p).and_then(|o| o.parent);
                }
                let instructions = instrs(&l.nodes);
                top_loops.push(LoopReport {
                    routine: name.clone(),
                    head: head.id,
                    address: format!("{:#x}", image.load_addr.wrapping_add(head.offset)),
                    blocks: l.nodes.len(),
                    depth,
                    instructions,
                    percent: percent(instructions, executed),
                });
            }
        }
    }
    top_routines.sort_by(|a, b| b.instructions.cmp(&a.instructions).then_with(|| a.name.cmp(&b.name)));
    top_routines.truncate(top);
    top_loops.sort_by(|a, b| b.instructions.cmp(&a.instructions).then_with(|| a.head.cmp(&b.head)));
    top_loops.truncate(top);
    ProcessReport {
        pid: process.pid,
        threads: process.thread_count(),
        instr_count: process.instr_count,
        thread_instr_counts: process.thread_instr_counts.clone(),
        executed_instructions: executed,
        images,
        edges: process.edges.len(),
        edges_by_kind: by_kind,
        stacks: process.stacks.len(),
        top_routines,
        top_loops,
    }
}

/// The report as aligned text tables.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(&format!("file:     {}\nformat:   {}", report.file, report.format));
    if let Some(v) = &report.format_version {
        out.push_str(&format!(" {v}"));
    }
    out.push('\n');
    if !report.events.is_empty() {
        out.push_str(&format!("events:   {}\n", report.events.join(" ")));
    }
    out.push_str(&format!("processes: {}\n", report.processes.len()));
    for p in &report.processes {
        out.push_str(&format!("\nprocess {}: {} thread(s)", p.pid, p.threads));
        if let Some(n) = p.instr_count {
            out.push_str(&format!(", INSTR_COUNT {n}"));
        }
        out.push('\n');
        if p.thread_instr_counts.len() > 1 {
            let per: Vec<String> = p.thread_instr_counts.iter().map(|c| c.to_string()).collect();
            out.push_str(&format!("  instructions per thread: {}\n", per.join(" ")));
        }
        out.push_str(&format!(
            "  instructions executed in blocks (NUM_INSTRS x COUNT): {}\n",
            p.executed_instructions
        ));
        if p.stacks > 0 {
            out.push_str(&format!("  stacks: {}\n", p.stacks));
        }
        let mut t = Table::new(
            &["image", "path", "load address", "size", "symbols", "blocks", "routines", "loops"],
            &[0, 3, 4, 5, 6, 7],
        );
        for i in &p.images {
            t.row(vec![
                i.id.to_string(),
                i.path.clone(),
                i.load_address.clone(),
                i.size.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
                i.symbols.to_string(),
                i.blocks.to_string(),
                i.routines.to_string(),
                i.loops.to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&indent(&t.render()));
        if p.edges > 0 {
            let mut t = Table::new(&["edge kind", "edges", "traversals"], &[1, 2]);
            for (k, v) in &p.edges_by_kind {
                t.row(vec![k.clone(), v.edges.to_string(), v.count.to_string()]);
            }
            t.row(vec![
                "total".into(),
                p.edges.to_string(),
                p.edges_by_kind.values().map(|v| v.count).sum::<u64>().to_string(),
            ]);
            out.push('\n');
            out.push_str(&indent(&t.render()));
        }
        if !p.top_routines.is_empty() {
            let mut t = Table::new(&["routine", "image", "entry", "blocks", "instructions", "%"], &[3, 4, 5]);
            for r in &p.top_routines {
                t.row(vec![
                    r.name.clone(),
                    r.image.clone(),
                    r.entry.clone(),
                    r.blocks.to_string(),
                    r.instructions.to_string(),
                    format!("{:.2}", r.percent),
                ]);
            }
            out.push_str("\n  top routines by instructions executed\n");
            out.push_str(&indent(&t.render()));
        }
        if !p.top_loops.is_empty() {
            let mut t = Table::new(
                &["loop head", "address", "routine", "depth", "blocks", "instructions", "%"],
                &[0, 3, 4, 5, 6],
            );
            for l in &p.top_loops {
                t.row(vec![
                    l.head.to_string(),
                    l.address.clone(),
                    l.routine.clone(),
                    l.depth.to_string(),
                    l.blocks.to_string(),
                    l.instructions.to_string(),
                    format!("{:.2}", l.percent),
                ]);
            }
            out.push_str("\n  top loops by instructions executed\n");
            out.push_str(&indent(&t.render()));
        }
    }
    out
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}
