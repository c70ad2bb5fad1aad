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
    let mut collapsed_routines = 0usize;
    let mut collapsed_blocks = 0usize;
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
        // Beyond `max_blocks` blocks shown one by one, the largest routines (of the libraries
        // first) are drawn as one node each: `collapsed[image][routine]`, and the node of each of their blocks.
        // A block of several routines (shared code) is drawn in the first that holds it.
        let mut owner: Vec<Vec<u32>> =
            process.images.iter().map(|i| vec![u32::MAX; i.blocks.len()]).collect();
        for (ii, rs) in all.iter().enumerate() {
            for (ri, routine) in rs.iter().enumerate() {
                for &b in &routine.nodes {
                    if let Some(o) = owner[ii].get_mut(b as usize) {
                        if *o == u32::MAX {
                            *o = ri as u32;
                        }
                    }
                }
            }
        }
        let members_of = |ii: usize, ri: usize| -> Vec<u32> {
            all[ii][ri]
                .nodes
                .iter()
                .copied()
                .filter(|&b| {
                    owner[ii].get(b as usize) == Some(&(ri as u32))
                        && shown(crate::ir::BlockRef { image: ii as u32, block: b })
                })
                .collect()
        };
        let mut sizes: Vec<(usize, usize, usize)> = Vec::new();
        for (ii, rs) in all.iter().enumerate() {
            if !selected[ii] {
                continue;
            }
            for ri in 0..rs.len() {
                sizes.push((members_of(ii, ri).len(), ii, ri));
            }
        }
        let mut collapsed: Vec<Vec<bool>> = all.iter().map(|rs| vec![false; rs.len()]).collect();
        let mut left: usize = sizes.iter().map(|s| s.0).sum();
        if options.max_blocks > 0 && left > options.max_blocks {
            // The program's own image (the first) is kept whole longest; then larger first.
            sizes.sort_by(|a, b| {
                (a.1 == 0).cmp(&(b.1 == 0)).then(b.0.cmp(&a.0)).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
            });
            for &(n, ii, ri) in &sizes {
                if left <= options.max_blocks || n <= 1 {
                    break;
                }
                collapsed[ii][ri] = true;
                left -= n;
                collapsed_routines += 1;
                collapsed_blocks += n;
            }
        }
        let mut collapsed_node: Vec<Vec<Option<u64>>> =
            process.images.iter().map(|i| vec![None; i.blocks.len()]).collect();
        for (ii, rs) in all.iter().enumerate() {
            for (ri, routine) in rs.iter().enumerate() {
                let Some(entry) = process.images[ii].blocks.get(routine.entry as usize) else { continue };
                if collapsed[ii][ri] {
                    for b in members_of(ii, ri) {
                        collapsed_node[ii][b as usize].get_or_insert(entry.id);
                    }
                }
            }
        }
        any_cost |= event.is_some() && heat_max > 0;
        let node = |b: crate::ir::BlockRef| {
            format!("p{pid}_b{}", process.images[b.image as usize].blocks[b.block as usize].id)
        };
        let block_line = |out: &mut String, b: crate::ir::BlockRef, indent: &str| {
            let idx = &indexes[b.image as usize];
            let blk = &process.images[b.image as usize].blocks[b.block as usize];
            let ev = options.event.as_deref().filter(|_| event.is_some()).map(|n| (n, idx.block_cost(blk)));
            let label = block_label(profile, idx, b.block, counts[b.image as usize][b.block as usize], ev);
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
            let mut label = if image.no_addresses {
                format!("Image {}\n{}\nno addresses", image.id, profile.image_name(image))
            } else {
                format!(
                    "Image {}\n{}\nload-addr = {:#x}",
                    image.id,
                    profile.image_name(image),
                    image.load_addr
                )
            };
            if let Some(size) = image.size {
                let _ = write!(label, "\nsize = {size}");
            }
            let _ = writeln!(out, "      label={}; color=plum;", quote(&label));
            for (ri, routine) in all[ii].iter().enumerate() {
                let r = |b: u32| crate::ir::BlockRef { image: ii as u32, block: b };
                let members = members_of(ii, ri);
                hidden_blocks += routine
                    .nodes
                    .iter()
                    .filter(|&&b| owner[ii].get(b as usize) == Some(&(ri as u32)))
                    .count()
                    - members.len();
                if members.is_empty() {
                    continue;
                }
                let Some(entry) = image.blocks.get(routine.entry as usize) else { continue };
                if collapsed[ii][ri] {
                    // One node for the whole routine: its blocks, and the instructions they
                    // executed.
                    let name = names::code_name(profile, image, &idx.symbols, entry.offset);
                    let executed: u64 = members
                        .iter()
                        .map(|&b| {
                            let blk = &image.blocks[b as usize];
                            u64::from(blk.num_instrs).saturating_mul(counts[ii][b as usize])
                        })
                        .fold(0u64, |a, x| a.saturating_add(x));
                    let hottest = members.iter().map(|&b| heat(r(b))).max().unwrap_or(0);
                    let _ = writeln!(
                        out,
                        "      p{pid}_r{} [label={}, shape=box3d, {}];",
                        entry.id,
                        quote(&format!(
                            "Routine {}\nname='{name}'\naddr={:#x}\n{} blocks collapsed\n{executed} instructions executed",
                            entry.id,
                            image.load_addr.wrapping_add(entry.offset),
                            members.len()
                        )),
                        heat_attrs(hottest, heat_max)
                    );
                    continue;
                }
                let _ = writeln!(out, "      subgraph cluster_p{pid}_r{} {{", entry.id);
                let name = names::routine_name(profile, image, &idx.symbols, routine);
                let label = if image.no_addresses {
                    format!("Routine {}\nname='{name}'", image.display_id(routine.entry))
                } else {
                    format!(
                        "Routine {}\nname='{name}'\naddr={:#x}",
                        entry.id,
                        image.load_addr.wrapping_add(entry.offset)
                    )
                };
                let _ = writeln!(out, "        label={}; color=violet;", quote(&label));
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
                    .filter(|(_, l)| l.parent.is_none_or(|p| !routine.loops.iter().any(|o| o.head == p)))
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
        let collapsed_of = |r: NodeRef| match r {
            NodeRef::Block(b) => collapsed_node[b.image as usize][b.block as usize],
            _ => None,
        };
        let is_drawn = |r: NodeRef| match r {
            NodeRef::Block(b) => drawn[b.image as usize][b.block as usize] || collapsed_of(r).is_some(),
            _ => false,
        };
        let mut specials = [false; 3];
        // Edges with a collapsed routine at an end, added up by ends and kind.
        let mut joined: std::collections::BTreeMap<
            (String, String, crate::ir::EdgeKind),
            (u64, usize, bool),
        > = std::collections::BTreeMap::new();
        for e in &process.edges {
            let count = e.total();
            if !valid(e.source) || !valid(e.target) {
                continue;
            }
            if count < options.min_count || !(is_drawn(e.source) || is_drawn(e.target)) {
                hidden_edges += 1;
                continue;
            }
            let (cs, ct) = (collapsed_of(e.source), collapsed_of(e.target));
            if cs.is_some() && cs == ct {
                // Inside a collapsed routine.
                continue;
            }
            let mut name = |r: NodeRef, out: &mut String| -> String {
                match r {
                    NodeRef::Block(b) if collapsed_node[b.image as usize][b.block as usize].is_some() => {
                        format!("p{pid}_r{}", collapsed_node[b.image as usize][b.block as usize].unwrap_or(0))
                    }
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
            } || e.path().is_some_and(|p| p.back);
            if cs.is_some() || ct.is_some() {
                let slot = joined.entry((s, t, e.kind)).or_insert((0, 0, is_back));
                slot.0 = slot.0.saturating_add(count);
                slot.1 += 1;
                continue;
            }
            let class = EdgeClass::of(e.kind, is_back);
            let mut label = format!("EDGE{}\\n", e.id);
            push_escaped(&mut label, e.kind.as_str());
            // An edge without counts (CSI metadata) was not measured, not run 0 times.
            if !e.counts.is_empty() {
                let _ = write!(label, "\\nexecutions={count}");
            }
            let _ = writeln!(
                out,
                "  {s} -> {t} [label=\"{label}\", {}, penwidth={}];",
                class.style(),
                pen_width(count, edge_max)
            );
        }
        let joined_max = joined.values().map(|j| j.0).max().unwrap_or(0).max(edge_max);
        for ((s, t, kind), (count, n, is_back)) in joined {
            let class = EdgeClass::of(kind, is_back);
            let mut label = String::new();
            push_escaped(&mut label, kind.as_str());
            let _ = write!(label, "\\nexecutions={count}");
            if n > 1 {
                let _ = write!(label, "\\n({n} edges)");
            }
            let _ = writeln!(
                out,
                "  {s} -> {t} [label=\"{label}\", {}, penwidth={}];",
                class.style(),
                pen_width(count, joined_max)
            );
        }
        let _ = writeln!(out, "  }} /* p{pid} */");
    }
    if collapsed_routines > 0 {
        // Said in the picture itself (the root graph's label is the last one given).
        let note = format!(
            "{title}\n{collapsed_routines} largest routine(s) ({collapsed_blocks} blocks, libraries first) drawn as one node each \
             to keep the layout fast; cfghub dot --routine NAME draws one, --max-blocks 0 draws every block"
        );
        let _ = writeln!(out, "  label={};", quote(&note));
        findings.warn(
            None,
            format!(
                "dot: {collapsed_routines} routine(s) ({collapsed_blocks} blocks) drawn as one node each; \
                 --max-blocks 0 draws every block, --routine NAME or --image narrow the picture"
            ),
        );
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
