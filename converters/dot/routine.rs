//! The view of one routine (or one loop of it): its control-flow graph with loops as nested
//! clusters, calls as stubs, heat by execution count or by an event's cost.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::common::{
    block_counts, block_label, event_index, header, heat_attrs, pen_width, push_escaped, quote, thousands,
    warn_no_costs, ImageIndex, Styled,
};
use super::Options;
use crate::analysis::{names, routines};
use crate::error::{Error, Findings, Result};
use crate::ir::{EdgeClass, EdgeKind, Loop, NodeRef, Process, Profile, Routine};

/// A routine found by [`find_routine`]: process, image and routine indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub process: usize,
    pub image: usize,
    pub routine: usize,
}

/// Finds the routine `spec` names: an address (`0x40059d`, absolute, any block of the
/// routine), a routine's entry node id (decimal; any block id of the routine is accepted), or a
/// symbol name (the routine whose entry is the symbol's start, else the one containing it).
/// `routines` holds the routines of every process, as `routines::derive` gives them.
pub fn find_routine(
    profile: &Profile,
    routines: &[Vec<std::borrow::Cow<'_, [Routine]>>],
    spec: &str,
    processes: &[u64],
) -> Result<Found> {
    let spec = spec.trim();
    let wanted = |p: &Process| processes.is_empty() || processes.contains(&p.pid);
    let address = spec
        .strip_prefix("0x")
        .or_else(|| spec.strip_prefix("0X"))
        .map(|h| {
            u64::from_str_radix(h, 16)
                .map_err(|_| Error::usage(format!("'{spec}' is not a hexadecimal address")))
        })
        .transpose()?;
    let node_id = if address.is_none() { spec.parse::<u64>().ok() } else { None };
    let mut by_name: Option<Found> = None;
    for (pi, process) in profile.processes.iter().enumerate() {
        if !wanted(process) {
            continue;
        }
        for (ii, image) in process.images.iter().enumerate() {
            let rs = &routines[pi][ii];
            let owner_of = |block: u32| rs.iter().position(|r| r.entry == block || r.nodes.contains(&block));
            let found = |r: usize| Found { process: pi, image: ii, routine: r };
            if let Some(addr) = address {
                let Some(off) = addr.checked_sub(image.load_addr) else { continue };
                let hit = image.blocks.iter().position(|b| off >= b.offset && off < b.end());
                if let Some(r) = hit.and_then(|b| owner_of(b as u32)) {
                    return Ok(found(r));
                }
            } else if let Some(id) = node_id {
                if let Some(r) = image.blocks.iter().position(|b| b.id == id).and_then(|b| owner_of(b as u32))
                {
                    return Ok(found(r));
                }
            } else if by_name.is_none() {
                // A routine that names its symbol (CSI), else one found by the symbol's address.
                let named = image
                    .symbols
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.name == spec)
                    .find_map(|(si, _)| rs.iter().position(|r| r.symbol == Some(si as u32)));
                if let Some(r) = named {
                    by_name = Some(found(r));
                    continue;
                }
                for sym in image.symbols.iter().filter(|s| s.name == spec) {
                    let Some(start) = sym.offset else { continue };
                    let exact = rs
                        .iter()
                        .position(|r| image.blocks.get(r.entry as usize).is_some_and(|b| b.offset == start));
                    let containing = || {
                        let b = image.blocks.iter().position(|b| start >= b.offset && start < b.end())?;
                        owner_of(b as u32)
                    };
                    if let Some(r) = exact.or_else(containing) {
                        by_name = Some(found(r));
                        break;
                    }
                }
            }
        }
    }
    by_name.ok_or_else(|| {
        Error::usage(format!("no routine matches '{spec}'")).with_hint(
            "give a symbol name (main), an address (0x40059d) or a block id (29); \
             `cfghub info FILE` lists the hottest routines",
        )
    })
}

/// Writes the DOT of one routine, or with `loop_node` of the innermost loop containing the
/// block with that id.
pub fn write(
    profile: &Profile,
    spec: &str,
    loop_node: Option<u64>,
    options: &Options,
    out: &mut String,
    findings: &mut Findings,
) -> Result<()> {
    let all: Vec<Vec<_>> = profile.processes.iter().map(|p| routines::derive(p, options.recompute)).collect();
    let f = find_routine(profile, &all, spec, &options.processes)?;
    let process = &profile.processes[f.process];
    let routine = &all[f.process][f.image][f.routine];
    let shown_loop = match loop_node {
        None => None,
        Some(id) => {
            let image = &process.images[f.image];
            // By the id the format shows: CSI ids are unique within a routine only.
            let block = if image.no_addresses {
                routine.nodes.iter().copied().find(|&b| image.display_id(b) == id)
            } else {
                image.blocks.iter().position(|b| b.id == id).map(|b| b as u32)
            }
            .ok_or_else(|| {
                Error::usage(format!("--loop {id}: no block with that id in the routine's image"))
            })?;
            let l = routine.loops.iter().filter(|l| l.nodes.contains(&block)).min_by_key(|l| l.nodes.len());
            Some(l.ok_or_else(|| {
                let heads: Vec<String> = routine
                    .loops
                    .iter()
                    .filter(|l| (l.head as usize) < image.blocks.len())
                    .map(|l| image.display_id(l.head).to_string())
                    .collect();
                Error::usage(format!("--loop {id}: block {id} is in no loop of this routine")).with_hint(
                    if heads.is_empty() {
                        "the routine has no loops".to_string()
                    } else {
                        format!("its loop heads are blocks {}", heads.join(", "))
                    },
                )
            })?)
        }
    };
    write_routine(profile, f, routine, shown_loop, options, out, findings)
}

/// The DOT of a routine found already (library entry point for benchmarks and tests).
pub fn write_routine(
    profile: &Profile,
    f: Found,
    routine: &Routine,
    shown_loop: Option<&Loop>,
    options: &Options,
    out: &mut String,
    findings: &mut Findings,
) -> Result<()> {
    let process = &profile.processes[f.process];
    let image = &process.images[f.image];
    let event = event_index(profile, options.event.as_deref())?;
    let index = ImageIndex::new(image, event);
    let counts = block_counts(process, f.image);
    let nb = image.blocks.len();
    if routine.entry as usize >= nb || routine.loops.iter().any(|l| l.head as usize >= nb) {
        return Err(Error::input(format!(
            "a routine of image {} names a block the image does not have (the image has {nb} blocks)",
            image.id
        ))
        .with_hint("`cfghub validate FILE` lists the broken references"));
    }

    // Blocks shown: the routine's, or the loop's.
    let shown: Vec<u32> = match shown_loop {
        Some(l) => l.nodes.iter().copied().filter(|&b| (b as usize) < nb).collect(),
        None => {
            let mut v: Vec<u32> = routine.nodes.iter().copied().filter(|&b| (b as usize) < nb).collect();
            if !v.contains(&routine.entry) && (routine.entry as usize) < nb {
                v.insert(0, routine.entry);
            }
            v
        }
    };
    let mut is_shown = vec![false; nb];
    for &b in &shown {
        is_shown[b as usize] = true;
    }
    let loops: Vec<&Loop> = match shown_loop {
        Some(l) => routine.loops.iter().filter(|o| o.nodes.iter().all(|&b| l.nodes.contains(&b))).collect(),
        None => routine.loops.iter().collect(),
    };
    let back: std::collections::HashSet<(u32, u32)> =
        loops.iter().flat_map(|l| l.back_edge_sources.iter().map(move |&s| (s, l.head))).collect();

    let name = names::routine_name(profile, image, &index.symbols, routine);
    let title = match shown_loop {
        Some(l) => format!("loop at BB {} in {name}", image.display_id(l.head)),
        None => format!("{name} ({})", names::image_base_name(profile, image)),
    };
    // Coverage arrays of the routine's function (CSI): a block is covered or not when its
    // count is known, else instrumented or not.
    let coverage: Vec<&crate::ir::Coverage> = match routine.symbol {
        Some(s) => image.coverage.iter().filter(|c| c.symbol == s).collect(),
        None => Vec::new(),
    };
    let block_coverage = coverage.iter().any(|c| c.kind == crate::ir::CoverageKind::Block);
    let title = if coverage.is_empty() {
        title
    } else {
        let arrays: Vec<String> = coverage
            .iter()
            .map(|c| match c.kind {
                crate::ir::CoverageKind::Block => format!("blocks ({} sites)", c.sites.len()),
                crate::ir::CoverageKind::Call => format!("calls ({} sites)", c.sites.len()),
                crate::ir::CoverageKind::Function => "function".to_string(),
            })
            .collect();
        format!("{title}\ncoverage recorded for: {}", arrays.join(", "))
    };
    // Ball-Larus numbers per process edge: stated by the input, or computed with --increments.
    let numbers: HashMap<usize, crate::analysis::ball_larus::EdgeNumbers> = if options.increments {
        let rp = crate::analysis::path_graph::routine_paths(process, f.image, std::slice::from_ref(routine))
            .remove(0);
        match rp.numbers() {
            Ok(n) => rp.edges.iter().zip(n).filter_map(|(e, n)| Some(((*e)?, n))).collect(),
            Err(e) => {
                findings.warn(
                    None,
                    format!("dot: the routine's paths cannot be numbered ({e}); no increments shown"),
                );
                HashMap::new()
            }
        }
    } else {
        HashMap::new()
    };

    // Edges touching the shown blocks, classified.
    let ev_name = options.event.as_deref();
    let costs: HashMap<u32, u64> = if event.is_some() {
        shown.iter().map(|&b| (b, index.block_cost(&image.blocks[b as usize]))).collect()
    } else {
        HashMap::new()
    };
    let any_cost = costs.values().any(|&c| c > 0);
    warn_no_costs(findings, ev_name, any_cost);
    let heat_of = |b: u32| if any_cost { costs[&b] } else { counts[b as usize] };
    let heat_max = shown.iter().map(|&b| heat_of(b)).max().unwrap_or(0);

    struct Internal {
        s: u32,
        t: u32,
        kind: EdgeKind,
        count: u64,
        id: u64,
        /// Index in the process's edges.
        index: usize,
        /// Cut from the acyclic graph (CSI `~>`).
        stated_back: bool,
    }
    let mut internal: Vec<Internal> = Vec::new();
    // Stubs: (source block, label) -> count, for calls and other ways out; (label, target) for ways in.
    let mut calls: HashMap<(u32, String), u64> = HashMap::new();
    let mut outs: HashMap<(u32, String), u64> = HashMap::new();
    let mut ins: HashMap<(String, u32), u64> = HashMap::new();
    let mut returns: HashMap<u32, u64> = HashMap::new();
    // Returns into the routine (to the block after a call): (returning code, target) -> count.
    let mut returns_in: HashMap<(String, u32), u64> = HashMap::new();
    let mut entries: u64 = 0;
    // Who enters the routine by a call (direct or indirect): caller -> count.
    let mut callers: HashMap<String, u64> = HashMap::new();
    let mut indexes: HashMap<usize, ImageIndex<'_>> = HashMap::new();
    let mut name_of = |r: NodeRef| -> String {
        match r {
            NodeRef::Block(b) => match process.images.get(b.image as usize) {
                Some(img) if (b.block as usize) < img.blocks.len() => {
                    let idx = indexes.entry(b.image as usize).or_insert_with(|| ImageIndex::new(img, None));
                    let blk = &img.blocks[b.block as usize];
                    if b.image as usize == f.image {
                        format!(
                            "{} (BB {})",
                            names::code_name(profile, img, &idx.symbols, blk.offset),
                            blk.id
                        )
                    } else {
                        names::code_name(profile, img, &idx.symbols, blk.offset)
                    }
                }
                _ => "?".to_string(),
            },
            NodeRef::Symbol(s) => process
                .images
                .get(s.image as usize)
                .and_then(|i| i.symbols.get(s.symbol as usize))
                .map_or_else(|| "?".to_string(), |s| s.name.clone()),
            NodeRef::Start => "START".to_string(),
            NodeRef::End => "END".to_string(),
            NodeRef::Unknown => "UNKNOWN".to_string(),
        }
    };
    let local = |r: NodeRef| match r {
        NodeRef::Block(b)
            if b.image as usize == f.image && (b.block as usize) < nb && is_shown[b.block as usize] =>
        {
            Some(b.block)
        }
        _ => None,
    };
    for (index, e) in process.edges.iter().enumerate() {
        let (s, t) = (local(e.source), local(e.target));
        let count = e.total();
        match (s, t) {
            (Some(s), Some(t)) if !e.kind.is_call() && !e.kind.is_return() => internal.push(Internal {
                s,
                t,
                kind: e.kind,
                count,
                id: e.id,
                index,
                stated_back: e.path().is_some_and(|p| p.back),
            }),
            (Some(s), _) if e.kind.is_call() => {
                *calls.entry((s, name_of(e.target))).or_default() += count;
            }
            (Some(s), _)
                if e.kind.is_return()
                    || e.kind == EdgeKind::Exit
                    || shown_loop.is_none() && e.target == NodeRef::End =>
            {
                *returns.entry(s).or_default() += count;
            }
            (Some(s), _) => {
                *outs.entry((s, name_of(e.target))).or_default() += count;
            }
            (None, Some(t))
                if shown_loop.is_none()
                    && t == routine.entry
                    && (e.kind.is_call() || e.kind == EdgeKind::Entry) =>
            {
                entries = entries.saturating_add(count);
                if e.kind.is_call() {
                    *callers.entry(name_of(e.source)).or_default() += count;
                }
            }
            (None, Some(t)) if shown_loop.is_none() && e.kind.is_return() => {
                *returns_in.entry((name_of(e.source), t)).or_default() += count;
            }
            (None, Some(t)) if shown_loop.is_some() || !e.kind.is_return() => {
                *ins.entry((name_of(e.source), t)).or_default() += count;
            }
            _ => {}
        }
    }
    let edge_max = internal
        .iter()
        .map(|e| e.count)
        .chain(calls.values().copied())
        .chain(outs.values().copied())
        .chain(ins.values().copied())
        .chain(returns_in.values().copied())
        .max()
        .unwrap_or(0);

    out.reserve(shown.len() * 220 + internal.len() * 120);
    header(out, &title, &title);
    // Blocks, in loop clusters.
    let node = |b: u32| format!("b{}", image.blocks[b as usize].id);
    // Innermost loop of each block: the smallest loop containing it (whatever order the input
    // lists its loops in).
    let mut innermost: Vec<i32> = vec![-1; nb];
    for (li, l) in loops.iter().enumerate() {
        for &b in &l.nodes {
            if let Some(slot) = innermost.get_mut(b as usize) {
                if *slot < 0 || loops[*slot as usize].nodes.len() > l.nodes.len() {
                    *slot = li as i32;
                }
            }
        }
    }
    let exits: std::collections::HashSet<u32> = routine.exits.iter().copied().collect();
    let write_block = |out: &mut String, b: u32, indent: &str| {
        let block = &image.blocks[b as usize];
        let ev = ev_name.filter(|_| any_cost).map(|n| (n, costs[&b]));
        let mut label = block_label(profile, &index, b, counts[b as usize], ev);
        let mut extra = String::new();
        if image.no_addresses {
            match block.count {
                Some(0) => label.push_str("\nnot covered"),
                Some(_) => label.push_str("\ncovered"),
                None if block_coverage || !coverage.is_empty() => {}
                None if image.coverage.is_empty() => {}
                None => {
                    label.push_str("\nnot instrumented");
                    extra.push_str(", style=\"filled,dotted\", fillcolor=\"#f3f3f3\"");
                }
            }
            if exits.contains(&b) && b != routine.entry {
                label.push_str("\nEXIT");
            }
        }
        if b == routine.entry && shown_loop.is_none() {
            extra.push_str(", peripheries=2");
        }
        if exits.contains(&b) && returns.contains_key(&b) {
            extra.push_str(", penwidth=2");
        }
        let heat = if extra.contains("style=") { String::new() } else { heat_attrs(heat_of(b), heat_max) };
        let _ = writeln!(out, "{indent}{} [label={}, {heat}{extra}];", node(b), quote(&label));
    };
    for &b in &shown {
        if innermost[b as usize] < 0 {
            write_block(out, b, "  ");
        }
    }
    // Loop clusters, outer first, nested by parent head.
    /// The loop forest: blocks whose innermost loop each loop is, and its inner loops.
    struct Forest<'f> {
        loops: &'f [&'f Loop],
        members: Vec<Vec<u32>>,
        children: Vec<Vec<usize>>,
    }
    fn emit_loop(
        out: &mut String,
        li: usize,
        depth: usize,
        forest: &Forest<'_>,
        head_id: &dyn Fn(u32) -> u64,
        write_block: &dyn Fn(&mut String, u32, &str),
    ) {
        let indent = "  ".repeat(depth + 1);
        let l = forest.loops[li];
        let _ = writeln!(out, "{indent}subgraph cluster_loop_{} {{", head_id(l.head));
        let _ = writeln!(
            out,
            "{indent}  label={}; style=\"rounded,dashed\"; color=\"#c00000\"; fontcolor=\"#c00000\";",
            quote(&format!("loop BB {} (depth {depth})", head_id(l.head)))
        );
        let inner = format!("{indent}  ");
        for &b in &forest.members[li] {
            write_block(out, b, &inner);
        }
        for &ci in &forest.children[li] {
            emit_loop(out, ci, depth + 1, forest, head_id, write_block);
        }
        let _ = writeln!(out, "{indent}}}");
    }
    let head_id = |h: u32| image.display_id(h);
    let slot_of: HashMap<u32, usize> = loops.iter().enumerate().map(|(i, l)| (l.head, i)).collect();
    let mut forest = Forest {
        loops: &loops,
        members: vec![Vec::new(); loops.len()],
        children: vec![Vec::new(); loops.len()],
    };
    for &b in &shown {
        if innermost[b as usize] >= 0 {
            forest.members[innermost[b as usize] as usize].push(b);
        }
    }
    let mut top = Vec::new();
    for (li, l) in loops.iter().enumerate() {
        match l.parent.and_then(|p| slot_of.get(&p)) {
            Some(&pi) if pi != li => forest.children[pi].push(li),
            _ => top.push(li),
        }
    }
    for li in top {
        emit_loop(out, li, 1, &forest, &head_id, &write_block);
    }

    // Entry and exit markers.
    if shown_loop.is_none() {
        let _ = writeln!(
            out,
            "  entry [shape=invhouse, style=filled, fillcolor=\"#d9ead3\", label={}];",
            quote(&entry_label(entries, &callers))
        );
        let _ = writeln!(out, "  entry -> {} [color=\"#1f7f1f\"];", node(routine.entry));
    }
    if !returns.is_empty() {
        out.push_str("  exit [shape=house, style=filled, fillcolor=\"#ead1dc\", label=\"exit\"];\n");
        let mut rs: Vec<_> = returns.iter().collect();
        rs.sort();
        for (&b, &c) in rs {
            let _ = writeln!(
                out,
                "  {} -> exit [{}, label={}];",
                node(b),
                EdgeClass::Return.style(),
                quote(&thousands(c))
            );
        }
    }
    // Internal edges.
    for e in &internal {
        let class = EdgeClass::of(e.kind, e.stated_back || back.contains(&(e.s, e.t)));
        let mut label = String::new();
        if image.no_addresses {
            // No kinds or counts to show: the word for back edges only.
            if class == EdgeClass::Back {
                label.push_str("back");
            }
        } else {
            push_escaped(&mut label, class.word(e.kind));
            label.push_str("\\n");
            label.push_str(&thousands(e.count));
        }
        if let Some(n) = numbers.get(&e.index) {
            if !label.is_empty() {
                label.push_str("\\n");
            }
            let _ = match (class == EdgeClass::Back, n.increment == n.weight) {
                (true, true) => write!(label, "restart {}", n.increment),
                (true, false) => write!(label, "restart {} (weight {})", n.increment, n.weight),
                (false, true) => write!(label, "+{}", n.increment),
                (false, false) => write!(label, "+{} (weight {})", n.increment, n.weight),
            };
        }
        let _ = writeln!(
            out,
            "  {} -> {} [label=\"{label}\", tooltip=\"edge {} {}\", {}, penwidth={}];",
            node(e.s),
            node(e.t),
            e.id,
            e.kind.as_str(),
            class.style(),
            pen_width(e.count, edge_max).max(if class == EdgeClass::Back { 2.0 } else { 0.0 })
        );
    }
    // Call stubs, other ways out and in.
    let mut stub = 0usize;
    let mut sorted: Vec<_> = calls.into_iter().collect();
    sorted.sort();
    for ((s, callee), c) in sorted {
        stub += 1;
        let _ = writeln!(
            out,
            "  call{stub} [shape=box, style=\"rounded,dashed\", fontsize=9, color=\"#1f7f1f\", label={}];",
            quote(&format!("call {callee}\n× {}", thousands(c)))
        );
        let _ = writeln!(
            out,
            "  {} -> call{stub} [{}, penwidth={}];",
            node(s),
            EdgeClass::Call.style(),
            pen_width(c, edge_max)
        );
    }
    let mut sorted: Vec<_> = outs.into_iter().collect();
    sorted.sort();
    for ((s, target), c) in sorted {
        stub += 1;
        let _ = writeln!(
            out,
            "  out{stub} [shape=box, style=\"rounded,dotted\", fontsize=9, label={}];",
            quote(&format!("to {target}\n× {}", thousands(c)))
        );
        let _ = writeln!(
            out,
            "  {} -> out{stub} [{}, penwidth={}];",
            node(s),
            EdgeClass::Other.style(),
            pen_width(c, edge_max)
        );
    }
    let mut sorted: Vec<_> = returns_in.into_iter().collect();
    sorted.sort();
    for ((source, t), c) in sorted {
        stub += 1;
        let _ = writeln!(
            out,
            "  ret{stub} [shape=box, style=\"rounded,dashed\", fontsize=9, color=\"#1f7f1f\", label={}];",
            quote(&format!("return from {source}\n× {}", thousands(c)))
        );
        let _ = writeln!(
            out,
            "  ret{stub} -> {} [{}, penwidth={}];",
            node(t),
            EdgeClass::Return.style(),
            pen_width(c, edge_max)
        );
    }
    let mut sorted: Vec<_> = ins.into_iter().collect();
    sorted.sort();
    for ((source, t), c) in sorted {
        stub += 1;
        let _ = writeln!(
            out,
            "  in{stub} [shape=box, style=\"rounded,dotted\", fontsize=9, label={}];",
            quote(&format!("from {source}\n× {}", thousands(c)))
        );
        let _ = writeln!(
            out,
            "  in{stub} -> {} [{}, penwidth={}];",
            node(t),
            EdgeClass::Other.style(),
            pen_width(c, edge_max)
        );
    }
    out.push_str("}\n");
    Ok(())
}

/// The entry marker's text: how many calls enter the routine, and from where (the callers with
/// the most calls first, at most three named).
fn entry_label(entries: u64, callers: &HashMap<String, u64>) -> String {
    let mut label = match entries {
        0 => "entry".to_string(),
        1 => "entry\n1 call".to_string(),
        n => format!("entry\n{} calls", thousands(n)),
    };
    let mut by_count: Vec<(&String, &u64)> = callers.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (name, c) in by_count.iter().take(3) {
        label.push_str(&format!("\nfrom {name} × {}", thousands(**c)));
    }
    if by_count.len() > 3 {
        label.push_str(&format!("\nand {} more callers", by_count.len() - 3));
    }
    label
}
