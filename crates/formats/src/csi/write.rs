//! Writing `.debug_PT` text as csi-cc 1.4.0 lays it out, for any routine of the model.
//!
//! Per routine: `#`, its name, the `EXIT` block, the `ENTRY` block, the other blocks breadth
//! first from the entry, `$`, then each block's out-edges in that order. Blocks carry one line
//! number per instruction where the model knows it (the block's own lines in an image without
//! addresses, else the source lines its address range covers) and `-1` where a path is
//! recorded (a block whose path ends by a back edge or at the exit, when the model does not
//! state it). Increments and weights are the input's (CSI), else the Ball-Larus numbering of
//! [`cfghub_analysis::ball_larus`]; routines without a single exit block get one, numbered
//! after their largest block id.

use std::io::Write;

use cfghub_analysis::ball_larus::PathError;
use cfghub_analysis::names::{self, SymbolIndex};
use cfghub_analysis::path_graph::{routine_paths, RoutinePaths};
use cfghub_analysis::routines;
use cfghub_analysis::source::SourceIndex;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{Image, LineItem, Profile, Routine};

/// Most times one source line is repeated for the instructions it covers.
const MAX_REPEAT: u64 = 4096;

pub fn write(profile: &Profile, out: &mut dyn Write, findings: &mut Findings) -> Result<()> {
    cfghub_analysis::totals::note_no_events(
        findings,
        "csi",
        profile,
        "CSI path-tracing metadata numbers paths and holds no costs",
    );
    let mut text = Vec::with_capacity(1 << 16);
    let mut skipped: Vec<String> = Vec::new();
    let mut with_addresses = false;
    let mut counted = false;
    let mut calls = false;
    let mut coverage = false;
    let mut files = false;
    for process in &profile.processes {
        let all = routines::all(process);
        counted |= process.edges.iter().any(|e| e.total() > 0);
        calls |= process.edges.iter().any(|e| !e.kind.is_intra_routine());
        for (ii, image) in process.images.iter().enumerate() {
            let rs: &[Routine] = &all[ii];
            with_addresses |= !image.no_addresses && !image.blocks.is_empty();
            coverage |= !image.coverage.is_empty();
            files |= image.source_lines.iter().any(|l| l.file.is_some());
            counted |= image.blocks.iter().any(|b| b.count.is_some_and(|c| c > 0));
            let symbols = SymbolIndex::new(image);
            let source = SourceIndex::new(image);
            for (r, rp) in rs.iter().zip(routine_paths(process, ii, rs)) {
                let name = names::routine_name(profile, image, &symbols, r);
                match write_routine(image, &source, &name, &rp, &mut text) {
                    Ok(()) => {}
                    Err(e) => skipped.push(format!("{name} ({e})")),
                }
            }
        }
    }
    if !skipped.is_empty() {
        let shown: Vec<&str> = skipped.iter().take(5).map(String::as_str).collect();
        findings.warn(
            None,
            format!(
                "csi: {} routine(s) cannot be numbered and are left out: {}{}",
                skipped.len(),
                shown.join(", "),
                if skipped.len() > 5 { ", ..." } else { "" }
            ),
        );
    }
    if with_addresses {
        findings.detail(None, "csi: block addresses and sizes are not expressed in .debug_PT");
    }
    if counted {
        findings.detail(
            None,
            "csi: execution counts are not expressed in .debug_PT (it describes paths, not runs)",
        );
    }
    if calls {
        findings
            .detail(None, "csi: calls, returns and edges between routines are not expressed in .debug_PT");
    }
    if files {
        findings.detail(None, "csi: source file names are not expressed in .debug_PT (line numbers only)");
    }
    if coverage {
        findings.detail(
            None,
            "csi: coverage arrays (.debug_BBC, .debug_CC, .debug_FC) are not part of .debug_PT",
        );
    }
    out.write_all(&text).map_err(|e| Error::io("output", e))
}

fn write_routine(
    image: &Image,
    source: &SourceIndex,
    name: &str,
    rp: &RoutinePaths,
    out: &mut Vec<u8>,
) -> Result<(), PathError> {
    let numbers = rp.numbers()?;
    let g = &rp.graph;
    let n = g.nodes as usize;
    let ids = node_ids(image, rp);
    // Out-edges per node, in edge order.
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut ends_path = vec![false; n];
    for (i, e) in g.edges.iter().enumerate() {
        out_edges[e.source as usize].push(i);
        if e.back || e.target == g.exit {
            ends_path[e.source as usize] = true;
        }
    }
    let order = node_order(rp, &out_edges);
    out.extend_from_slice(b"#\n");
    out.extend_from_slice(name.as_bytes());
    out.push(b'\n');
    let mut buf = itoa::Buffer::new();
    for &v in &order {
        out.extend_from_slice(buf.format(ids[v as usize]).as_bytes());
        if v == g.exit {
            out.extend_from_slice(b"|EXIT\n");
            continue;
        }
        if v == g.entry {
            out.extend_from_slice(b"|ENTRY");
        }
        let items = block_items(image, source, rp.blocks[v as usize], ends_path[v as usize]);
        if items.is_empty() {
            out.extend_from_slice(b"|NULL");
        }
        for item in &items {
            match item {
                LineItem::Line(l) => {
                    out.push(b'|');
                    out.extend_from_slice(buf.format(*l).as_bytes());
                }
                LineItem::PathEnd => out.extend_from_slice(b"|-1"),
            }
        }
        out.push(b'\n');
    }
    out.extend_from_slice(b"$\n");
    for &v in &order {
        for &e in &out_edges[v as usize] {
            let edge = &g.edges[e];
            let num = numbers[e];
            out.extend_from_slice(buf.format(ids[edge.source as usize]).as_bytes());
            out.extend_from_slice(if edge.back { b"~>" } else { b"->" });
            out.extend_from_slice(buf.format(ids[edge.target as usize]).as_bytes());
            out.push(b'|');
            out.extend_from_slice(buf.format(num.increment).as_bytes());
            out.push(b'$');
            out.extend_from_slice(buf.format(num.weight).as_bytes());
            out.push(b'\n');
        }
    }
    Ok(())
}

/// Each node's id in the file: the format's own id of its block, a fresh one (past the
/// largest) for a virtual exit.
fn node_ids(image: &Image, rp: &RoutinePaths) -> Vec<u64> {
    let mut ids: Vec<u64> = rp
        .blocks
        .iter()
        .map(|b| match b {
            Some(b) => {
                image.lines_of(*b).and_then(|l| l.local_id).unwrap_or_else(|| image.blocks[*b as usize].id)
            }
            None => 0,
        })
        .collect();
    if let Some(slot) = rp.blocks.iter().position(Option::is_none) {
        ids[slot] = ids.iter().max().map_or(0, |m| m + 1);
    }
    ids
}

/// The order nodes are written in: exit, entry, then breadth first over their out-edges
/// (`out_edges`, in edge order), nodes not reached from there each starting a walk of its own.
fn node_order(rp: &RoutinePaths, out_edges: &[Vec<usize>]) -> Vec<u32> {
    let g = &rp.graph;
    let n = g.nodes as usize;
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    seen[g.exit as usize] = true;
    order.push(g.exit);
    if !seen[g.entry as usize] {
        seen[g.entry as usize] = true;
        order.push(g.entry);
    }
    let mut i = 1;
    while i < order.len() {
        let v = order[i] as usize;
        for &e in &out_edges[v] {
            let t = g.edges[e].target;
            if !seen[t as usize] {
                seen[t as usize] = true;
                order.push(t);
            }
        }
        i += 1;
        if i == order.len() {
            if let Some(v) = seen.iter().position(|s| !s) {
                seen[v] = true;
                order.push(v as u32);
            }
        }
    }
    order
}

/// A block's line items: stated ones, else one line per instruction of the source lines its
/// address range covers, with `-1` at the end when a path ends there.
fn block_items(image: &Image, source: &SourceIndex, block: Option<u32>, ends_path: bool) -> Vec<LineItem> {
    let Some(b) = block else { return Vec::new() };
    if let Some(lines) = image.lines_of(b) {
        return lines.items.clone();
    }
    let mut items = Vec::new();
    if !image.no_addresses {
        let blk = &image.blocks[b as usize];
        for i in source.overlapping(image, blk.offset, u64::from(blk.size)) {
            let l = &image.source_lines[i as usize];
            // A range inside the block: one line per instruction; else the line once.
            let inside =
                l.offset >= blk.offset && l.offset + u64::from(l.size) <= blk.offset + u64::from(blk.size);
            let times = if inside { u64::from(l.num_instrs).clamp(1, MAX_REPEAT) } else { 1 };
            // Line 0 is "no line" (DWARF, Callgrind).
            for _ in 0..times {
                if l.line != 0 {
                    items.push(LineItem::Line(l.line));
                }
            }
        }
    }
    if ends_path {
        items.push(LineItem::PathEnd);
    }
    items
}
