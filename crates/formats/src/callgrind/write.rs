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
//!   instructions) is written from [`cfghub_model::ir::Image::costs`] as it is: never recomputed, never
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
//!
//! # How it is made fast
//! A profile read back from Valgrind has 1.6 million cost lines and 400 000 edges for 20 MB of
//! text, so a line must cost a few dozen nanoseconds and a pass over the edges is worth
//! avoiding:
//! - Names are compressed through integer keys ([`name_keys`]): a name is hashed once, never
//!   per line.
//! - What a line needs is looked up in tables built once per part ([`index`]): the
//!   function of every symbol and routine (from the routines themselves, named as the call
//!   graph names them), and one record per block with its ends, routine and source lines.
//! - Conditionals are paired with their fall-throughs while the edges are written, among the
//!   edges of their own source, once a pass over the sources and kinds alone has found them
//!   grouped by source (as readers give them); only edges that are not get a pairing pass of
//!   their own. The text of the edges streams out like that of the costs.
//! - Text is formatted into windows of one reused buffer ([`text`]); when the totals are
//!   known before the body (costs written as they are), the buffer goes out every 256 KiB.
//!   The commonest cost line (same function and file, one value) has a loop of its own.
//! - The call graph's arcs and inclusive estimates are built only when a call has no inclusive
//!   cost of its own.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

mod index;
mod name_keys;
mod text;

use super::branch_pairs;
use crate::format::WriteOptions;
use cfghub_analysis::source::{Part, SourceIndex};
use cfghub_analysis::{addresses, blocks, callgraph, executions, names, routines, stacks};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{BlockRef, Cursor, Edge, EdgeKind, FileId, NodeRef, Process, Profile, Routine, Site};
use index::{BlockIndex, Func, FuncIndex, Pairs, Place};
use name_keys::{NameTable, ONCE};
use text::{put_num, put_position, Out, WINDOW_VALUES};

/// Bytes gathered before they go to the output, when a part is streamed.
const CHUNK: usize = 1 << 18;

/// Writes `profile` as a Callgrind file.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    warn_rounded_stacks(profile, findings);
    let negative = stacks::negative_stacks(profile, &(0..profile.events.len()).collect::<Vec<_>>());
    if negative > 0 {
        findings.warn(
            None,
            format!("callgrind: {negative} stack(s) with negative values (a difference profile) count as 0"),
        );
    }
    // Ir comes from blocks when the profile has blocks and no cost at an address carries Ir
    // (an `Ir` event may still be there: stacks and call inclusive costs replayed from a
    // DCFG-trace measure it).
    let ir_event = profile.event_index("Ir");
    let ir_in_costs = ir_event.is_some_and(|k| {
        profile.processes.iter().any(|p| p.images.iter().any(|i| i.costs.event_values(k).any(|v| v != 0)))
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
    // (A process written from its stacks has function-level costs only.)
    let has_instr = profile.processes.iter().filter(|p| !stacks_only(p)).any(|p| {
        p.images.iter().any(|i| !i.blocks.is_empty() || i.costs.has_offsets())
            || p.edges.iter().any(|e| e.site().is_some_and(|s| s.source_offset().is_some()))
    });
    let has_line = !has_instr
        || profile.processes.iter().filter(|p| !stacks_only(p)).any(|p| {
            p.images.iter().any(|i| !i.source_lines.is_empty() || i.costs.has_lines())
                || p.edges.iter().any(|e| e.site().is_some_and(|s| s.source_line().is_some()))
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
        body: Out::with_capacity(CHUNK + (1 << 16)),
        streaming: false,
        last: [0; 2],
        ctx: Context::default(),
        totals: vec![0; columns.len()],
        dropped: HashMap::new(),
        unplaced: 0,
        lines: Vec::new(),
        line_hints: Vec::new(),
        bases: Vec::new(),
        inclusive: Vec::new(),
        edge_threads: 0,
    };
    w.head(&columns)?;
    // One part per process, or per thread with --per-thread. Summing the threads needs no
    // thread count up front: the edges' widest count, which takes a pass over them, comes
    // from the pass that writing makes anyway.
    let mut parts: Vec<(usize, Option<usize>)> = Vec::new();
    for (p, process) in profile.processes.iter().enumerate() {
        let threads =
            if options.formats.get::<super::Options>().per_thread { process.thread_count() } else { 1 };
        if threads > 1 {
            parts.extend((0..threads).map(|t| (p, Some(t))));
        } else {
            parts.push((p, None));
        }
    }
    let mut costs_unsplit = false;
    for (k, &(p, thread)) in parts.iter().enumerate() {
        // Calls and jumps with the counts the profile stated, parts that a rebuild sent to
        // the UNKNOWN node joined back (Callgrind has no such node).
        let rejoined = blocks::with_unknown_parts_rejoined(&profile.processes[p]);
        let process = rejoined.as_ref().unwrap_or(&profile.processes[p]);
        w.part(k + 1, process, thread, &mut costs_unsplit)?;
        let threads = process.thread_instr_counts.len().max(w.edge_threads);
        if thread.is_none() && threads > 1 {
            findings.warn(
                None,
                format!(
                    "callgrind: per-thread counts of process {} ({threads} threads) summed into one part; use --per-thread",
                    process.pid
                ),
            );
        }
    }
    if parts.len() > 1 {
        findings.detail(
            None,
            format!(
                "callgrind: {} parts in one file (one per process{}); KCachegrind reads them all, \
                 callgrind_annotate only the first",
                parts.len(),
                if options.formats.get::<super::Options>().per_thread { " and thread" } else { "" }
            ),
        );
    }
    if profile.processes.is_empty() {
        // An empty profile is still a valid file with its events and zero totals.
        w.part_head(1, None, None)?;
        w.part_tail()?;
    }
    if costs_unsplit {
        findings.detail(
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

/// Says how much rounding changes the totals of stacks with fractional values: their
/// function-level costs are whole numbers, each function's sum rounded once.
fn warn_rounded_stacks(profile: &Profile, findings: &mut Findings) {
    let fractional = |p: &Process| {
        let stacks = &p.stacks;
        (0..stacks.width()).any(|e| {
            let unit = cfghub_model::ir::power_of_ten(stacks.decimals_of(e));
            unit > 1 && stacks.samples().any(|s| s.values[e] % unit != 0)
        })
    };
    if !profile.processes.iter().any(|p| stacks_only(p) && fractional(p)) {
        return;
    }
    let mut kept: Vec<(String, f64)> = profile.events.iter().map(|e| (e.name.clone(), 0.0)).collect();
    for process in profile.processes.iter().filter(|p| stacks_only(p)) {
        let level = stacks::function_level(profile, process);
        for image in &level.images {
            for row in image.costs.iter() {
                for (slot, &v) in kept.iter_mut().zip(row.values.iter()) {
                    slot.1 += v as f64;
                }
            }
        }
    }
    let source = cfghub_analysis::totals::event_totals(profile);
    cfghub_analysis::totals::warn_left_out(
        findings,
        "callgrind",
        &source,
        &kept,
        "Callgrind costs are whole numbers: each function's fractional sum is rounded",
    );
}

/// Whether a process holds stacks and nothing else the writer could use (no blocks, no edges,
/// no costs but the stacks' own leaf samples).
fn stacks_only(process: &Process) -> bool {
    !process.stacks.is_empty()
        && process.edges.is_empty()
        && process.images.iter().all(|i| i.blocks.is_empty() && (i.costs.is_empty() || i.leaf_samples))
}

/// The place the last written lines refer to.
#[derive(Default, Clone, PartialEq)]
struct Context {
    /// Image index (`Some`) once an `ob=` was written in this part.
    image: Option<u32>,
    /// (image, function name key, file) of the last `fn=`: two functions of one name are two
    /// functions when their files differ (static functions of two source files).
    function: Option<(u32, u32, Option<FileId>)>,
    fl: Option<Option<FileId>>,
    file: Option<Option<FileId>>,
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
    /// The part's text not yet written out.
    body: Out,
    /// Whether the part's header is written already, so that `body` may go out as it fills.
    streaming: bool,
    /// Subposition bases: instr, line.
    last: [u64; 2],
    ctx: Context,
    totals: Vec<u64>,
    dropped: HashMap<&'static str, u64>,
    unplaced: u64,
    /// Source-line indexes of the current process's images.
    lines: Vec<SourceIndex>,
    /// Per image, where the last look-up of a call's or jump's line ended (they mostly come
    /// in address order).
    line_hints: Vec<usize>,
    /// What turns an offset of each of the current process's images into the address its
    /// object states, as valgrind writes positions ([`addresses::stated_base`]).
    bases: Vec<u64>,
    /// Scratch: the inclusive cost of a call, by column.
    inclusive: Vec<u64>,
    /// The longest per-thread count array of the last part's process's edges
    /// ([`cfghub_model::ir::Process::thread_count`] without a pass of its own).
    edge_threads: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| Error::io("output", e))
    }

    /// Sends the buffered text out once enough has gathered, when the part is streamed.
    #[inline]
    fn spill(&mut self) -> Result<()> {
        if self.streaming && self.body.len() >= CHUNK {
            self.out.write_all(self.body.text()).map_err(|e| Error::io("output", e))?;
            self.body.clear();
        }
        Ok(())
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
                // Any other key is no header line of the format (callgrind_annotate calls it
                // malformed): a description line keeps it.
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
        process: &Process,
        thread: Option<usize>,
        costs_unsplit: &mut bool,
    ) -> Result<()> {
        // A process of stacks only (folded, DTrace, perf) is written as its function-level
        // view: exact self costs at leaf frames, calls with inclusive costs.
        let function_level;
        let stacks = stacks_only(process);
        let process = if stacks {
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
        self.lines = process.images.iter().map(SourceIndex::new).collect();
        self.line_hints = vec![0; process.images.len()];
        self.bases = process.images.iter().map(|i| addresses::stated_base(self.profile, i)).collect();
        let write_costs = thread.is_none_or(|t| t == 0);
        if thread.is_some() && process.images.iter().any(|i| !i.costs.is_empty()) {
            *costs_unsplit = true;
        }
        if self.ir_from_blocks {
            // The totals are known once the body is written: the part is gathered first.
            self.blocks_body(process, thread, write_costs)?;
            self.part_head(k, Some(process), thread)?;
        } else {
            // The totals are the costs' sums: the header goes first and the body streams.
            self.totals = self.cost_totals(process, write_costs);
            self.part_head(k, Some(process), thread)?;
            let totals = std::mem::replace(&mut self.totals, vec![0; self.columns]);
            self.streaming = true;
            let written = self.costs_body(process, thread, write_costs);
            self.streaming = false;
            written?;
            debug_assert_eq!(self.totals, totals, "the summary states what the cost lines add up to");
            self.totals = totals;
        }
        if stacks {
            // The threads of the process as it was, not of its function-level view.
            self.edge_threads = 0;
        }
        self.part_tail()
    }

    /// The sums of the costs a part writes, by column.
    fn cost_totals(&self, process: &Process, write_costs: bool) -> Vec<u64> {
        let mut totals = vec![0u64; self.columns];
        if write_costs {
            for image in &process.images {
                let costs = &image.costs;
                if costs.width() == 1 {
                    // The common case, one event: a plain sum.
                    let sum = costs.event_values(0).fold(0u64, |t, v| t.wrapping_add(v));
                    totals[0] = totals[0].wrapping_add(sum);
                    continue;
                }
                for cost in costs {
                    for (t, &v) in totals.iter_mut().zip(&cost.values) {
                        *t = t.wrapping_add(v);
                    }
                }
            }
        }
        totals
    }

    /// The part's header lines, up to the `summary:` of [`Writer::totals`].
    fn part_head(&mut self, k: usize, process: Option<&Process>, thread: Option<usize>) -> Result<()> {
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
        h.push_str(&format!("summary: {}\n\n", self.totals_text()));
        self.put(h.as_bytes())
    }

    /// What is left of the body, and the `totals:` line.
    fn part_tail(&mut self) -> Result<()> {
        self.out.write_all(self.body.text()).map_err(|e| Error::io("output", e))?;
        self.body.clear();
        self.put(format!("\ntotals: {}\n", self.totals_text()).as_bytes())
    }

    fn totals_text(&self) -> String {
        let totals: Vec<String> = self.totals.iter().map(|t| t.to_string()).collect();
        totals.join(" ")
    }

    /// Switches to function `f`, writing `ob=`, `fl=` and `fn=` as needed.
    #[inline]
    fn enter(&mut self, process: &Process, f: Func) {
        if self.ctx.image != Some(f.image) {
            let file = process.images[f.image as usize].file;
            let key = self.objects.file_key(self.profile, file);
            self.objects.write(&mut self.body, b"ob", key);
            self.ctx.image = Some(f.image);
            self.ctx.function = None;
        }
        // A name used once ([`NameTable::key_once`]) is another function each time.
        if f.name != ONCE && self.ctx.function == Some((f.image, f.name, f.file)) {
            return;
        }
        // `fn=` goes back to the `fl=` file for KCachegrind but stays in the last `fi=` file for
        // callgrind_annotate: write `fl=` unless both agree.
        if self.ctx.fl != Some(f.file) || self.ctx.file != Some(f.file) {
            let key = self.files.file_key(self.profile, f.file);
            self.files.write(&mut self.body, b"fl", key);
            self.ctx.fl = Some(f.file);
        }
        self.functions.write(&mut self.body, b"fn", f.name);
        self.ctx.function = Some((f.image, f.name, f.file));
        self.ctx.file = Some(f.file);
    }

    /// The source file of the code at `offset` of image `image`, as its line table has it
    /// (`None` where the table says nothing).
    fn file_at(&mut self, process: &Process, image: u32, offset: u64) -> Option<Option<FileId>> {
        let lines = self.lines.get(image as usize)?;
        let hint = self.line_hints.get_mut(image as usize)?;
        lines.at_from(process.images.get(image as usize)?, offset, hint).map(|l| l.file)
    }

    /// Sets the source file of the following cost lines (`fi=`, or `fe=` back to the function's).
    #[inline]
    fn set_file(&mut self, file: Option<FileId>) {
        if self.ctx.file == Some(file) {
            return;
        }
        let tag: &[u8] = if self.ctx.fl == Some(file) { b"fe" } else { b"fi" };
        let key = self.files.file_key(self.profile, file);
        self.files.write(&mut self.body, tag, key);
        self.ctx.file = Some(file);
    }

    /// Writes the positions of a line at `w[i..]` of the window; `update` for cost and source
    /// lines (targets of calls and jumps do not move the bases).
    #[inline]
    fn put_positions(&mut self, i: usize, instr: u64, line: u32, update: bool) -> usize {
        let w = self.body.window();
        put_positions(w, i, &mut self.last, self.has_instr, self.has_line, instr, line, update)
    }

    /// A whole line of positions (a jump's source).
    fn positions_line(&mut self, instr: u64, line: u32, update: bool) {
        let i = self.put_positions(0, instr, line, update);
        let w = self.body.window();
        w[i] = b'\n';
        self.body.advance(i + 1);
    }

    /// A cost line: positions and values (trailing zeros left out), added to the totals when
    /// `self_cost`.
    #[inline(always)]
    /// Writes row `k` of a cost table as a cost line in its file, each value moved to its
    /// event's column (`values` is scratch space, one slot per column).
    fn cost_row(&mut self, costs: &mut Cursor, k: usize, values: &mut [u64]) {
        self.set_file(costs.file(k));
        values.fill(0);
        for (e, &v) in costs.values(k).iter().enumerate() {
            if let Some(&col) = self.event_columns.get(e) {
                values[col] = v;
            }
        }
        self.cost(costs.offset(k).unwrap_or(0), costs.line(k).unwrap_or(0), values, true);
    }

    /// The address an offset of image `image` (of the current process) is written as.
    #[inline(always)]
    fn stated(&self, image: Option<u32>, offset: u64) -> u64 {
        image.and_then(|i| self.bases.get(i as usize)).map_or(offset, |b| offset.wrapping_add(*b))
    }

    /// A cost line at `instr`, an offset of the current image.
    fn cost(&mut self, instr: u64, line: u32, values: &[u64], self_cost: bool) {
        let instr = self.stated(self.ctx.image, instr);
        let values = &values[..values.len().min(self.columns)];
        let n = values.iter().rposition(|&v| v != 0).map_or(0, |p| p + 1);
        let values = &values[..n];
        if self_cost {
            for (t, &v) in self.totals.iter_mut().zip(values) {
                *t = t.wrapping_add(v);
            }
        }
        let w = self.body.window();
        let mut i = put_positions(w, 0, &mut self.last, self.has_instr, self.has_line, instr, line, true);
        if n <= WINDOW_VALUES {
            for &v in values {
                w[i] = b' ';
                i = put_num(w, i + 1, v);
            }
            w[i] = b'\n';
            self.body.advance(i + 1);
        } else {
            self.body.advance(i);
            for &v in values {
                self.body.byte(b' ');
                self.body.num(v);
            }
            self.body.byte(b'\n');
        }
    }

    /// The common cost line, in a loop of its own: rows from `r` on in function `current` and
    /// the current file (known or not: code without debug information, most of a large
    /// program's libraries, has none), with a line, an address and one value, as a Callgrind
    /// profile read back is made of. Returns the first row not written (at most a chunk's worth
    /// is).
    fn cost_run(&mut self, costs: &mut Cursor, mut r: usize, current: Option<u32>) -> usize {
        let Some(file) = self.ctx.file else { return r };
        let base = self.stated(self.ctx.image, 0);
        let [mut last_instr, mut last_line] = self.last;
        let mut total = self.totals[0];
        while r < costs.len() && self.body.len() < CHUNK {
            let Some(line) = costs.line(r) else { break };
            if costs.file(r) != file || costs.symbol(r) != current {
                break;
            }
            let instr = costs.offset(r).unwrap_or(0).wrapping_add(base);
            let v = costs.value(r, 0);
            let w = self.body.window();
            let i = put_position(w, 0, instr, &mut last_instr, true, true);
            w[i] = b' ';
            let mut i = put_position(w, i + 1, line as u64, &mut last_line, false, true);
            if v != 0 {
                w[i] = b' ';
                i = put_num(w, i + 1, v);
                total = total.wrapping_add(v);
            }
            w[i] = b'\n';
            self.body.advance(i + 1);
            r += 1;
        }
        self.last = [last_instr, last_line];
        self.totals[0] = total;
        r
    }

    /// The costs of a profile that has its own cost columns, written as they are.
    fn costs_body(&mut self, process: &Process, thread: Option<usize>, write_costs: bool) -> Result<()> {
        let profile = self.profile;
        // Name definitions in the model's order, so that reading the file back interns files,
        // images and symbols in the same order.
        for (id, _) in profile.files.iter() {
            let key = self.files.file_key(profile, Some(id));
            self.files.write(&mut self.body, b"fl", key);
        }
        self.ctx.fl = None;
        // The routines' call graph, to name the function of a block; with its arcs only when
        // some call states no inclusive cost and one is estimated.
        let has_blocks = process.images.iter().any(|i| !i.blocks.is_empty());
        let rs = (has_blocks || has_block_edges(process)).then(|| routines_of(process));
        let funcs = FuncIndex::new(profile, &mut self.functions, &self.lines, process, rs.as_deref());
        for (i, image) in process.images.iter().enumerate() {
            for s in 0..image.symbols.len() as u32 {
                if let Some(f) = funcs.symbol(i, s) {
                    self.enter(process, f);
                }
            }
            self.spill()?;
        }
        if write_costs {
            let mut blocks: Option<BlockIndex> = None;
            for (i, image) in process.images.iter().enumerate() {
                // Rows are read in order: a cursor unpacks each block of the packed costs once.
                let mut costs = image.costs.cursor();
                let mut symbols: Option<names::SymbolIndex> = None;
                // The function of the previous cost line, by symbol, to skip the look-ups.
                let mut current: Option<u32> = None;
                let (mut hint, mut block_hint) = (0, 0);
                let fast = image.costs.width() == 1 && self.columns == 1 && self.has_instr && self.has_line;
                let mut r = 0;
                while r < costs.len() {
                    if fast && current.is_some() {
                        let next = self.cost_run(&mut costs, r, current);
                        if next > r {
                            r = next;
                            self.spill()?;
                            continue;
                        }
                    }
                    let symbol = costs.symbol(r);
                    let offset = costs.offset(r);
                    if symbol.is_none() || symbol != current {
                        // The cost's function: its symbol; else the routine of the block holding
                        // its address; else the symbol covering it.
                        let f = match symbol.and_then(|s| funcs.symbol(i, s)) {
                            Some(f) => f,
                            None => {
                                let node = offset.and_then(|o| {
                                    let blocks = blocks.get_or_insert_with(|| BlockIndex::new(process));
                                    funcs.node_of(blocks.containing_from(
                                        process,
                                        i as u32,
                                        o,
                                        &mut block_hint,
                                    )?)
                                });
                                match (node, offset) {
                                    (Some(n), _) => funcs.node(n),
                                    (None, Some(o)) => {
                                        let index =
                                            symbols.get_or_insert_with(|| names::SymbolIndex::new(image));
                                        match index.covering(o).and_then(|s| funcs.symbol(i, s)) {
                                            Some(f) => f,
                                            None => Func {
                                                image: i as u32,
                                                name: self.functions.key_once(&names::valgrind_code_name(
                                                    profile,
                                                    image,
                                                    index,
                                                    o,
                                                    addresses::stated_base(profile, image),
                                                )),
                                                file: costs.file(r),
                                            },
                                        }
                                    }
                                    (None, None) => Func {
                                        image: i as u32,
                                        name: self.functions.key("???"),
                                        file: costs.file(r),
                                    },
                                }
                            }
                        };
                        self.enter(process, f);
                        current = symbol;
                    }
                    // A cost without a source position takes the line its address has.
                    let (file, line) = match (costs.file(r), costs.line(r), offset) {
                        (None, None, Some(o)) => self.lines[i]
                            .at_from(image, o, &mut hint)
                            .map_or((None, None), |l| (l.file, Some(l.line))),
                        (file, line, _) => (file, line),
                    };
                    self.set_file(file);
                    self.cost(offset.unwrap_or(0), line.unwrap_or(0), &costs.values(r), true);
                    self.spill()?;
                    r += 1;
                }
            }
        }
        let mut estimates = Estimates::new(profile, process, rs.as_deref(), None);
        // Edges as they come, pairing conditionals run by run; when a source's edges are not
        // together, after a pass that pairs them all.
        if branch_pairs::pairable_in_runs(process) {
            return self.edges_in_runs(process, thread, &funcs, &mut estimates);
        }
        let pairs = Pairs::new(process);
        self.edge_threads = pairs.threads;
        self.edges(process, thread, &funcs, &mut estimates, &pairs, None)
    }

    /// Ir from blocks (a DCFG), spread over source lines, plus other events' costs.
    fn blocks_body(&mut self, process: &Process, thread: Option<usize>, write_costs: bool) -> Result<()> {
        let rs = routines_of(process);
        let graph = callgraph::build_with(self.profile, process, &rs);
        let funcs = FuncIndex::new(self.profile, &mut self.functions, &self.lines, process, Some(&rs));
        let mut estimates = Estimates::new(self.profile, process, None, Some(&graph));
        let pairs = Pairs::new(process);
        self.edge_threads = pairs.threads;
        let thread_counts = thread.map(|_| executions::block_thread_counts(process));
        let totals = executions::block_totals(process);
        let nnodes = graph.nodes.len();
        // Costs of other events, by the node of the block that holds their address.
        let mut node_costs: Vec<(u32, (u32, u32))> = Vec::new();
        let mut loose: Vec<(u32, u32)> = Vec::new();
        if write_costs {
            let blocks = BlockIndex::new(process);
            for (i, image) in process.images.iter().enumerate() {
                let mut hint = 0;
                for (k, offset) in image.costs.offsets().enumerate() {
                    let node = offset.and_then(|o| {
                        graph.node_of(blocks.containing_from(process, i as u32, o, &mut hint)?)
                    });
                    match node {
                        Some(n) => node_costs.push((n, (i as u32, k as u32))),
                        None => loose.push((i as u32, k as u32)),
                    }
                }
            }
        }
        let node_costs = Groups::new(nnodes, node_costs);
        // Edges by the node of their source block; the others after every node.
        let mut by_node: Vec<(u32, u32)> = Vec::with_capacity(process.edges.len());
        let mut other_edges = Vec::new();
        for (k, e) in process.edges.iter().enumerate() {
            match e.source {
                NodeRef::Block(s) => match graph.node_of(s) {
                    Some(n) => by_node.push((n, k as u32)),
                    None => other_edges.push(k as u32),
                },
                _ => other_edges.push(k as u32),
            }
        }
        let edges_by_node = Groups::new(nnodes, by_node);
        let mut blocks: Vec<u32> = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        let mut lines_out: Vec<(u64, Option<FileId>, u32, u64)> = Vec::new();
        let mut values = vec![0u64; self.columns];
        let mut cursors: Vec<Cursor> = process.images.iter().map(|i| i.costs.cursor()).collect();
        for (n, node) in graph.nodes.iter().enumerate() {
            let image = &process.images[node.image as usize];
            let routine = &rs[node.image as usize][node.routine as usize];
            blocks.clear();
            blocks.extend_from_slice(&routine.nodes);
            blocks.sort_unstable_by_key(|&b| image.blocks.get(b as usize).map_or(0, |b| b.offset));
            lines_out.clear();
            for &b in &blocks {
                let Some(block) = image.blocks.get(b as usize) else { continue };
                let r = BlockRef { image: node.image, block: b };
                let count = match (thread, &thread_counts) {
                    (Some(t), Some(tc)) => tc.get(r).and_then(|v| v.get(t)).copied().unwrap_or(0),
                    _ => totals.get(r).copied().unwrap_or(0),
                };
                if count == 0 {
                    continue;
                }
                self.lines[node.image as usize].spread(image, block, count, &mut parts, &mut lines_out);
            }
            let extra = node_costs.get(n);
            let edges = edges_by_node.get(n);
            if lines_out.is_empty() && extra.is_empty() && edges.is_empty() {
                continue;
            }
            self.enter(process, funcs.node(n as u32));
            values.iter_mut().for_each(|v| *v = 0);
            for &(addr, file, line, v) in &lines_out {
                self.set_file(file);
                values[0] = v;
                self.cost(addr, line, &values, true);
            }
            for &(i, k) in extra {
                self.cost_row(&mut cursors[i as usize], k as usize, &mut values);
            }
            self.edges(process, thread, &funcs, &mut estimates, &pairs, Some(edges))?;
        }
        let indexes: Vec<names::SymbolIndex> = process.images.iter().map(names::SymbolIndex::new).collect();
        for (i, k) in loose {
            let image = &process.images[i as usize];
            let costs = &mut cursors[i as usize];
            let k = k as usize;
            let index = &indexes[i as usize];
            let name = match costs.symbol(k) {
                Some(s) => self.functions.key(&image.symbols[s as usize].name),
                None => match costs.offset(k) {
                    Some(o) => self.functions.key_once(&names::valgrind_code_name(
                        self.profile,
                        image,
                        index,
                        o,
                        addresses::stated_base(self.profile, image),
                    )),
                    None => self.functions.key("???"),
                },
            };
            self.enter(process, Func { image: i, name, file: costs.file(k) });
            self.cost_row(costs, k, &mut values);
        }
        self.edges(process, thread, &funcs, &mut estimates, &pairs, Some(&other_edges))
    }

    /// Calls and jumps from the edges `only` lists (all that may write something when `None`),
    /// in that order.
    fn edges(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        estimates: &mut Estimates,
        pairs: &Pairs,
        only: Option<&[u32]>,
    ) -> Result<()> {
        let list = only.unwrap_or(&pairs.todo);
        for &k in list {
            let k = k as usize;
            self.edge(process, thread, funcs, estimates, k, pairs.partner(k), pairs.paired(k));
            self.spill()?;
        }
        Ok(())
    }

    /// Every edge of a process in one pass, for edges that come grouped by source (as readers
    /// give them; see [`branch_pairs::pairable_in_runs`]): a conditional's fall-through is among the
    /// edges of its own source, so it is paired there, with no pass of its own over the edges.
    /// The text streams out as it is made.
    fn edges_in_runs(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        estimates: &mut Estimates,
    ) -> Result<()> {
        let edges = &process.edges;
        let mut scratch = Vec::new();
        // Per edge of the current run: its partner, or whether it is a paired fall-through.
        let mut partner: Vec<u32> = Vec::new();
        let mut paired: Vec<bool> = Vec::new();
        let mut threads = 0;
        for (k, end) in branch_pairs::source_runs(edges) {
            let run = &edges[k..end];
            partner.clear();
            partner.resize(run.len(), NO_INDEX);
            paired.clear();
            paired.resize(run.len(), false);
            if run.iter().any(|e| e.kind.is_conditional())
                && run.iter().any(|e| e.kind == EdgeKind::FallThrough)
            {
                let group = (k..end).filter(|&j| branch_pairs::takes_part(&edges[j])).map(|j| j as u32);
                branch_pairs::pair_group(edges, group, &mut scratch, |c, f| {
                    partner[c as usize - k] = f;
                    paired[f as usize - k] = true;
                });
            }
            for (j, e) in run.iter().enumerate() {
                threads = threads.max(e.counts.len());
                let p = (partner[j] != NO_INDEX).then_some(partner[j] as usize);
                self.edge(process, thread, funcs, estimates, k + j, p, paired[j]);
            }
            self.spill()?;
        }
        self.edge_threads = threads;
        Ok(())
    }

    /// Writes edge `k`: a call, a jump (`partner`: the fall-through of a conditional), or
    /// nothing, counting what Callgrind cannot say (`paired`: a fall-through that completes a
    /// conditional).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn edge(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        estimates: &mut Estimates,
        k: usize,
        partner: Option<usize>,
        paired: bool,
    ) {
        let e = &process.edges[k];
        if e.kind.is_call() {
            self.call(process, thread, funcs, estimates, e);
        } else if e.kind.is_branch() {
            let executed =
                e.kind.is_conditional().then(|| partner.map_or(0, |f| count_of(&process.edges[f], thread)));
            self.jump(process, thread, funcs, e, executed);
        } else if e.kind == EdgeKind::FallThrough {
            if paired || matches!(e.source, NodeRef::Block(_)) {
                // Part of a jcnd=, or implied by the blocks (a reader rebuilds it).
                return;
            }
            *self.dropped.entry("FALL_THROUGH").or_default() += 1;
        } else if e.kind.is_return() || e.kind.is_bypass() {
            // Implied by the calls: Callgrind has no lines for them.
            if !matches!(e.source, NodeRef::Block(_)) {
                *self.dropped.entry(e.kind.as_str()).or_default() += 1;
            }
        } else if matches!(e.kind, EdgeKind::Entry | EdgeKind::Exit) {
            // The program's start and end (DCFG's START and END nodes): the first and last
            // blocks' counts say as much, and Callgrind has nothing else for them. No loss.
        } else if e.source == NodeRef::Unknown && matches!(e.target, NodeRef::Block(_)) {
            // Entries no transfer explains (DCFG's UNKNOWN node; the Callgrind reader's own
            // for flow its input does not state): the block's count says as much. No loss.
        } else {
            *self.dropped.entry(e.kind.as_str()).or_default() += 1;
        }
    }

    /// The functions and positions of an edge's source and target.
    #[inline]
    fn ends(funcs: &FuncIndex, e: &Edge) -> Option<(Place, Place)> {
        let site = e.site();
        let src = funcs.place(
            e.source,
            site.and_then(Site::source_offset),
            site.and_then(Site::source_line),
            true,
        )?;
        let tgt = funcs.place(
            e.target,
            site.and_then(Site::target_offset),
            site.and_then(Site::target_line),
            false,
        )?;
        Some((src, tgt))
    }

    fn call(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        estimates: &mut Estimates,
        e: &Edge,
    ) {
        let Some((source, target)) = Self::ends(funcs, e) else {
            *self.dropped.entry(e.kind.as_str()).or_default() += 1;
            return;
        };
        if !e.contexts().is_empty() {
            // A call counted per function the input named (recursion levels `fib'2`, names
            // sharing code): a call line in each.
            for x in e.contexts() {
                let caller = funcs.symbol(source.0.image as usize, x.caller).unwrap_or(source.0);
                let callee = funcs.symbol(target.0.image as usize, x.callee).unwrap_or(target.0);
                let total = x.counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
                let count = thread.map_or(total, |t| x.counts.get(t).copied().unwrap_or(0));
                if thread.is_some() && count == 0 {
                    continue;
                }
                let mut inclusive = self.take_inclusive();
                for (i, &v) in x.inclusive.iter().enumerate() {
                    if let Some(&col) = self.event_columns.get(i) {
                        inclusive[col] = scale(v, count, total, thread.is_some());
                    }
                }
                self.write_call(
                    process,
                    (caller, source.1, source.2),
                    (callee, target.1, target.2),
                    count,
                    inclusive,
                );
            }
            return;
        }
        let count = count_of(e, thread);
        if thread.is_some() && count == 0 {
            return;
        }
        let mut inclusive = self.take_inclusive();
        if !e.inclusive().is_empty() {
            for (i, &v) in e.inclusive().iter().enumerate() {
                if let Some(&col) = self.event_columns.get(i) {
                    inclusive[col] = scale(v, count, e.total(), thread.is_some());
                }
            }
        } else if let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) {
            if let Some((g, a, edges_total)) = estimates.arc(s, t) {
                let share = if edges_total == 0 {
                    0
                } else {
                    scale(g.arcs[a].inclusive_instrs, e.total(), edges_total, true)
                };
                inclusive[0] = scale(share, count, e.total(), thread.is_some());
            }
        }
        self.write_call(process, source, target, count, inclusive);
    }

    /// The writer's inclusive-cost scratch, zeroed, one value per column.
    fn take_inclusive(&mut self) -> Vec<u64> {
        let mut inclusive = std::mem::take(&mut self.inclusive);
        inclusive.clear();
        inclusive.resize(self.columns, 0);
        inclusive
    }

    /// Writes a call from `source` to `target`, `count` times, with the callee's `inclusive`
    /// cost per column (the scratch, handed back).
    fn write_call(
        &mut self,
        process: &Process,
        source: Place,
        target: Place,
        count: u64,
        inclusive: Vec<u64>,
    ) {
        let ((caller, src_addr, src_line), (callee, tgt_addr, tgt_line)) = (source, target);
        self.enter(process, caller);
        // The call site's line is in its own file: inlined code's (`fi=`), not the caller's.
        if let Some(file) = self.file_at(process, caller.image, src_addr) {
            self.set_file(file);
        }
        if callee.image != caller.image {
            let file = process.images[callee.image as usize].file;
            let key = self.objects.file_key(self.profile, file);
            self.objects.write(&mut self.body, b"cob", key);
        }
        if Some(callee.file) != self.ctx.file {
            let key = self.files.file_key(self.profile, callee.file);
            self.files.write(&mut self.body, b"cfi", key);
        }
        self.functions.write(&mut self.body, b"cfn", callee.name);
        {
            let w = self.body.window();
            w[..6].copy_from_slice(b"calls=");
            let i = put_num(w, 6, count);
            w[i] = b' ';
            let tgt_addr = self.stated(Some(callee.image), tgt_addr);
            let i = self.put_positions(i + 1, tgt_addr, tgt_line, false);
            self.body.window()[i] = b'\n';
            self.body.advance(i + 1);
        }
        self.cost(src_addr, src_line, &inclusive, false);
        self.inclusive = inclusive;
    }

    fn jump(
        &mut self,
        process: &Process,
        thread: Option<usize>,
        funcs: &FuncIndex,
        e: &Edge,
        fall_through: Option<u64>,
    ) {
        let Some(((from, src_addr, src_line), (to, tgt_addr, tgt_line))) = Self::ends(funcs, e) else {
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
        let (source_file, target_file) =
            (self.file_at(process, from.image, src_addr), self.file_at(process, to.image, tgt_addr));
        let (tgt_addr, src_addr) =
            (self.stated(Some(to.image), tgt_addr), self.stated(Some(from.image), src_addr));
        self.enter(process, from);
        // The jump's source line is in its own file (inlined code's `fi=`), its target's in
        // the target's (`jfi=`), as valgrind writes them.
        if let Some(file) = source_file {
            self.set_file(file);
        }
        let target_file =
            target_file.unwrap_or(if to.name != from.name { to.file } else { self.ctx.file.flatten() });
        if Some(target_file) != self.ctx.file {
            let key = self.files.file_key(self.profile, target_file);
            self.files.write(&mut self.body, b"jfi", key);
        }
        if to.name != from.name {
            self.functions.write(&mut self.body, b"jfn", to.name);
        }
        let w = self.body.window();
        let i = match fall_through {
            Some(ft) => {
                w[..5].copy_from_slice(b"jcnd=");
                let i = put_num(w, 5, count);
                w[i] = b'/';
                put_num(w, i + 1, count.saturating_add(ft))
            }
            None => {
                w[..5].copy_from_slice(b"jump=");
                put_num(w, 5, count)
            }
        };
        w[i] = b' ';
        let i = self.put_positions(i + 1, tgt_addr, tgt_line, false);
        self.body.window()[i] = b'\n';
        self.body.advance(i + 1);
        self.positions_line(src_addr, src_line, true);
    }
}

/// Writes the positions of a line at `w[i..]`: address and/or line, as the file's
/// `positions:` say, each against its base in `last`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn put_positions(
    w: &mut [u8; text::WINDOW],
    i: usize,
    last: &mut [u64; 2],
    has_instr: bool,
    has_line: bool,
    instr: u64,
    line: u32,
    update: bool,
) -> usize {
    let [last_instr, last_line] = last;
    let mut i = i;
    if has_instr {
        i = put_position(w, i, instr, last_instr, true, update);
        if has_line {
            w[i] = b' ';
            i += 1;
        }
    }
    if has_line {
        i = put_position(w, i, line as u64, last_line, false, update);
    }
    i
}

/// Inclusive costs the call graph estimates for calls that state none: its arcs with the
/// traversals of their call edges (to share an arc's cost among its edges), built the first
/// time a call needs one.
struct Estimates<'a> {
    profile: &'a Profile,
    process: &'a Process,
    /// The routines to build the graph over, when it is not given.
    routines: Option<&'a [Cow<'a, [Routine]>]>,
    given: Option<&'a callgraph::CallGraph>,
    built: Option<callgraph::CallGraph>,
    /// Call-edge traversals of every arc.
    arc_totals: Vec<u64>,
    ready: bool,
}

impl<'a> Estimates<'a> {
    fn new(
        profile: &'a Profile,
        process: &'a Process,
        routines: Option<&'a [Cow<'a, [Routine]>]>,
        given: Option<&'a callgraph::CallGraph>,
    ) -> Estimates<'a> {
        Estimates { profile, process, routines, given, built: None, arc_totals: Vec::new(), ready: false }
    }

    /// The graph, the index of the arc of a call from block `site` to block `target`, and the
    /// traversals of that arc's edges.
    fn arc(&mut self, site: BlockRef, target: BlockRef) -> Option<(&callgraph::CallGraph, usize, u64)> {
        if !self.ready {
            self.ready = true;
            if self.given.is_none() {
                self.built = self.routines.map(|rs| callgraph::build_with(self.profile, self.process, rs));
            }
            if let Some(g) = self.given.or(self.built.as_ref()) {
                let mut totals = vec![0u64; g.arcs.len()];
                for e in &self.process.edges {
                    if let (true, NodeRef::Block(s), NodeRef::Block(t)) =
                        (e.kind.is_call(), e.source, e.target)
                    {
                        if let Some(a) = arc_index(g, s, t) {
                            totals[a] = totals[a].saturating_add(e.total());
                        }
                    }
                }
                self.arc_totals = totals;
            }
        }
        let g = self.given.or(self.built.as_ref())?;
        let a = arc_index(g, site, target)?;
        Some((g, a, self.arc_totals.get(a).copied().unwrap_or(0)))
    }
}

/// The index in `g.arcs` of the arc of a call from block `site` to block `target`.
fn arc_index(g: &callgraph::CallGraph, site: BlockRef, target: BlockRef) -> Option<usize> {
    let (caller, callee) = (g.node_of(site)?, g.node_of(target)?);
    let a = g.arcs.partition_point(|a| (a.caller, a.site, a.callee) < (caller, site, callee));
    g.arcs.get(a).filter(|a| (a.caller, a.site, a.callee) == (caller, site, callee)).map(|_| a)
}

/// Items grouped by a number below a bound, each group in input order (a counting sort).
struct Groups<T> {
    start: Vec<u32>,
    items: Vec<T>,
}

impl<T: Copy + Default> Groups<T> {
    fn new(groups: usize, keyed: Vec<(u32, T)>) -> Groups<T> {
        let mut start = vec![0u32; groups + 2];
        for &(g, _) in &keyed {
            start[g as usize + 2] += 1;
        }
        for g in 2..start.len() {
            start[g] += start[g - 1];
        }
        let mut items = vec![T::default(); keyed.len()];
        for (g, item) in keyed {
            let at = &mut start[g as usize + 1];
            items[*at as usize] = item;
            *at += 1;
        }
        Groups { start, items }
    }

    fn get(&self, g: usize) -> &[T] {
        &self.items[self.start[g] as usize..self.start[g + 1] as usize]
    }
}

/// The routines of every image: as the input gave them (a writer needs their blocks, not their
/// dominators), or [`routines::all`] when an image has none.
fn routines_of(process: &Process) -> Vec<Cow<'_, [Routine]>> {
    if process.images.iter().all(|i| i.routines.is_some()) {
        return process.images.iter().map(|i| Cow::Borrowed(i.routines.as_deref().unwrap_or(&[]))).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{EdgeDetails, Event, Image, Site, Symbol, SymbolRef};

    /// A function-level profile of `f` and `g` with the given edges (kind, from, to, count,
    /// source line).
    fn profile(edges: &[(EdgeKind, u32, u32, u64, u32)]) -> Profile {
        let mut profile = Profile { events: vec![Event::new("Ir")], ..Profile::default() };
        let file = profile.files.intern("a.c");
        let symbol = |name: &str| Symbol { name: name.into(), file: Some(file), ..Symbol::default() };
        let node = |s| NodeRef::Symbol(SymbolRef { image: 0, symbol: s });
        let edges = edges
            .iter()
            .enumerate()
            .map(|(k, &(kind, from, to, count, line))| Edge {
                id: k as u64 + 1,
                source: node(from),
                target: node(to),
                kind,
                counts: vec![count].into(),
                details: EdgeDetails::boxed(Vec::new(), Some(Site::at_line(line))),
            })
            .collect();
        let image = Image { symbols: vec![symbol("f"), symbol("g")], ..Image::default() };
        profile.processes.push(Process { pid: 1, images: vec![image], edges, ..Process::default() });
        profile
    }

    fn written(profile: &Profile) -> (String, Vec<String>) {
        let mut out = Vec::new();
        let mut findings = Findings::default();
        write(profile, &mut out, &WriteOptions::default(), &mut findings).unwrap();
        let warnings = findings.items.iter().map(|f| format!("{f:?}")).collect();
        (String::from_utf8(out).unwrap(), warnings)
    }

    #[test]
    fn a_conditional_takes_its_fall_through_wherever_the_edges_put_it() {
        use EdgeKind::{ConditionalBranch as Cond, FallThrough as Ft, UnconditionalBranch as Jump};
        // Together: f's conditional and fall-through are next to each other.
        let together = profile(&[(Cond, 0, 1, 3, 5), (Ft, 0, 0, 4, 5), (Jump, 1, 0, 1, 9)]);
        // Apart: g's jump comes between them, so that pairing needs every edge first.
        let apart = profile(&[(Cond, 0, 1, 3, 5), (Jump, 1, 0, 1, 9), (Ft, 0, 0, 4, 5)]);
        for p in [&together, &apart] {
            let (text, warnings) = written(p);
            assert!(text.contains("jcnd=3/7 "), "{text}");
            assert!(text.contains("jump=1 "), "{text}");
            // Each written once, whichever way they were paired.
            assert_eq!((text.matches("jcnd=").count(), text.matches("jump=").count()), (1, 1), "{text}");
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        // A fall-through of another site completes nothing and is named as left out.
        let elsewhere = profile(&[(Cond, 0, 1, 3, 5), (Jump, 1, 0, 1, 9), (Ft, 0, 0, 4, 6)]);
        let (text, warnings) = written(&elsewhere);
        assert!(text.contains("jcnd=3/3 "), "{text}");
        assert!(warnings.iter().any(|w| w.contains("1 FALL_THROUGH")), "{warnings:?}");
    }
}
