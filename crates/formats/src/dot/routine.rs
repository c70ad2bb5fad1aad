//! The view of one routine (or one loop of it): its control-flow graph with loops as nested
//! clusters, calls as stubs, heat by execution count or by an event's cost.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::common::{
    block_counts, block_label, event_index, header, heat_attrs, pen_width, push_escaped, quote, thousands,
    warn_no_costs, DotText, ImageIndex, Styled,
};
use super::Options;
use cfghub_analysis::ball_larus::EdgeNumbers;
use cfghub_analysis::{names, routines};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{
    Coverage, CoverageKind, EdgeClass, EdgeKind, Image, Loop, NodeRef, Process, Profile, Routine,
};

pub use super::typed_names::Found;

/// Finds the routine `spec` names: an address (`0x40059d`, absolute, any block of the
/// routine), a routine's entry node id (decimal; any block id of the routine is accepted), or a
/// symbol name (the routine whose entry is the symbol's start, else the one containing it),
/// else a name as users type it ([`super::typed_names`]).
/// `routines` holds the routines of every process, as `routines::derive` gives them.
pub(crate) fn find_routine(
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
    match (by_name, address, node_id) {
        (Some(found), _, _) => Ok(found),
        (None, None, None) => super::typed_names::find(profile, routines, spec, processes),
        _ => Err(Error::usage(format!("no routine matches '{spec}'")).with_hint(
            "give a symbol name (main), an address (0x40059d) or a block id (29); \
             `cfghub info FILE` lists the hottest routines",
        )),
    }
}

/// Writes the DOT of one routine, or with `loop_node` of the innermost loop containing the
/// block with that id.
pub fn write(
    profile: &Profile,
    spec: &str,
    loop_node: Option<u64>,
    options: &Options,
    out: &mut DotText<'_>,
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
pub(crate) fn write_routine(
    profile: &Profile,
    f: Found,
    routine: &Routine,
    shown_loop: Option<&Loop>,
    options: &Options,
    out: &mut DotText<'_>,
    findings: &mut Findings,
) -> Result<()> {
    let view = RoutineView::new(profile, f, routine, shown_loop, options, findings)?;
    let ways = view.classify_edges();
    header(out, &view.title, &view.title);
    view.write_blocks(out, &ways.returns);
    view.write_markers(out, &ways);
    view.write_internal_edges(out, &ways);
    view.write_stubs(out, ways);
    out.push_str("}\n");
    Ok(())
}

/// What the view of a routine (or of one of its loops) shows, worked out once for every part
/// of the graph: the blocks, the loops among them, the heat of each block and the title.
struct RoutineView<'a> {
    profile: &'a Profile,
    process: &'a Process,
    image: &'a Image,
    /// The index of `image` in the process.
    image_no: usize,
    routine: &'a Routine,
    shown_loop: Option<&'a Loop>,
    index: ImageIndex<'a>,
    /// Execution count of each block of the image.
    counts: Vec<u64>,
    /// The blocks shown: the routine's (its entry first if the routine does not list it), or
    /// the loop's.
    shown: Vec<u32>,
    is_shown: Vec<bool>,
    /// The loops drawn as clusters: all of the routine's, or those inside the shown loop.
    loops: Vec<&'a Loop>,
    /// The routine's exit blocks.
    exits: HashSet<u32>,
    /// Back edges of those loops, (source, head).
    back: HashSet<(u32, u32)>,
    title: String,
    /// Coverage arrays of the routine's function (CSI).
    coverage: Vec<&'a Coverage>,
    /// Ball-Larus numbers per process edge: stated by the input, or computed with --increments.
    numbers: HashMap<usize, EdgeNumbers>,
    /// The event whose cost heats the blocks (when asked for and any block has such a cost).
    event: Option<&'a str>,
    /// The cost of each shown block in the event asked for.
    costs: HashMap<u32, u64>,
    /// Whether the heat is cost (else execution count), and the hottest block's.
    any_cost: bool,
    heat_max: u64,
}

impl<'a> RoutineView<'a> {
    fn new(
        profile: &'a Profile,
        f: Found,
        routine: &'a Routine,
        shown_loop: Option<&'a Loop>,
        options: &'a Options,
        findings: &mut Findings,
    ) -> Result<RoutineView<'a>> {
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
            Some(l) => {
                routine.loops.iter().filter(|o| o.nodes.iter().all(|&b| l.nodes.contains(&b))).collect()
            }
            None => routine.loops.iter().collect(),
        };
        let back = loops.iter().flat_map(|l| l.back_edge_sources.iter().map(move |&s| (s, l.head))).collect();
        // Coverage arrays of the routine's function (CSI): a block is covered or not when its
        // count is known, else instrumented or not.
        let coverage: Vec<&Coverage> = match routine.symbol {
            Some(s) => image.coverage.iter().filter(|c| c.symbol == s).collect(),
            None => Vec::new(),
        };
        let title = view_title(profile, image, &index, routine, shown_loop, &coverage);
        let numbers = if options.increments {
            path_numbers(process, f.image, routine, findings)
        } else {
            HashMap::new()
        };
        let event_name = options.event.as_deref();
        let costs: HashMap<u32, u64> = if event.is_some() {
            shown.iter().map(|&b| (b, index.block_cost(&image.blocks[b as usize]))).collect()
        } else {
            HashMap::new()
        };
        let any_cost = costs.values().any(|&c| c > 0);
        warn_no_costs(findings, event_name, any_cost);
        let mut view = RoutineView {
            profile,
            process,
            image,
            image_no: f.image,
            routine,
            shown_loop,
            index,
            counts,
            shown,
            is_shown,
            loops,
            exits: routine.exits.iter().copied().collect(),
            back,
            title,
            coverage,
            numbers,
            event: event_name,
            costs,
            any_cost,
            heat_max: 0,
        };
        view.heat_max = view.shown.iter().map(|&b| view.heat_of(b)).max().unwrap_or(0);
        Ok(view)
    }

    /// The heat of block `b`: its cost in the event asked for, else its execution count.
    fn heat_of(&self, b: u32) -> u64 {
        if self.any_cost {
            self.costs[&b]
        } else {
            self.counts[b as usize]
        }
    }

    /// The DOT node name of block `b`.
    fn node(&self, b: u32) -> String {
        format!("b{}", self.image.blocks[b as usize].id)
    }

    /// Block `r` if it is one of the shown blocks.
    fn local(&self, r: NodeRef) -> Option<u32> {
        match r {
            NodeRef::Block(b)
                if b.image as usize == self.image_no
                    && (b.block as usize) < self.is_shown.len()
                    && self.is_shown[b.block as usize] =>
            {
                Some(b.block)
            }
            _ => None,
        }
    }

    /// Sorts the process's edges that touch the shown blocks into the ways the graph draws
    /// them: edges between shown blocks, calls out, returns, other ways out and in, entries.
    fn classify_edges(&self) -> WaysInAndOut {
        let mut ways = WaysInAndOut::default();
        let mut names = NodeNames { view: self, indexes: HashMap::new() };
        let whole_routine = self.shown_loop.is_none();
        for (index, e) in self.process.edges.iter().enumerate() {
            let (s, t) = (self.local(e.source), self.local(e.target));
            let count = e.total();
            match (s, t) {
                (Some(s), Some(t)) if !e.kind.is_call() && !e.kind.is_return() => {
                    ways.internal.push(Internal {
                        s,
                        t,
                        kind: e.kind,
                        count,
                        id: e.id,
                        index,
                        stated_back: e.path().is_some_and(|p| p.back),
                    })
                }
                (Some(s), _) if e.kind.is_call() => {
                    *ways.calls.entry((s, names.name(e.target))).or_default() += count;
                }
                (Some(s), _)
                    if e.kind.is_return()
                        || e.kind == EdgeKind::Exit
                        || whole_routine && e.target == NodeRef::End =>
                {
                    *ways.returns.entry(s).or_default() += count;
                }
                (Some(s), _) => {
                    *ways.outs.entry((s, names.name(e.target))).or_default() += count;
                }
                (None, Some(t))
                    if whole_routine
                        && t == self.routine.entry
                        && (e.kind.is_call() || e.kind == EdgeKind::Entry) =>
                {
                    ways.entries = ways.entries.saturating_add(count);
                    if e.kind.is_call() {
                        *ways.callers.entry(names.name(e.source)).or_default() += count;
                    }
                }
                (None, Some(t)) if whole_routine && e.kind.is_return() => {
                    *ways.returns_in.entry((names.name(e.source), t)).or_default() += count;
                }
                (None, Some(t)) if !whole_routine || !e.kind.is_return() => {
                    *ways.ins.entry((names.name(e.source), t)).or_default() += count;
                }
                _ => {}
            }
        }
        ways.edge_max = ways
            .internal
            .iter()
            .map(|e| e.count)
            .chain(ways.calls.values().copied())
            .chain(ways.outs.values().copied())
            .chain(ways.ins.values().copied())
            .chain(ways.returns_in.values().copied())
            .max()
            .unwrap_or(0);
        ways
    }

    /// Writes the node of block `b`: its label (with coverage for CSI), the routine's entry
    /// with a double border, exits that return with a thick one, and its heat.
    fn write_block(&self, out: &mut DotText<'_>, b: u32, indent: &str, returns: &HashMap<u32, u64>) {
        let image = self.image;
        let block = &image.blocks[b as usize];
        let ev = self.event.filter(|_| self.any_cost).map(|n| (n, self.costs[&b]));
        let mut label = block_label(self.profile, &self.index, b, self.counts[b as usize], ev);
        let mut extra = String::new();
        let is_exit = self.exits.contains(&b);
        if image.no_addresses {
            let block_coverage = self.coverage.iter().any(|c| c.kind == CoverageKind::Block);
            match block.count {
                Some(0) => label.push_str("\nnot covered"),
                Some(_) => label.push_str("\ncovered"),
                None if block_coverage || !self.coverage.is_empty() => {}
                None if image.coverage.is_empty() => {}
                None => {
                    label.push_str("\nnot instrumented");
                    extra.push_str(", style=\"filled,dotted\", fillcolor=\"#f3f3f3\"");
                }
            }
            if is_exit && b != self.routine.entry {
                label.push_str("\nEXIT");
            }
        }
        if b == self.routine.entry && self.shown_loop.is_none() {
            extra.push_str(", peripheries=2");
        }
        if is_exit && returns.contains_key(&b) {
            extra.push_str(", penwidth=2");
        }
        let heat =
            if extra.contains("style=") { String::new() } else { heat_attrs(self.heat_of(b), self.heat_max) };
        let _ = writeln!(out, "{indent}{} [label={}, {heat}{extra}];", self.node(b), quote(&label));
    }

    /// Writes the shown blocks: those in no loop first, then each loop as a cluster holding
    /// the blocks whose innermost loop it is and its inner loops' clusters.
    fn write_blocks(&self, out: &mut DotText<'_>, returns: &HashMap<u32, u64>) {
        let loops = &self.loops;
        // Innermost loop of each block: the smallest loop containing it (whatever order the
        // input lists its loops in).
        let mut innermost: Vec<Option<usize>> = vec![None; self.image.blocks.len()];
        for (li, l) in loops.iter().enumerate() {
            for &b in &l.nodes {
                if let Some(slot) = innermost.get_mut(b as usize) {
                    if slot.is_none_or(|s| loops[s].nodes.len() > l.nodes.len()) {
                        *slot = Some(li);
                    }
                }
            }
        }
        let mut forest =
            LoopForest { members: vec![Vec::new(); loops.len()], children: vec![Vec::new(); loops.len()] };
        for &b in &self.shown {
            match innermost[b as usize] {
                None => self.write_block(out, b, "  ", returns),
                Some(li) => forest.members[li].push(b),
            }
        }
        // Loop clusters, outer first, nested by parent head.
        let slot_of: HashMap<u32, usize> = loops.iter().enumerate().map(|(i, l)| (l.head, i)).collect();
        let mut top = Vec::new();
        for (li, l) in loops.iter().enumerate() {
            match l.parent.and_then(|p| slot_of.get(&p)) {
                Some(&pi) if pi != li => forest.children[pi].push(li),
                _ => top.push(li),
            }
        }
        for li in top {
            self.write_loop(out, li, 1, &forest, returns);
        }
    }

    /// Writes loop `li` at nesting `depth` as a cluster: its blocks, then its inner loops.
    fn write_loop(
        &self,
        out: &mut DotText<'_>,
        li: usize,
        depth: usize,
        forest: &LoopForest,
        returns: &HashMap<u32, u64>,
    ) {
        let indent = "  ".repeat(depth + 1);
        let head = self.image.display_id(self.loops[li].head);
        let _ = writeln!(out, "{indent}subgraph cluster_loop_{head} {{");
        let _ = writeln!(
            out,
            "{indent}  label={}; style=\"rounded,dashed\"; color=\"#c00000\"; fontcolor=\"#c00000\";",
            quote(&format!("loop BB {head} (depth {depth})"))
        );
        let inner = format!("{indent}  ");
        for &b in &forest.members[li] {
            self.write_block(out, b, &inner, returns);
        }
        for &ci in &forest.children[li] {
            self.write_loop(out, ci, depth + 1, forest, returns);
        }
        let _ = writeln!(out, "{indent}}}");
    }

    /// Writes the entry marker (for a whole routine: how many calls enter it, from where) and
    /// the exit marker with the blocks that return.
    fn write_markers(&self, out: &mut DotText<'_>, ways: &WaysInAndOut) {
        if self.shown_loop.is_none() {
            let _ = writeln!(
                out,
                "  entry [shape=invhouse, style=filled, fillcolor=\"#d9ead3\", label={}];",
                quote(&entry_label(ways.entries, &ways.callers))
            );
            let _ = writeln!(out, "  entry -> {} [color=\"#1f7f1f\"];", self.node(self.routine.entry));
        }
        if !ways.returns.is_empty() {
            out.push_str("  exit [shape=house, style=filled, fillcolor=\"#ead1dc\", label=\"exit\"];\n");
            let mut rs: Vec<_> = ways.returns.iter().collect();
            rs.sort();
            for (&b, &c) in rs {
                let _ = writeln!(
                    out,
                    "  {} -> exit [{}, label={}];",
                    self.node(b),
                    EdgeClass::Return.style(),
                    quote(&thousands(c))
                );
            }
        }
    }

    /// Writes the edges between shown blocks: kind and count (for CSI only whether it is a
    /// back edge), and the path-numbering increment where there is one.
    fn write_internal_edges(&self, out: &mut DotText<'_>, ways: &WaysInAndOut) {
        for e in &ways.internal {
            let class = EdgeClass::of(e.kind, e.stated_back || self.back.contains(&(e.s, e.t)));
            let mut label = String::new();
            if self.image.no_addresses {
                // No kinds or counts to show: the word for back edges only.
                if class == EdgeClass::Back {
                    label.push_str("back");
                }
            } else {
                push_escaped(&mut label, class.word(e.kind));
                label.push_str("\\n");
                label.push_str(&thousands(e.count));
            }
            if let Some(n) = self.numbers.get(&e.index) {
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
                self.node(e.s),
                self.node(e.t),
                e.id,
                e.kind.as_str(),
                class.style(),
                pen_width(e.count, ways.edge_max).max(if class == EdgeClass::Back { 2.0 } else { 0.0 })
            );
        }
    }

    /// Writes a stub node for each call out of the view, other way out, return into it and
    /// other way in, numbered in that order, each group sorted.
    fn write_stubs(&self, out: &mut DotText<'_>, ways: WaysInAndOut) {
        let mut stub = 0usize;
        let mut write = |kind: &Stub, block: u32, name: &str, count: u64| {
            stub += 1;
            let node = self.node(block);
            let label = quote(&format!("{} {name}\n× {}", kind.words, thousands(count)));
            let _ = writeln!(
                out,
                "  {}{stub} [shape=box, {}, fontsize=9{}, label={label}];",
                kind.prefix, kind.style, kind.color
            );
            let (from, to) = if kind.outward {
                (node, format!("{}{stub}", kind.prefix))
            } else {
                (format!("{}{stub}", kind.prefix), node)
            };
            let _ = writeln!(
                out,
                "  {from} -> {to} [{}, penwidth={}];",
                kind.class.style(),
                pen_width(count, ways.edge_max)
            );
        };
        for ((s, callee), c) in sorted(ways.calls) {
            write(&CALL_STUB, s, &callee, c);
        }
        for ((s, target), c) in sorted(ways.outs) {
            write(&OUT_STUB, s, &target, c);
        }
        for ((source, t), c) in sorted(ways.returns_in) {
            write(&RETURN_STUB, t, &source, c);
        }
        for ((source, t), c) in sorted(ways.ins) {
            write(&IN_STUB, t, &source, c);
        }
    }
}

/// The title of the view: the routine's name and image, or the loop's head and routine; for
/// CSI the coverage arrays recorded for the routine's function.
fn view_title(
    profile: &Profile,
    image: &Image,
    index: &ImageIndex<'_>,
    routine: &Routine,
    shown_loop: Option<&Loop>,
    coverage: &[&Coverage],
) -> String {
    let name = names::routine_name(profile, image, &index.symbols, routine);
    let title = match shown_loop {
        Some(l) => format!("loop at BB {} in {name}", image.display_id(l.head)),
        None => format!("{name} ({})", names::image_base_name(profile, image)),
    };
    if coverage.is_empty() {
        return title;
    }
    let arrays: Vec<String> = coverage
        .iter()
        .map(|c| match c.kind {
            CoverageKind::Block => format!("blocks ({} sites)", c.sites.len()),
            CoverageKind::Call => format!("calls ({} sites)", c.sites.len()),
            CoverageKind::Function => "function".to_string(),
        })
        .collect();
    format!("{title}\ncoverage recorded for: {}", arrays.join(", "))
}

/// The Ball-Larus increments of the routine's edges, by process edge (`--increments`); none,
/// with a warning, when its paths cannot be numbered.
fn path_numbers(
    process: &Process,
    image: usize,
    routine: &Routine,
    findings: &mut Findings,
) -> HashMap<usize, EdgeNumbers> {
    let rp =
        cfghub_analysis::path_graph::routine_paths(process, image, std::slice::from_ref(routine)).remove(0);
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
}

/// An edge between two shown blocks.
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

/// The process's edges that touch the shown blocks, as the graph draws them.
#[derive(Default)]
struct WaysInAndOut {
    internal: Vec<Internal>,
    /// Calls out of the view: (source block, callee) -> count.
    calls: HashMap<(u32, String), u64>,
    /// Other ways out: (source block, target) -> count.
    outs: HashMap<(u32, String), u64>,
    /// Ways in other than entries and returns: (source, target block) -> count.
    ins: HashMap<(String, u32), u64>,
    /// Returns and exits out of the routine, by block.
    returns: HashMap<u32, u64>,
    /// Returns into the routine (to the block after a call): (returning code, target) -> count.
    returns_in: HashMap<(String, u32), u64>,
    /// Calls and entries into the routine's entry, and who calls it: caller -> count.
    entries: u64,
    callers: HashMap<String, u64>,
    /// The largest count of a drawn edge (the widest pen).
    edge_max: u64,
}

/// The names of the code at the far end of the edges out of and into the view (`main (BB
/// 12)` for a block of the routine's image, the function's name for any other).
struct NodeNames<'v, 'a> {
    view: &'v RoutineView<'a>,
    indexes: HashMap<usize, ImageIndex<'a>>,
}

impl NodeNames<'_, '_> {
    fn name(&mut self, r: NodeRef) -> String {
        let (profile, process) = (self.view.profile, self.view.process);
        match r {
            NodeRef::Block(b) => match process.images.get(b.image as usize) {
                Some(img) if (b.block as usize) < img.blocks.len() => {
                    let idx =
                        self.indexes.entry(b.image as usize).or_insert_with(|| ImageIndex::new(img, None));
                    let blk = &img.blocks[b.block as usize];
                    if b.image as usize == self.view.image_no {
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
    }
}

/// The loop clusters: the blocks whose innermost loop each loop is, and its inner loops.
struct LoopForest {
    members: Vec<Vec<u32>>,
    children: Vec<Vec<usize>>,
}

/// How a stub node for a way out of or into the view is drawn.
struct Stub {
    /// The node name's prefix (numbered after it).
    prefix: &'static str,
    style: &'static str,
    color: &'static str,
    /// The words before the far end's name in the label.
    words: &'static str,
    class: EdgeClass,
    /// From the block to the stub (else from the stub to the block).
    outward: bool,
}

const CALL_STUB: Stub = Stub {
    prefix: "call",
    style: "style=\"rounded,dashed\"",
    color: ", color=\"#1f7f1f\"",
    words: "call",
    class: EdgeClass::Call,
    outward: true,
};
const OUT_STUB: Stub = Stub {
    prefix: "out",
    style: "style=\"rounded,dotted\"",
    color: "",
    words: "to",
    class: EdgeClass::Other,
    outward: true,
};
const RETURN_STUB: Stub = Stub {
    prefix: "ret",
    style: "style=\"rounded,dashed\"",
    color: ", color=\"#1f7f1f\"",
    words: "return from",
    class: EdgeClass::Return,
    outward: false,
};
const IN_STUB: Stub = Stub {
    prefix: "in",
    style: "style=\"rounded,dotted\"",
    color: "",
    words: "from",
    class: EdgeClass::Other,
    outward: false,
};

/// The entries of `map`, sorted by key.
fn sorted<K: Ord, V>(map: HashMap<K, V>) -> Vec<(K, V)> {
    let mut v: Vec<_> = map.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
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
