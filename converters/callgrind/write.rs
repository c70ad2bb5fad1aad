//! Callgrind writer: files that KCachegrind and `callgrind_annotate` read.
//!
//! Layout of what is written (one part per process, or per process and thread with
//! `--per-thread`):
//! ```text
//! # callgrind format
//! version: 1
//! creator: ...
//! pid: 29003
//! cmd: ./app
//! positions: instr line            (line alone when no address is known)
//! event: Ir : Instruction Fetch
//! events: Ir cycles
//! summary: 135213 0
//! fl=(1) /src/app.c                 (name definitions, in the model's order)
//! ob=(1) /bin/app
//! fn=(1) main
//! 0x59d 4 5                         (cost lines; subposition compression)
//! +15 +1 2
//! cfn=(2) work
//! calls=10 0x640 12                 (count, callee entry)
//! * * 12040                         (call site, callee's inclusive cost)
//! jcnd=10/11 -30 -1                 (followed/executed, target)
//! * *                               (jump source)
//! totals: 135213 0
//! ```
//!
//! Where the costs come from:
//! - A profile with an `Ir` event (a Callgrind file read back, or any format that measured
//!   instructions) is written from [`crate::ir::Image::costs`] as it is: never recomputed, never
//!   double counted.
//! - Otherwise, when the profile has blocks (a DCFG), `Ir` is `NUM_INSTRS x COUNT` of every
//!   block, spread over the block's source lines (`SOURCE_DATA`): a line entry inside the block
//!   gets its own instruction count times the block's count; what no entry covers goes to the
//!   block's first address. Functions are the routines ([`analysis::routines::all`]), named by
//!   the symbol at their entry ([`analysis::names`]). Costs of other events at addresses
//!   (e.g. merged DCPI samples) are written as further columns.
//!
//! Calls come from call edges, with the edge's stated inclusive cost or, when it has none, the
//! call graph's estimate ([`analysis::callgraph`]). Conditional branches become
//! `jcnd=taken/executed` (executed = taken + the block's fall-through), other branches `jump=`.

use std::collections::HashMap;
use std::io::Write;

use super::read::FastHash;
use crate::analysis::{callgraph, counts, names, routines, stacks};
use crate::error::{Error, Findings, Result};
use crate::ir::{BlockRef, Edge, EdgeKind, FileId, Image, NodeRef, Process, Profile};
use crate::registry::WriteOptions;

/// Writes `profile` as a Callgrind file.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    // Ir comes from blocks when the profile has blocks and no cost at an address carries Ir
    // (an `Ir` event may still be there: stacks and call inclusive costs replayed from a
    // DCFG-trace measure it).
    let ir_event = profile.event_index("Ir");
    let ir_in_costs = ir_event.is_some_and(|k| {
        profile.processes.iter().any(|p| p.images.iter().any(|i| i.costs.iter().any(|c| c.value(k) != 0)))
    });
    let ir_from_blocks =
        !ir_in_costs && profile.processes.iter().any(|p| p.images.iter().any(|i| !i.blocks.is_empty()));
    // Event columns: Ir first when it comes from blocks, then the profile's (other) events.
    let mut columns: Vec<(String, Option<String>)> = Vec::new();
    let mut event_columns: Vec<usize> = Vec::with_capacity(profile.events.len());
    if ir_from_blocks {
        columns.push(("Ir".into(), Some("Instruction Fetch".into())));
    }
    for (k, e) in profile.events.iter().enumerate() {
        if ir_from_blocks && Some(k) == ir_event {
            event_columns.push(0);
            continue;
        }
        event_columns.push(columns.len());
        columns.push((e.name.clone(), e.description.clone()));
    }
    if columns.is_empty() {
        columns.push(("Ir".into(), Some("Instruction Fetch".into())));
    }
    let has_instr = profile.processes.iter().any(|p| {
        p.images.iter().any(|i| !i.blocks.is_empty() || i.costs.iter().any(|c| c.offset.is_some()))
            || p.edges.iter().any(|e| e.site().is_some_and(|s| s.source_offset.is_some()))
    });
    let has_line = !has_instr
        || profile.processes.iter().any(|p| {
            p.images.iter().any(|i| !i.source_lines.is_empty() || i.costs.iter().any(|c| c.line.is_some()))
                || p.edges.iter().any(|e| e.site().is_some_and(|s| s.source_line.is_some()))
        });
    let mut w = Writer {
        out,
        profile,
        columns: columns.len(),
        column_names: columns.iter().map(|c| c.0.clone()).collect(),
        event_columns,
        ir_from_blocks,
        has_instr,
        has_line,
        objects: NameTable::default(),
        files: NameTable::default(),
        functions: NameTable::default(),
        body: Vec::with_capacity(1 << 20),
        last: [0; 2],
        ctx: Context::default(),
        totals: vec![0; columns.len()],
        dropped: HashMap::new(),
        unplaced: 0,
        lines: Vec::new(),
        arc_edges: HashMap::default(),
    };
    w.head(&columns)?;
    let mut parts: Vec<(usize, Option<usize>)> = Vec::new();
    for (p, process) in profile.processes.iter().enumerate() {
        let threads = process.thread_count();
        if threads > 1 && options.per_thread {
            for t in 0..threads {
                parts.push((p, Some(t)));
            }
        } else {
            if threads > 1 {
                findings.warn(
                    None,
                    format!(
                        "callgrind: per-thread counts of process {} ({threads} threads) summed into one part; use --per-thread",
                        process.pid
                    ),
                );
            }
            parts.push((p, None));
        }
    }
    let nparts = parts.len();
    let mut costs_unsplit = false;
    for (k, &(p, thread)) in parts.iter().enumerate() {
        let process = &profile.processes[p];
        w.part(k + 1, nparts, process, thread, &mut costs_unsplit)?;
    }
    if profile.processes.is_empty() {
        // An empty profile is still a valid file with its events and zero totals.
        w.flush_part(1, 1, None, None)?;
    }
    if costs_unsplit {
        findings.warn(
            None,
            "callgrind: costs at addresses have no per-thread split; written in each process's first thread part",
        );
    }
    if w.unplaced > 0 {
        findings.warn(
            None,
            format!("callgrind: {} jump(s) into another object cannot be written; left out", w.unplaced),
        );
    }
    if !w.dropped.is_empty() {
        let mut kinds: Vec<String> = w.dropped.iter().map(|(k, n)| format!("{n} {k}")).collect();
        kinds.sort();
        findings
            .warn(None, format!("callgrind: edges with no Callgrind form left out: {}", kinds.join(", ")));
    }
    if ir_from_blocks && profile.events.iter().any(|e| e.name != "Ir") && ir_event.is_none() {
        findings.warn(
            None,
            "callgrind: inclusive costs of calls are computed for Ir only; the other events' inclusive costs are 0",
        );
    }
    w.out.flush().map_err(|e| Error::io("output", e))
}

/// Whether a process holds stacks and nothing else the writer could use (no blocks, costs or
/// edges).
fn stacks_only(process: &Process) -> bool {
    !process.stacks.is_empty()
        && process.edges.is_empty()
        && process.images.iter().all(|i| i.blocks.is_empty() && i.costs.is_empty())
}

/// A file or object name ("" for none), borrowed from the profile rather than the writer, so
/// that it can be written into the writer's name tables without a copy.
fn file_name(profile: &Profile, f: Option<FileId>) -> &str {
    f.map_or("", |f| profile.file_name(f))
}

fn object_name<'p>(profile: &'p Profile, process: &Process, image: u32) -> &'p str {
    file_name(profile, process.images[image as usize].file)
}

/// Compressed names of one namespace: `(id) name` the first time in a part, `(id)` after.
#[derive(Default)]
struct NameTable {
    ids: HashMap<String, u32>,
    /// Ids defined in the current part (KCachegrind forgets ids at a new part).
    defined: Vec<bool>,
}

impl NameTable {
    fn write(&mut self, out: &mut Vec<u8>, key: &str, name: &str) {
        out.extend_from_slice(key.as_bytes());
        out.push(b'=');
        if name.is_empty() {
            out.push(b'\n');
            return;
        }
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = self.ids.len() as u32 + 1;
                self.ids.insert(name.to_string(), id);
                id
            }
        };
        if self.defined.len() <= id as usize {
            self.defined.resize(id as usize + 1, false);
        }
        out.push(b'(');
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        out.push(b')');
        if !self.defined[id as usize] {
            self.defined[id as usize] = true;
            out.push(b' ');
            out.extend_from_slice(name.as_bytes());
        }
        out.push(b'\n');
    }

    fn new_part(&mut self) {
        self.defined.iter_mut().for_each(|d| *d = false);
    }
}

/// The place the last written lines refer to.
#[derive(Default, Clone, PartialEq)]
struct Context {
    /// Image index (`Some`) once an `ob=` was written in this part.
    image: Option<u32>,
    /// (image, function name) of the last `fn=`.
    function: Option<(u32, String)>,
    fl: Option<Option<FileId>>,
    file: Option<Option<FileId>>,
}

/// A function as written: its object, name and `fl=` file.
#[derive(Clone)]
struct Func {
    image: u32,
    name: String,
    file: Option<FileId>,
}

struct Writer<'a> {
    out: &'a mut dyn Write,
    profile: &'a Profile,
    columns: usize,
    /// Name of each column.
    column_names: Vec<String>,
    /// Column of each profile event.
    event_columns: Vec<usize>,
    ir_from_blocks: bool,
    has_instr: bool,
    has_line: bool,
    objects: NameTable,
    files: NameTable,
    functions: NameTable,
    body: Vec<u8>,
    /// Subposition bases: instr, line.
    last: [u64; 2],
    ctx: Context,
    totals: Vec<u64>,
    dropped: HashMap<&'static str, u64>,
    unplaced: u64,
    /// Source-line indexes of the current process's images.
    lines: Vec<LineIndex>,
    /// Call-edge traversals per call graph arc of the current process.
    arc_edges: HashMap<(BlockRef, u32), u64, FastHash>,
}

fn num(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| Error::io("output", e))
    }

    fn head(&mut self, columns: &[(String, Option<String>)]) -> Result<()> {
        let meta = &self.profile.meta;
        let mut h = String::from("# callgrind format\nversion: 1\n");
        match &meta.creator {
            Some(creator) => h.push_str(&format!("creator: {}\n", one_line(creator))),
            None => h.push_str(&format!("# written by cfghub {}\n", env!("CARGO_PKG_VERSION"))),
        }
        if let Some(cmd) = &meta.command {
            h.push_str(&format!("cmd: {}\n", one_line(cmd)));
        }
        for (k, v) in &meta.headers {
            match k.as_str() {
                "desc" => h.push_str(&format!("desc: {}\n", one_line(v))),
                "event" if v.contains('=') => h.push_str(&format!("event: {}\n", one_line(v))),
                "version" | "creator" | "pid" | "cmd" | "part" | "thread" | "positions" | "event"
                | "events" | "summary" | "totals" => h.push_str(&format!("desc: {k}: {}\n", one_line(v))),
                _ if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                    h.push_str(&format!("{k}: {}\n", one_line(v)))
                }
                _ => h.push_str(&format!("desc: {}: {}\n", one_line(k), one_line(v))),
            }
        }
        for (name, long) in columns {
            if let Some(l) = long.as_deref().filter(|l| !l.is_empty()) {
                h.push_str(&format!("event: {name} : {}\n", one_line(l)));
            }
        }
        self.put(h.as_bytes())
    }

    /// Writes one part: header lines, name definitions, costs, calls and jumps.
    fn part(
        &mut self,
        k: usize,
        n: usize,
        process: &Process,
        thread: Option<usize>,
        costs_unsplit: &mut bool,
    ) -> Result<()> {
        // A process of stacks only (folded, DTrace, perf) is written as its function-level
        // view: exact self costs at leaf frames, calls with inclusive costs.
        let function_level;
        let process = if stacks_only(process) {
            function_level = stacks::function_level(self.profile, process);
            &function_level
        } else {
            process
        };
        self.body.clear();
        self.last = [0; 2];
        self.ctx = Context::default();
        self.totals.iter_mut().for_each(|t| *t = 0);
        self.objects.new_part();
        self.files.new_part();
        self.functions.new_part();
        self.lines = process.images.iter().map(LineIndex::new).collect();
        let write_costs = thread.map_or(true, |t| t == 0);
        if thread.is_some() && process.images.iter().any(|i| !i.costs.is_empty()) {
            *costs_unsplit = true;
        }
        if self.ir_from_blocks {
            self.blocks_body(process, thread, write_costs);
        } else {
            self.costs_body(process, thread, write_costs);
        }
        self.flush_part(k, n, Some(process), thread)
    }

    fn flush_part(
        &mut self,
        k: usize,
        _n: usize,
        process: Option<&Process>,
        thread: Option<usize>,
    ) -> Result<()> {
        let mut h = String::new();
        if k > 1 {
            h.push('\n');
        }
        if let Some(p) = process {
            h.push_str(&format!("pid: {}\n", p.pid));
        }
        h.push_str(&format!("part: {k}\n"));
        if let Some(t) = thread {
            h.push_str(&format!("thread: {}\n", t + 1));
        }
        h.push_str(match (self.has_instr, self.has_line) {
            (true, true) => "positions: instr line\n",
            (true, false) => "positions: instr\n",
            _ => "positions: line\n",
        });
        let names: Vec<&str> = self.column_names.iter().map(String::as_str).collect();
        h.push_str(&format!("events: {}\n", names.join(" ")));
        let totals: Vec<String> = self.totals.iter().map(|t| t.to_string()).collect();
        h.push_str(&format!("summary: {}\n\n", totals.join(" ")));
        self.put(h.as_bytes())?;
        let body = std::mem::take(&mut self.body);
        self.put(&body)?;
        self.body = body;
        self.put(format!("\ntotals: {}\n", totals.join(" ")).as_bytes())
    }

    /// Switches to function `f`, writing `ob=`, `fl=` and `fn=` as needed.
    fn enter(&mut self, process: &Process, f: &Func) {
        if self.ctx.image != Some(f.image) {
            let name = object_name(self.profile, process, f.image);
            self.objects.write(&mut self.body, "ob", name);
            self.ctx.image = Some(f.image);
            self.ctx.function = None;
        }
        if self.ctx.function.as_ref().is_some_and(|(i, n)| *i == f.image && *n == f.name) {
            return;
        }
        // `fn=` goes back to the `fl=` file for KCachegrind but stays in the last `fi=` file for
        // callgrind_annotate: write `fl=` unless both agree.
        if self.ctx.fl != Some(f.file) || self.ctx.file != Some(f.file) {
            let name = file_name(self.profile, f.file);
            self.files.write(&mut self.body, "fl", name);
            self.ctx.fl = Some(f.file);
        }
        self.functions.write(&mut self.body, "fn", &f.name);
        self.ctx.function = Some((f.image, f.name.clone()));
        self.ctx.file = Some(f.file);
    }

    /// Sets the source file of the following cost lines (`fi=`, or `fe=` back to the function's).
    fn set_file(&mut self, file: Option<FileId>) {
        if self.ctx.file == Some(file) {
            return;
        }
        let key = if self.ctx.fl == Some(file) { "fe" } else { "fi" };
        let name = file_name(self.profile, file);
        self.files.write(&mut self.body, key, name);
        self.ctx.file = Some(file);
    }

    /// Writes the positions of a line; `update` for cost and source lines (targets of calls and
    /// jumps do not move the bases).
    fn positions(&mut self, instr: u64, line: u32, update: bool) {
        let mut vals = [(instr, 0usize); 2];
        let mut n = 0;
        if self.has_instr {
            vals[n] = (instr, 0);
            n += 1;
        }
        if self.has_line {
            vals[n] = (line as u64, 1);
            n += 1;
        }
        for (i, &(v, col)) in vals[..n].iter().enumerate() {
            if i > 0 {
                self.body.push(b' ');
            }
            let base = self.last[col];
            if v == base {
                self.body.push(b'*');
            } else if base != 0 && v > base && v - base < (1 << 16) {
                self.body.push(b'+');
                num(&mut self.body, v - base);
            } else if base != 0 && v < base && base - v < (1 << 16) {
                self.body.push(b'-');
                num(&mut self.body, base - v);
            } else if col == 0 {
                self.body.extend_from_slice(b"0x");
                let mut buf = [0u8; 16];
                let mut k = 16;
                let mut x = v;
                loop {
                    k -= 1;
                    buf[k] = b"0123456789abcdef"[(x & 15) as usize];
                    x >>= 4;
                    if x == 0 {
                        break;
                    }
                }
                self.body.extend_from_slice(&buf[k..]);
            } else {
                num(&mut self.body, v);
            }
            if update {
                self.last[col] = v;
            }
        }
    }

    /// A cost line: positions and values (trailing zeros left out), added to the totals.
    fn cost(&mut self, instr: u64, line: u32, values: &[u64], self_cost: bool) {
        self.positions(instr, line, true);
        let values = &values[..values.len().min(self.columns)];
        let n = values.iter().rposition(|&v| v != 0).map_or(0, |p| p + 1);
        for (i, &v) in values[..n].iter().enumerate() {
            self.body.push(b' ');
            num(&mut self.body, v);
            if self_cost {
                self.totals[i] = self.totals[i].wrapping_add(v);
            }
        }
        self.body.push(b'\n');
    }

    /// The costs of a profile that has its own cost columns, written as they are.
    fn costs_body(&mut self, process: &Process, thread: Option<usize>, write_costs: bool) {
        // Name definitions in the model's order, so that reading the file back interns files,
        // images and symbols in the same order.
        let profile = self.profile;
        for (id, name) in profile.files.iter() {
            let _ = id;
            self.files.write(&mut self.body, "fl", name);
        }
        self.ctx.fl = None;
        for (i, image) in process.images.iter().enumerate() {
            for s in &image.symbols {
                self.enter(process, &Func { image: i as u32, name: s.name.clone(), file: s.file });
            }
        }
        let has_blocks = process.images.iter().any(|i| !i.blocks.is_empty());
        let rs = (has_blocks || has_block_edges(process)).then(|| routines_of(process));
        let graph = rs.as_ref().map(|rs| callgraph::build_with(self.profile, process, rs));
        let funcs = FuncIndex::new(&self.lines, process, graph.as_ref());
        self.set_arc_edges(process, graph.as_ref());
        let blocks = BlockIndex::new(process);
        if write_costs {
            for (i, image) in process.images.iter().enumerate() {
                let index = names::SymbolIndex::new(image);
                // The function of the previous cost line, by symbol, to skip the look-ups.
                let mut current: Option<u32> = None;
                for c in &image.costs {
                    // The cost's function: its symbol; else the routine of the block holding
                    // its address; else the symbol covering it.
                    if c.symbol.is_none() || c.symbol != current {
                        let f = match c.symbol {
                            Some(s) => Func {
                                image: i as u32,
                                name: image.symbols[s as usize].name.clone(),
                                file: image.symbols[s as usize].file,
                            },
                            None => {
                                let node = c.offset.and_then(|o| {
                                    graph.as_ref()?.node_of(blocks.containing(process, i as u32, o)?)
                                });
                                match (node, c.offset) {
                                    (Some(n), _) => funcs.node_func(n),
                                    (None, Some(o)) => match index.covering(o) {
                                        Some(s) => Func {
                                            image: i as u32,
                                            name: image.symbols[s as usize].name.clone(),
                                            file: image.symbols[s as usize].file,
                                        },
                                        None => Func {
                                            image: i as u32,
                                            name: names::code_name(self.profile, image, &index, o),
                                            file: c.file,
                                        },
                                    },
                                    (None, None) => {
                                        Func { image: i as u32, name: "???".to_string(), file: c.file }
                                    }
                                }
                            }
                        };
                        self.enter(process, &f);
                        current = c.symbol;
                    }
                    // A cost without a source position takes the line its address has.
                    let (file, line) = match (c.file, c.line, c.offset) {
                        (None, None, Some(o)) => {
                            self.lines[i].at(image, o).map_or((None, None), |l| (l.file, Some(l.line)))
                        }
                        _ => (c.file, c.line),
                    };
                    self.set_file(file);
                    self.cost(c.offset.unwrap_or(0), line.unwrap_or(0), &c.values, true);
                }
            }
        }
        self.edges(process, thread, &funcs, graph.as_ref(), None);
    }

    /// Ir from blocks (a DCFG), spread over source lines, plus other events' costs.
    fn blocks_body(&mut self, process: &Process, thread: Option<usize>, write_costs: bool) {
        let rs = routines_of(process);
        let graph = callgraph::build_with(self.profile, process, &rs);
        let funcs = FuncIndex::new(&self.lines, process, Some(&graph));
        self.set_arc_edges(process, Some(&graph));
        let thread_counts = thread.map(|_| counts::block_thread_counts(process));
        let totals = counts::block_totals(process);
        // Costs of other events, by the node of the block that holds their address.
        let mut node_costs: Vec<Vec<(u32, usize)>> = vec![Vec::new(); graph.nodes.len()];
        let mut loose: Vec<(u32, usize)> = Vec::new();
        if write_costs {
            let blocks = BlockIndex::new(process);
            for (i, image) in process.images.iter().enumerate() {
                for (k, c) in image.costs.iter().enumerate() {
                    let node = c.offset.and_then(|o| graph.node_of(blocks.containing(process, i as u32, o)?));
                    match node {
                        Some(n) => node_costs[n as usize].push((i as u32, k)),
                        None => loose.push((i as u32, k)),
                    }
                }
            }
        }
        let mut edges_by_node: Vec<Vec<usize>> = vec![Vec::new(); graph.nodes.len()];
        let mut other_edges = Vec::new();
        for (k, e) in process.edges.iter().enumerate() {
            match e.source {
                NodeRef::Block(s) => match graph.node_of(s) {
                    Some(n) => edges_by_node[n as usize].push(k),
                    None => other_edges.push(k),
                },
                _ => other_edges.push(k),
            }
        }
        for (n, node) in graph.nodes.iter().enumerate() {
            let image = &process.images[node.image as usize];
            let routine = &rs[node.image as usize][node.routine as usize];
            let func = funcs.node_func(n as u32);
            let mut blocks: Vec<u32> = routine.nodes.clone();
            blocks.sort_unstable_by_key(|&b| image.blocks.get(b as usize).map_or(0, |b| b.offset));
            let mut lines_out: Vec<(u64, Option<FileId>, u32, u64)> = Vec::new();
            for &b in &blocks {
                let Some(block) = image.blocks.get(b as usize) else { continue };
                let r = BlockRef { image: node.image, block: b };
                let count = match (thread, &thread_counts) {
                    (Some(t), Some(tc)) => tc.get(&r).and_then(|v| v.get(t)).copied().unwrap_or(0),
                    _ => totals.get(&r).copied().unwrap_or(0),
                };
                if count == 0 {
                    continue;
                }
                self.lines[node.image as usize].spread(image, block, count, &mut lines_out);
            }
            let extra = &node_costs[n];
            if lines_out.is_empty() && extra.is_empty() && edges_by_node[n].is_empty() {
                continue;
            }
            self.enter(process, &func);
            let mut values = vec![0u64; self.columns];
            for (addr, file, line, v) in lines_out {
                self.set_file(file);
                values[0] = v;
                self.cost(addr, line, &values, true);
            }
            for &(i, k) in extra {
                let c = process.images[i as usize].costs.get(k);
                self.set_file(c.file);
                let mut values = vec![0u64; self.columns];
                for (k, v) in c.values.iter().enumerate() {
                    if let Some(&col) = self.event_columns.get(k) {
                        values[col] = *v;
                    }
                }
                self.cost(c.offset.unwrap_or(0), c.line.unwrap_or(0), &values, true);
            }
            self.edges(process, thread, &funcs, Some(&graph), Some(&edges_by_node[n]));
        }
        let indexes: Vec<names::SymbolIndex> = process.images.iter().map(names::SymbolIndex::new).collect();
        for (i, k) in loose {
            let image = &process.images[i as usize];
            let c = image.costs.get(k);
            let index = &indexes[i as usize];
            let name = match c.symbol {
                Some(s) => image.symbols[s as usize].name.clone(),
                None => c
                    .offset
                    .map_or_else(|| "???".to_string(), |o| names::code_name(self.profile, image, index, o)),
            };
            self.enter(process, &Func { image: i, name, file: c.file });
            self.set_file(c.file);
            let mut values = vec![0u64; self.columns];
            for (k, v) in c.values.iter().enumerate() {
                if let Some(&col) = self.event_columns.get(k) {
                    values[col] = *v;
                }
            }
            self.cost(c.offset.unwrap_or(0), c.line.unwrap_or(0), &values, true);
        }
        self.edges(process, thread, &funcs, Some(&graph), Some(&other_edges));
    }

    /// Calls and jumps from the edges `only` lists (all when `None`), in that order.
    fn edges(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        graph: Option<&callgraph::CallGraph>,
        only: Option<&[usize]>,
    ) {
        let all: Vec<usize>;
        let list: &[usize] = match only {
            Some(l) => l,
            None => {
                all = (0..process.edges.len()).collect();
                &all
            }
        };
        // Fall-throughs per source, to complete conditional jumps: each conditional takes the
        // first fall-through of the same source (and site) not taken yet.
        type Key = (NodeRef, Option<u64>, Option<u32>);
        let key_of = |e: &Edge| -> Key {
            (e.source, e.site().and_then(|s| s.source_offset), e.site().and_then(|s| s.source_line))
        };
        let mut fall: HashMap<Key, std::collections::VecDeque<usize>, FastHash> = HashMap::default();
        for &k in list {
            let e = &process.edges[k];
            if e.kind == EdgeKind::FallThrough {
                fall.entry(key_of(e)).or_default().push_back(k);
            }
        }
        let mut paired: std::collections::HashSet<usize, FastHash> = Default::default();
        let mut partner: HashMap<usize, usize, FastHash> = HashMap::default();
        for &k in list {
            let e = &process.edges[k];
            if e.kind.is_conditional() {
                if let Some(f) = fall.get_mut(&key_of(e)).and_then(|q| q.pop_front()) {
                    paired.insert(f);
                    partner.insert(k, f);
                }
            }
        }
        let arc_edges = std::mem::take(&mut self.arc_edges);
        for &k in list {
            let e = &process.edges[k];
            if e.kind.is_call() {
                self.call(process, thread, funcs, graph, &arc_edges, e);
            } else if e.kind.is_branch() {
                let executed = e
                    .kind
                    .is_conditional()
                    .then(|| partner.get(&k).map_or(0, |&f| count_of(&process.edges[f], thread)));
                self.jump(process, thread, funcs, e, executed);
            } else if e.kind == EdgeKind::FallThrough {
                if paired.contains(&k) || matches!(e.source, NodeRef::Block(_)) {
                    // Part of a jcnd=, or implied by the blocks (a reader rebuilds it).
                    continue;
                }
                *self.dropped.entry("FALL_THROUGH").or_default() += 1;
            } else if e.kind.is_return() || e.kind.is_bypass() {
                // Implied by the calls: Callgrind has no lines for them.
                if !matches!(e.source, NodeRef::Block(_)) {
                    *self.dropped.entry(e.kind.as_str()).or_default() += 1;
                }
            } else {
                *self.dropped.entry(e.kind.as_str()).or_default() += 1;
            }
        }
        self.arc_edges = arc_edges;
    }

    /// Traversals of the call edges of every (calling block, callee routine) arc, to share a
    /// call graph arc's inclusive cost among its edges.
    fn set_arc_edges(&mut self, process: &Process, graph: Option<&callgraph::CallGraph>) {
        self.arc_edges.clear();
        let Some(g) = graph else { return };
        for e in &process.edges {
            if let (true, NodeRef::Block(s), NodeRef::Block(t)) = (e.kind.is_call(), e.source, e.target) {
                if let Some(callee) = g.node_of(t) {
                    *self.arc_edges.entry((s, callee)).or_default() += e.total();
                }
            }
        }
    }

    fn line_at(&self, process: &Process, image: u32, addr: u64) -> u32 {
        let img = &process.images[image as usize];
        self.lines.get(image as usize).and_then(|ix| ix.at(img, addr)).map_or(0, |l| l.line)
    }

    /// Source and target positions of an edge: its site, else the blocks' addresses and lines.
    fn ends(&self, process: &Process, e: &Edge) -> Option<((u64, u32), (u64, u32))> {
        let site = e.site();
        let src = match e.source {
            NodeRef::Block(b) => {
                let block = process.images.get(b.image as usize)?.blocks.get(b.block as usize)?;
                let addr = block.offset + block.last_instr_offset;
                let line =
                    site.and_then(|s| s.source_line).unwrap_or_else(|| self.line_at(process, b.image, addr));
                (site.and_then(|s| s.source_offset).unwrap_or(addr), line)
            }
            NodeRef::Symbol(_) => (
                site.and_then(|s| s.source_offset).unwrap_or(0),
                site.and_then(|s| s.source_line).unwrap_or(0),
            ),
            _ => return None,
        };
        let tgt = match e.target {
            NodeRef::Block(b) => {
                let block = process.images.get(b.image as usize)?.blocks.get(b.block as usize)?;
                let line = site
                    .and_then(|s| s.target_line)
                    .unwrap_or_else(|| self.line_at(process, b.image, block.offset));
                (site.and_then(|s| s.target_offset).unwrap_or(block.offset), line)
            }
            NodeRef::Symbol(_) => (
                site.and_then(|s| s.target_offset).unwrap_or(0),
                site.and_then(|s| s.target_line).unwrap_or(0),
            ),
            _ => return None,
        };
        Some((src, tgt))
    }

    fn call(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        graph: Option<&callgraph::CallGraph>,
        arc_edges: &HashMap<(BlockRef, u32), u64, FastHash>,
        e: &Edge,
    ) {
        let (Some(caller), Some(callee), Some((src, tgt))) =
            (funcs.of(e.source), funcs.of(e.target), self.ends(process, e))
        else {
            *self.dropped.entry(e.kind.as_str()).or_default() += 1;
            return;
        };
        let count = count_of(e, thread);
        let mut inclusive = vec![0u64; self.columns];
        if !e.inclusive().is_empty() {
            for (i, &v) in e.inclusive().iter().enumerate() {
                if let Some(&col) = self.event_columns.get(i) {
                    inclusive[col] = scale(v, count, e.total(), thread.is_some());
                }
            }
        } else if let (Some(g), NodeRef::Block(s), NodeRef::Block(t)) = (graph, e.source, e.target) {
            if let (Some(cn), Some(callee_node)) = (g.node_of(s), g.node_of(t)) {
                let arcs = g.calls_from(cn);
                if let Some(a) = arcs.iter().find(|a| a.site == s && a.callee == callee_node) {
                    let edges_total = arc_edges.get(&(s, callee_node)).copied().unwrap_or(0);
                    let share = if edges_total == 0 {
                        0
                    } else {
                        scale(a.inclusive_instrs, e.total(), edges_total, true)
                    };
                    inclusive[0] = scale(share, count, e.total(), thread.is_some());
                }
            }
        }
        if thread.is_some() && count == 0 {
            return;
        }
        self.enter(process, &caller);
        if callee.image != caller.image {
            let name = object_name(self.profile, process, callee.image);
            self.objects.write(&mut self.body, "cob", name);
        }
        if Some(callee.file) != self.ctx.file {
            let name = file_name(self.profile, callee.file);
            self.files.write(&mut self.body, "cfi", name);
        }
        self.functions.write(&mut self.body, "cfn", &callee.name);
        self.body.extend_from_slice(b"calls=");
        num(&mut self.body, count);
        self.body.push(b' ');
        self.positions(tgt.0, tgt.1, false);
        self.body.push(b'\n');
        self.cost(src.0, src.1, &inclusive, false);
    }

    fn jump(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        e: &Edge,
        fall_through: Option<u64>,
    ) {
        let (Some(from), Some(to), Some((src, tgt))) =
            (funcs.of(e.source), funcs.of(e.target), self.ends(process, e))
        else {
            *self.dropped.entry(e.kind.as_str()).or_default() += 1;
            return;
        };
        if from.image != to.image {
            self.unplaced += 1;
            return;
        }
        let count = count_of(e, thread);
        if count == 0 {
            // Callgrind writes jumps that were followed; a reader sees the fall-through from
            // the block counts.
            return;
        }
        self.enter(process, &from);
        if to.name != from.name {
            if to.file != from.file {
                let name = file_name(self.profile, to.file);
                self.files.write(&mut self.body, "jfi", name);
            }
            self.functions.write(&mut self.body, "jfn", &to.name);
        }
        match fall_through {
            Some(ft) => {
                self.body.extend_from_slice(b"jcnd=");
                num(&mut self.body, count);
                self.body.push(b'/');
                num(&mut self.body, count.saturating_add(ft));
            }
            None => {
                self.body.extend_from_slice(b"jump=");
                num(&mut self.body, count);
            }
        }
        self.body.push(b' ');
        self.positions(tgt.0, tgt.1, false);
        self.body.push(b'\n');
        self.positions(src.0, src.1, true);
        self.body.push(b'\n');
    }
}

/// The routines of every image: as the input gave them (a writer needs their blocks, not their
/// dominators), or [`routines::all`] when an image has none.
fn routines_of(process: &Process) -> Vec<std::borrow::Cow<'_, [crate::ir::Routine]>> {
    if process.images.iter().all(|i| i.routines.is_some()) {
        return process
            .images
            .iter()
            .map(|i| std::borrow::Cow::Borrowed(i.routines.as_deref().unwrap_or(&[])))
            .collect();
    }
    routines::all(process)
}

fn has_block_edges(process: &Process) -> bool {
    process
        .edges
        .iter()
        .any(|e| matches!(e.source, NodeRef::Block(_)) || matches!(e.target, NodeRef::Block(_)))
}

/// Traversals of an edge in one thread, or over all threads.
fn count_of(e: &Edge, thread: Option<usize>) -> u64 {
    match thread {
        Some(t) => e.counts.get(t).copied().unwrap_or(0),
        None => e.total(),
    }
}

/// `v * part / whole` when `split`, else `v`.
fn scale(v: u64, part: u64, whole: u64, split: bool) -> u64 {
    if !split || part == whole {
        return v;
    }
    if whole == 0 {
        return 0;
    }
    ((v as u128 * part as u128) / whole as u128) as u64
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The function every edge end belongs to: a symbol, or the routine of a block.
struct FuncIndex<'g> {
    symbols: Vec<Vec<Func>>,
    nodes: Vec<Func>,
    graph: Option<&'g callgraph::CallGraph>,
}

impl<'g> FuncIndex<'g> {
    fn new(lines: &[LineIndex], process: &Process, graph: Option<&'g callgraph::CallGraph>) -> FuncIndex<'g> {
        let symbols = process
            .images
            .iter()
            .enumerate()
            .map(|(i, image)| {
                image
                    .symbols
                    .iter()
                    .map(|s| Func { image: i as u32, name: s.name.clone(), file: s.file })
                    .collect()
            })
            .collect();
        let mut nodes = Vec::new();
        if let Some(g) = graph {
            let indexes: Vec<names::SymbolIndex> =
                process.images.iter().map(names::SymbolIndex::new).collect();
            for n in &g.nodes {
                let image = &process.images[n.image as usize];
                let entry = image.blocks.get(n.entry.block as usize);
                let index = &indexes[n.image as usize];
                let file = entry
                    .and_then(|b| index.covering(b.offset))
                    .and_then(|s| image.symbols[s as usize].file)
                    .or_else(|| {
                        entry.and_then(|b| lines[n.image as usize].at(image, b.offset)).and_then(|l| l.file)
                    });
                nodes.push(Func { image: n.image, name: n.name.clone(), file });
            }
        }
        FuncIndex { symbols, nodes, graph }
    }

    fn node_func(&self, n: u32) -> Func {
        self.nodes[n as usize].clone()
    }

    fn of(&self, node: NodeRef) -> Option<Func> {
        match node {
            NodeRef::Symbol(s) => self.symbols.get(s.image as usize)?.get(s.symbol as usize).cloned(),
            NodeRef::Block(b) => {
                let n = self.graph?.node_of(b)?;
                self.nodes.get(n as usize).cloned()
            }
            _ => None,
        }
    }
}

/// Blocks of every image sorted by address, to find the block holding an address.
struct BlockIndex {
    starts: Vec<Vec<(u64, u32)>>,
}

impl BlockIndex {
    fn new(process: &Process) -> BlockIndex {
        let starts = process
            .images
            .iter()
            .map(|image| {
                let mut v: Vec<(u64, u32)> =
                    image.blocks.iter().enumerate().map(|(b, bl)| (bl.offset, b as u32)).collect();
                v.sort_unstable();
                v
            })
            .collect();
        BlockIndex { starts }
    }

    fn containing(&self, process: &Process, image: u32, addr: u64) -> Option<BlockRef> {
        let starts = self.starts.get(image as usize)?;
        let p = starts.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let b = starts[p].1;
        let bl = &process.images[image as usize].blocks[b as usize];
        (addr < bl.offset.saturating_add(bl.size.max(1))).then_some(BlockRef { image, block: b })
    }
}

/// Source lines of an image sorted by address, for look-ups and for spreading block counts.
struct LineIndex {
    /// Indices into `Image::source_lines`, sorted by offset.
    order: Vec<u32>,
    max_size: u64,
}

impl LineIndex {
    fn new(image: &Image) -> LineIndex {
        let mut order: Vec<u32> = (0..image.source_lines.len() as u32).collect();
        order.sort_by_key(|&i| image.source_lines[i as usize].offset);
        let max_size = image.source_lines.iter().map(|l| l.size).max().unwrap_or(0);
        LineIndex { order, max_size }
    }

    /// The source line covering `addr` (the latest-starting one when entries overlap).
    fn at<'i>(&self, image: &'i Image, addr: u64) -> Option<&'i crate::ir::SourceLine> {
        let lines = &image.source_lines;
        let mut k = self.order.partition_point(|&i| lines[i as usize].offset <= addr);
        while k > 0 {
            let l = &lines[self.order[k - 1] as usize];
            if l.offset.saturating_add(self.max_size) <= addr {
                break;
            }
            if addr < l.offset.saturating_add(l.size.max(1)) {
                return Some(l);
            }
            k -= 1;
        }
        None
    }

    /// Spreads `num_instrs x count` of a block over its source lines:
    /// `(address, file, line, instructions executed)`, in address order.
    fn spread(
        &self,
        image: &Image,
        block: &crate::ir::Block,
        count: u64,
        out: &mut Vec<(u64, Option<FileId>, u32, u64)>,
    ) {
        let lo = block.offset;
        let hi = block.offset.saturating_add(block.size.max(1));
        let lines = &image.source_lines;
        let end = self.order.partition_point(|&i| lines[i as usize].offset < hi);
        let mut first = end;
        while first > 0 && lines[self.order[first - 1] as usize].offset.saturating_add(self.max_size) > lo {
            first -= 1;
        }
        // (start, file, line, full instrs or None for partial, overlapping bytes)
        type Part = (u64, Option<FileId>, u32, Option<u64>, u64);
        let mut parts: Vec<Part> = Vec::new();
        for &i in &self.order[first..end] {
            let l = &lines[i as usize];
            let l_end = l.offset.saturating_add(l.size.max(1));
            if l_end <= lo || l.offset >= hi {
                continue;
            }
            let start = l.offset.max(lo);
            let bytes = l_end.min(hi) - start;
            let full = l.offset >= lo && l_end <= hi;
            parts.push((start, l.file, l.line, full.then_some(l.num_instrs), bytes));
        }
        let full_sum: u64 = parts.iter().filter_map(|p| p.3).sum();
        if parts.is_empty() || full_sum > block.num_instrs {
            let (file, line) = parts.first().map_or((None, 0), |p| (p.1, p.2));
            out.push((lo, file, line, block.num_instrs.saturating_mul(count)));
            return;
        }
        let mut rest = block.num_instrs - full_sum;
        let partial_bytes: u64 = parts.iter().filter(|p| p.3.is_none()).map(|p| p.4).sum();
        let npartial = parts.iter().filter(|p| p.3.is_none()).count();
        if npartial == 0 && rest > 0 {
            parts.insert(0, (lo, None, 0, Some(rest), 0));
            rest = 0;
        }
        let total_rest = rest;
        let mut seen = 0;
        for p in &parts {
            let n = match p.3 {
                Some(n) => n,
                None => {
                    seen += 1;
                    if seen == npartial {
                        rest
                    } else {
                        let n = ((total_rest as u128 * p.4 as u128) / partial_bytes.max(1) as u128) as u64;
                        let n = n.min(rest);
                        rest -= n;
                        n
                    }
                }
            };
            if n > 0 {
                out.push((p.0, p.1, p.2, n.saturating_mul(count)));
            }
        }
    }
}
