//! GraphML: the control-flow graph as typed XML for NetworkX, yEd, Gephi and igraph
//! (docs/formats/graphml.md).
//!
//! One `<graph>` holds every process: a node per block (plus the `START`, `END` and `UNKNOWN`
//! special nodes and function nodes that edges use), an edge per control-flow edge. Every
//! attribute is declared with a `<key>` and a type (`long`, `string`, `boolean`, `double`), so
//! NetworkX's `read_graphml` gives Python ints and bools. Routine and loop membership come from
//! the shared analyses (routines as the input gives them, else discovered), never guessed here.
//!
//! GraphML is write-only: it carries the graph, not the whole profile (no per-thread
//! instruction counts, no stacks, no header lines; these are named in a warning when present).

use std::collections::HashSet;
use std::io::Write;

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

use crate::format::Format;
use cfghub_analysis::{names, routines, source::SourceIndex};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::EdgeClass;
use cfghub_model::ir::{NodeRef, Process, Profile, Routine};

/// The GraphML format (write-only).
pub static FORMAT: Format = Format {
    name: "graphml",
    description: "GraphML control-flow graph with typed attributes (write only; NetworkX, yEd, Gephi)",
    extensions: &[".graphml"],
    writer: Some(|profile, out, _, findings| write(profile, out, findings)),
    ..Format::NONE
};

/// Attribute declarations: (id, for, name, type).
const NODE_KEYS: &[(&str, &str, &str)] = &[
    ("label", "label", "string"),
    ("kind", "kind", "string"),
    ("process", "process", "long"),
    ("node_id", "node_id", "long"),
    ("image", "image", "string"),
    ("image_id", "image_id", "long"),
    ("address", "address", "string"),
    ("address_int", "address_int", "long"),
    ("size", "size", "long"),
    ("instrs", "instrs", "long"),
    ("count", "count", "long"),
    ("executed_instrs", "executed_instrs", "long"),
    ("symbol", "symbol", "string"),
    ("source", "source", "string"),
    ("routine", "routine", "string"),
    ("routine_entry", "routine_entry", "long"),
    ("routine_entry_block", "routine_entry_block", "boolean"),
    ("routine_exit_block", "routine_exit_block", "boolean"),
    ("loop_head", "loop_head", "long"),
    ("loop_depth", "loop_depth", "int"),
    ("is_loop_head", "is_loop_head", "boolean"),
    ("lines", "lines", "string"),
    ("records_path", "records_path", "boolean"),
];

const EDGE_KEYS: &[(&str, &str, &str)] = &[
    ("e_label", "label", "string"),
    ("e_id", "edge_id", "long"),
    ("e_kind", "kind", "string"),
    ("e_class", "class", "string"),
    ("e_count", "count", "long"),
    ("e_counts", "counts_per_thread", "string"),
    ("e_back", "back_edge", "boolean"),
    ("e_inclusive", "inclusive", "string"),
    ("e_increment", "increment", "long"),
    ("e_weight", "weight", "long"),
];

fn io(e: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("writing GraphML: {e}"))
}

struct Out<'w> {
    w: Writer<&'w mut dyn Write>,
}

impl Out<'_> {
    fn start(&mut self, tag: &str, attrs: &[(&str, &str)]) -> Result<()> {
        let mut s = BytesStart::new(tag);
        for &(k, v) in attrs {
            s.push_attribute((k, v));
        }
        self.w.write_event(Event::Start(s)).map_err(io)
    }

    fn empty(&mut self, tag: &str, attrs: &[(&str, &str)]) -> Result<()> {
        let mut s = BytesStart::new(tag);
        for &(k, v) in attrs {
            s.push_attribute((k, v));
        }
        self.w.write_event(Event::Empty(s)).map_err(io)
    }

    fn end(&mut self, tag: &str) -> Result<()> {
        self.w.write_event(Event::End(BytesEnd::new(tag))).map_err(io)
    }

    fn data(&mut self, key: &str, value: &str) -> Result<()> {
        let mut s = BytesStart::new("data");
        s.push_attribute(("key", key));
        self.w.write_event(Event::Start(s)).map_err(io)?;
        self.w.write_event(Event::Text(BytesText::new(&xml_safe(value)))).map_err(io)?;
        self.end("data")
    }
}

/// XML 1.0 cannot hold most control characters, even escaped: they are dropped.
fn xml_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
        s.chars().filter(|&c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')).collect::<String>().into()
    } else {
        s.into()
    }
}

/// Writes the GraphML of every process of `profile`.
pub fn write(profile: &Profile, out: &mut dyn Write, findings: &mut Findings) -> Result<()> {
    let mut o = Out { w: Writer::new_with_indent(out, b' ', 1) };
    o.w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None))).map_err(io)?;
    o.start(
        "graphml",
        &[
            ("xmlns", "http://graphml.graphdrawing.org/xmlns"),
            ("xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"),
            (
                "xsi:schemaLocation",
                "http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd",
            ),
        ],
    )?;
    for &(id, name, ty) in NODE_KEYS {
        o.empty("key", &[("id", id), ("for", "node"), ("attr.name", name), ("attr.type", ty)])?;
    }
    for &(id, name, ty) in EDGE_KEYS {
        o.empty("key", &[("id", id), ("for", "edge"), ("attr.name", name), ("attr.type", ty)])?;
    }
    o.start("graph", &[("id", "cfg"), ("edgedefault", "directed")])?;
    for process in &profile.processes {
        write_process(profile, process, &mut o)?;
    }
    o.end("graph")?;
    o.end("graphml")?;
    o.w.get_mut().write_all(b"\n").map_err(|e| Error::io("output", e))?;
    let stacks: usize = profile.processes.iter().map(|p| p.stacks.len()).sum();
    if stacks > 0 {
        findings.detail(
            None,
            format!("graphml: {stacks} call stack(s) are not part of the graph and were left out"),
        );
    }
    let costs: usize = profile.processes.iter().flat_map(|p| &p.images).map(|i| i.costs.len()).sum();
    if costs > 0 {
        findings.detail(None, format!("graphml: {costs} cost record(s) (events per address) were left out"));
    }
    Ok(())
}

/// Writes the nodes and edges of one process: a node per block, then the special and
/// function nodes its edges use, then an edge per control-flow edge.
fn write_process(profile: &Profile, process: &Process, o: &mut Out<'_>) -> Result<()> {
    let all = routines::all(process);
    // Back edges of every loop: (image, source block, head).
    let mut back: HashSet<(u32, u32, u32)> = HashSet::new();
    for (ii, image) in process.images.iter().enumerate() {
        let places = BlockPlaces::of(&all[ii], image.blocks.len());
        for l in all[ii].iter().flat_map(|r| r.loops.iter()) {
            back.extend(l.back_edge_sources.iter().map(|&s| (ii as u32, s, l.head)));
        }
        write_block_nodes(profile, process, ii, &all[ii], &places, o)?;
    }
    write_other_nodes(process, o)?;
    write_edges(process, &back, o)
}

/// Where each block of an image stands among its routines: its routine, innermost loop,
/// whether it heads a loop and whether it is a routine's exit.
struct BlockPlaces {
    /// Index of the routine of each block (`u32::MAX` for none).
    routine_of: Vec<u32>,
    /// The head and depth of each block's innermost loop (`u32::MAX` head for none).
    loop_of: Vec<(u32, u32)>,
    heads: Vec<bool>,
    exits: Vec<bool>,
}

impl BlockPlaces {
    /// The places of the `n` blocks of an image with `routines`.
    fn of(routines: &[Routine], n: usize) -> Self {
        let mut places = BlockPlaces {
            routine_of: vec![u32::MAX; n],
            loop_of: vec![(u32::MAX, 0); n],
            heads: vec![false; n],
            exits: vec![false; n],
        };
        for (r, routine) in routines.iter().enumerate() {
            for &b in routine.nodes.iter().chain(std::iter::once(&routine.entry)) {
                if let Some(slot) = places.routine_of.get_mut(b as usize) {
                    *slot = r as u32;
                }
            }
            for &b in &routine.exits {
                if let Some(slot) = places.exits.get_mut(b as usize) {
                    *slot = true;
                }
            }
            for l in routine.loops.iter() {
                let mut depth = 1u32;
                let mut parent = l.parent;
                while let Some(p) = parent {
                    depth += 1;
                    if depth as usize > routine.loops.len() {
                        break;
                    }
                    parent = routine.loops.iter().find(|x| x.head == p).and_then(|x| x.parent);
                }
                if let Some(h) = places.heads.get_mut(l.head as usize) {
                    *h = true;
                }
                if l.head as usize >= n {
                    continue;
                }
                for &b in &l.nodes {
                    if let Some(slot) = places.loop_of.get_mut(b as usize) {
                        if slot.0 == u32::MAX || slot.1 < depth {
                            *slot = (l.head, depth);
                        }
                    }
                }
            }
        }
        places
    }
}

/// Writes a node per block of image `ii`: its label, kind, process and image; its address,
/// size, instructions, symbol and source (for CSI, which has no addresses, its id and source
/// lines); its count; its routine and loop.
fn write_block_nodes(
    profile: &Profile,
    process: &Process,
    ii: usize,
    routines: &[Routine],
    places: &BlockPlaces,
    o: &mut Out<'_>,
) -> Result<()> {
    let (pid, image) = (process.pid, &process.images[ii]);
    let pid_s = pid.to_string();
    let symbols = names::SymbolIndex::new(image);
    let source = SourceIndex::new(image);
    let image_name = profile.image_name(image);
    let image_id = image.id.to_string();
    for (b, block) in image.blocks.iter().enumerate() {
        let id = format!("p{pid}_b{}", block.id);
        o.start("node", &[("id", &id)])?;
        let routine = routines.get(places.routine_of[b] as usize);
        if image.no_addresses {
            // No address, size or covering symbol: the format's own id, the routine and
            // the block's source lines (CSI).
            let name = routine.map(|r| names::routine_name(profile, image, &symbols, r));
            o.data("label", &format!("BB {} {}", image.display_id(b as u32), name.as_deref().unwrap_or("")))?;
            o.data("kind", "block")?;
            o.data("process", &pid_s)?;
            o.data("node_id", &block.id.to_string())?;
            o.data("image", &image_name)?;
            o.data("image_id", &image_id)?;
            if let Some(l) = image.lines_of(b as u32) {
                let lines: Vec<String> = l.lines().map(|n| n.to_string()).collect();
                o.data("lines", &lines.join(" "))?;
                o.data("records_path", if l.ends_path() { "true" } else { "false" })?;
            }
            if let Some(c) = block.count {
                o.data("count", &c.to_string())?;
            }
        } else {
            let addr = image.load_addr.wrapping_add(block.offset);
            let sym = names::code_name(profile, image, &symbols, block.offset);
            o.data("label", &format!("BB {} {sym}", block.id))?;
            o.data("kind", "block")?;
            o.data("process", &pid_s)?;
            o.data("node_id", &block.id.to_string())?;
            o.data("image", &image_name)?;
            o.data("image_id", &image_id)?;
            o.data("address", &format!("{addr:#x}"))?;
            if addr <= i64::MAX as u64 {
                o.data("address_int", &addr.to_string())?;
            }
            o.data("size", &block.size.to_string())?;
            o.data("instrs", &block.num_instrs.to_string())?;
            if let Some(c) = block.count {
                o.data("count", &c.to_string())?;
                o.data("executed_instrs", &block.executed_instrs().to_string())?;
            }
            o.data("symbol", &sym)?;
            if let Some(src) = source.describe(profile, image, block.offset, u64::from(block.size)) {
                o.data("source", &src)?;
            }
        }
        if let Some((routine, entry)) = routine.and_then(|r| Some((r, image.blocks.get(r.entry as usize)?))) {
            o.data("routine", &names::routine_name(profile, image, &symbols, routine))?;
            o.data("routine_entry", &entry.id.to_string())?;
            o.data("routine_entry_block", if routine.entry as usize == b { "true" } else { "false" })?;
            o.data("routine_exit_block", if places.exits[b] { "true" } else { "false" })?;
        }
        let (head, depth) = places.loop_of[b];
        if head != u32::MAX {
            o.data("loop_head", &image.blocks[head as usize].id.to_string())?;
            o.data("loop_depth", &depth.to_string())?;
        }
        o.data("is_loop_head", if places.heads[b] { "true" } else { "false" })?;
        o.end("node")?;
    }
    Ok(())
}

/// Writes the special nodes (START, END, UNKNOWN) and function nodes the process's edges use.
fn write_other_nodes(process: &Process, o: &mut Out<'_>) -> Result<()> {
    let pid_s = process.pid.to_string();
    let mut extra: Vec<NodeRef> = Vec::new();
    for e in &process.edges {
        for r in [e.source, e.target] {
            if !matches!(r, NodeRef::Block(_)) && !extra.contains(&r) {
                extra.push(r);
            }
        }
    }
    for r in &extra {
        let id = node_id(process, *r);
        o.start("node", &[("id", &id)])?;
        match r {
            NodeRef::Symbol(s) => {
                let name = process
                    .images
                    .get(s.image as usize)
                    .and_then(|i| i.symbols.get(s.symbol as usize))
                    .map_or("?", |s| s.name.as_str());
                o.data("label", name)?;
                o.data("kind", "function")?;
                o.data("process", &pid_s)?;
                o.data("symbol", name)?;
            }
            _ => {
                let word = special_word(*r);
                o.data("label", word)?;
                o.data("kind", &word.to_ascii_lowercase())?;
                o.data("process", &pid_s)?;
            }
        }
        o.end("node")?;
    }
    Ok(())
}

/// Writes an edge per control-flow edge whose ends exist: kind, class (a loop's back edges,
/// found or stated, are `back`), counts, inclusive costs and path numbering.
fn write_edges(process: &Process, back: &HashSet<(u32, u32, u32)>, o: &mut Out<'_>) -> Result<()> {
    let pid = process.pid;
    let valid = |r: NodeRef| match r {
        NodeRef::Block(b) => {
            process.images.get(b.image as usize).is_some_and(|i| (b.block as usize) < i.blocks.len())
        }
        _ => true,
    };
    for (k, e) in process.edges.iter().enumerate() {
        if !valid(e.source) || !valid(e.target) {
            continue;
        }
        let is_back = match (e.source, e.target) {
            (NodeRef::Block(a), NodeRef::Block(b)) => {
                a.image == b.image && back.contains(&(a.image, a.block, b.block))
            }
            _ => false,
        } || e.path().is_some_and(|p| p.back);
        let class = EdgeClass::of(e.kind, is_back);
        let id = format!("p{pid}_e{k}");
        let (s, t) = (node_id(process, e.source), node_id(process, e.target));
        o.start("edge", &[("id", &id), ("source", &s), ("target", &t)])?;
        o.data("e_label", &format!("{} {}", class.word(e.kind), e.total()))?;
        o.data("e_id", &e.id.to_string())?;
        o.data("e_kind", e.kind.as_str())?;
        o.data("e_class", class.word(e.kind))?;
        o.data("e_count", &e.total().to_string())?;
        let per: Vec<String> = e.counts.iter().map(|c| c.to_string()).collect();
        o.data("e_counts", &per.join(","))?;
        o.data("e_back", if is_back { "true" } else { "false" })?;
        if !e.inclusive().is_empty() {
            let inc: Vec<String> = e.inclusive().iter().map(|c| c.to_string()).collect();
            o.data("e_inclusive", &inc.join(","))?;
        }
        if let Some(p) = e.path() {
            o.data("e_increment", &p.increment.to_string())?;
            o.data("e_weight", &p.weight.to_string())?;
        }
        o.end("edge")?;
    }
    Ok(())
}

fn special_word(r: NodeRef) -> &'static str {
    match r {
        NodeRef::Start => "START",
        NodeRef::End => "END",
        _ => "UNKNOWN",
    }
}

/// The GraphML id of a node: `p<pid>_b<block id>`, `p<pid>_START`, `p<pid>_f<image>_<symbol>`.
fn node_id(process: &cfghub_model::ir::Process, r: NodeRef) -> String {
    let pid = process.pid;
    match r {
        NodeRef::Block(b) => {
            format!("p{pid}_b{}", process.images[b.image as usize].blocks[b.block as usize].id)
        }
        NodeRef::Symbol(s) => format!("p{pid}_f{}_{}", s.image, s.symbol),
        other => format!("p{pid}_{}", special_word(other)),
    }
}
