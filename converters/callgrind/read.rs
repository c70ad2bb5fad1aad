//! Callgrind reader: one pass over the lines into costs and raw associations, then the
//! associations become edges.
//!
//! Lines are parsed where they lie in the input's buffer, without a `String` or an allocation
//! per line. Cost lines, nine in ten of a large file, come in runs under one `fn=`, broken only
//! by the calls and jumps of the function: such a run is read in one loop ([`Reader::run`]) that
//! scans each number once, gathers the cost rows and appends them to the image's cost columns
//! a few hundred at a time; any line it cannot read that way goes through [`Reader::line`],
//! which also names what is wrong with a bad line.
//!
//! What the reader fills (see docs/formats/callgrind.md for the whole table):
//! - `ob=` object -> [`Image`] (keyed by its name; the unnamed object `ob=` or no `ob=` at all is
//!   an image without a file). Addresses in a Callgrind file are relative to the object, so
//!   `load_addr` is 0 and offsets are the file's addresses.
//! - `fn=` function -> [`Symbol`] of the current object (recursion and caller-context names such
//!   as `fib'2` stay names of their own); its `file` is the `fl=` in effect where it first appears.
//! - cost line -> a row of [`crate::ir::CostTable`] with the function, address, `fi=`/`fe=`/`fl=` file, line and one value
//!   per event, in file order (repeated positions are not merged).
//! - `calls=` -> a `CALL` edge with its count and the callee's inclusive cost; `jump=` ->
//!   `UNCONDITIONAL_BRANCH`; `jcnd=followed/executed` -> `CONDITIONAL_BRANCH` (followed) plus a
//!   `FALL_THROUGH` (executed - followed).
//!
//! Edges are between functions ([`crate::ir::NodeRef::Symbol`], with [`crate::ir::Site`]
//! positions) unless the file has instruction addresses and jumps (`--dump-instr=yes
//! --collect-jumps=yes`): then the instructions are grouped into basic blocks and the edges join
//! blocks (see [`crate::analysis::blocks`]).

mod chunks;

use std::collections::HashMap;
use std::io::BufRead;

use super::parse::{self, name_spec, next_token, skip_space, subposition, trim_end, Bad, NameSpec};
use crate::analysis::blocks::{self, Transfer};
use crate::error::{Error, Findings, Result};
use crate::io::Source;
use crate::ir::{EdgeKind, Event, FileId, Image, Process, Profile, Site, StringTable, Symbol};
use crate::registry::ReadOptions;

/// Rows at which a cost table (or the list of associations) reserves room for the rest of the
/// input, estimated from the bytes left: the fewest a cost line takes (`+2 1` and a line feed),
/// and the fewest an association and its source line take.
const RESERVE_AT: usize = 1 << 14;
const RESERVE_BYTES_PER_COST: u64 = 6;
const RESERVE_BYTES_PER_ARC: u64 = 24;
/// A reservation takes at most this many bytes of memory per byte of input left, whatever the
/// file says (a cost row of many events is wider than its line, whose trailing zeros may be
/// left out).
const RESERVE_PER_INPUT_BYTE: u64 = 4;
/// Bytes a cost row takes beside its values: offset, function, file and line.
const COST_ROW_BYTES: u64 = 20;

/// Most threads a `thread:` header may name (edge counts are indexed by thread).
const MAX_THREADS: u64 = 1 << 16;
/// Most events a profile may name (a call's inclusive cost is kept with its length in 16 bits).
const MAX_EVENTS: usize = u16::MAX as usize;

/// Reads a whole Callgrind file.
///
/// A large uncompressed file is mapped and read in parts side by side (see [`chunks`]);
/// anything else is read as a stream, line after line.
pub fn read(input: &mut Source<'_>, _options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let size = input.size_hint().unwrap_or(0) as usize;
    if size >= chunks::MIN_PARALLEL && input.is_file() && rayon::current_num_threads() > 1 {
        // One part per thread, none shorter than [`chunks::MIN_PART`].
        let parts = rayon::current_num_threads().min(size / chunks::MIN_PART).max(1);
        let reader = chunks::read_parts(input.bytes()?, findings, parts)?;
        // The input's pages leave the process before the control-flow rebuild, the peak of
        // the read.
        input.release();
        return reader.end(findings);
    }
    let mut r = Reader { input_size: input.size_hint().unwrap_or(0), ..Reader::default() };
    read_into(&mut r, input.limit_lines().stream(), findings)?;
    r.end(findings)
}

/// Reads the lines of `input` into `r`, which may already hold what came before them.
fn read_into(r: &mut Reader, input: &mut dyn BufRead, findings: &mut Findings) -> Result<()> {
    // Lines are parsed where they lie in the reader's buffer; only a line split across two
    // buffer fills is copied (into `partial`).
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let buf = input.fill_buf().map_err(|e| {
            let mut err = Error::io(String::new(), e);
            err.file = None;
            err.at_line(r.line_no + 1)
        })?;
        if buf.is_empty() {
            if !partial.is_empty() {
                r.line_no += 1;
                r.line(trim_end(&partial), findings).map_err(|e| e.at_line(r.line_no))?;
            }
            return Ok(());
        }
        let len = buf.len();
        r.input_size = r.input_size.max(r.consumed + len as u64);
        let mut start = 0;
        if !partial.is_empty() {
            match memchr::memchr(b'\n', buf) {
                Some(end) => {
                    partial.extend_from_slice(&buf[..end]);
                    r.line_no += 1;
                    r.line(trim_end(&partial), findings).map_err(|e| e.at_line(r.line_no))?;
                    partial.clear();
                    start = end + 1;
                }
                None => {
                    partial.extend_from_slice(buf);
                    input.consume(len);
                    r.consumed += len as u64;
                    continue;
                }
            }
        }
        loop {
            // Most lines are cost lines in runs: read those in one go.
            if buf.get(start).is_some_and(|&b| starts_run_line(b)) && r.run_allowed() {
                let n = r.run(&buf[start..]);
                if n > 0 {
                    start += n;
                    continue;
                }
            }
            let Some(pos) = memchr::memchr(b'\n', &buf[start..]) else { break };
            let end = start + pos;
            r.line_no += 1;
            r.line(trim_end(&buf[start..end]), findings).map_err(|e| e.at_line(r.line_no))?;
            start = end + 1;
        }
        partial.extend_from_slice(&buf[start..]);
        input.consume(len);
        r.consumed += len as u64;
    }
}

/// Whether a line starting with `b` is a cost line (its first position).
#[inline]
fn starts_cost_line(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'+' | b'-' | b'*')
}

/// Whether a line starting with `b` may be one that [`Reader::run`] reads: a cost line, an
/// association or a `cfn=`.
#[inline]
fn starts_run_line(b: u8) -> bool {
    starts_cost_line(b) || b == b'c' || b == b'j'
}

/// Most events [`Reader::run`] reads; files with more take the line-by-line way.
const RUN_EVENTS: usize = 4;
/// Cost rows a run gathers before it appends them to the image's cost table.
const RUN_ROWS: usize = 512;

/// The cost rows of a run not yet appended to the cost table, by column: offsets and lines (0
/// where the file has no such position) and one value per event for each of the `len` rows.
struct RunRows {
    len: usize,
    offsets: [u64; RUN_ROWS],
    lines: [u32; RUN_ROWS],
    values: [u64; RUN_ROWS * RUN_EVENTS],
}

impl RunRows {
    fn new() -> Box<RunRows> {
        Box::new(RunRows {
            len: 0,
            offsets: [0; RUN_ROWS],
            lines: [0; RUN_ROWS],
            values: [0; RUN_ROWS * RUN_EVENTS],
        })
    }
}

/// Scans the cost line at `buf[i..]`: `NCOLS` positions (relative to `last`), then at most
/// `NEV` values, one per event in order. The positions and the index past the line feed; `None`
/// for a line that [`Reader::line`] must read.
#[inline(always)]
fn scan_run_line<const NCOLS: usize, const NEV: usize>(
    buf: &[u8],
    i: usize,
    last: &[u64; 3],
    values: &mut [u64; NEV],
) -> Option<([u64; 3], usize)> {
    let mut j = i;
    let mut pos = *last;
    // Unrolled, so that the positions stay in registers.
    pos[0] = parse::scan_subposition(buf, &mut j, pos[0])?;
    if NCOLS > 1 {
        j = parse::skip_space_at(buf, j);
        pos[1] = parse::scan_subposition(buf, &mut j, pos[1])?;
    }
    if NCOLS > 2 {
        j = parse::skip_space_at(buf, j);
        pos[2] = parse::scan_subposition(buf, &mut j, pos[2])?;
    }
    for v in values.iter_mut() {
        j = parse::skip_space_at(buf, j);
        if let Some(end) = line_end(buf, j) {
            return Some((pos, end));
        }
        *v = parse::scan_number(buf, &mut j)?;
    }
    line_end(buf, parse::skip_space_at(buf, j)).map(|end| (pos, end))
}

/// Position `c` (0, 1 or 2) of `pos`, picked without indexing (so that the positions can stay
/// in registers).
#[inline(always)]
fn pick(pos: &[u64; 3], c: usize) -> u64 {
    match c {
        0 => pos[0],
        1 => pos[1],
        _ => pos[2],
    }
}

/// The index past the line end at `buf[j..]` (a line feed, or a carriage return and a line
/// feed), if one is there.
#[inline(always)]
fn line_end(buf: &[u8], j: usize) -> Option<usize> {
    match buf.get(j) {
        Some(b'\n') => Some(j + 1),
        Some(b'\r') if buf.get(j + 1) == Some(&b'\n') => Some(j + 2),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArcKind {
    Call,
    Jump,
    Jcnd,
}

/// A `calls=`/`jump=`/`jcnd=` line waiting for its source position line.
#[derive(Debug)]
struct Pending {
    kind: ArcKind,
    count: u64,
    executed: u64,
    target: [u64; 3],
    target_image: u32,
    target_symbol: u32,
    line_no: u64,
}

impl ArcKind {
    /// The key of the lines of this kind, as messages name them.
    fn what(self) -> &'static str {
        match self {
            ArcKind::Call => "calls=",
            ArcKind::Jump => "jump=",
            ArcKind::Jcnd => "jcnd=",
        }
    }
}

impl ArcKind {
    /// The kind of edge the line states: calls=, jump= (unconditional), jcnd= (conditional).
    fn edge_kind(self) -> EdgeKind {
        match self {
            ArcKind::Call => EdgeKind::Call,
            ArcKind::Jump => EdgeKind::UnconditionalBranch,
            ArcKind::Jcnd => EdgeKind::ConditionalBranch,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Column {
    Instr,
    Bb,
    Line,
}

/// Compressed-name ids `(N)` of one namespace (objects, files or functions). Callgrind shares
/// one table between `fl=`/`fi=`/`fe=`/`cfi=`/`cfl=`/`jfi=`, one between `fn=`/`cfn=`/`jfn=`
/// and one between `ob=`/`cob=`; ids persist to the end of the file.
#[derive(Default)]
struct IdTable {
    /// Ids below 2^20; `None` where unset (an empty name's value is `u32::MAX`, and it is set).
    dense: Vec<Option<u32>>,
    sparse: HashMap<u64, u32>,
}

impl IdTable {
    fn set(&mut self, id: u64, value: u32) {
        if id < (1 << 20) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense[i] = Some(value);
        } else {
            self.sparse.insert(id, value);
        }
    }

    /// Every id set, with its value.
    fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let dense = self.dense.iter().enumerate().filter_map(|(i, v)| Some((i as u64, (*v)?)));
        dense.chain(self.sparse.iter().map(|(&id, &v)| (id, v)))
    }

    fn get(&self, id: u64) -> Option<u32> {
        if id < (1 << 20) {
            self.dense.get(id as usize).copied().flatten()
        } else {
            self.sparse.get(&id).copied()
        }
    }
}

/// A compressed name `(id)` referred to before the line that defines it.
struct ForwardName {
    table: Table,
    id: u64,
    /// The value given to it, named `(id)` until the definition comes.
    value: u32,
    /// The line of the first reference.
    line: u64,
    defined: bool,
}

/// Per-process lookups from names to model indices.
#[derive(Default)]
struct ProcessState {
    images: HashMap<Option<FileId>, u32, FastHash>,
    /// Functions by image, name and file: two static functions of one name in one object
    /// (ld.so's two `check_match`) are two functions, as Valgrind and KCachegrind tell them.
    symbols: HashMap<(u32, u32, Name), u32, FastHash>,
    /// The first function of each image and name, whatever its file.
    by_name: HashMap<(u32, u32), u32, FastHash>,
    /// The `calls=`/`jump=`/`jcnd=` lines as transfers between positions.
    arcs: Vec<Transfer>,
    /// The inclusive costs of the calls, one after the other.
    inclusive: Vec<u64>,
}

/// An object or file name: `None` for the empty name.
type Name = Option<u32>;

#[derive(Default)]
struct Reader {
    profile: Profile,
    line_no: u64,
    /// Function names, interned (a symbol is a function name in an image).
    fn_names: StringTable,
    objects: IdTable,
    files: IdTable,
    functions: IdTable,
    states: Vec<ProcessState>,
    pids: HashMap<u64, usize>,
    /// The `pid:` of the current part, when given.
    pid: Option<u64>,
    /// Index of the current process, once something needed it.
    process: Option<usize>,
    thread: u16,
    columns: Vec<Column>,
    instr_col: Option<usize>,
    line_col: Option<usize>,
    /// Parts whose positions lacked `instr` (block reconstruction needs it everywhere).
    part_without_instr: bool,
    /// Column -> index into `profile.events`.
    event_map: Vec<usize>,
    events_seen: bool,
    /// Running basis of each position column (subposition compression).
    last: [u64; 3],
    ob: Name,
    fl: Name,
    file: Name,
    image: Option<u32>,
    symbol: Option<u32>,
    cob: Option<Name>,
    cfi: Option<Name>,
    cfn: Option<u32>,
    jfi: Option<Name>,
    jfn: Option<u32>,
    pending: Option<Pending>,
    /// Sum of the self costs of the current part, per column, for the `totals:` check.
    part_totals: Vec<u64>,
    /// Whether any cost or association was read with `events_map` shorter than the final event
    /// list (events added by a later part): such values are padded at the end.
    events_grew: bool,
    warned_keys: Vec<Vec<u8>>,
    /// Cost lines with a `*` where a cost is expected, and the first one's line.
    star_costs: u64,
    star_line: u64,
    /// `jcnd=` lines whose followed count exceeds the executed count, and the first one's line.
    jcnd_over: u64,
    jcnd_over_line: u64,
    /// The values of the cost line being read, one per event.
    values: Vec<u64>,
    /// The cost rows [`Reader::run`] gathers (kept between runs for their memory).
    run_rows: Option<Box<RunRows>>,
    /// Bytes of input: the size hint, or as far as the reader has seen.
    input_size: u64,
    /// Bytes of input handed to the line parser so far.
    consumed: u64,
    /// Compressed names referred to before their definition, in the order met.
    forwards: Vec<ForwardName>,
    /// For a reader that starts in the middle of a file: what it stood in for the names and
    /// places defined before its start (see [`chunks`]).
    cont: Option<Box<chunks::Continuation>>,
}

/// Warns when the costs `stated` by a `totals:` line at `line_no` differ from the sum of the
/// part's cost lines (missing values are zeros).
fn check_totals(mut stated: Vec<u64>, mut computed: Vec<u64>, line_no: u64, findings: &mut Findings) {
    stated.resize(computed.len().max(stated.len()), 0);
    computed.resize(stated.len(), 0);
    if stated != computed {
        findings.warn(
            Some(crate::error::Location::Line(line_no)),
            format!("totals: {stated:?} differ from the sum of the cost lines {computed:?}"),
        );
    }
}

fn bad(e: Bad) -> Error {
    Error::input(e.0)
}

impl Reader {
    fn line(&mut self, line: &[u8], findings: &mut Findings) -> Result<()> {
        let Some(&first) = line.first() else { return Ok(()) };
        match first {
            b'0'..=b'9' | b'+' | b'-' | b'*' => return self.cost_line(line),
            b'#' => return Ok(()),
            b' ' | b'\t' if skip_space(line).is_empty() => return Ok(()),
            _ => {}
        }
        if let Some(p) = &self.pending {
            return Err(Error::input(format!(
                "expected the source position line of the {} at line {}{}, found '{}'",
                p.kind.what(),
                p.line_no,
                if p.kind == ArcKind::Call { " (position and inclusive cost)" } else { "" },
                String::from_utf8_lossy(&line[..line.len().min(60)])
            )));
        }
        let key_len = line.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        match line.get(key_len) {
            Some(b'=') => self.spec(&line[..key_len], &line[key_len + 1..], findings),
            Some(b':') => self.header(&line[..key_len], trim_end(skip_space(&line[key_len + 1..])), findings),
            _ => Err(Error::input(format!(
                "expected a header line 'key: value', a position 'fn=name', an association \
                 (calls=, jump=, jcnd=) or a cost line, found '{}'",
                String::from_utf8_lossy(&line[..line.len().min(60)])
            ))),
        }
    }

    fn process(&mut self) -> usize {
        if let Some(p) = self.process {
            return p;
        }
        let pid = self.pid.unwrap_or(0);
        let p = *self.pids.entry(pid).or_insert_with(|| {
            self.profile.processes.push(Process { pid, ..Process::default() });
            self.states.push(ProcessState::default());
            self.profile.processes.len() - 1
        });
        self.process = Some(p);
        p
    }

    fn image_of(&mut self, ob: Name) -> u32 {
        let p = self.process();
        let process = &mut self.profile.processes[p];
        *self.states[p].images.entry(ob).or_insert_with(|| {
            process.images.push(Image { id: process.images.len() as u64, file: ob, ..Image::default() });
            (process.images.len() - 1) as u32
        })
    }

    fn symbol_of(&mut self, image: u32, name: u32, file: Name) -> u32 {
        let p = self.process();
        let img = &mut self.profile.processes[p].images[image as usize];
        let fn_names = &self.fn_names;
        let cont = &mut self.cont;
        let state = &mut self.states[p];
        let by_name = &mut state.by_name;
        *state.symbols.entry((image, name, file)).or_insert_with(|| {
            let text = match cont {
                // A name defined before the start of the part: known once the parts are joined.
                Some(c) => {
                    c.created(image, img.symbols.len() as u32, name);
                    if chunks::is_forward(name) {
                        ""
                    } else {
                        fn_names.get(name)
                    }
                }
                None => fn_names.get(name),
            };
            img.symbols.push(Symbol { name: text.to_string(), file, ..Symbol::default() });
            let symbol = (img.symbols.len() - 1) as u32;
            by_name.entry((image, name)).or_insert(symbol);
            symbol
        })
    }

    /// Resolves a name specification in one of the three namespaces.
    ///
    /// Older Callgrind versions refer to an id (`cob=(8)`) before the line that defines it
    /// (`ob=(8) name`): such a reference gets a value named `(8)` at once, renamed when the
    /// definition comes (see [`Reader::forwards`]).
    fn name(&mut self, table: Table, value: &[u8]) -> Result<u32> {
        let spec = name_spec(value).map_err(bad)?;
        let (id, text) = match spec {
            NameSpec::Plain(t) => (None, t),
            NameSpec::Define(id, t) => (Some(id), t),
            NameSpec::Refer(id) => {
                if let Some(v) = self.ids(table).get(id) {
                    return Ok(v);
                }
                if let Some(c) = &mut self.cont {
                    // Defined before the start of the part, or later: told when parts are joined.
                    return Ok(c.forward(table, id));
                }
                let text = format!("({id})");
                let value = match table {
                    Table::Object | Table::File => self.profile.files.intern(&text),
                    Table::Function => self.fn_names.intern(&text),
                };
                self.set_id(table, id, value);
                self.forwards.push(ForwardName { table, id, value, line: self.line_no, defined: false });
                return Ok(value);
            }
        };
        let text = String::from_utf8_lossy(text);
        if let Some(id) = id {
            let pending = self.forwards.iter().position(|f| f.table == table && f.id == id && !f.defined);
            if let Some(k) = pending {
                // The definition of a name used before: the value in use takes the name.
                let f = &mut self.forwards[k];
                let renamed = match table {
                    Table::Object | Table::File if text.is_empty() || unknown_file(table, &text) => false,
                    Table::Object | Table::File => self.profile.files.rename(f.value, &text),
                    Table::Function => self.fn_names.rename(f.value, &text),
                };
                if renamed {
                    f.defined = true;
                    return Ok(f.value);
                }
            }
        }
        let value = match table {
            Table::Object | Table::File => {
                if text.is_empty() {
                    u32::MAX
                } else if unknown_file(table, &text) {
                    // Interned all the same, so that the names keep their order through a
                    // round trip (an object may be called `???` too).
                    self.profile.files.intern(&text);
                    u32::MAX
                } else {
                    self.profile.files.intern(&text)
                }
            }
            Table::Function => self.fn_names.intern(&text),
        };
        if let Some(id) = id {
            self.set_id(table, id, value);
        }
        Ok(value)
    }

    fn ids(&self, table: Table) -> &IdTable {
        match table {
            Table::Object => &self.objects,
            Table::File => &self.files,
            Table::Function => &self.functions,
        }
    }

    fn set_id(&mut self, table: Table, id: u64, value: u32) {
        match table {
            Table::Object => self.objects.set(id, value),
            Table::File => self.files.set(id, value),
            Table::Function => self.functions.set(id, value),
        }
    }

    fn file_name(&mut self, table: Table, value: &[u8]) -> Result<Name> {
        let v = self.name(table, value)?;
        Ok(if v == u32::MAX { None } else { Some(v) })
    }

    fn spec(&mut self, key: &[u8], value: &[u8], findings: &mut Findings) -> Result<()> {
        match key {
            b"ob" => {
                self.ob = self.file_name(Table::Object, value)?;
                self.image = None;
                self.symbol = None;
            }
            b"fl" => {
                self.fl = self.file_name(Table::File, value)?;
                self.file = self.fl;
            }
            b"fi" | b"fe" => self.file = self.file_name(Table::File, value)?,
            b"fn" => {
                let name = self.name(Table::Function, value)?;
                self.file = self.fl;
                let image = match self.image {
                    Some(i) => i,
                    None => {
                        let i = self.image_of(self.ob);
                        self.image = Some(i);
                        i
                    }
                };
                self.symbol = Some(self.symbol_of(image, name, self.fl));
            }
            b"cob" => self.cob = Some(self.file_name(Table::Object, value)?),
            b"cfi" | b"cfl" => self.cfi = Some(self.file_name(Table::File, value)?),
            b"cfn" => self.cfn = Some(self.name(Table::Function, value)?),
            b"jfi" => self.jfi = Some(self.file_name(Table::File, value)?),
            b"jfn" => self.jfn = Some(self.name(Table::Function, value)?),
            b"calls" => self.association(ArcKind::Call, value, self.last)?,
            b"jump" => self.association(ArcKind::Jump, value, self.last)?,
            b"jcnd" => self.association(ArcKind::Jcnd, value, self.last)?,
            b"rcalls" => {
                // Written by old Callgrind versions for recursive calls; KCachegrind reads it
                // as calls=, with a warning.
                if !self.warned_keys.iter().any(|k| k == key) {
                    self.warned_keys.push(key.to_vec());
                    findings.warn(
                        Some(crate::error::Location::Line(self.line_no)),
                        "'rcalls=' (an old Callgrind form) read as 'calls='",
                    );
                }
                self.association(ArcKind::Call, value, self.last)?
            }
            _ => {
                if !self.warned_keys.iter().any(|k| k == key) {
                    self.warned_keys.push(key.to_vec());
                    findings.warn(
                        Some(crate::error::Location::Line(self.line_no)),
                        format!(
                            "'{}=' lines are not part of Callgrind format 1 as cfghub reads it; ignored",
                            String::from_utf8_lossy(key)
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    /// Reads the value of a `calls=`/`jump=`/`jcnd=` line (what follows the `=`), with `last`
    /// the positions its relative target positions build on: its counts and target, which then
    /// wait in [`Reader::pending`] for the source position line. The one parser of these lines:
    /// the run loop ([`Reader::run_line`]) hands its association lines here too.
    fn association(&mut self, kind: ArcKind, value: &[u8], last: [u64; 3]) -> Result<()> {
        let key = kind.what();
        let Some(symbol) = self.symbol else {
            return Err(Error::input(format!(
                "{key} before any fn= line; expected fn=NAME to say which function it belongs to"
            )));
        };
        let value = skip_space(value);
        // Usually well-formed numbers, read in one pass; else token by token for the error.
        let mut j = 0;
        let scanned = match kind {
            // What Callgrind writes: followed/executed.
            ArcKind::Jcnd => parse::scan_decimal(value, &mut j).and_then(|f| {
                (value.get(j) == Some(&b'/')).then_some(())?;
                j += 1;
                Some((f, parse::scan_number(value, &mut j)?))
            }),
            _ => parse::scan_number(value, &mut j).map(|n| (n, n)),
        };
        let (count, executed, rest) = match scanned {
            Some((count, executed)) => (count, executed, &value[j..]),
            None => {
                let (t, rest) = next_token(value);
                let number = |t: &[u8], what: &str| {
                    parse::number(t).map_err(|e| bad(Bad(format!("{key} {what}: {}", e.0))))
                };
                match kind {
                    ArcKind::Jcnd => match t.iter().position(|&b| b == b'/') {
                        Some(slash) => {
                            let f = number(&t[..slash], "followed count")?;
                            (f, number(&t[slash + 1..], "executed count")?, rest)
                        }
                        None => {
                            // The documented grammar: executed followed.
                            let x = number(t, "executed count")?;
                            let (t2, rest) = next_token(rest);
                            (number(t2, "followed count")?, x, rest)
                        }
                    },
                    _ => {
                        let n = number(t, "count")?;
                        (n, n, rest)
                    }
                }
            }
        };
        let mut target = [0u64; 3];
        let mut j = 0;
        let scanned = (0..self.columns.len().min(3)).all(|c| {
            j = parse::skip_space_at(rest, j);
            parse::scan_subposition(rest, &mut j, last[c]).map(|v| target[c] = v).is_some()
        });
        let mut rest = if scanned { &[][..] } else { rest };
        for (c, slot) in target.iter_mut().enumerate().take(if scanned { 0 } else { self.columns.len() }) {
            let (t, r) = next_token(rest);
            if t.is_empty() {
                return Err(Error::input(format!(
                    "{key} target has {c} position(s); expected {} ({})",
                    self.columns.len(),
                    self.describe_columns()
                )));
            }
            *slot = subposition(t, last[c]).map_err(bad)?;
            rest = r;
        }
        let Some((target_image, target_symbol)) = self.association_target(kind, symbol) else {
            return Err(Error::input(
                "calls= without a cfn= line before it; expected cfn=NAME naming the called function",
            ));
        };
        self.note_jcnd(kind, count, executed);
        self.pending = Some(Pending {
            kind,
            count,
            executed,
            target,
            target_image,
            target_symbol,
            line_no: self.line_no,
        });
        Ok(())
    }

    /// The image and symbol an association of `kind` in function `symbol` goes to: for calls the
    /// `cfn=` function in the `cob=` object, for jumps the `jfn=` function or `symbol` itself.
    /// `None` for a call without a `cfn=`.
    fn association_target(&mut self, kind: ArcKind, symbol: u32) -> Option<(u32, u32)> {
        Some(match kind {
            ArcKind::Call => {
                let cfn = self.cfn?;
                let ob = self.cob.unwrap_or(self.ob);
                // Valgrind writes cfi= when the callee's file differs from the current one
                // (which fi=/fe= change).
                let file = self.cfi.unwrap_or(self.file);
                let image = self.image_of(ob);
                (image, self.symbol_of(image, cfn, file))
            }
            _ => {
                let image = self.image.unwrap_or(0);
                let symbol = match self.jfn {
                    Some(name) => {
                        // jfi= names the target position's file, not always its function's:
                        // a function of that name and file, else any of that name.
                        let file = self.jfi.unwrap_or(self.file);
                        let p = self.process();
                        let state = &self.states[p];
                        match state.symbols.get(&(image, name, file)) {
                            Some(&s) => s,
                            None => match state.by_name.get(&(image, name)) {
                                Some(&s) => s,
                                None => self.symbol_of(image, name, file),
                            },
                        }
                    }
                    None => symbol,
                };
                (image, symbol)
            }
        })
    }

    /// Counts a `jcnd=` line whose followed count exceeds its executed count.
    fn note_jcnd(&mut self, kind: ArcKind, count: u64, executed: u64) {
        if kind == ArcKind::Jcnd && count > executed {
            // Valgrind writes such counts when collection was toggled in the middle of a run.
            self.jcnd_over += 1;
            if self.jcnd_over == 1 {
                self.jcnd_over_line = self.line_no;
            }
        }
    }

    fn describe_columns(&self) -> String {
        let names: Vec<&str> = self
            .columns
            .iter()
            .map(|c| match c {
                Column::Instr => "instr",
                Column::Bb => "bb",
                Column::Line => "line",
            })
            .collect();
        names.join(" ")
    }

    fn new_part_if_needed(&mut self) {
        if self.events_seen {
            self.events_seen = false;
            self.last = [0; 3];
            self.part_totals.clear();
        }
    }

    fn header(&mut self, key: &[u8], value: &[u8], findings: &mut Findings) -> Result<()> {
        if self.cont.is_some() && !matches!(key, b"totals" | b"summary") {
            // A part read on its own holds function bodies only; one with a header is read
            // again where it stands (the error is not reported).
            return Err(Error::input("a header line inside a part"));
        }
        let text = || String::from_utf8_lossy(value).into_owned();
        let num = |what: &str| parse::number(value).map_err(|e| Error::input(format!("{what}: {}", e.0)));
        match key {
            b"version" => {
                let v = num("version:")?;
                if v > 1 {
                    findings.warn(
                        Some(crate::error::Location::Line(self.line_no)),
                        format!("format version {v}: cfghub knows version 1 and reads on"),
                    );
                }
                self.profile.meta.format_version = Some((v, 0));
            }
            b"creator" => self.profile.meta.creator = Some(text()),
            b"cmd" => self.profile.meta.command = Some(text()),
            b"pid" => {
                self.new_part_if_needed();
                let pid = num("pid:")?;
                if self.pid != Some(pid) {
                    self.pid = Some(pid);
                    self.process = None;
                    self.image = None;
                    self.symbol = None;
                }
            }
            b"part" => {
                self.new_part_if_needed();
                num("part:")?;
            }
            b"thread" => {
                self.new_part_if_needed();
                let t = num("thread:")?;
                if t > MAX_THREADS {
                    return Err(Error::input(format!(
                        "thread: {t} is too large; expected a thread number up to {MAX_THREADS}"
                    )));
                }
                self.thread = t.saturating_sub(1) as u16;
            }
            b"positions" => {
                self.new_part_if_needed();
                let mut columns = Vec::new();
                let mut rest = value;
                while !rest.is_empty() {
                    let (t, r) = next_token(rest);
                    let c = match t {
                        b"instr" | b"addr" => Column::Instr,
                        b"bb" => Column::Bb,
                        b"line" => Column::Line,
                        _ => {
                            return Err(Error::input(format!(
                                "positions: '{}' is not a position; expected instr, bb and/or line",
                                String::from_utf8_lossy(t)
                            )))
                        }
                    };
                    if columns.contains(&c) || columns.len() == 3 {
                        return Err(Error::input("positions: names a position twice"));
                    }
                    columns.push(c);
                    rest = r;
                }
                self.set_columns(columns);
            }
            b"event" => self.event(value)?,
            b"events" => {
                self.new_part_if_needed();
                let mut map = Vec::new();
                let mut rest = value;
                while !rest.is_empty() {
                    let (t, r) = next_token(rest);
                    let name = String::from_utf8_lossy(t);
                    let idx = match self.profile.event_index(&name) {
                        Some(i) => i,
                        None => {
                            if self
                                .profile
                                .processes
                                .iter()
                                .any(|p| p.images.iter().any(|i| !i.costs.is_empty()))
                                || self.states.iter().any(|s| !s.arcs.is_empty())
                            {
                                self.events_grew = true;
                            }
                            self.add_event(Event::new(name.into_owned()))?
                        }
                    };
                    if map.contains(&idx) {
                        return Err(Error::input(format!(
                            "events: names '{}' twice",
                            String::from_utf8_lossy(t)
                        )));
                    }
                    map.push(idx);
                    rest = r;
                }
                if map.is_empty() {
                    return Err(Error::input("events: names no event; expected at least one event name"));
                }
                self.event_map = map;
                self.events_seen = true;
                self.part_totals = vec![0; self.event_map.len()];
                if self.columns.is_empty() {
                    self.set_columns(vec![Column::Line]);
                }
            }
            b"summary" => {}
            b"totals" => {
                let mut rest = value;
                let mut stated = Vec::new();
                while !rest.is_empty() {
                    let (t, r) = next_token(rest);
                    stated.push(parse::number(t).map_err(|e| Error::input(format!("totals: {}", e.0)))?);
                    rest = r;
                }
                match &mut self.cont {
                    // The part began before this reader's start: checked when parts are joined.
                    Some(c) => c.totals.push((stated, self.part_totals.clone(), self.line_no)),
                    None => check_totals(stated, self.part_totals.clone(), self.line_no, findings),
                }
            }
            b"desc" => self.profile.meta.headers.push(("desc".into(), text())),
            _ => self.profile.meta.headers.push((String::from_utf8_lossy(key).into_owned(), text())),
        }
        Ok(())
    }

    fn set_columns(&mut self, columns: Vec<Column>) {
        self.instr_col = columns.iter().position(|&c| c == Column::Instr);
        self.line_col = columns.iter().position(|&c| c == Column::Line);
        if self.instr_col.is_none() {
            self.part_without_instr = true;
        }
        self.columns = columns;
    }

    /// `event: Name [= expression] [: long name]`.
    fn event(&mut self, value: &[u8]) -> Result<()> {
        let name_len =
            value.iter().take_while(|b| !(parse::is_space(**b) || **b == b'=' || **b == b':')).count();
        if name_len == 0 {
            return Err(Error::input("event: without a name; expected 'event: NAME [: long name]'"));
        }
        let name = String::from_utf8_lossy(&value[..name_len]).into_owned();
        let rest = skip_space(&value[name_len..]);
        if rest.first() == Some(&b'=') {
            // A derived event: not a column; kept as a header for a Callgrind writer.
            self.profile.meta.headers.push(("event".into(), String::from_utf8_lossy(value).into_owned()));
            return Ok(());
        }
        let long = match rest.first() {
            Some(b':') => Some(String::from_utf8_lossy(trim_end(skip_space(&rest[1..]))).into_owned()),
            _ => None,
        };
        let idx = match self.profile.event_index(&name) {
            Some(i) => i,
            None => {
                if self.profile.processes.iter().any(|p| p.images.iter().any(|i| !i.costs.is_empty())) {
                    self.events_grew = true;
                }
                self.add_event(Event::new(name))?
            }
        };
        if long.as_deref().is_some_and(|l| !l.is_empty()) {
            self.profile.events[idx].description = long;
        }
        Ok(())
    }

    /// The common case of a cost line in one pass over its bytes: positions and values that are
    /// well-formed numbers. `None` for anything else; [`Reader::parse_cost_line`] then says
    /// what is wrong.
    #[inline]
    /// The positions go to `self.last` in place (as single words: a copy of a freshly written
    /// array stalls the processor); on `None` they are partly overwritten.
    fn scan_cost_line(&mut self, line: &[u8], values: &mut [u64]) -> Option<()> {
        let mut i = 0;
        for c in 0..self.columns.len().min(3) {
            i = parse::skip_space_at(line, i);
            self.last[c] = parse::scan_subposition(line, &mut i, self.last[c])?;
        }
        for &idx in &self.event_map {
            i = parse::skip_space_at(line, i);
            if i == line.len() {
                return Some(());
            }
            values[idx] = parse::scan_number(line, &mut i)?;
        }
        (parse::skip_space_at(line, i) == line.len()).then_some(())
    }

    /// Parses a cost line token by token, with an error naming what is wrong.
    #[cold]
    fn parse_cost_line(&mut self, line: &[u8], values: &mut [u64]) -> Result<[u64; 3]> {
        let mut pos = [0u64; 3];
        let mut rest = line;
        let npos = self.columns.len();
        for (c, slot) in pos.iter_mut().enumerate().take(npos) {
            let (t, r) = next_token(rest);
            if t.is_empty() {
                return Err(Error::input(format!(
                    "cost line has {c} position(s); expected {npos} ({}) before the costs",
                    self.describe_columns()
                )));
            }
            *slot = subposition(t, self.last[c]).map_err(bad)?;
            rest = r;
        }
        let mut col = 0;
        while !rest.is_empty() {
            let (t, r) = next_token(rest);
            if t == b"*" {
                // Written by some converters where a cost is expected. KCachegrind reads the
                // values before it and none from it on; so does cfghub, with a warning.
                self.star_costs += 1;
                if self.star_costs == 1 {
                    self.star_line = self.line_no;
                }
                break;
            }
            let Some(&idx) = self.event_map.get(col) else {
                return Err(Error::input(format!(
                    "cost line has more than {} cost(s); expected at most one per event ({})",
                    self.event_map.len(),
                    self.event_names()
                )));
            };
            values[idx] = parse::number(t)
                .map_err(|e| Error::input(format!("cost of {}: {}", self.profile.events[idx].name, e.0)))?;
            col += 1;
            rest = r;
        }
        Ok(pos)
    }

    /// Whether [`Reader::run`] may read the next lines: a function is set, there are one to
    /// three positions and few events, and the cost lines give every event in order (as all but
    /// the parts of a file that name fewer events or another order do).
    #[inline]
    fn run_allowed(&self) -> bool {
        self.symbol.is_some()
            && !self.event_map.is_empty()
            && self.event_map.len() <= RUN_EVENTS
            && self.event_map.len() == self.profile.events.len()
            && self.event_map.iter().enumerate().all(|(k, &e)| k == e)
            && (1..=3).contains(&self.columns.len())
    }

    /// Reads the lines at the start of `buf` that make up the body of a function, as
    /// [`Reader::line`] would one by one, and returns the bytes they took (whole lines only):
    /// cost lines, `calls=`/`jump=`/`jcnd=` lines with their source position lines, and
    /// `cfn=(id)` lines. Stops before the first line that is anything else, or that it cannot
    /// read in one pass (a malformed number, a line split by the end of `buf`...): [`Reader::line`]
    /// reads that one and says what is wrong with it, if anything.
    fn run(&mut self, buf: &[u8]) -> usize {
        macro_rules! sized {
            ($($c:literal $e:literal),*) => {
                match (self.columns.len(), self.profile.events.len()) {
                    $(($c, $e) => self.run_sized::<$c, $e>(buf),)*
                    _ => 0,
                }
            };
        }
        sized!(1 1, 1 2, 1 3, 1 4, 2 1, 2 2, 2 3, 2 4, 3 1, 3 2, 3 3, 3 4)
    }

    /// [`Reader::run`] for `NCOLS` positions and `NEV` events: the loop over cost lines, kept
    /// small; the other lines of a body are read by [`Reader::run_line`].
    #[inline(never)]
    fn run_sized<const NCOLS: usize, const NEV: usize>(&mut self, buf: &[u8]) -> usize {
        let Some(symbol) = self.symbol else { return 0 };
        let (instr_col, line_col) = (self.instr_col, self.line_col);
        let (ic, lc) = (instr_col.unwrap_or(0), line_col.unwrap_or(0));
        let mut rows = self.run_rows.take().unwrap_or_else(RunRows::new);
        let mut pending = self.pending.take();
        let mut last = self.last;
        let mut totals = [0u64; NEV];
        let mut lines = 0u64;
        let mut i = 0;
        while let Some(&first) = buf.get(i) {
            if !starts_cost_line(first) {
                if pending.is_some() {
                    // Only a position line may follow an association.
                    break;
                }
                self.line_no += lines;
                lines = 0;
                match self.run_line(buf, i, &last, &mut pending) {
                    Some(end) => {
                        i = end;
                        continue;
                    }
                    None => break,
                }
            }
            let mut values = [0u64; NEV];
            let Some((pos, end)) = scan_run_line::<NCOLS, NEV>(buf, i, &last, &mut values) else { break };
            let line = pick(&pos, lc);
            if line_col.is_some() && line > u64::from(u32::MAX) {
                break;
            }
            let line_no = line_col.map(|_| line as u32);
            let instr = instr_col.map(|_| pick(&pos, ic));
            if pending.is_some() {
                if !self.run_arc(&mut pending, symbol, instr, line_no, &values) {
                    break;
                }
            } else {
                if rows.len >= RUN_ROWS {
                    self.append_rows(&mut rows, symbol, NEV);
                }
                let n = rows.len;
                rows.offsets[n] = instr.unwrap_or(0);
                rows.lines[n] = line_no.unwrap_or(0);
                rows.values[n * NEV..(n + 1) * NEV].copy_from_slice(&values);
                rows.len = n + 1;
                for (t, v) in totals.iter_mut().zip(values) {
                    *t = t.wrapping_add(v);
                }
            }
            last = pos;
            lines += 1;
            i = end;
        }
        self.line_no += lines;
        self.append_rows(&mut rows, symbol, NEV);
        self.run_rows = Some(rows);
        self.pending = pending;
        self.last = last;
        for (t, add) in self.part_totals.iter_mut().zip(totals) {
            *t = t.wrapping_add(add);
        }
        i
    }

    /// Records the association `pending` in a run, now that its source line gave its position
    /// (`instr`, `line_no`) and for a call the callee's inclusive cost `values`. `false`, with
    /// nothing done, when the line parser must read the line.
    #[inline(never)]
    fn run_arc(
        &mut self,
        pending: &mut Option<Pending>,
        symbol: u32,
        instr: Option<u64>,
        line_no: Option<u32>,
        values: &[u64],
    ) -> bool {
        let Some(p) = pending.as_ref() else { return false };
        let tgt_line = match self.line_col.map(|c| u32::try_from(p.target[c])) {
            Some(Ok(l)) => Some(l),
            Some(Err(_)) => return false,
            None => None,
        };
        if self.site_error(p, instr, line_no, tgt_line).is_some() {
            return false;
        }
        let Some(p) = pending.take() else { return false };
        let image = self.image.unwrap_or(0);
        self.push_arc(p, image, symbol, instr, line_no, tgt_line, values);
        true
    }

    /// Reads the line at `buf[i..]` in a run, when it is a `cfn=(id)` line or an association
    /// (which then waits in `pending` for its source line), with `last` the current positions.
    /// The index past the line; `None`, with nothing done, for any other line.
    #[inline(never)]
    fn run_line(
        &mut self,
        buf: &[u8],
        i: usize,
        last: &[u64; 3],
        pending: &mut Option<Pending>,
    ) -> Option<usize> {
        let line = &buf[i..];
        if line.starts_with(b"cfn=(") {
            // A compressed function name referred to by its id.
            let mut j = i + 5;
            let id = parse::scan_decimal(buf, &mut j)?;
            if buf.get(j) != Some(&b')') {
                return None;
            }
            let end = line_end(buf, parse::skip_space_at(buf, j + 1))?;
            self.cfn = Some(self.functions.get(id)?);
            self.line_no += 1;
            return Some(end);
        }
        let (kind, key) = if line.starts_with(b"calls=") {
            (ArcKind::Call, 6)
        } else if line.starts_with(b"jump=") {
            (ArcKind::Jump, 5)
        } else if line.starts_with(b"jcnd=") {
            (ArcKind::Jcnd, 5)
        } else {
            return None;
        };
        // The line's end: a line the buffer holds only part of is left to [`Reader::line`].
        let end = i + memchr::memchr(b'\n', line)?;
        self.line_no += 1;
        match self.association(kind, trim_end(&buf[i + key..end]), *last) {
            Ok(()) => {
                *pending = self.pending.take();
                Some(end + 1)
            }
            Err(_) => {
                // Nothing was recorded: the line parser reads the line again and reports it.
                self.line_no -= 1;
                None
            }
        }
    }

    /// Appends the cost rows a run gathered (`width` values each) to the current image's cost
    /// table, and empties `rows`.
    fn append_rows(&mut self, rows: &mut RunRows, symbol: u32, width: usize) {
        let n = rows.len;
        if n == 0 {
            return;
        }
        let proc = self.process.unwrap_or(0);
        let image = self.image.unwrap_or(0) as usize;
        let len = self.profile.processes[proc].images[image].costs.len();
        if len <= RESERVE_AT && len + n > RESERVE_AT {
            let left = self.cost_rows_left();
            self.profile.processes[proc].images[image].costs.reserve(left);
        }
        let costs = &mut self.profile.processes[proc].images[image].costs;
        costs.extend_columns(
            n,
            self.instr_col.map(|_| &rows.offsets[..n]),
            Some(symbol),
            self.file,
            self.line_col.map(|_| &rows.lines[..n]),
            &rows.values[..n * width],
        );
        rows.len = 0;
    }

    /// At most how many more lines of `bytes_per_line` bytes the input holds: what a table that
    /// has grown large reserves at once, so that it neither grows by doubling (copying itself
    /// each time) nor outgrows the input.
    fn lines_left(&self, bytes_per_line: u64) -> usize {
        (self.input_size.saturating_sub(self.consumed) / bytes_per_line).min(1 << 28) as usize
    }

    /// How many more cost rows a large cost table reserves: as many lines as the input can
    /// still hold, within [`RESERVE_PER_INPUT_BYTE`] of memory per input byte.
    fn cost_rows_left(&self) -> usize {
        let row = COST_ROW_BYTES + 8 * self.profile.events.len() as u64;
        let memory = self.input_size.saturating_sub(self.consumed).saturating_mul(RESERVE_PER_INPUT_BYTE);
        self.lines_left(RESERVE_BYTES_PER_COST).min((memory / row) as usize)
    }

    /// Parses positions and costs of a cost line (or an association's source line).
    #[inline]
    fn cost_line(&mut self, line: &[u8]) -> Result<()> {
        if !self.events_seen && self.event_map.is_empty() {
            return Err(Error::input("cost line before the events: header; expected 'events: NAMES' first"));
        }
        // One buffer for the values of every line: no allocation or copy per cost line.
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        values.resize(self.profile.events.len(), 0);
        let bases = self.last;
        let done = match self.scan_cost_line(line, &mut values) {
            Some(()) => self.cost_at(&values),
            None => {
                self.last = bases;
                self.parse_cost_line(line, &mut values).and_then(|pos| {
                    self.last = pos;
                    self.cost_at(&values)
                })
            }
        };
        self.values = values;
        done
    }

    /// Records a cost line (or an association's source line) at positions `pos`.
    #[inline]
    fn cost_at(&mut self, values: &[u64]) -> Result<()> {
        let instr = self.instr_col.map(|c| self.last[c]);
        let line_no = match self.line_col {
            Some(c) => Some(u32::try_from(self.last[c]).map_err(|_| {
                Error::input(format!(
                    "line number {} is too large; expected at most {}",
                    self.last[c],
                    u32::MAX
                ))
            })?),
            None => None,
        };
        if let Some(p) = self.pending.take() {
            let Some(symbol) = self.symbol else {
                return Err(Error::input("association without a function; expected fn=NAME before it"));
            };
            let image = self.image.unwrap_or(0);
            let tgt_line = match self.line_col {
                Some(c) => Some(u32::try_from(p.target[c]).map_err(|_| {
                    Error::input(format!(
                        "line number {} is too large; expected at most {}",
                        p.target[c],
                        u32::MAX
                    ))
                })?),
                None => None,
            };
            if let Some(e) = self.site_error(&p, instr, line_no, tgt_line) {
                return Err(e);
            }
            self.push_arc(p, image, symbol, instr, line_no, tgt_line, values);
            return Ok(());
        }
        let Some(symbol) = self.symbol else {
            return Err(Error::input(
                "cost line before any fn= line; expected fn=NAME to say which function the cost belongs to",
            ));
        };
        for (t, &idx) in self.part_totals.iter_mut().zip(&self.event_map) {
            *t = t.wrapping_add(values[idx]);
        }
        let proc = self.process.unwrap_or(0);
        let image = self.image.unwrap_or(0);
        let left = self.cost_rows_left();
        let costs = &mut self.profile.processes[proc].images[image as usize].costs;
        if costs.len() == RESERVE_AT {
            costs.reserve(left);
        }
        costs.push_parts(instr, Some(symbol), self.file, line_no, values);
        Ok(())
    }

    /// What keeps a call's or jump's positions out of the model's [`Site`]: an address or a
    /// line past the largest it holds (the values above are how it says "unknown").
    fn site_error(
        &self,
        p: &Pending,
        instr: Option<u64>,
        line: Option<u32>,
        tgt_line: Option<u32>,
    ) -> Option<Error> {
        let tgt_addr = self.instr_col.map(|c| p.target[c]);
        if let Some(a) = [instr, tgt_addr].into_iter().flatten().find(|&a| a > Site::MAX_OFFSET) {
            return Some(Error::input(format!(
                "address {a:#x} of a call or jump is too large; expected at most {:#x}",
                Site::MAX_OFFSET
            )));
        }
        let l = [line, tgt_line].into_iter().flatten().find(|&l| l > Site::MAX_LINE)?;
        Some(Error::input(format!(
            "line number {l} of a call or jump is too large; expected at most {}",
            Site::MAX_LINE
        )))
    }

    /// Names one more event; its index.
    fn add_event(&mut self, event: Event) -> Result<usize> {
        if self.profile.events.len() >= MAX_EVENTS {
            return Err(Error::input(format!(
                "event '{}' is one too many; a profile names at most {MAX_EVENTS} events",
                event.name
            )));
        }
        self.profile.events.push(event);
        Ok(self.profile.events.len() - 1)
    }

    /// Records the association `p` now that its source line gave its position (`instr`,
    /// `line_no`) in `symbol` of `image`, and for a call the callee's inclusive cost `values`.
    #[allow(clippy::too_many_arguments)]
    fn push_arc(
        &mut self,
        p: Pending,
        image: u32,
        symbol: u32,
        instr: Option<u64>,
        line_no: Option<u32>,
        tgt_line: Option<u32>,
        values: &[u64],
    ) {
        let proc = self.process();
        if self.states[proc].arcs.len() == RESERVE_AT {
            let left = self.lines_left(RESERVE_BYTES_PER_ARC);
            crate::mem::reserve(&mut self.states[proc].arcs, left);
        }
        let state = &mut self.states[proc];
        let incl_start = state.inclusive.len();
        if p.kind == ArcKind::Call {
            // One to four values: pushed, not copied by a call to memcpy.
            for &v in values {
                state.inclusive.push(v);
            }
        }
        state.arcs.push(Transfer {
            kind: p.kind.edge_kind(),
            has_addr: self.instr_col.is_some(),
            has_line: line_no.is_some(),
            thread: self.thread,
            incl_len: (state.inclusive.len() - incl_start) as u16,
            src_image: image,
            src_symbol: symbol,
            src_line: line_no.unwrap_or(0),
            tgt_image: p.target_image,
            tgt_symbol: p.target_symbol,
            tgt_line: tgt_line.unwrap_or(0),
            src_addr: instr.unwrap_or(0),
            tgt_addr: self.instr_col.map_or(0, |c| p.target[c]),
            count: p.count,
            detail: if p.kind == ArcKind::Call { incl_start as u64 } else { p.executed },
        });
        if p.kind == ArcKind::Call {
            self.cob = None;
            self.cfi = None;
        } else {
            self.jfi = None;
            self.jfn = None;
        }
    }

    fn event_names(&self) -> String {
        let names: Vec<&str> = self.event_map.iter().map(|&i| self.profile.events[i].name.as_str()).collect();
        names.join(" ")
    }

    /// The profile, once every line is read.
    fn end(self, findings: &mut Findings) -> Result<Profile> {
        if let Some(p) = &self.pending {
            return Err(Error::input(format!(
                "the file ends after the {} line; expected a line with its source position{}",
                p.kind.what(),
                if p.kind == ArcKind::Call { " and inclusive cost" } else { "" }
            ))
            .at_line(p.line_no));
        }
        self.finish(findings)
    }

    fn finish(mut self, findings: &mut Findings) -> Result<Profile> {
        if self.star_costs > 0 {
            findings.warn(
                Some(crate::error::Location::Line(self.star_line)),
                format!(
                    "{} cost line(s) hold '*' where a cost is expected (first here); read as KCachegrind \
                     does: the costs before it kept, it and those after it missing (zero)",
                    self.star_costs
                ),
            );
        }
        for f in self.forwards.iter().filter(|f| !f.defined) {
            findings.warn(
                Some(crate::error::Location::Line(f.line)),
                format!(
                    "name id ({}) is used here but never defined in the {} names; kept as '({})'",
                    f.id,
                    f.table.describe(),
                    f.id
                ),
            );
        }
        if self.forwards.iter().any(|f| f.defined && f.table == Table::Function) {
            // Symbols took their names when created, some before the definition came.
            for (p, state) in self.states.iter().enumerate() {
                let images = &mut self.profile.processes[p].images;
                for (&(image, name, _), &symbol) in &state.symbols {
                    images[image as usize].symbols[symbol as usize].name =
                        self.fn_names.get(name).to_string();
                }
            }
        }
        if self.jcnd_over > 0 {
            findings.warn(
                Some(crate::error::Location::Line(self.jcnd_over_line)),
                format!(
                    "{} jcnd= line(s) say the jump was followed more often than executed (first here); \
                     read as always followed, without a fall-through",
                    self.jcnd_over
                ),
            );
        }
        let nevents = self.profile.events.len();
        if self.events_grew {
            for p in &mut self.profile.processes {
                for i in &mut p.images {
                    i.costs.widen(nevents);
                }
            }
        }
        let pad_to = if self.events_grew { nevents } else { 0 };
        // "If not appearing, version 1 is assumed."
        self.profile.meta.format_version.get_or_insert((1, 0));
        let ir = self.profile.event_index("Ir");
        let has_instr = !self.part_without_instr && !self.columns.is_empty();
        // What the rebuild needs of the reader is the profile and the transfers: the name
        // tables go first (3 MB for the functions of a large C++ program).
        let mut profile = std::mem::take(&mut self.profile);
        let states = std::mem::take(&mut self.states);
        drop(self);
        for (p, state) in states.into_iter().enumerate() {
            let ProcessState { arcs, inclusive, images, symbols, by_name } = state;
            drop((images, symbols, by_name));
            let process = &mut profile.processes[p];
            let owners = crate::analysis::names::recursion_bases(process);
            let jumps = arcs.iter().any(|a| !a.kind.is_call());
            if has_instr && jumps {
                // Symbol extents are set on the way, from the sorted addresses.
                blocks::rebuild(process, arcs, &inclusive, pad_to, ir, &owners, true);
            } else {
                let costs = blocks::InclusiveCosts { values: &inclusive, pad_to };
                blocks::symbol_extents(process, &arcs, &owners);
                blocks::function_edges(process, &costs, &arcs, 1);
            }
        }
        Ok(profile)
    }
}

/// Whether `text` is Valgrind's name for an unknown source file, `???`, which reads as no file
/// (as KCachegrind reads it, and as the writer writes no file). An object named `???` keeps
/// that name: the writer leaves an unknown object empty.
fn unknown_file(table: Table, text: &str) -> bool {
    table == Table::File && text == "???"
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Table {
    Object,
    File,
    Function,
}

impl Table {
    fn describe(self) -> &'static str {
        match self {
            Table::Object => "object (ob=, cob=)",
            Table::File => "file (fl=, fi=, fe=, cfi=, cfl=, jfi=)",
            Table::Function => "function (fn=, cfn=, jfn=)",
        }
    }
}

/// A hasher for the integer keys of the reader (object, file and function ids, name keys):
/// a multiply-and-rotate mix (as rustc's FxHash), much cheaper than SipHash. Not
/// collision-resistant: a file crafted to collide can make reading slow, never wrong.
#[derive(Clone, Copy, Default)]
pub(super) struct FastHash;

impl std::hash::BuildHasher for FastHash {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(0)
    }
}

pub(super) struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(n as u64);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(input: &mut dyn BufRead) -> Result<Profile> {
        read(&mut Source::new(input), &ReadOptions::default(), &mut Findings::default())
    }

    /// Cost lines are read in runs straight from the input buffer: a line cut by the end of a
    /// buffer, carriage returns and trailing blanks must read as they do line by line.
    #[test]
    fn buffer_boundaries_and_line_ends_do_not_change_the_profile() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/callgrind/callgrind.out.recursion-loops");
        let text = std::fs::read(path).unwrap();
        let whole = read_text(&mut text.as_slice()).unwrap();
        assert!(whole.processes[0].images.iter().any(|i| i.costs.len() > 50));
        for capacity in [1, 7, 64, 4096] {
            let mut input = std::io::BufReader::with_capacity(capacity, text.as_slice());
            assert_eq!(read_text(&mut input).unwrap(), whole, "buffer of {capacity} bytes");
        }
        let mut crlf = Vec::new();
        let mut blanks = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            crlf.extend_from_slice(line);
            crlf.extend_from_slice(b"\r\n");
            blanks.extend_from_slice(line);
            blanks.extend_from_slice(if line.first().is_some_and(|&b| starts_cost_line(b)) {
                b" \t\n"
            } else {
                b"\n"
            });
        }
        assert_eq!(read_text(&mut crlf.as_slice()).unwrap(), whole);
        assert_eq!(read_text(&mut blanks.as_slice()).unwrap(), whole);
    }

    /// The lines of a function body in the forms [`Reader::run`] reads and in the rarer forms it
    /// leaves to [`Reader::line`] read alike: a one-byte buffer splits every line, so that
    /// every line goes the line-by-line way.
    #[test]
    fn runs_read_associations_as_the_line_parser_does() {
        let text = "events: Ir Dr\npositions: instr line\nfl=(1) a.c\nfn=(1) main\n\
            0x10 3 1 2\n+2 * 1\ncfn=(2) callee\ncalls=2 0x40 9\n* * 50 7\n+1 4 1\n\
            cfn=(1)\ncalls=0x3 +4 -1 \n+2 +1 9\ncfn= (2)\ncalls=1 0x40 9 extra\n+1 * 2\n\
            jcnd=1/3 -2 *\n* * \njcnd=4 1 0x12 3\n+2 * 1 1\njump=2 0x10 3\r\n+1 * 1\r\n\
            jcnd=5/2 0x10 3\n+1 0 1\ncob=(1) lib.so\ncfi=(2) b.c\ncfn=(3) other\n\
            calls=1 0x900 1\n+1 0 3\n+1 0 1 2\n";
        let whole = read_text(&mut text.as_bytes()).unwrap();
        let mut input = std::io::BufReader::with_capacity(1, text.as_bytes());
        assert_eq!(read_text(&mut input).unwrap(), whole);
        let p = &whole.processes[0];
        assert_eq!((p.images.len(), p.images[0].costs.len(), p.edges.len()), (2, 4, 10));
    }

    /// A malformed line inside a run of cost lines is reported at its own line, with what the
    /// line-by-line parser says of it.
    #[test]
    fn a_bad_line_in_a_run_names_its_line() {
        let head = "events: Ir\npositions: instr line\nfn=main\n";
        for (bad, expected) in [
            ("+2 3 4x", "expected a number"),
            ("+2 3 4 5", "more than 1 cost"),
            ("-99999 3 4", "below zero"),
            ("+2", "1 position(s)"),
            ("+2 5000000000 1", "line number 5000000000 is too large"),
            ("calls=1 0x10", "calls= target has"),
            ("jcnd=1/x 0x10 1", "jcnd= executed count"),
            ("cfn=(99 f", "expected '(id)' with a closing ')'"),
            ("jump=1 0x10 1\nfn=main", "expected the source position line of the jump= at line 6"),
        ] {
            let text = format!("{head}0x10 1 1\n+1 1 1\n{bad}\n+1 1 1\n");
            let err = read_text(&mut text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(":6") || err.contains("line 6"), "{bad}: {err}");
            assert!(err.contains(expected), "{bad}: {err}");
        }
        let text = format!("{head}0x10 1 1\n+1 1 1\n+1 +2 2\n");
        let p = read_text(&mut text.as_bytes()).unwrap();
        let costs = &p.processes[0].images[0].costs;
        assert_eq!(
            (costs.len(), costs.offset(2), costs.line(2), &costs.values(2)[..]),
            (3, Some(0x12), Some(3), &[2][..])
        );
    }

    /// A profile names at most 65,535 events, on one `events:` line or by `event:` lines; one
    /// more is an error at its line.
    #[test]
    fn at_most_65535_events() {
        let names = |n: usize| (0..n).map(|k| format!("e{k}")).collect::<Vec<_>>().join(" ");
        let text = format!(
            "events: {}
fn=main
1 1
",
            names(MAX_EVENTS)
        );
        assert_eq!(read_text(&mut text.as_bytes()).unwrap().events.len(), MAX_EVENTS);
        let text = format!(
            "events: {}
fn=main
1 1
",
            names(MAX_EVENTS + 1)
        );
        let err = read_text(&mut text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("'e65535' is one too many"), "{err}");
        let text = format!(
            "events: {}
event: more
fn=main
1 1
",
            names(MAX_EVENTS)
        );
        let err = read_text(&mut text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("'more' is one too many"), "{err}");
    }
}
