//! Callgrind reader: one pass over the lines into costs and raw associations, then the
//! associations become edges.
//!
//! Line by line, without a `String` per line: `read_until` fills one reused buffer, and every
//! token is parsed from the borrowed bytes.
//!
//! What the reader fills (see docs/formats/callgrind.md for the whole table):
//! - `ob=` object -> [`Image`] (keyed by its name; the unnamed object `ob=` or no `ob=` at all is
//!   an image without a file). Addresses in a Callgrind file are relative to the object, so
//!   `load_addr` is 0 and offsets are the file's addresses.
//! - `fn=` function -> [`Symbol`] of the current object (recursion and caller-context names such
//!   as `fib'2` stay names of their own); its `file` is the `fl=` in effect where it first appears.
//! - cost line -> [`Cost`] with the function, address, `fi=`/`fe=`/`fl=` file, line and one value
//!   per event, in file order (repeated positions are not merged).
//! - `calls=` -> a `CALL` edge with its count and the callee's inclusive cost; `jump=` ->
//!   `UNCONDITIONAL_BRANCH`; `jcnd=followed/executed` -> `CONDITIONAL_BRANCH` (followed) plus a
//!   `FALL_THROUGH` (executed - followed).
//!
//! Edges are between functions ([`NodeRef::Symbol`], with [`Site`] positions) unless the file
//! has instruction addresses and jumps (`--dump-instr=yes --collect-jumps=yes`): then the
//! instructions are grouped into basic blocks and the edges join blocks (see [`build_blocks`]).

use std::collections::HashMap;
use std::io::BufRead;

use super::parse::{self, name_spec, next_token, skip_space, subposition, trim_end, Bad, NameSpec};
use crate::error::{Error, Findings, Result};
use crate::ir::{
    Block, BlockRef, Cost, Counts, Edge, EdgeDetails, EdgeKind, Event, FileId, Image, NodeRef, Process,
    Profile, Routine, Site, SourceLine, StringTable, Symbol, SymbolRef,
};

/// Most threads a `thread:` header may name (edge counts are indexed by thread).
const MAX_THREADS: u64 = 1 << 16;
/// Longest x86 instruction: the most a block's last instruction is taken to span.
const MAX_INSTR_LEN: u64 = 15;

/// Reads a whole Callgrind file.
pub fn read(input: &mut dyn BufRead, findings: &mut Findings) -> Result<Profile> {
    let mut r = Reader::default();
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
            break;
        }
        let len = buf.len();
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
                    continue;
                }
            }
        }
        let base = start;
        for pos in memchr::memchr_iter(b'\n', &buf[base..]) {
            let end = base + pos;
            r.line_no += 1;
            r.line(trim_end(&buf[start..end]), findings).map_err(|e| e.at_line(r.line_no))?;
            start = end + 1;
        }
        partial.extend_from_slice(&buf[start..]);
        input.consume(len);
    }
    if let Some(p) = &r.pending {
        return Err(Error::input(format!(
            "the file ends after the {} line; expected a line with its source position{}",
            p.what(),
            if p.kind == ArcKind::Call { " and inclusive cost" } else { "" }
        ))
        .at_line(p.line_no));
    }
    r.finish(findings)
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

impl Pending {
    fn what(&self) -> &'static str {
        match self.kind {
            ArcKind::Call => "calls=",
            ArcKind::Jump => "jump=",
            ArcKind::Jcnd => "jcnd=",
        }
    }
}

/// A call or jump as the file gave it, before it becomes an edge.
#[derive(Debug)]
struct RawArc {
    kind: ArcKind,
    thread: usize,
    src_image: u32,
    src_symbol: u32,
    src_instr: Option<u64>,
    src_line: Option<u32>,
    tgt_image: u32,
    tgt_symbol: u32,
    tgt_instr: Option<u64>,
    tgt_line: Option<u32>,
    count: u64,
    executed: u64,
    inclusive: Vec<u64>,
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
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
}

impl IdTable {
    fn set(&mut self, id: u64, value: u32) {
        if id < (1 << 20) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, u32::MAX);
            }
            self.dense[i] = value;
        } else {
            self.sparse.insert(id, value);
        }
    }

    fn get(&self, id: u64) -> Option<u32> {
        if id < (1 << 20) {
            self.dense.get(id as usize).copied().filter(|&v| v != u32::MAX)
        } else {
            self.sparse.get(&id).copied()
        }
    }
}

/// Per-process lookups from names to model indices.
#[derive(Default)]
struct ProcessState {
    images: HashMap<Option<FileId>, u32>,
    symbols: HashMap<(u32, u32), u32, FastHash>,
    arcs: Vec<RawArc>,
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
    thread: usize,
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
    /// `jcnd=` lines whose followed count exceeds the executed count, and the first one's line.
    jcnd_over: u64,
    jcnd_over_line: u64,
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
                p.what(),
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
        *self.states[p].symbols.entry((image, name)).or_insert_with(|| {
            img.symbols.push(Symbol { name: fn_names.get(name).to_string(), file, ..Symbol::default() });
            (img.symbols.len() - 1) as u32
        })
    }

    /// Resolves a name specification in one of the three namespaces.
    fn name(&mut self, table: Table, value: &[u8]) -> Result<u32> {
        let spec = name_spec(value).map_err(bad)?;
        let (id, text) = match spec {
            NameSpec::Plain(t) => (None, t),
            NameSpec::Define(id, t) => (Some(id), t),
            NameSpec::Refer(id) => {
                let ids = match table {
                    Table::Object => &self.objects,
                    Table::File => &self.files,
                    Table::Function => &self.functions,
                };
                return ids.get(id).ok_or_else(|| {
                    Error::input(format!(
                        "name id ({id}) is used before it is defined; expected an earlier \
                         line defining it as '({id}) name' in the {} names",
                        table.describe()
                    ))
                });
            }
        };
        let text = String::from_utf8_lossy(text);
        let value = match table {
            Table::Object | Table::File => {
                if text.is_empty() {
                    u32::MAX
                } else {
                    self.profile.files.intern(&text)
                }
            }
            Table::Function => self.fn_names.intern(&text),
        };
        if let Some(id) = id {
            match table {
                Table::Object => self.objects.set(id, value),
                Table::File => self.files.set(id, value),
                Table::Function => self.functions.set(id, value),
            }
        }
        Ok(value)
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
            b"calls" | b"jump" | b"jcnd" => self.association(key, value)?,
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

    fn association(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let Some(symbol) = self.symbol else {
            return Err(Error::input(format!(
                "{}= before any fn= line; expected fn=NAME to say which function it belongs to",
                String::from_utf8_lossy(key)
            )));
        };
        let value = skip_space(value);
        let (kind, count, executed, rest) = match key {
            b"calls" => {
                let (t, rest) = next_token(value);
                let n = parse::number(t).map_err(|e| bad(Bad(format!("calls= count: {}", e.0))))?;
                (ArcKind::Call, n, n, rest)
            }
            b"jump" => {
                let (t, rest) = next_token(value);
                let n = parse::number(t).map_err(|e| bad(Bad(format!("jump= count: {}", e.0))))?;
                (ArcKind::Jump, n, n, rest)
            }
            _ => {
                let (t, rest) = next_token(value);
                if let Some(slash) = t.iter().position(|&b| b == b'/') {
                    // What Callgrind writes: followed/executed.
                    let f = parse::number(&t[..slash])
                        .map_err(|e| bad(Bad(format!("jcnd= followed count: {}", e.0))))?;
                    let x = parse::number(&t[slash + 1..])
                        .map_err(|e| bad(Bad(format!("jcnd= executed count: {}", e.0))))?;
                    (ArcKind::Jcnd, f, x, rest)
                } else {
                    // The documented grammar: executed followed.
                    let x =
                        parse::number(t).map_err(|e| bad(Bad(format!("jcnd= executed count: {}", e.0))))?;
                    let (t2, rest) = next_token(rest);
                    let f =
                        parse::number(t2).map_err(|e| bad(Bad(format!("jcnd= followed count: {}", e.0))))?;
                    (ArcKind::Jcnd, f, x, rest)
                }
            }
        };
        if kind == ArcKind::Jcnd && count > executed {
            // Valgrind writes such counts when collection was toggled in the middle of a run.
            self.jcnd_over += 1;
            if self.jcnd_over == 1 {
                self.jcnd_over_line = self.line_no;
            }
        }
        let mut target = [0u64; 3];
        let mut rest = rest;
        for (c, slot) in target.iter_mut().enumerate().take(self.columns.len()) {
            let (t, r) = next_token(rest);
            if t.is_empty() {
                return Err(Error::input(format!(
                    "{}= target has {c} position(s); expected {} ({})",
                    String::from_utf8_lossy(key),
                    self.columns.len(),
                    self.describe_columns()
                )));
            }
            *slot = subposition(t, self.last[c]).map_err(bad)?;
            rest = r;
        }
        let (target_image, target_symbol) = match kind {
            ArcKind::Call => {
                let Some(cfn) = self.cfn else {
                    return Err(Error::input(
                        "calls= without a cfn= line before it; expected cfn=NAME naming the called function",
                    ));
                };
                let ob = self.cob.unwrap_or(self.ob);
                let file = self.cfi.unwrap_or(self.fl);
                let image = self.image_of(ob);
                (image, self.symbol_of(image, cfn, file))
            }
            _ => {
                let image = self.image.unwrap_or(0);
                let symbol = match self.jfn {
                    Some(name) => {
                        let file = self.jfi.unwrap_or(self.fl);
                        self.symbol_of(image, name, file)
                    }
                    None => symbol,
                };
                (image, symbol)
            }
        };
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
                self.thread = t.saturating_sub(1) as usize;
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
                            self.profile.events.push(Event::new(name.into_owned()));
                            self.profile.events.len() - 1
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
                stated.resize(self.part_totals.len().max(stated.len()), 0);
                let mut computed = self.part_totals.clone();
                computed.resize(stated.len(), 0);
                if stated != computed {
                    findings.warn(
                        Some(crate::error::Location::Line(self.line_no)),
                        format!("totals: {stated:?} differ from the sum of the cost lines {computed:?}"),
                    );
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
                self.profile.events.push(Event::new(name));
                self.profile.events.len() - 1
            }
        };
        if long.as_deref().is_some_and(|l| !l.is_empty()) {
            self.profile.events[idx].description = long;
        }
        Ok(())
    }

    /// Parses positions and costs of a cost line (or an association's source line).
    #[inline]
    fn cost_line(&mut self, line: &[u8]) -> Result<()> {
        if !self.events_seen && self.event_map.is_empty() {
            return Err(Error::input("cost line before the events: header; expected 'events: NAMES' first"));
        }
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
        self.last = pos;
        let nevents = self.profile.events.len();
        // Inline for up to two events, as in the model: no heap allocation per cost line.
        let mut values = crate::ir::Values::from_elem(0, nevents);
        let mut col = 0;
        while !rest.is_empty() {
            let (t, r) = next_token(rest);
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
        let instr = self.instr_col.map(|c| pos[c]);
        let line_no = match self.line_col {
            Some(c) => Some(u32::try_from(pos[c]).map_err(|_| {
                Error::input(format!("line number {} is too large; expected at most {}", pos[c], u32::MAX))
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
            let arc = RawArc {
                kind: p.kind,
                thread: self.thread,
                src_image: image,
                src_symbol: symbol,
                src_instr: instr,
                src_line: line_no,
                tgt_image: p.target_image,
                tgt_symbol: p.target_symbol,
                tgt_instr: self.instr_col.map(|c| p.target[c]),
                tgt_line,
                count: p.count,
                executed: p.executed,
                inclusive: if p.kind == ArcKind::Call { values.into_vec() } else { Vec::new() },
            };
            if p.kind == ArcKind::Call {
                self.cob = None;
                self.cfi = None;
            } else {
                self.jfi = None;
                self.jfn = None;
            }
            let proc = self.process();
            self.states[proc].arcs.push(arc);
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
        self.profile.processes[proc].images[image as usize].costs.push(Cost {
            symbol: Some(symbol),
            offset: instr,
            file: self.file,
            line: line_no,
            values,
        });
        Ok(())
    }

    fn event_names(&self) -> String {
        let names: Vec<&str> = self.event_map.iter().map(|&i| self.profile.events[i].name.as_str()).collect();
        names.join(" ")
    }

    fn finish(mut self, findings: &mut Findings) -> Result<Profile> {
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
            for s in &mut self.states {
                for a in &mut s.arcs {
                    if a.kind == ArcKind::Call {
                        a.inclusive.resize(nevents, 0);
                    }
                }
            }
        }
        // "If not appearing, version 1 is assumed."
        self.profile.meta.format_version.get_or_insert((1, 0));
        let ir = self.profile.event_index("Ir");
        let has_instr = !self.part_without_instr && !self.columns.is_empty();
        for (p, state) in self.states.into_iter().enumerate() {
            let process = &mut self.profile.processes[p];
            set_symbol_extents(process, &state.arcs);
            let jumps = state.arcs.iter().any(|a| a.kind != ArcKind::Call);
            if has_instr && jumps {
                build_blocks(process, &state.arcs, ir);
            } else {
                function_edges(process, &state.arcs, 1);
            }
        }
        Ok(self.profile)
    }
}

#[derive(Clone, Copy)]
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

/// The base function of a recursion-level name (`fib'2` -> `fib`), when the name has such a
/// suffix.
pub fn recursion_base(name: &str) -> Option<&str> {
    let (base, level) = name.rsplit_once('\'')?;
    (!base.is_empty() && !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit())).then_some(base)
}

/// Symbol addresses: a function starts where calls enter it (the lowest call target), or,
/// when nothing calls it, at its lowest costed address; it extends to its highest costed
/// address. Recursion levels (`fib'2`) run the code of their base function and get no range of
/// their own.
fn set_symbol_extents(process: &mut Process, arcs: &[RawArc]) {
    let mut entry: HashMap<(u32, u32), u64> = HashMap::new();
    for a in arcs {
        if a.kind == ArcKind::Call {
            if let Some(t) = a.tgt_instr {
                let e = entry.entry((a.tgt_image, a.tgt_symbol)).or_insert(t);
                *e = (*e).min(t);
            }
        }
    }
    for (i, image) in process.images.iter_mut().enumerate() {
        let mut lo = vec![u64::MAX; image.symbols.len()];
        let mut hi = vec![0u64; image.symbols.len()];
        let mut any = vec![false; image.symbols.len()];
        for c in &image.costs {
            if let (Some(s), Some(o)) = (c.symbol, c.offset) {
                let s = s as usize;
                lo[s] = lo[s].min(o);
                hi[s] = hi[s].max(o);
                any[s] = true;
            }
        }
        let names: HashMap<&str, usize> =
            image.symbols.iter().enumerate().map(|(k, s)| (s.name.as_str(), k)).collect();
        let variant: Vec<bool> = image
            .symbols
            .iter()
            .map(|s| recursion_base(&s.name).is_some_and(|b| names.contains_key(b)))
            .collect();
        for (s, sym) in image.symbols.iter_mut().enumerate() {
            if variant[s] {
                continue;
            }
            let start = entry.get(&(i as u32, s as u32)).copied().or(any[s].then_some(lo[s]));
            sym.offset = start;
            if let Some(start) = start {
                if any[s] && hi[s] >= start {
                    sym.size = Some(hi[s] - start + 1);
                }
            }
        }
    }
}

fn thread_counts(thread: usize, count: u64) -> Counts {
    let mut v = Counts::from_elem(0, thread + 1);
    v[thread] = count;
    v
}

fn site(a: &RawArc) -> Option<Site> {
    Some(Site {
        source_offset: a.src_instr,
        source_line: a.src_line,
        target_offset: a.tgt_instr,
        target_line: a.tgt_line,
    })
}

/// Edges between functions, one per association line, in file order.
fn function_edges<'a>(process: &mut Process, arcs: impl IntoIterator<Item = &'a RawArc>, first_id: u64) {
    let mut id = first_id;
    for a in arcs {
        let source = NodeRef::Symbol(SymbolRef { image: a.src_image, symbol: a.src_symbol });
        let target = NodeRef::Symbol(SymbolRef { image: a.tgt_image, symbol: a.tgt_symbol });
        let kind = match a.kind {
            ArcKind::Call => EdgeKind::Call,
            ArcKind::Jump => EdgeKind::UnconditionalBranch,
            ArcKind::Jcnd => EdgeKind::ConditionalBranch,
        };
        let site = site(a);
        if a.kind == ArcKind::Jcnd && a.executed > a.count {
            process.edges.push(Edge {
                id,
                source,
                target,
                kind,
                counts: thread_counts(a.thread, a.count),
                details: EdgeDetails::boxed(Vec::new(), site.clone()),
            });
            id += 1;
            let ft_site = site.map(|s| Site { target_offset: None, target_line: None, ..s });
            process.edges.push(Edge {
                id,
                source,
                target: source,
                kind: EdgeKind::FallThrough,
                counts: thread_counts(a.thread, a.executed - a.count),
                details: EdgeDetails::boxed(Vec::new(), ft_site),
            });
        } else {
            process.edges.push(Edge {
                id,
                source,
                target,
                kind,
                counts: thread_counts(a.thread, a.count),
                details: EdgeDetails::boxed(a.inclusive.clone(), site),
            });
        }
        id += 1;
    }
}

/// One executed instruction address of an image, gathered from the cost lines.
struct Instr {
    addr: u64,
    /// Executions (`Ir` summed over every function context at this address).
    ir: u64,
    /// The function the address belongs to (a recursion level's base function).
    owner: u32,
    file: Option<FileId>,
    line: u32,
    /// A call instruction (the source of a `calls=` line).
    call: bool,
}

/// Edge key while aggregating: (source, target, kind).
type EdgeKey = (BlockRef, BlockRef, EdgeKind);

#[derive(Default)]
struct EdgeAcc {
    counts: Counts,
    inclusive: Vec<u64>,
    site: Option<Site>,
}

/// Edges being aggregated: parallel associations (several function contexts at one address,
/// several parts) add up.
#[derive(Default)]
struct EdgeSet {
    index: HashMap<EdgeKey, u32, FastHash>,
    items: Vec<(EdgeKey, EdgeAcc)>,
}

impl EdgeSet {
    /// Adds traversals to the edge `key`; `site` is asked for only when the edge is new.
    fn add(
        &mut self,
        key: EdgeKey,
        thread: usize,
        n: u64,
        inclusive: &[u64],
        site: impl FnOnce() -> Option<Site>,
    ) {
        let items = &mut self.items;
        let k = *self.index.entry(key).or_insert_with(|| {
            items.push((key, EdgeAcc { site: site(), ..EdgeAcc::default() }));
            (items.len() - 1) as u32
        });
        let e = &mut self.items[k as usize].1;
        add_counts(&mut e.counts, thread, n);
        if !inclusive.is_empty() {
            if e.inclusive.len() < inclusive.len() {
                e.inclusive.resize(inclusive.len(), 0);
            }
            for (a, &b) in e.inclusive.iter_mut().zip(inclusive) {
                *a = a.saturating_add(b);
            }
        }
    }
}

/// A hasher for the integer keys of the block rebuild and the writer (addresses, block
/// references): a multiply-and-rotate mix (as rustc's FxHash), much cheaper than SipHash. Not
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

fn add_counts(into: &mut Counts, thread: usize, n: u64) {
    if into.len() <= thread {
        into.resize(thread + 1, 0);
    }
    into[thread] = into[thread].saturating_add(n);
}

/// Rebuilds basic blocks from a file with instruction addresses and jumps, and turns the
/// associations into a control-flow graph.
///
/// Per image, the executed addresses (cost lines) are sorted; a block starts at a jump or call
/// target, at a function entry, after a jump or call source, where the owning function changes
/// and where the executed count changes (so every instruction of a block ran equally often).
/// An instruction's executions are its `Ir` (summed over recursion levels and other contexts).
/// A call instruction runs as often as the block it ends; a call that starts a block runs the
/// smaller of its `Ir` and the sum of its calls (Valgrind charges skipped PLT code to the call's
/// `Ir`, and a lazily bound call shows as two calls). A block's `count` is the executions of
/// its first instruction. Its last instruction's length is the distance to the next executed
/// address when at most 15 bytes, else 1 (the file does not give instruction lengths).
///
/// Edges: `jump=` -> `UNCONDITIONAL_BRANCH`, `jcnd=` -> `CONDITIONAL_BRANCH` (followed) plus
/// `FALL_THROUGH` (executed - followed); `calls=` -> `CALL` (with the inclusive cost) plus a
/// `CALL_BYPASS` (count 0, as Pin writes it) from the call site to its return site, and
/// `RETURN` edges from the callee's exits to the return site; a block that ends without a jump
/// or call falls through to the next one as often as the next block's count exceeds its other
/// incoming edges. Associations at addresses without costs stay edges between functions.
/// Routines are the functions of the file: every block belongs to the function of its first
/// instruction (a recursion level's base function).
fn build_blocks(process: &mut Process, arcs: &[RawArc], ir: Option<usize>) {
    let nimages = process.images.len();
    // Addresses where blocks must start and end, per image.
    let mut leaders: Vec<Vec<u64>> = vec![Vec::new(); nimages];
    let mut enders: Vec<Vec<u64>> = vec![Vec::new(); nimages];
    for a in arcs {
        if let Some(t) = a.tgt_instr {
            if a.kind == ArcKind::Call || a.count > 0 {
                leaders[a.tgt_image as usize].push(t);
            }
        }
        if let Some(s) = a.src_instr {
            enders[a.src_image as usize].push(s);
        }
    }
    // Executions of call instructions: the sum of their calls. (Valgrind charges code it skips,
    // such as PLT stubs with --skip-plt=yes, to the calling instruction's Ir.)
    // Sorted (address, calls) vectors rather than hash maps: the instructions are visited in
    // address order, so a cursor finds each call site without a look-up.
    let mut call_execs: Vec<Vec<(u64, u64)>> = vec![Vec::new(); nimages];
    for a in arcs {
        if let (ArcKind::Call, Some(s)) = (a.kind, a.src_instr) {
            call_execs[a.src_image as usize].push((s, a.count));
        }
    }
    for calls in &mut call_execs {
        calls.sort_unstable_by_key(|&(addr, _)| addr);
        calls.dedup_by(|next, kept| {
            if next.0 == kept.0 {
                kept.1 = kept.1.saturating_add(next.1);
                true
            } else {
                false
            }
        });
    }
    let mut next_id = 4u64;
    // Per image: block starts (sorted) for address look-ups, and each block's owner.
    let mut starts: Vec<Vec<u64>> = Vec::with_capacity(nimages);
    let mut owners: Vec<Vec<u32>> = Vec::with_capacity(nimages);
    for (i, image) in process.images.iter_mut().enumerate() {
        let base: Vec<u32> = {
            let names: HashMap<&str, u32> =
                image.symbols.iter().enumerate().map(|(k, s)| (s.name.as_str(), k as u32)).collect();
            image
                .symbols
                .iter()
                .enumerate()
                .map(|(k, s)| recursion_base(&s.name).and_then(|b| names.get(b).copied()).unwrap_or(k as u32))
                .collect()
        };
        // (address, cost index): sorted, the first cost line at an address decides its owner
        // and line.
        let mut order: Vec<(u64, u32)> = image
            .costs
            .iter()
            .enumerate()
            .filter(|(_, c)| c.symbol.is_some())
            .filter_map(|(k, c)| Some((c.offset?, k as u32)))
            .collect();
        order.sort_unstable();
        let mut merged: Vec<Instr> = Vec::with_capacity(order.len());
        for (addr, k) in order {
            let c = image.costs.get(k as usize);
            let v = ir.map_or(0, |e| c.value(e));
            match merged.last_mut() {
                Some(m) if m.addr == addr => m.ir = m.ir.saturating_add(v),
                _ => merged.push(Instr {
                    addr,
                    ir: v,
                    owner: c.symbol.map_or(0, |s| base[s as usize]),
                    file: c.file,
                    line: c.line.unwrap_or(0),
                    call: false,
                }),
            }
        }
        let calls = &call_execs[i];
        let mut ci = 0usize;
        for m in &mut merged {
            while ci < calls.len() && calls[ci].0 < m.addr {
                ci += 1;
            }
            if ci < calls.len() && calls[ci].0 == m.addr {
                m.call = true;
                let n = calls[ci].1;
                if n > 0 {
                    m.ir = m.ir.min(n);
                }
            }
        }
        let mut lead = std::mem::take(&mut leaders[i]);
        lead.extend(image.symbols.iter().filter_map(|s| s.offset));
        lead.sort_unstable();
        lead.dedup();
        let mut end = std::mem::take(&mut enders[i]);
        end.sort_unstable();
        end.dedup();
        // Cursors into the sorted leaders and enders: the walk below visits addresses in order.
        let (mut li, mut ei) = (0usize, 0usize);
        let mut is_lead = |a: u64| {
            while li < lead.len() && lead[li] < a {
                li += 1;
            }
            li < lead.len() && lead[li] == a
        };
        let mut is_end = |a: u64| {
            while ei < end.len() && end[ei] < a {
                ei += 1;
            }
            ei < end.len() && end[ei] == a
        };

        let mut blocks: Vec<Block> = Vec::new();
        let mut block_owner: Vec<u32> = Vec::new();
        let mut lines: Vec<SourceLine> = Vec::new();
        let mut k = 0;
        while k < merged.len() {
            let first = &merged[k];
            let mut j = k + 1;
            while j < merged.len() {
                let prev = &merged[j - 1];
                let x = &merged[j];
                // A call inside a block runs as often as the block: its own Ir may carry
                // skipped code and its calls may count a lazy binding twice.
                if is_lead(x.addr)
                    || is_end(prev.addr)
                    || x.owner != first.owner
                    || (ir.is_some() && x.ir != first.ir && !x.call)
                {
                    break;
                }
                j += 1;
            }
            let last = &merged[j - 1];
            let last_len = match merged.get(j) {
                Some(n) if n.addr - last.addr <= MAX_INSTR_LEN => n.addr - last.addr,
                _ => 1,
            };
            let size = last.addr - first.addr + last_len;
            // Source lines: runs of instructions on the same file and line.
            let mut r = k;
            while r < j {
                let mut q = r + 1;
                while q < j && merged[q].file == merged[r].file && merged[q].line == merged[r].line {
                    q += 1;
                }
                let end_addr = if q < j { merged[q].addr } else { first.addr + size };
                lines.push(SourceLine {
                    file: merged[r].file,
                    line: merged[r].line,
                    offset: merged[r].addr,
                    size: end_addr - merged[r].addr,
                    num_instrs: (q - r) as u64,
                });
                r = q;
            }
            blocks.push(Block {
                id: next_id,
                offset: first.addr,
                size,
                num_instrs: (j - k) as u64,
                last_instr_offset: last.addr - first.addr,
                count: ir.map(|_| first.ir),
            });
            block_owner.push(first.owner);
            next_id += 1;
            k = j;
        }
        starts.push(blocks.iter().map(|b| b.offset).collect());
        owners.push(block_owner);
        image.blocks = blocks;
        image.source_lines = lines;
    }

    let images = &process.images;
    // Blocks by first and by last instruction: where associations end and start.
    let mut by_start: HashMap<(u32, u64), u32, FastHash> = HashMap::default();
    let mut by_last: HashMap<(u32, u64), u32, FastHash> = HashMap::default();
    for (i, image) in images.iter().enumerate() {
        by_start.reserve(image.blocks.len());
        by_last.reserve(image.blocks.len());
        for (b, block) in image.blocks.iter().enumerate() {
            by_start.insert((i as u32, block.offset), b as u32);
            by_last.insert((i as u32, block.offset + block.last_instr_offset), b as u32);
        }
    }
    let block_at = |image: u32, addr: u64| -> Option<BlockRef> {
        by_start.get(&(image, addr)).map(|&b| BlockRef { image, block: b })
    };
    let block_ending_at = |image: u32, addr: u64| -> Option<BlockRef> {
        by_last.get(&(image, addr)).map(|&b| BlockRef { image, block: b })
    };
    let next_block = |r: BlockRef| -> Option<BlockRef> {
        let blocks = &images[r.image as usize].blocks;
        let b = &blocks[r.block as usize];
        let n = blocks.get(r.block as usize + 1)?;
        let owner = &owners[r.image as usize];
        (n.offset == b.offset + b.size && owner[r.block as usize] == owner[r.block as usize + 1])
            .then_some(BlockRef { image: r.image, block: r.block + 1 })
    };

    let mut set = EdgeSet::default();
    let mut ends_in_jump: Vec<Vec<bool>> = images.iter().map(|i| vec![false; i.blocks.len()]).collect();
    // Associations at addresses without costs stay edges between functions.
    let mut unplaced: Vec<usize> = Vec::new();
    let mut call_sites: Vec<(BlockRef, BlockRef, usize, u64)> = Vec::new();
    for (k, a) in arcs.iter().enumerate() {
        let (Some(si), Some(ti)) = (a.src_instr, a.tgt_instr) else {
            unplaced.push(k);
            continue;
        };
        let Some(src) = block_ending_at(a.src_image, si) else {
            unplaced.push(k);
            continue;
        };
        let tgt = block_at(a.tgt_image, ti);
        match a.kind {
            ArcKind::Call => {
                let Some(tgt) = tgt else {
                    unplaced.push(k);
                    continue;
                };
                set.add((src, tgt, EdgeKind::Call), a.thread, a.count, &a.inclusive, || site(a));
                if let Some(ret) = next_block(src) {
                    // As Pin writes them: the bypass links call site and return site for the
                    // routine's shape; the returns carry the counts.
                    set.add((src, ret, EdgeKind::CallBypass), a.thread, 0, &[], || None);
                }
                call_sites.push((src, tgt, a.thread, a.count));
            }
            ArcKind::Jump | ArcKind::Jcnd => {
                let kind = if a.kind == ArcKind::Jump {
                    ends_in_jump[src.image as usize][src.block as usize] = true;
                    EdgeKind::UnconditionalBranch
                } else {
                    EdgeKind::ConditionalBranch
                };
                match tgt {
                    Some(tgt) if a.count > 0 => set.add((src, tgt, kind), a.thread, a.count, &[], || None),
                    None if a.count > 0 => {
                        unplaced.push(k);
                        continue;
                    }
                    _ => {}
                }
                if a.kind == ArcKind::Jcnd && a.executed > a.count {
                    if let Some(ft) = next_block(src) {
                        set.add(
                            (src, ft, EdgeKind::FallThrough),
                            a.thread,
                            a.executed - a.count,
                            &[],
                            || None,
                        );
                    }
                }
            }
        }
    }
    // Fall-throughs of blocks that end without a jump or call (a jump target follows them).
    if ir.is_some() {
        let mut incoming: HashMap<BlockRef, u64, FastHash> = HashMap::default();
        let mut has_out: std::collections::HashSet<BlockRef, FastHash> = Default::default();
        for (k, e) in &set.items {
            *incoming.entry(k.1).or_default() += e.counts.iter().sum::<u64>();
            has_out.insert(k.0);
        }
        for (i, img) in images.iter().enumerate() {
            for (b, &jumps) in ends_in_jump[i].iter().enumerate() {
                let r = BlockRef { image: i as u32, block: b as u32 };
                if has_out.contains(&r) || jumps {
                    continue;
                }
                let Some(n) = next_block(r) else { continue };
                let next_count = img.blocks[n.block as usize].count.unwrap_or(0);
                let other = incoming.get(&n).copied().unwrap_or(0);
                let ft = next_count.saturating_sub(other).min(img.blocks[b].count.unwrap_or(0));
                if ft > 0 {
                    set.add((r, n, EdgeKind::FallThrough), 0, ft, &[], || None);
                }
            }
        }
    }
    // Returns: from the callee's exit blocks (those with no way on inside the routine) to the
    // return sites of its calls. With one exit, each call site gets its calls back from it;
    // with several, the exits' executions are handed out to the return sites in address order (the
    // file does not say which return went where; the counts still add up).
    let has_out: std::collections::HashSet<BlockRef, FastHash> = set.items.iter().map(|(k, _)| k.0).collect();
    // Aggregated and sorted, so that the hand-out does not depend on the order of the lines.
    let mut demand: HashMap<((u32, u32), BlockRef, usize), u64, FastHash> = HashMap::default();
    for (src, callee, thread, count) in call_sites {
        let Some(ret) = next_block(src) else { continue };
        let owner = owners[callee.image as usize][callee.block as usize];
        *demand.entry(((callee.image, owner), ret, thread)).or_default() += count;
    }
    let mut demands: Vec<((u32, u32), BlockRef, usize, u64)> =
        demand.into_iter().map(|((k, r, t), c)| (k, r, t, c)).collect();
    demands.sort_unstable();
    // Exit blocks of every routine, with the executions each has left to hand out.
    let mut supply: HashMap<(u32, u32), Vec<(u32, u64)>, FastHash> = HashMap::default();
    for (i, owner) in owners.iter().enumerate() {
        for (b, &o) in owner.iter().enumerate() {
            if !has_out.contains(&BlockRef { image: i as u32, block: b as u32 }) && !ends_in_jump[i][b] {
                supply
                    .entry((i as u32, o))
                    .or_default()
                    .push((b as u32, images[i].blocks[b].count.unwrap_or(0)));
            }
        }
    }
    for (key, ret, thread, count) in demands {
        let Some(exits) = supply.get_mut(&key) else { continue };
        if let [(x, _)] = exits[..] {
            set.add((BlockRef { image: key.0, block: x }, ret, EdgeKind::Return), thread, count, &[], || {
                None
            });
            continue;
        }
        let mut need = count;
        for (x, left) in exits.iter_mut() {
            if need == 0 {
                break;
            }
            let take = need.min(*left);
            if take > 0 {
                set.add(
                    (BlockRef { image: key.0, block: *x }, ret, EdgeKind::Return),
                    thread,
                    take,
                    &[],
                    || None,
                );
                *left -= take;
                need -= take;
            }
        }
    }
    // Sorted by key through a permutation of small (key, index) pairs, so that the sort moves
    // neither counts nor inclusive costs; keys are distinct, so the order is fully determined.
    let mut items = set.items;
    let mut perm: Vec<(EdgeKey, u32)> = items.iter().enumerate().map(|(n, (k, _))| (*k, n as u32)).collect();
    perm.sort_unstable();
    let mut edges: Vec<Edge> = Vec::with_capacity(items.len());
    for (n, (key, at)) in perm.into_iter().enumerate() {
        let e = std::mem::take(&mut items[at as usize].1);
        edges.push(Edge {
            id: n as u64 + 1,
            source: NodeRef::Block(key.0),
            target: NodeRef::Block(key.1),
            kind: key.2,
            counts: e.counts,
            details: EdgeDetails::boxed(e.inclusive, e.site),
        });
    }
    // Routines: the functions of the file.
    let mut out_intra: Vec<Vec<bool>> = images.iter().map(|i| vec![false; i.blocks.len()]).collect();
    let mut returns: Vec<Vec<bool>> = out_intra.clone();
    for e in &edges {
        if let NodeRef::Block(s) = e.source {
            if e.kind.is_intra_routine() {
                out_intra[s.image as usize][s.block as usize] = true;
            }
            if e.kind.is_return() {
                returns[s.image as usize][s.block as usize] = true;
            }
        }
    }
    for (i, image) in process.images.iter_mut().enumerate() {
        let mut by_owner: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut slot: HashMap<u32, usize, FastHash> = HashMap::default();
        for (b, &o) in owners[i].iter().enumerate() {
            let k = *slot.entry(o).or_insert_with(|| {
                by_owner.push((o, Vec::new()));
                by_owner.len() - 1
            });
            by_owner[k].1.push(b as u32);
        }
        let routines = by_owner
            .into_iter()
            .map(|(owner, nodes)| {
                let entry_addr = image.symbols[owner as usize].offset;
                let entry = nodes
                    .iter()
                    .copied()
                    .find(|&b| Some(image.blocks[b as usize].offset) == entry_addr)
                    .unwrap_or(nodes[0]);
                let exits = nodes
                    .iter()
                    .copied()
                    .filter(|&b| returns[i][b as usize] || !out_intra[i][b as usize])
                    .collect();
                Routine { entry, exits, nodes, ..Routine::default() }
            })
            .collect();
        if !image.blocks.is_empty() {
            image.routines = Some(routines);
        }
    }
    process.edges = edges;
    if !unplaced.is_empty() {
        let first_id = process.edges.len() as u64 + 1;
        let rest: Vec<&RawArc> = unplaced.iter().map(|&k| &arcs[k]).collect();
        function_edges(process, rest, first_id);
    }
}
