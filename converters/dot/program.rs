//! The whole-program view, laid out like Intel's `dcfg-to-dot`: process, image and routine
//! clusters (loops nested inside routines), a node per block, an edge per control-flow edge,
//! with filters that keep big programs readable.

use std::fmt::Write as _;

use super::common::{
    block_counts, block_label, event_index, header, heat_attrs, pen_width, push_escaped, quote, ImageIndex,
    Styled,
};
use super::Options;
use crate::analysis::{names, routines};
use crate::error::{Findings, Result};
use crate::ir::{EdgeClass, NodeRef, Profile};

/// Whether `filters` (image ids or substrings of the image's path) select an image.
fn image_selected(filters: &[String], id: u64, path: &str) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| f.parse::<u64>().ok() == Some(id) || path.contains(f.as_str()))
}

/// Writes the whole-program view.
pub fn write(profile: &Profile, options: &Options, out: &mut String, findings: &mut Findings) -> Result<()> {
    let event = event_index(profile, options.event.as_deref())?;
    let title = match &profile.meta.command {
        Some(c) => format!("control flow of {c}"),
        None => "control flow".to_string(),
    };
    header(out, "dcfg", &title);
    // The network-simplex ranking of big cluster graphs fails in Graphviz ("trouble in
    // init_rank"); the newer ranking handles edges between clusters.
    out.push_str("  newrank=true;\n");
    let mut hidden_blocks = 0usize;
    let mut hidden_edges = 0usize;
    let mut any_cost = false;
    let mut drawn_total = 0usize;
    for process in &profile.processes {
        if !options.processes.is_empty() && !options.processes.contains(&process.pid) {
            continue;
        }
        let pid = process.pid;
        let all = routines::derive(process, options.recompute);
        let counts: Vec<Vec<u64>> = (0..process.images.len()).map(|i| block_counts(process, i)).collect();
        let indexes: Vec<ImageIndex<'_>> = process.images.iter().map(|i| ImageIndex::new(i, event)).collect();
        let selected: Vec<bool> = process
            .images
            .iter()
            .map(|i| image_selected(&options.images, i.id, &profile.image_name(i)))
            .collect();
        // Shown: selected image and executed at least min_count times.
        let shown = |b: crate::ir::BlockRef| -> bool {
            selected.get(b.image as usize).copied().unwrap_or(false)
                && counts[b.image as usize].get(b.block as usize).is_some_and(|&c| c >= options.min_count)
        };
        let heat = |b: crate::ir::BlockRef| -> u64 {
            let blk = &process.images[b.image as usize].blocks[b.block as usize];
            if event.is_some() {
                indexes[b.image as usize].block_cost(blk)
            } else {
                counts[b.image as usize][b.block as usize]
            }
        };
        let heat_max = process.blocks().filter(|(r, _)| shown(*r)).map(|(r, _)| heat(r)).max().unwrap_or(0);
        any_cost |= event.is_some() && heat_max > 0;
        let node = |b: crate::ir::BlockRef| {
            format!("p{pid}_b{}", process.images[b.image as usize].blocks[b.block as usize].id)
        };
        let block_line = |out: &mut String, b: crate::ir::BlockRef, indent: &str| {
            let idx = &indexes[b.image as usize];
            let blk = &process.images[b.image as usize].blocks[b.block as usize];
            let ev = options.event.as_deref().filter(|_| event.is_some()).map(|n| (n, idx.block_cost(blk)));
            let label = block_label(profile, idx, blk, counts[b.image as usize][b.block as usize], ev);
            let _ = writeln!(
                out,
                "{indent}{} [label={}, {}];",
                node(b),
                quote(&label),
                heat_attrs(heat(b), heat_max)
            );
        };
        let _ = writeln!(out, "  subgraph cluster_p{pid} {{");
        let _ = writeln!(out, "    label={}; color=blue;", quote(&format!("Process {pid}")));
        let mut drawn = vec![Vec::<bool>::new(); process.images.len()];
        for (ii, image) in process.images.iter().enumerate() {
            drawn[ii] = vec![false; image.blocks.len()];
            if !selected[ii] {
                hidden_blocks += image.blocks.len();
                continue;
            }
            let idx = &indexes[ii];
            let _ = writeln!(out, "    subgraph cluster_p{pid}_i{ii} {{");
            let mut label = format!(
                "Image {}\n{}\nload-addr = {:#x}",
                image.id,
                profile.image_name(image),
                image.load_addr
            );
            if let Some(size) = image.size {
                let _ = write!(label, "\nsize = {size}");
            }
            let _ = writeln!(out, "      label={}; color=plum;", quote(&label));
            for routine in all[ii].iter() {
                let r = |b: u32| crate::ir::BlockRef { image: ii as u32, block: b };
                let members: Vec<u32> = routine
                    .nodes
                    .iter()
                    .copied()
                    .filter(|&b| (b as usize) < image.blocks.len() && shown(r(b)))
                    .collect();
                hidden_blocks += routine.nodes.len() - members.len();
                if members.is_empty() {
                    continue;
                }
                let Some(entry) = image.blocks.get(routine.entry as usize) else { continue };
                let _ = writeln!(out, "      subgraph cluster_p{pid}_r{} {{", entry.id);
                let name = names::code_name(profile, image, &idx.symbols, entry.offset);
                let _ = writeln!(
                    out,
                    "        label={}; color=violet;",
                    quote(&format!(
                        "Routine {}\nname='{name}'\naddr={:#x}",
                        entry.id,
                        image.load_addr.wrapping_add(entry.offset)
                    ))
                );
                // Innermost loop of each member, then loops as nested clusters.
                let mut innermost: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
                for (li, l) in routine.loops.iter().enumerate() {
                    for &b in &l.nodes {
                        let slot = innermost.entry(b).or_insert(li);
                        if routine.loops[*slot].nodes.len() > l.nodes.len() {
                            *slot = li;
                        }
                    }
                }
                for &b in &members {
                    if !innermost.contains_key(&b) {
                        block_line(out, r(b), "        ");
                        drawn[ii][b as usize] = true;
                    }
                }
                let mut stack: Vec<(usize, usize, bool)> = routine
                    .loops
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.parent.map_or(true, |p| !routine.loops.iter().any(|o| o.head == p)))
                    .map(|(li, _)| (li, 0usize, false))
                    .rev()
                    .collect();
                while let Some((li, depth, closing)) = stack.pop() {
                    let indent = "  ".repeat(depth + 4);
                    let l = &routine.loops[li];
                    if closing {
                        let _ = writeln!(out, "{indent}}}");
                        continue;
                    }
                    let head = image.blocks.get(l.head as usize).map_or(0, |b| b.id);
                    let _ = writeln!(out, "{indent}subgraph cluster_p{pid}_loop{head} {{");
                    let _ = writeln!(
                        out,
                        "{indent}  label={}; style=\"rounded,dashed\"; color=\"#c00000\";",
                        quote(&format!("loop BB {head}"))
                    );
                    for &b in &members {
                        if innermost.get(&b) == Some(&li) {
                            block_line(out, r(b), &format!("{indent}  "));
                            drawn[ii][b as usize] = true;
                        }
                    }
                    stack.push((li, depth, true));
                    for (ci, c) in routine.loops.iter().enumerate().rev() {
                        if c.parent == Some(l.head) && ci != li {
                            stack.push((ci, depth + 1, false));
                        }
                    }
                }
                let _ = writeln!(out, "      }}");
            }
            let _ = writeln!(out, "    }}");
        }
        drawn_total += drawn.iter().map(|d| d.iter().filter(|&&x| x).count()).sum::<usize>();
        // Edges, with endpoints outside the drawn clusters drawn as free nodes (as Intel does).
        let mut extra: Vec<bool> = Vec::new();
        let back: std::collections::HashSet<(u32, u32, u32)> = all
            .iter()
            .enumerate()
            .flat_map(|(ii, rs)| {
                rs.iter()
                    .flat_map(|r| r.loops.iter())
                    .flat_map(move |l| l.back_edge_sources.iter().map(move |&s| (ii as u32, s, l.head)))
                    .collect::<Vec<_>>()
            })
            .collect();
        let edge_max = process
            .edges
            .iter()
            .filter(|e| e.total() >= options.min_count)
            .map(|e| e.total())
            .max()
            .unwrap_or(0);
        let valid = |r: NodeRef| match r {
            NodeRef::Block(b) => {
                process.images.get(b.image as usize).is_some_and(|i| (b.block as usize) < i.blocks.len())
            }
            _ => true,
        };
        let is_drawn = |r: NodeRef| match r {
            NodeRef::Block(b) => drawn[b.image as usize][b.block as usize],
            _ => false,
        };
        let mut specials = [false; 3];
        for e in &process.edges {
            let count = e.total();
            if !valid(e.source) || !valid(e.target) {
                continue;
            }
            if count < options.min_count || !(is_drawn(e.source) || is_drawn(e.target)) {
                hidden_edges += 1;
                continue;
            }
            let mut name = |r: NodeRef, out: &mut String| -> String {
                match r {
                    NodeRef::Block(b) => {
                        if !drawn[b.image as usize][b.block as usize] {
                            let key = process.images[..b.image as usize]
                                .iter()
                                .map(|i| i.blocks.len())
                                .sum::<usize>()
                                + b.block as usize;
                            if extra.len() <= key {
                                extra.resize(key + 1, false);
                            }
                            if !extra[key] {
                                extra[key] = true;
                                block_line(out, b, "    ");
                            }
                        }
                        node(b)
                    }
                    NodeRef::Symbol(s) => {
                        let label = process
                            .images
                            .get(s.image as usize)
                            .and_then(|i| i.symbols.get(s.symbol as usize))
                            .map_or_else(|| "?".to_string(), |s| s.name.clone());
                        let id = format!("p{pid}_s{}_{}", s.image, s.symbol);
                        let _ = writeln!(out, "    {id} [label={}, shape=ellipse];", quote(&label));
                        id
                    }
                    special => {
                        let (i, word) = match special {
                            NodeRef::Start => (0, "START"),
                            NodeRef::End => (1, "END"),
                            _ => (2, "UNKNOWN"),
                        };
                        if !specials[i] {
                            specials[i] = true;
                            let _ = writeln!(out, "    p{pid}_{word} [label=\"{word}\", shape=ellipse, style=filled, fillcolor=\"#eeeeee\"];");
                        }
                        format!("p{pid}_{word}")
                    }
                }
            };
            let s = name(e.source, out);
            let t = name(e.target, out);
            let is_back = match (e.source, e.target) {
                (NodeRef::Block(a), NodeRef::Block(b)) => {
                    a.image == b.image && back.contains(&(a.image, a.block, b.block))
                }
                _ => false,
            };
            let class = EdgeClass::of(e.kind, is_back);
            let mut label = format!("EDGE{}\\n", e.id);
            push_escaped(&mut label, e.kind.as_str());
            let _ = write!(label, "\\nexecutions={count}");
            let _ = writeln!(
                out,
                "  {s} -> {t} [label=\"{label}\", {}, penwidth={}];",
                class.style(),
                pen_width(count, edge_max)
            );
        }
        let _ = writeln!(out, "  }} /* p{pid} */");
    }
    out.push_str("}\n");
    if drawn_total > 1000 {
        findings.warn(
            None,
            format!(
                "dot: {drawn_total} blocks in clusters may take Graphviz minutes to lay out; \
                 narrow the picture with --image, --min-count or cfghub dot --routine"
            ),
        );
    }
    super::common::warn_no_costs(findings, options.event.as_deref(), any_cost || options.event.is_none());
    if hidden_blocks > 0 || hidden_edges > 0 {
        findings.warn(
            None,
            format!("dot: {hidden_blocks} block(s) and {hidden_edges} edge(s) left out by --image/--process/--min-count"),
        );
    }
    Ok(())
}
