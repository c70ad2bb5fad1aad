//! The whole-program view, laid out like Intel's `dcfg-to-dot`: process, image and routine
//! clusters (loops nested inside routines), a node per block, an edge per control-flow edge,
//! with filters that keep big programs readable.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use super::common::{
    block_counts, block_label, event_index, header, heat_attrs, pen_width, push_escaped, quote, DotText,
    ImageIndex, Styled,
};
use super::Options;
use cfghub_analysis::{names, routines};
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::{BlockRef, EdgeClass, EdgeKind, EventId, NodeRef, Process, Profile, Routine};

/// Whether `filters` (image ids or substrings of the image's path) select an image.
fn image_selected(filters: &[String], id: u64, path: &str) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| f.parse::<u64>().ok() == Some(id) || path.contains(f.as_str()))
}

/// Writes the whole-program view.
pub fn write(
    profile: &Profile,
    options: &Options,
    out: &mut DotText<'_>,
    findings: &mut Findings,
) -> Result<()> {
    let event = event_index(profile, options.event.as_deref())?;
    let title = match &profile.meta.command {
        Some(c) => format!("control flow of {c}"),
        None => "control flow".to_string(),
    };
    header(out, "dcfg", &title);
    // The network-simplex ranking of big cluster graphs fails in Graphviz ("trouble in
    // init_rank"); the newer ranking handles edges between clusters.
    out.push_str("  newrank=true;\n");
    let mut tally = Tally::default();
    for process in &profile.processes {
        if !options.processes.is_empty() && !options.processes.contains(&process.pid) {
            continue;
        }
        let mut view = ProcessView::new(profile, process, options, event);
        view.collapse_largest_routines(&mut tally);
        tally.any_cost |= event.is_some() && view.heat_max > 0;
        let _ = writeln!(out, "  subgraph cluster_p{} {{", process.pid);
        let _ = writeln!(out, "    label={}; color=blue;", quote(&format!("Process {}", process.pid)));
        let mut drawn: Vec<Vec<bool>> = process.images.iter().map(|i| vec![false; i.blocks.len()]).collect();
        for (ii, drawn) in drawn.iter_mut().enumerate() {
            view.write_image(out, ii, drawn, &mut tally);
        }
        tally.drawn += drawn.iter().map(|d| d.iter().filter(|&&x| x).count()).sum::<usize>();
        view.write_edges(out, &drawn, &mut tally);
        let _ = writeln!(out, "  }} /* p{} */", process.pid);
    }
    if tally.collapsed_routines > 0 {
        // Said in the picture itself (the root graph's label is the last one given).
        let (routines, blocks) = (tally.collapsed_routines, tally.collapsed_blocks);
        let note = format!(
            "{title}\n{routines} largest routine(s) ({blocks} blocks, libraries first) drawn as one node each \
             to keep the layout fast; cfghub dot --routine NAME draws one, --max-blocks 0 draws every block"
        );
        let _ = writeln!(out, "  label={};", quote(&note));
        findings.warn(
            None,
            format!(
                "dot: {routines} routine(s) ({blocks} blocks) drawn as one node each; \
                 --max-blocks 0 draws every block, --routine NAME or --image narrow the picture"
            ),
        );
    }
    out.push_str("}\n");
    tally.warn(findings, options);
    super::common::warn_without_blocks(profile, findings);
    Ok(())
}

/// What the view left out or drew, over all processes, for the warnings at the end.
#[derive(Default)]
struct Tally {
    hidden_blocks: usize,
    hidden_edges: usize,
    /// Edges with no block at either end (a transfer into code the profile never saw run).
    between_functions: usize,
    any_cost: bool,
    /// Blocks drawn inside clusters.
    drawn: usize,
    collapsed_routines: usize,
    collapsed_blocks: usize,
}

impl Tally {
    /// Warns of a picture too big for Graphviz, of an event no block has a cost of, and of
    /// what the filters left out.
    fn warn(&self, findings: &mut Findings, options: &Options) {
        if self.drawn > 1000 {
            findings.warn(
                None,
                format!(
                    "dot: {} blocks in clusters may take Graphviz minutes to lay out; \
                     narrow the picture with --image, --min-count or cfghub dot --routine",
                    self.drawn
                ),
            );
        }
        super::common::warn_no_costs(
            findings,
            options.event.as_deref(),
            self.any_cost || options.event.is_none(),
        );
        if self.hidden_blocks > 0 || self.hidden_edges > 0 {
            findings.warn(
                None,
                format!(
                    "dot: {} block(s) and {} edge(s) left out by --image/--process/--min-count",
                    self.hidden_blocks, self.hidden_edges
                ),
            );
        }
        if self.between_functions > 0 {
            findings.detail(
                None,
                format!(
                    "dot: {} edge(s) join functions, not blocks (no block at either end), and are not drawn",
                    self.between_functions
                ),
            );
        }
    }
}

/// One process as the view draws it: which images are selected, which blocks shown, the heat
/// of each, which routine owns each block and which routines are drawn as one node.
struct ProcessView<'a> {
    profile: &'a Profile,
    process: &'a Process,
    options: &'a Options,
    event: Option<EventId>,
    /// The routines of each image.
    routines: Vec<Cow<'a, [Routine]>>,
    /// Execution count of each block, by image.
    counts: Vec<Vec<u64>>,
    indexes: Vec<ImageIndex<'a>>,
    /// Images chosen by `--image`.
    selected: Vec<bool>,
    heat_max: u64,
    /// The routine each block is drawn in, by image (`u32::MAX` for none): the first that holds
    /// it (shared code is drawn once).
    owner: Vec<Vec<u32>>,
    /// Routines drawn as one node, by image.
    collapsed: Vec<Vec<bool>>,
    /// For each block of a collapsed routine, the id of the routine's entry (its node's name).
    collapsed_node: Vec<Vec<Option<u64>>>,
}

impl<'a> ProcessView<'a> {
    fn new(profile: &'a Profile, process: &'a Process, options: &'a Options, event: Option<EventId>) -> Self {
        let routines = routines::derive(process, options.recompute);
        let counts: Vec<Vec<u64>> = (0..process.images.len()).map(|i| block_counts(process, i)).collect();
        let indexes: Vec<ImageIndex<'_>> = process.images.iter().map(|i| ImageIndex::new(i, event)).collect();
        let selected: Vec<bool> = process
            .images
            .iter()
            .map(|i| image_selected(&options.images, i.id, &profile.image_name(i)))
            .collect();
        let mut owner: Vec<Vec<u32>> =
            process.images.iter().map(|i| vec![u32::MAX; i.blocks.len()]).collect();
        for (ii, rs) in routines.iter().enumerate() {
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
        let collapsed = routines.iter().map(|rs| vec![false; rs.len()]).collect();
        let collapsed_node = process.images.iter().map(|i| vec![None; i.blocks.len()]).collect();
        let mut view = ProcessView {
            profile,
            process,
            options,
            event,
            routines,
            counts,
            indexes,
            selected,
            heat_max: 0,
            owner,
            collapsed,
            collapsed_node,
        };
        view.heat_max =
            process.blocks().filter(|(r, _)| view.shown(*r)).map(|(r, _)| view.heat(r)).max().unwrap_or(0);
        view
    }

    /// Whether block `b` is shown: in a selected image and executed at least `--min-count` times.
    fn shown(&self, b: BlockRef) -> bool {
        self.selected.get(b.image as usize).copied().unwrap_or(false)
            && self.counts[b.image as usize]
                .get(b.block as usize)
                .is_some_and(|&c| c >= self.options.min_count)
    }

    /// The heat of block `b`: its cost in the event asked for, else its execution count.
    fn heat(&self, b: BlockRef) -> u64 {
        let blk = &self.process.images[b.image as usize].blocks[b.block as usize];
        if self.event.is_some() {
            self.indexes[b.image as usize].block_cost(blk)
        } else {
            self.counts[b.image as usize][b.block as usize]
        }
    }

    /// The shown blocks drawn in routine `ri` of image `ii`.
    fn members_of(&self, ii: usize, ri: usize) -> Vec<u32> {
        self.routines[ii][ri]
            .nodes
            .iter()
            .copied()
            .filter(|&b| {
                self.owner[ii].get(b as usize) == Some(&(ri as u32))
                    && self.shown(BlockRef { image: ii as u32, block: b })
            })
            .collect()
    }

    /// Beyond `--max-blocks` blocks shown one by one, the largest routines (of the libraries
    /// first) are drawn as one node each.
    fn collapse_largest_routines(&mut self, tally: &mut Tally) {
        let mut sizes: Vec<(usize, usize, usize)> = Vec::new();
        for (ii, rs) in self.routines.iter().enumerate() {
            if !self.selected[ii] {
                continue;
            }
            for ri in 0..rs.len() {
                sizes.push((self.members_of(ii, ri).len(), ii, ri));
            }
        }
        let max_blocks = self.options.max_blocks;
        let mut left: usize = sizes.iter().map(|s| s.0).sum();
        if max_blocks > 0 && left > max_blocks {
            // The program's own image (the first) is kept whole longest; then larger first.
            sizes.sort_by(|a, b| {
                (a.1 == 0).cmp(&(b.1 == 0)).then(b.0.cmp(&a.0)).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
            });
            for &(n, ii, ri) in &sizes {
                if left <= max_blocks || n <= 1 {
                    break;
                }
                self.collapsed[ii][ri] = true;
                left -= n;
                tally.collapsed_routines += 1;
                tally.collapsed_blocks += n;
            }
        }
        for ii in 0..self.routines.len() {
            for ri in 0..self.routines[ii].len() {
                let entry = self.routines[ii][ri].entry as usize;
                let Some(entry) = self.process.images[ii].blocks.get(entry) else { continue };
                if self.collapsed[ii][ri] {
                    for b in self.members_of(ii, ri) {
                        self.collapsed_node[ii][b as usize].get_or_insert(entry.id);
                    }
                }
            }
        }
    }

    /// The DOT node name of block `b`.
    fn node(&self, b: BlockRef) -> String {
        format!(
            "p{}_b{}",
            self.process.pid, self.process.images[b.image as usize].blocks[b.block as usize].id
        )
    }

    /// Writes the node of block `b`: its label and heat.
    fn write_block(&self, out: &mut DotText<'_>, b: BlockRef, indent: &str) {
        let idx = &self.indexes[b.image as usize];
        let blk = &self.process.images[b.image as usize].blocks[b.block as usize];
        let ev =
            self.options.event.as_deref().filter(|_| self.event.is_some()).map(|n| (n, idx.block_cost(blk)));
        let label =
            block_label(self.profile, idx, b.block, self.counts[b.image as usize][b.block as usize], ev);
        let _ = writeln!(
            out,
            "{indent}{} [label={}, {}];",
            self.node(b),
            quote(&label),
            heat_attrs(self.heat(b), self.heat_max)
        );
    }

    /// Writes the cluster of image `ii` with its routines (`drawn` marks the blocks written),
    /// or counts its blocks as hidden when `--image` leaves it out.
    fn write_image(&self, out: &mut DotText<'_>, ii: usize, drawn: &mut [bool], tally: &mut Tally) {
        let (profile, image, pid) = (self.profile, &self.process.images[ii], self.process.pid);
        if !self.selected[ii] {
            tally.hidden_blocks += image.blocks.len();
            return;
        }
        let _ = writeln!(out, "    subgraph cluster_p{pid}_i{ii} {{");
        let mut label = if image.no_addresses {
            format!("Image {}\n{}\nno addresses", image.id, profile.image_name(image))
        } else {
            format!("Image {}\n{}\nload-addr = {:#x}", image.id, profile.image_name(image), image.load_addr)
        };
        if let Some(size) = image.size {
            let _ = write!(label, "\nsize = {size}");
        }
        let _ = writeln!(out, "      label={}; color=plum;", quote(&label));
        for (ri, routine) in self.routines[ii].iter().enumerate() {
            let members = self.members_of(ii, ri);
            tally.hidden_blocks += routine
                .nodes
                .iter()
                .filter(|&&b| self.owner[ii].get(b as usize) == Some(&(ri as u32)))
                .count()
                - members.len();
            if members.is_empty() || image.blocks.get(routine.entry as usize).is_none() {
                continue;
            }
            if self.collapsed[ii][ri] {
                self.write_collapsed_routine(out, ii, routine, &members);
            } else {
                self.write_routine(out, ii, routine, &members, drawn);
            }
        }
        let _ = writeln!(out, "    }}");
    }

    /// Writes a collapsed routine as one node: its blocks, and the instructions they executed.
    fn write_collapsed_routine(&self, out: &mut DotText<'_>, ii: usize, routine: &Routine, members: &[u32]) {
        let image = &self.process.images[ii];
        let entry = &image.blocks[routine.entry as usize];
        let name = names::code_name(self.profile, image, &self.indexes[ii].symbols, entry.offset);
        let executed: u64 = members
            .iter()
            .map(|&b| {
                u64::from(image.blocks[b as usize].num_instrs).saturating_mul(self.counts[ii][b as usize])
            })
            .fold(0u64, |a, x| a.saturating_add(x));
        let hottest =
            members.iter().map(|&b| self.heat(BlockRef { image: ii as u32, block: b })).max().unwrap_or(0);
        let _ = writeln!(
            out,
            "      p{}_r{} [label={}, shape=box3d, {}];",
            self.process.pid,
            entry.id,
            quote(&format!(
                "Routine {}\nname='{name}'\naddr={:#x}\n{} blocks collapsed\n{executed} instructions executed",
                entry.id,
                image.load_addr.wrapping_add(entry.offset),
                members.len()
            )),
            heat_attrs(hottest, self.heat_max)
        );
    }

    /// Writes routine `routine` of image `ii` as a cluster of its shown blocks `members`, its
    /// loops as nested clusters; marks the blocks written in `drawn`.
    fn write_routine(
        &self,
        out: &mut DotText<'_>,
        ii: usize,
        routine: &Routine,
        members: &[u32],
        drawn: &mut [bool],
    ) {
        let (image, pid) = (&self.process.images[ii], self.process.pid);
        let entry = &image.blocks[routine.entry as usize];
        let r = |b: u32| BlockRef { image: ii as u32, block: b };
        let _ = writeln!(out, "      subgraph cluster_p{pid}_r{} {{", entry.id);
        let name = names::routine_name(self.profile, image, &self.indexes[ii].symbols, routine);
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
        let mut innermost: HashMap<u32, usize> = HashMap::new();
        for (li, l) in routine.loops.iter().enumerate() {
            for &b in &l.nodes {
                let slot = innermost.entry(b).or_insert(li);
                if routine.loops[*slot].nodes.len() > l.nodes.len() {
                    *slot = li;
                }
            }
        }
        for &b in members {
            if !innermost.contains_key(&b) {
                self.write_block(out, r(b), "        ");
                drawn[b as usize] = true;
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
            for &b in members {
                if innermost.get(&b) == Some(&li) {
                    self.write_block(out, r(b), &format!("{indent}  "));
                    drawn[b as usize] = true;
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

    /// The collapsed routine node block `r` is drawn in, if any.
    fn collapsed_of(&self, r: NodeRef) -> Option<u64> {
        match r {
            NodeRef::Block(b) => self.collapsed_node[b.image as usize][b.block as usize],
            _ => None,
        }
    }

    /// Writes the process's edges of at least `--min-count` with a drawn end (`drawn`, by
    /// image): endpoints outside the drawn clusters as free nodes (as Intel does), edges with
    /// a collapsed routine at an end added up by ends and kind.
    fn write_edges(&self, out: &mut DotText<'_>, drawn: &[Vec<bool>], tally: &mut Tally) {
        let (process, min_count) = (self.process, self.options.min_count);
        let back: HashSet<(u32, u32, u32)> = self
            .routines
            .iter()
            .enumerate()
            .flat_map(|(ii, rs)| {
                rs.iter()
                    .flat_map(|r| r.loops.iter())
                    .flat_map(move |l| l.back_edge_sources.iter().map(move |&s| (ii as u32, s, l.head)))
                    .collect::<Vec<_>>()
            })
            .collect();
        let edge_max =
            process.edges.iter().filter(|e| e.total() >= min_count).map(|e| e.total()).max().unwrap_or(0);
        let valid = |r: NodeRef| match r {
            NodeRef::Block(b) => {
                process.images.get(b.image as usize).is_some_and(|i| (b.block as usize) < i.blocks.len())
            }
            _ => true,
        };
        let is_drawn = |r: NodeRef| match r {
            NodeRef::Block(b) => drawn[b.image as usize][b.block as usize] || self.collapsed_of(r).is_some(),
            _ => false,
        };
        let mut ends = FreeNodes { view: self, drawn, extra: Vec::new(), specials: [false; 3] };
        let mut joined: BTreeMap<(String, String, EdgeKind), (u64, usize, bool)> = BTreeMap::new();
        for e in &process.edges {
            let count = e.total();
            if !valid(e.source) || !valid(e.target) {
                continue;
            }
            if !matches!(e.source, NodeRef::Block(_)) && !matches!(e.target, NodeRef::Block(_)) {
                tally.between_functions += 1;
                continue;
            }
            if count < min_count || !(is_drawn(e.source) || is_drawn(e.target)) {
                tally.hidden_edges += 1;
                continue;
            }
            let (cs, ct) = (self.collapsed_of(e.source), self.collapsed_of(e.target));
            if cs.is_some() && cs == ct {
                // Inside a collapsed routine.
                continue;
            }
            let s = ends.name(e.source, out);
            let t = ends.name(e.target, out);
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
    }
}

/// The ends of edges outside the drawn clusters, each written as a free node the first time
/// an edge names it: a block not drawn, a function, or START, END and UNKNOWN.
struct FreeNodes<'v, 'a> {
    view: &'v ProcessView<'a>,
    drawn: &'v [Vec<bool>],
    /// Blocks written as free nodes, by their index among all blocks of the process.
    extra: Vec<bool>,
    /// START, END and UNKNOWN written.
    specials: [bool; 3],
}

impl FreeNodes<'_, '_> {
    /// The node name of edge end `r` (the collapsed routine's for a block in one), after
    /// writing its free node if it needs one and has none yet.
    fn name(&mut self, r: NodeRef, out: &mut DotText<'_>) -> String {
        let (process, pid) = (self.view.process, self.view.process.pid);
        if let Some(entry) = self.view.collapsed_of(r) {
            return format!("p{pid}_r{entry}");
        }
        match r {
            NodeRef::Block(b) => {
                if !self.drawn[b.image as usize][b.block as usize] {
                    let key =
                        process.images[..b.image as usize].iter().map(|i| i.blocks.len()).sum::<usize>()
                            + b.block as usize;
                    if self.extra.len() <= key {
                        self.extra.resize(key + 1, false);
                    }
                    if !self.extra[key] {
                        self.extra[key] = true;
                        self.view.write_block(out, b, "    ");
                    }
                }
                self.view.node(b)
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
                if !self.specials[i] {
                    self.specials[i] = true;
                    let _ = writeln!(
                        out,
                        "    p{pid}_{word} [label=\"{word}\", shape=ellipse, style=filled, fillcolor=\"#eeeeee\"];"
                    );
                }
                format!("p{pid}_{word}")
            }
        }
    }
}
