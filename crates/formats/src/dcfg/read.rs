//! DCFG reader: typed, streaming deserialization with serde visitors (no `serde_json::Value`
//! tree), in two steps.
//!
//! 1. **Parse** the JSON into raw tables that keep the ids as written. The spec lets the
//!    top-level keys come in any order (the edge-type table may follow the edges that use it),
//!    so nothing can be resolved while parsing. Tables are read by their header row, never by
//!    column position; header strings are trimmed (the spec's own example has `"SIZE "`); rows
//!    may be shorter than the header (Pin omits trailing optional columns such as `LOOPS`);
//!    integers may be JSON numbers or `"0x..."` strings anywhere; unknown tags and columns are
//!    skipped. The JSON path of the value being read is tracked so every error can say where it
//!    is, e.g. `PROCESSES[0].IMAGES[2].BASIC_BLOCKS row 17`.
//! 2. **Resolve** ids into the model's indices. A reference that names nothing (an edge to an
//!    unknown node, a duplicate id, an unknown file name id) is a *violation*: the model is still
//!    built, so `cfghub validate` can list every problem, while conversions refuse the input.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io::BufRead;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use cfghub_model::error::{Error, Findings, Place, Result};
use cfghub_model::ir::{
    Block, BlockRef, Cost, Counts, Edge, EdgeKind, Event, FileId, Image, Loop, NodeRef, Process, Profile,
    Routine, SourceLine, Symbol,
};
use cfghub_model::json::{parse_int, JsonError, JsonReader};

/// Top-level tag of the extension table naming the events of [`Cost`] values. DCFG readers
/// ignore unknown tags, so a DCFG carrying it stays valid for every other tool.
pub(super) const EVENTS_TAG: &str = "CFGHUB_EVENTS";
/// Image-level tag of the extension table of costs at addresses (e.g. merged DCPI samples).
pub(super) const COSTS_TAG: &str = "CFGHUB_COSTS";

/// Reads a DCFG from `input`, pushing rule violations and warnings to `findings`.
pub fn read(input: &mut dyn BufRead, findings: &mut Findings) -> Result<Profile> {
    let raw = parse(input)?;
    Ok(resolve(raw, findings))
}

/// Parses DCFG JSON text into raw tables, streaming: the text is never held whole.
fn parse(input: &mut dyn BufRead) -> Result<RawDcfg> {
    let ctx = Ctx::default();
    let mut json = JsonReader::new(input);
    let result = TopSeed { ctx: &ctx }.deserialize(&mut json).and_then(|raw| json.end().map(|_| raw));
    result.map_err(|e| {
        if e.io {
            return Error::input(e.message.clone());
        }
        let e = json.place(e);
        let path = ctx.render();
        let err = Error::input(describe_json_error(&e));
        if path.is_empty() {
            err
        } else {
            err.at_path(path)
        }
    })
}

fn describe_json_error(e: &JsonError) -> String {
    if e.eof {
        format!("the JSON ends too early (truncated file?): {e}")
    } else {
        e.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Path tracking

/// One step of the path to the value being parsed.
#[derive(Clone, Copy, Debug)]
enum Seg {
    /// An object key: `.KEY`.
    Key(&'static str),
    /// A data row of a table holding nested tables: `[i]` (0-based, header not counted).
    Item(usize),
    /// A data row of a leaf table: ` row N` (1-based, header not counted).
    Row(usize),
    /// The header row of a table.
    Header,
}

/// The path to the value being parsed. Segments are pushed on the way in and popped after a
/// value parsed successfully, so after an error the stack names where it happened.
#[derive(Default)]
struct Ctx {
    path: RefCell<Vec<Seg>>,
    /// The column of the innermost row being read (set per cell: cheaper than a push).
    column: Cell<Option<&'static str>>,
}

impl Ctx {
    fn push(&self, seg: Seg) {
        self.path.borrow_mut().push(seg);
    }

    fn pop(&self) {
        self.path.borrow_mut().pop();
    }

    fn set_last(&self, seg: Seg) {
        if let Some(last) = self.path.borrow_mut().last_mut() {
            *last = seg;
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for seg in self.path.borrow().iter() {
            match seg {
                Seg::Key(k) if out.is_empty() => out.push_str(k),
                Seg::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Seg::Item(i) => {
                    let _ = write!(out, "[{i}]");
                }
                Seg::Row(n) => {
                    let _ = write!(out, " row {n}");
                }
                Seg::Header => out.push_str(" header row"),
            }
        }
        if let Some(c) = self.column.get() {
            let _ = write!(out, " column {c}");
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Raw tables

/// Adds a table's rows to what earlier tables of the same name gave: moved when they are the
/// first (the usual case), so that a large table is never copied.
fn append<T>(into: &mut Vec<T>, rows: Vec<T>) {
    if into.is_empty() {
        *into = rows;
    } else {
        into.extend(rows);
    }
}

#[derive(Default)]
struct RawDcfg {
    major: Option<u64>,
    minor: Option<u64>,
    files: Vec<(u64, String)>,
    edge_types: Vec<(u64, String)>,
    special_nodes: Vec<(u64, String)>,
    events: Vec<Event>,
    processes: Vec<RawProcess>,
    /// Top-level keys that appear more than once (their tables are read one after another).
    repeated_keys: Vec<String>,
}

#[derive(Default)]
struct RawProcess {
    pid: u64,
    instr_count: Option<u64>,
    thread_instr_counts: Vec<u64>,
    images: Vec<RawImage>,
    /// Edges in their final form, except that `source` and `target` hold the raw node ids
    /// (see [`park`]) and `kind` is resolved from `edge_kinds` afterwards: building them once,
    /// in place, keeps a multi-million-edge table from existing twice.
    edges: Vec<Edge>,
    /// Raw EDGE_TYPE_ID of each edge, as an index into `kind_ids` (a file uses a few dozen
    /// types, so two bytes an edge serve where eight would be spent).
    edge_kinds: Vec<u16>,
    /// The distinct raw EDGE_TYPE_IDs the edges use, in order of first use.
    kind_ids: Vec<u64>,
}

/// Parks a raw node id in a `NodeRef` until ids can be resolved (the tables they refer to may
/// come later in the file).
fn park(id: u64) -> NodeRef {
    NodeRef::Block(BlockRef { image: (id >> 32) as u32, block: id as u32 })
}

/// The raw node id [`park`] stored.
fn unpark(node: NodeRef) -> u64 {
    match node {
        NodeRef::Block(b) => (u64::from(b.image) << 32) | u64::from(b.block),
        _ => unreachable!("only parked ids are unparked"),
    }
}

#[derive(Default)]
struct RawImage {
    id: u64,
    load_addr: u64,
    size: u64,
    file: Option<u64>,
    symbols: Vec<Symbol>,
    /// Source lines with `file` unset, and the raw FILE_NAME_ID of each.
    source_lines: Vec<SourceLine>,
    source_files: Vec<u64>,
    blocks: Vec<Block>,
    routines: Option<Vec<RawRoutine>>,
    costs: Vec<Cost>,
    /// The costs table has a `SYMBOL` column (see [`Costs`]).
    costs_with_symbols: bool,
}

#[derive(Default)]
struct RawRoutine {
    entry: u64,
    exits: Vec<u64>,
    /// (NODE_ID, IDOM_NODE_ID), the idom [`NO_IDOM`] when the row has none.
    nodes: Vec<(u64, u64)>,
    loops: Vec<RawLoop>,
}

#[derive(Default)]
struct RawLoop {
    head: u64,
    back_edge_sources: Vec<u64>,
    nodes: Vec<u64>,
    parent: Option<u64>,
}

// ---------------------------------------------------------------------------------------------
// Scalars

/// An integer written as a JSON number or as a decimal or `0x` hex string.
struct Int;

impl<'de> DeserializeSeed<'de> for Int {
    type Value = u64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_u64(IntVisitor)
    }
}

struct IntVisitor;

impl<'de> Visitor<'de> for IntVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative integer (a number or a \"0x...\" string)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v)
            .map_err(|_| E::custom(format!("negative number {v} where a non-negative integer was expected")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v.fract() == 0.0 && (0.0..1.8e19).contains(&v) {
            Ok(v as u64)
        } else {
            Err(E::custom(format!("{v} is not a non-negative integer")))
        }
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<u64, E> {
        parse_int(s).ok_or_else(|| E::custom(format!("\"{s}\" is not an integer (decimal, or hex with 0x)")))
    }
}

/// An array of integers.
struct IntList;

impl<'de> DeserializeSeed<'de> for IntList {
    type Value = Vec<u64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u64>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for IntList {
    type Value = Vec<u64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of integers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u64>, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element_seed(Int)? {
            v.push(x);
        }
        Ok(v)
    }
}

/// A string (owned; table cells are short).
struct Str;

impl<'de> DeserializeSeed<'de> for Str {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        <String as serde::Deserialize>::deserialize(d)
    }
}

// ---------------------------------------------------------------------------------------------
// Tables

/// A kind of table: its name, the columns it knows, and how it stores a row.
trait Table {
    const NAME: &'static str;
    /// Known column names, in field order.
    const COLUMNS: &'static [&'static str];
    /// How many leading entries of `COLUMNS` every header must have.
    const REQUIRED: usize;
    /// Whether its rows hold nested tables (paths show `[i]` instead of ` row N`).
    const NESTED: bool = false;

    /// Reads one data row. `cols[i]` is the field (index into `COLUMNS`) of the row's i-th value.
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error>;
}

struct TableSeed<'a, T> {
    table: &'a mut T,
    ctx: &'a Ctx,
}

impl<'de, T: Table> DeserializeSeed<'de> for TableSeed<'_, T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: Table> Visitor<'de> for TableSeed<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} table: an array whose first row is the header", T::NAME)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let ctx = self.ctx;
        ctx.column.set(None);
        ctx.push(Seg::Header);
        let header = match seq.next_element_seed(HeaderSeed::<T>(std::marker::PhantomData))? {
            Some(h) => h,
            None => {
                ctx.pop();
                return Ok(());
            }
        };
        let mut cols: Vec<Option<usize>> = Vec::with_capacity(header.len());
        let mut seen = vec![false; T::COLUMNS.len()];
        for name in &header {
            let field = T::COLUMNS.iter().position(|c| *c == name.trim());
            if let Some(f) = field {
                if seen[f] {
                    return Err(de::Error::custom(format!(
                        "the header names column {} twice",
                        T::COLUMNS[f]
                    )));
                }
                seen[f] = true;
            }
            cols.push(field);
        }
        if let Some(missing) = (0..T::REQUIRED).find(|&f| !seen[f]) {
            return Err(de::Error::custom(format!(
                "the header has no {} column (it has {})",
                T::COLUMNS[missing],
                header.join(", ")
            )));
        }
        let mut n = 0usize;
        loop {
            ctx.set_last(if T::NESTED { Seg::Item(n) } else { Seg::Row(n + 1) });
            let row = RowSeed { table: &mut *self.table, cols: &cols, ctx };
            if seq.next_element_seed(row)?.is_none() {
                break;
            }
            n += 1;
        }
        ctx.pop();
        Ok(())
    }
}

/// The header row: an array of column-name strings.
struct HeaderSeed<T>(std::marker::PhantomData<T>);

impl<'de, T: Table> DeserializeSeed<'de> for HeaderSeed<T> {
    type Value = Vec<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Table> Visitor<'de> for HeaderSeed<T> {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the {} header row: an array of column names such as {:?}", T::NAME, T::COLUMNS[0])
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let mut names = Vec::new();
        while let Some(name) = seq.next_element_seed(ColumnName(T::COLUMNS[0]))? {
            names.push(name);
        }
        Ok(names)
    }
}

/// One column name of a header row.
struct ColumnName(&'static str);

impl<'de> DeserializeSeed<'de> for ColumnName {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ColumnName {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a column name such as \"{}\": the table has no header row", self.0)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_string())
    }
}

struct RowSeed<'a, T> {
    table: &'a mut T,
    cols: &'a [Option<usize>],
    ctx: &'a Ctx,
}

impl<'de, T: Table> DeserializeSeed<'de> for RowSeed<'_, T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: Table> Visitor<'de> for RowSeed<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} row (an array of values in header order)", T::NAME)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.table.row(self.cols, seq, self.ctx)
    }
}

/// Reads the row's cells in header order into `set(field, seq)`; skips unknown columns and any
/// values beyond the header. Returns which fields were present.
fn read_cells<'de, A, F>(
    cols: &[Option<usize>],
    mut seq: A,
    ctx: &Ctx,
    names: &'static [&'static str],
    mut set: F,
) -> Result<u32, A::Error>
where
    A: SeqAccess<'de>,
    F: FnMut(usize, &mut A) -> Result<bool, A::Error>,
{
    let mut present = 0u32;
    for col in cols {
        match col {
            Some(f) => {
                ctx.column.set(Some(names[*f]));
                let got = set(*f, &mut seq)?;
                if !got {
                    ctx.column.set(None);
                    return Ok(present);
                }
                present |= 1 << f;
            }
            None => {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    ctx.column.set(None);
                    return Ok(present);
                }
            }
        }
    }
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    ctx.column.set(None);
    Ok(present)
}

/// Fails when a required field is missing from a row that stopped early.
fn require<E: de::Error>(present: u32, required: usize, names: &[&str]) -> Result<(), E> {
    for (f, name) in names.iter().enumerate().take(required) {
        if present & (1 << f) == 0 {
            return Err(E::custom(format!("the row has no value for {name}")));
        }
    }
    Ok(())
}

/// Reads one value into `slot`, reporting whether the row had one.
fn cell<'de, A: SeqAccess<'de>, S: DeserializeSeed<'de>>(
    seq: &mut A,
    seed: S,
    slot: &mut S::Value,
) -> Result<bool, A::Error> {
    match seq.next_element_seed(seed)? {
        Some(v) => {
            *slot = v;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// A table of `(id, string)` pairs: FILE_NAMES, EDGE_TYPES, SPECIAL_NODES.
struct IdNames<const K: usize> {
    rows: Vec<(u64, String)>,
}

macro_rules! id_name_table {
    ($k:literal, $name:literal, $id:literal, $str:literal) => {
        impl Table for IdNames<$k> {
            const NAME: &'static str = $name;
            const COLUMNS: &'static [&'static str] = &[$id, $str];
            const REQUIRED: usize = 2;
            fn row<'de, A: SeqAccess<'de>>(
                &mut self,
                cols: &[Option<usize>],
                seq: A,
                ctx: &Ctx,
            ) -> Result<(), A::Error> {
                let (mut id, mut name) = (0, String::new());
                let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
                    0 => cell(seq, Int, &mut id),
                    _ => cell(seq, Str, &mut name),
                })?;
                require(present, Self::REQUIRED, Self::COLUMNS)?;
                self.rows.push((id, name));
                Ok(())
            }
        }
    };
}
id_name_table!(0, "FILE_NAMES", "FILE_NAME_ID", "FILE_NAME");
id_name_table!(1, "EDGE_TYPES", "EDGE_TYPE_ID", "EDGE_TYPE");
id_name_table!(2, "SPECIAL_NODES", "NODE_ID", "NODE_NAME");

struct Events {
    rows: Vec<Event>,
}

impl Table for Events {
    const NAME: &'static str = EVENTS_TAG;
    const COLUMNS: &'static [&'static str] = &["EVENT", "DESCRIPTION"];
    const REQUIRED: usize = 1;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let (mut name, mut description) = (String::new(), String::new());
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            0 => cell(seq, Str, &mut name),
            _ => cell(seq, Str, &mut description),
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        let description = (present & 2 != 0).then_some(description);
        self.rows.push(Event { name, description });
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Objects

/// Reads the value under `key`, with the path naming the key while it is read.
fn value_at<'de, A, S>(map: &mut A, ctx: &Ctx, key: &'static str, seed: S) -> Result<S::Value, A::Error>
where
    A: MapAccess<'de>,
    S: DeserializeSeed<'de>,
{
    ctx.push(Seg::Key(key));
    let value = map.next_value_seed(seed)?;
    ctx.pop();
    Ok(value)
}

/// Reads the table under `key` into `table`.
fn table_at<'de, A: MapAccess<'de>, T: Table>(
    map: &mut A,
    ctx: &Ctx,
    key: &'static str,
    table: &mut T,
) -> Result<(), A::Error> {
    value_at(map, ctx, key, TableSeed { table, ctx })
}

struct TopSeed<'a> {
    ctx: &'a Ctx,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = RawDcfg;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawDcfg, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = RawDcfg;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a DCFG: a JSON object with MAJOR_VERSION, FILE_NAMES, EDGE_TYPES, PROCESSES, ...")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDcfg, A::Error> {
        let ctx = self.ctx;
        let mut raw = RawDcfg::default();
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                if !raw.repeated_keys.contains(&key) {
                    raw.repeated_keys.push(key.clone());
                }
            } else if seen.len() < 64 {
                seen.push(key.clone());
            }
            match key.as_str() {
                "MAJOR_VERSION" => raw.major = Some(value_at(&mut map, ctx, "MAJOR_VERSION", Int)?),
                "MINOR_VERSION" => raw.minor = Some(value_at(&mut map, ctx, "MINOR_VERSION", Int)?),
                "FILE_NAMES" => {
                    let mut t = IdNames::<0> { rows: Vec::new() };
                    table_at(&mut map, ctx, "FILE_NAMES", &mut t)?;
                    append(&mut raw.files, t.rows);
                }
                "EDGE_TYPES" => {
                    let mut t = IdNames::<1> { rows: Vec::new() };
                    table_at(&mut map, ctx, "EDGE_TYPES", &mut t)?;
                    append(&mut raw.edge_types, t.rows);
                }
                "SPECIAL_NODES" => {
                    let mut t = IdNames::<2> { rows: Vec::new() };
                    table_at(&mut map, ctx, "SPECIAL_NODES", &mut t)?;
                    append(&mut raw.special_nodes, t.rows);
                }
                EVENTS_TAG => {
                    let mut t = Events { rows: Vec::new() };
                    table_at(&mut map, ctx, EVENTS_TAG, &mut t)?;
                    append(&mut raw.events, t.rows);
                }
                "PROCESSES" => {
                    let mut t = Processes { rows: Vec::new() };
                    table_at(&mut map, ctx, "PROCESSES", &mut t)?;
                    append(&mut raw.processes, t.rows);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(raw)
    }
}

struct Processes {
    rows: Vec<RawProcess>,
}

impl Table for Processes {
    const NAME: &'static str = "PROCESSES";
    const COLUMNS: &'static [&'static str] = &["PROCESS_ID", "PROCESS_DATA"];
    const REQUIRED: usize = 1;
    const NESTED: bool = true;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut p = RawProcess::default();
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            0 => cell(seq, Int, &mut p.pid),
            _ => {
                ctx.column.set(None);
                Ok(seq.next_element_seed(ProcessData { process: &mut p, ctx })?.is_some())
            }
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        self.rows.push(p);
        Ok(())
    }
}

struct ProcessData<'a> {
    process: &'a mut RawProcess,
    ctx: &'a Ctx,
}

impl<'de> DeserializeSeed<'de> for ProcessData<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ProcessData<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a PROCESS_DATA object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (p, ctx) = (self.process, self.ctx);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "INSTR_COUNT" => p.instr_count = Some(value_at(&mut map, ctx, "INSTR_COUNT", Int)?),
                "INSTR_COUNT_PER_THREAD" => {
                    p.thread_instr_counts = value_at(&mut map, ctx, "INSTR_COUNT_PER_THREAD", IntList)?
                }
                "IMAGES" => {
                    let mut t = Images { rows: Vec::new() };
                    table_at(&mut map, ctx, "IMAGES", &mut t)?;
                    append(&mut p.images, t.rows);
                }
                "EDGES" => {
                    // Appends to what an earlier EDGES key gave, without copying the table.
                    let mut t = Edges {
                        rows: std::mem::take(&mut p.edges),
                        kinds: std::mem::take(&mut p.edge_kinds),
                        kind_lookup: p.kind_ids.iter().enumerate().map(|(k, &id)| (id, k as u16)).collect(),
                        kind_ids: std::mem::take(&mut p.kind_ids),
                    };
                    table_at(&mut map, ctx, "EDGES", &mut t)?;
                    p.edges = t.rows;
                    p.edge_kinds = t.kinds;
                    p.kind_ids = t.kind_ids;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Images {
    rows: Vec<RawImage>,
}

impl Table for Images {
    const NAME: &'static str = "IMAGES";
    const COLUMNS: &'static [&'static str] = &["IMAGE_ID", "LOAD_ADDR", "SIZE", "IMAGE_DATA"];
    const REQUIRED: usize = 3;
    const NESTED: bool = true;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut im = RawImage::default();
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            0 => cell(seq, Int, &mut im.id),
            1 => cell(seq, Int, &mut im.load_addr),
            2 => cell(seq, Int, &mut im.size),
            _ => {
                ctx.column.set(None);
                Ok(seq.next_element_seed(ImageData { image: &mut im, ctx })?.is_some())
            }
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        self.rows.push(im);
        Ok(())
    }
}

struct ImageData<'a> {
    image: &'a mut RawImage,
    ctx: &'a Ctx,
}

impl<'de> DeserializeSeed<'de> for ImageData<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ImageData<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an IMAGE_DATA object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (im, ctx) = (self.image, self.ctx);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "FILE_NAME_ID" => im.file = Some(value_at(&mut map, ctx, "FILE_NAME_ID", Int)?),
                "SYMBOLS" => {
                    let mut t = Symbols { rows: Vec::new() };
                    table_at(&mut map, ctx, "SYMBOLS", &mut t)?;
                    append(&mut im.symbols, t.rows);
                }
                "SOURCE_DATA" => {
                    let mut t = Sources { rows: Vec::new(), files: Vec::new() };
                    table_at(&mut map, ctx, "SOURCE_DATA", &mut t)?;
                    append(&mut im.source_lines, t.rows);
                    append(&mut im.source_files, t.files);
                }
                "BASIC_BLOCKS" => {
                    let mut t = Blocks { rows: Vec::new() };
                    table_at(&mut map, ctx, "BASIC_BLOCKS", &mut t)?;
                    append(&mut im.blocks, t.rows);
                }
                "ROUTINES" => {
                    let mut t = Routines { rows: Vec::new(), scratch: Vec::new() };
                    table_at(&mut map, ctx, "ROUTINES", &mut t)?;
                    append(im.routines.get_or_insert_with(Vec::new), t.rows);
                }
                COSTS_TAG => {
                    let mut t = Costs { rows: Vec::new(), with_symbols: false };
                    table_at(&mut map, ctx, COSTS_TAG, &mut t)?;
                    im.costs.extend(t.rows);
                    im.costs_with_symbols |= t.with_symbols;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Symbols {
    rows: Vec<Symbol>,
}

impl Table for Symbols {
    const NAME: &'static str = "SYMBOLS";
    const COLUMNS: &'static [&'static str] = &["NAME", "ADDR_OFFSET", "SIZE"];
    const REQUIRED: usize = 2;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let (mut name, mut offset, mut size) = (String::new(), 0, 0);
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            0 => cell(seq, Str, &mut name),
            1 => cell(seq, Int, &mut offset),
            _ => cell(seq, Int, &mut size),
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        let size = (present & 4 != 0).then_some(size);
        self.rows.push(Symbol { name, offset: Some(offset), size, file: None });
        Ok(())
    }
}

/// Source lines in their final form, and the raw FILE_NAME_ID of each (resolved in place
/// afterwards, so that the table never exists twice).
struct Sources {
    rows: Vec<SourceLine>,
    files: Vec<u64>,
}

impl Table for Sources {
    const NAME: &'static str = "SOURCE_DATA";
    const COLUMNS: &'static [&'static str] =
        &["FILE_NAME_ID", "LINE_NUM", "ADDR_OFFSET", "SIZE", "NUM_INSTRS"];
    const REQUIRED: usize = 5;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut v = [0u64; 5];
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| cell(seq, Int, &mut v[f]))?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        let line = fits_u32::<A::Error>(v[1], "LINE_NUM")?;
        let (size, num_instrs) =
            (fits_u32::<A::Error>(v[3], "SIZE")?, fits_u32::<A::Error>(v[4], "NUM_INSTRS")?);
        self.rows.push(SourceLine { file: None, line, offset: v[2], size, num_instrs });
        self.files.push(v[0]);
        Ok(())
    }
}

struct Blocks {
    rows: Vec<Block>,
}

impl Table for Blocks {
    const NAME: &'static str = "BASIC_BLOCKS";
    const COLUMNS: &'static [&'static str] =
        &["NODE_ID", "ADDR_OFFSET", "SIZE", "NUM_INSTRS", "LAST_INSTR_OFFSET", "COUNT"];
    const REQUIRED: usize = 5;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut v = [0u64; 6];
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| cell(seq, Int, &mut v[f]))?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        self.rows.push(Block {
            id: v[0],
            offset: v[1],
            size: fits_u32::<A::Error>(v[2], "SIZE")?,
            num_instrs: fits_u32::<A::Error>(v[3], "NUM_INSTRS")?,
            last_instr_offset: fits_u32::<A::Error>(v[4], "LAST_INSTR_OFFSET")?,
            count: (present & 32 != 0).then_some(v[5]),
        });
        Ok(())
    }
}

/// A cell that the model holds in 32 bits (a line number, a block's or line's size and
/// instruction count, as Pin's DCFG interface holds them).
fn fits_u32<E: de::Error>(value: u64, column: &str) -> Result<u32, E> {
    u32::try_from(value)
        .map_err(|_| E::custom(format!("{column} {value} is too large; expected at most {}", u32::MAX)))
}

struct Routines {
    rows: Vec<RawRoutine>,
    /// Where each routine's NODES table is read before it is copied out at its exact size:
    /// growing a fresh vector per routine cost more allocations than the rows themselves.
    scratch: Vec<(u64, u64)>,
}

impl Table for Routines {
    const NAME: &'static str = "ROUTINES";
    const COLUMNS: &'static [&'static str] = &["ENTRY_NODE_ID", "EXIT_NODE_IDS", "NODES", "LOOPS"];
    const REQUIRED: usize = 3;
    const NESTED: bool = true;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut r = RawRoutine::default();
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            0 => cell(seq, Int, &mut r.entry),
            1 => cell(seq, IntList, &mut r.exits),
            2 => {
                let mut t = RoutineNodes { rows: std::mem::take(&mut self.scratch) };
                t.rows.clear();
                ctx.push(Seg::Key("NODES"));
                let got = seq.next_element_seed(TableSeed { table: &mut t, ctx })?.is_some();
                ctx.pop();
                r.nodes = t.rows.clone();
                self.scratch = t.rows;
                Ok(got)
            }
            _ => {
                let mut t = Loops { rows: Vec::new() };
                ctx.push(Seg::Key("LOOPS"));
                let got = seq.next_element_seed(TableSeed { table: &mut t, ctx })?.is_some();
                ctx.pop();
                r.loops = t.rows;
                Ok(got)
            }
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        self.rows.push(r);
        Ok(())
    }
}

/// Stands for a missing IDOM_NODE_ID in [`RawRoutine::nodes`].
const NO_IDOM: u64 = u64::MAX;

struct RoutineNodes {
    rows: Vec<(u64, u64)>,
}

impl Table for RoutineNodes {
    const NAME: &'static str = "NODES";
    const COLUMNS: &'static [&'static str] = &["NODE_ID", "IDOM_NODE_ID"];
    const REQUIRED: usize = 1;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut v = [0u64; 2];
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| cell(seq, Int, &mut v[f]))?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        self.rows.push((v[0], if present & 2 != 0 { v[1] } else { NO_IDOM }));
        Ok(())
    }
}

struct Loops {
    rows: Vec<RawLoop>,
}

impl Table for Loops {
    const NAME: &'static str = "LOOPS";
    const COLUMNS: &'static [&'static str] =
        &["LOOP_HEAD_NODE_ID", "LOOP_BACK_EDGE_SOURCE_NODE_IDS", "LOOP_NODE_IDS", "PARENT_LOOP_HEAD_NODE_ID"];
    const REQUIRED: usize = 3;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut l = RawLoop::default();
        let mut parent = 0;
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            0 => cell(seq, Int, &mut l.head),
            1 => cell(seq, IntList, &mut l.back_edge_sources),
            2 => cell(seq, IntList, &mut l.nodes),
            _ => cell(seq, Int, &mut parent),
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        l.parent = (parent != 0).then_some(parent);
        self.rows.push(l);
        Ok(())
    }
}

struct Edges {
    rows: Vec<Edge>,
    kinds: Vec<u16>,
    kind_ids: Vec<u64>,
    /// `kind_ids` by value, for files that use more than a few dozen.
    kind_lookup: HashMap<u64, u16>,
}

impl Edges {
    /// The index of a raw EDGE_TYPE_ID in `kind_ids`, added when new.
    fn kind_index<E: de::Error>(&mut self, id: u64) -> Result<u16, E> {
        if let Some(&last) = self.kinds.last() {
            if self.kind_ids[last as usize] == id {
                return Ok(last);
            }
        }
        // A file uses a few dozen types: a linear search beats hashing, until it would not.
        let found = if self.kind_ids.len() <= 64 {
            self.kind_ids.iter().position(|&k| k == id).map(|k| k as u16)
        } else {
            self.kind_lookup.get(&id).copied()
        };
        if let Some(k) = found {
            return Ok(k);
        }
        let k = u16::try_from(self.kind_ids.len())
            .map_err(|_| E::custom("more than 65,536 distinct EDGE_TYPE_IDs are used"))?;
        self.kind_ids.push(id);
        self.kind_lookup.insert(id, k);
        Ok(k)
    }
}

impl Table for Edges {
    const NAME: &'static str = "EDGES";
    const COLUMNS: &'static [&'static str] =
        &["EDGE_ID", "SOURCE_NODE_ID", "TARGET_NODE_ID", "EDGE_TYPE_ID", "COUNT_PER_THREAD"];
    const REQUIRED: usize = 4;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let mut v = [0u64; 4];
        let mut counts = Counts::new();
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            4 => cell(seq, CountList, &mut counts),
            _ => cell(seq, Int, &mut v[f]),
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        self.rows.push(Edge { id: v[0], source: park(v[1]), target: park(v[2]), counts, ..Edge::default() });
        let kind = self.kind_index(v[3])?;
        self.kinds.push(kind);
        Ok(())
    }
}

/// COUNT_PER_THREAD, straight into the inline small vector.
struct CountList;

impl<'de> DeserializeSeed<'de> for CountList {
    type Value = Counts;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Counts, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CountList {
    type Value = Counts;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of per-thread counts")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Counts, A::Error> {
        let mut v = Counts::new();
        while let Some(x) = seq.next_element_seed(Int)? {
            v.push(x);
        }
        Ok(v)
    }
}

struct Costs {
    rows: Vec<Cost>,
    /// The table has a `SYMBOL` column: a row without one is the covering symbol's.
    with_symbols: bool,
}

impl Table for Costs {
    const NAME: &'static str = COSTS_TAG;
    /// `SYMBOL` (optional): the row's function as the source stated it, by its row in the
    /// image's `SYMBOLS` (0 the first), so that code two functions share keeps each one's
    /// cost apart, as Valgrind counted it; stated where it is not the function whose symbol
    /// covers the address, which a row without it belongs to in a table with the column.
    const COLUMNS: &'static [&'static str] = &["ADDR_OFFSET", "VALUES", "SYMBOL"];
    const REQUIRED: usize = 2;
    fn row<'de, A: SeqAccess<'de>>(
        &mut self,
        cols: &[Option<usize>],
        seq: A,
        ctx: &Ctx,
    ) -> Result<(), A::Error> {
        let (mut offset, mut values, mut symbol) = (0, Vec::new(), 0);
        let present = read_cells(cols, seq, ctx, Self::COLUMNS, |f, seq| match f {
            0 => cell(seq, Int, &mut offset),
            1 => cell(seq, IntList, &mut values),
            _ => cell(seq, Int, &mut symbol),
        })?;
        require(present, Self::REQUIRED, Self::COLUMNS)?;
        self.with_symbols |= cols.contains(&Some(2));
        // Checked against the image's symbols once both are read (`resolve_image`).
        let symbol = (present & 4 != 0).then(|| u32::try_from(symbol).unwrap_or(u32::MAX));
        self.rows.push(Cost { symbol, offset: Some(offset), values: values.into(), ..Cost::default() });
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Resolution

fn path(s: String) -> Option<Place> {
    Some(Place::Path(s))
}

/// Turns raw tables into the model, reporting every unresolvable or duplicate id.
fn resolve(raw: RawDcfg, findings: &mut Findings) -> Profile {
    let mut profile = Profile::default();
    match (raw.major, raw.minor) {
        (Some(major), minor) => {
            if major > 1 {
                findings.warn(
                    path("MAJOR_VERSION".into()),
                    format!(
                        "format version {major} is newer than 1.00, which cfghub knows; reading it as 1.00"
                    ),
                );
            }
            profile.meta.format_version = Some((major, minor.unwrap_or(0)));
        }
        (None, _) => findings.warn(None, "no MAJOR_VERSION: reading as format version 1.00"),
    }
    profile.events = raw.events;

    let mut files: HashMap<u64, FileId> = HashMap::new();
    for (row, (id, name)) in raw.files.iter().enumerate() {
        let fid = profile.files.intern(name);
        if files.insert(*id, fid).is_some() {
            findings.violation(
                path(format!("FILE_NAMES row {}", row + 1)),
                format!("FILE_NAME_ID {id} is used twice"),
            );
        }
    }
    let mut kinds: HashMap<u64, EdgeKind> = HashMap::new();
    for (row, (id, name)) in raw.edge_types.iter().enumerate() {
        let kind = name.trim().parse().unwrap_or_else(|_| {
            findings.warn(
                path(format!("EDGE_TYPES row {}", row + 1)),
                format!("unknown edge type \"{name}\" (id {id}): read as UNKNOWN"),
            );
            EdgeKind::Unknown
        });
        if kinds.insert(*id, kind).is_some() {
            findings.violation(
                path(format!("EDGE_TYPES row {}", row + 1)),
                format!("EDGE_TYPE_ID {id} is used twice"),
            );
        }
    }
    let mut specials: Vec<(u64, NodeRef)> = Vec::new();
    for (row, (id, name)) in raw.special_nodes.iter().enumerate() {
        let node = match name.trim() {
            "START" => NodeRef::Start,
            "END" => NodeRef::End,
            "UNKNOWN" => NodeRef::Unknown,
            other => {
                findings.warn(
                    path(format!("SPECIAL_NODES row {}", row + 1)),
                    format!("unknown special node \"{other}\" (id {id}): read as UNKNOWN"),
                );
                NodeRef::Unknown
            }
        };
        if specials.iter().any(|(s, _)| s == id) {
            findings.violation(
                path(format!("SPECIAL_NODES row {}", row + 1)),
                format!("NODE_ID {id} is used twice"),
            );
        }
        specials.push((*id, node));
    }

    for key in &raw.repeated_keys {
        findings.violation(
            path(key.clone()),
            format!(
                "the key {key} appears more than once in the top-level object; JSON readers keep one of \
                 them (most the last), so tools would disagree on what this DCFG holds"
            ),
        );
    }
    let mut pids: HashMap<u64, usize> = HashMap::new();
    for (p, rp) in raw.processes.iter().enumerate() {
        if let Some(first) = pids.insert(rp.pid, p) {
            findings.violation(
                path(format!("PROCESSES[{p}].PROCESS_ID")),
                format!("PROCESS_ID {} is used twice (also PROCESSES[{first}])", rp.pid),
            );
        }
    }
    for (p, rp) in raw.processes.into_iter().enumerate() {
        profile.processes.push(resolve_process(p, rp, &files, &kinds, &specials, findings));
    }
    profile
}

/// Rows (0-based) that repeat an id of an earlier row, with that earlier row. Ids in increasing
/// order (what producers write) cost one pass and no memory.
fn repeated_ids(ids: impl Iterator<Item = u64> + Clone) -> Vec<(usize, usize)> {
    let mut previous = None;
    if ids.clone().all(|id| previous.replace(id).is_none_or(|p| p < id)) {
        return Vec::new();
    }
    let mut first: HashMap<u64, usize> = HashMap::new();
    let mut out = Vec::new();
    for (row, id) in ids.enumerate() {
        if let Some(&earlier) = first.get(&id) {
            out.push((row, earlier));
        } else {
            first.insert(id, row);
        }
    }
    out
}

/// Node id -> block of a process. Producers number nodes densely from 1, so a direct table
/// (8 bytes per id) serves; scattered 64-bit ids fall back to a sorted list.
enum NodeIndex {
    Dense(Vec<u64>),
    Sorted(Vec<(u64, BlockRef)>),
}

const NO_BLOCK: u64 = u64::MAX;

fn pack(r: BlockRef) -> u64 {
    (u64::from(r.image) << 32) | u64::from(r.block)
}

fn unpack(v: u64) -> BlockRef {
    BlockRef { image: (v >> 32) as u32, block: v as u32 }
}

impl NodeIndex {
    /// Indexes every block; returns the duplicates as (id, first, second).
    fn new(images: &[RawImage]) -> (NodeIndex, Vec<(u64, BlockRef, BlockRef)>) {
        let count: usize = images.iter().map(|i| i.blocks.len()).sum();
        let max = images.iter().flat_map(|i| i.blocks.iter().map(|b| b.id)).max().unwrap_or(0);
        let mut dups = Vec::new();
        let blocks = images.iter().enumerate().flat_map(|(i, im)| {
            im.blocks
                .iter()
                .enumerate()
                .map(move |(b, block)| (block.id, BlockRef { image: i as u32, block: b as u32 }))
        });
        if max <= (count as u64).saturating_mul(4).saturating_add(1024) {
            let mut table = vec![NO_BLOCK; max as usize + 1];
            for (id, r) in blocks {
                let slot = &mut table[id as usize];
                if *slot == NO_BLOCK {
                    *slot = pack(r);
                } else {
                    dups.push((id, unpack(*slot), r));
                }
            }
            (NodeIndex::Dense(table), dups)
        } else {
            let mut sorted: Vec<(u64, BlockRef)> = blocks.collect();
            sorted.sort_unstable();
            sorted.dedup_by(|b, a| {
                let same = a.0 == b.0;
                if same {
                    dups.push((a.0, a.1, b.1));
                }
                same
            });
            (NodeIndex::Sorted(sorted), dups)
        }
    }

    fn get(&self, id: u64) -> Option<BlockRef> {
        match self {
            NodeIndex::Dense(t) => t.get(id as usize).filter(|&&v| v != NO_BLOCK).map(|&v| unpack(v)),
            NodeIndex::Sorted(s) => s.binary_search_by_key(&id, |&(n, _)| n).ok().map(|k| s[k].1),
        }
    }
}

fn resolve_process(
    p: usize,
    mut rp: RawProcess,
    files: &HashMap<u64, FileId>,
    kinds: &HashMap<u64, EdgeKind>,
    specials: &[(u64, NodeRef)],
    findings: &mut Findings,
) -> Process {
    let at = |rest: String| path(format!("PROCESSES[{p}].{rest}"));
    let mut process = Process {
        pid: rp.pid,
        instr_count: rp.instr_count,
        thread_instr_counts: rp.thread_instr_counts,
        ..Process::default()
    };

    let nodes = index_nodes(&rp.images, &rp.edges, specials, &at, findings);
    for (i, ri) in rp.images.into_iter().enumerate() {
        process.images.push(resolve_image(i, ri, files, &nodes, &at, findings));
    }

    let resolved: Vec<Option<EdgeKind>> = rp.kind_ids.iter().map(|id| kinds.get(id).copied()).collect();
    for (row, (edge, raw_kind)) in rp.edges.iter_mut().zip(rp.edge_kinds).enumerate() {
        let mut node = |parked: NodeRef, column: &str| -> NodeRef {
            let id = unpark(parked);
            if let Some(&(_, s)) = specials.iter().find(|(s, _)| *s == id) {
                return s;
            }
            match nodes.get(id) {
                Some(b) => NodeRef::Block(b),
                None => {
                    findings.violation(
                        at(format!("EDGES row {}", row + 1)),
                        format!("{column} {id} names no basic block or special node"),
                    );
                    NodeRef::Unknown
                }
            }
        };
        edge.source = node(edge.source, "SOURCE_NODE_ID");
        edge.target = node(edge.target, "TARGET_NODE_ID");
        edge.kind = match resolved[raw_kind as usize] {
            Some(kind) => kind,
            None => {
                findings.violation(
                    at(format!("EDGES row {}", row + 1)),
                    format!("EDGE_TYPE_ID {} is not in EDGE_TYPES", rp.kind_ids[raw_kind as usize]),
                );
                EdgeKind::Unknown
            }
        };
    }
    process.edges = rp.edges;
    process
}

/// The blocks of a process's images by node id, reporting every id used twice (an image's,
/// an edge's, a block's) and every block id that is also a special node's.
fn index_nodes(
    images: &[RawImage],
    edges: &[Edge],
    specials: &[(u64, NodeRef)],
    at: &dyn Fn(String) -> Option<Place>,
    findings: &mut Findings,
) -> NodeIndex {
    for (i, earlier) in repeated_ids(images.iter().map(|image| image.id)) {
        findings.violation(
            at(format!("IMAGES[{i}].IMAGE_ID")),
            format!("IMAGE_ID {} is used twice (also IMAGES[{earlier}])", images[i].id),
        );
    }
    for (row, earlier) in repeated_ids(edges.iter().map(|e| e.id)) {
        findings.violation(
            at(format!("EDGES row {}", row + 1)),
            format!("EDGE_ID {} is used twice (also EDGES row {})", edges[row].id, earlier + 1),
        );
    }
    let (nodes, dups) = NodeIndex::new(images);
    for (id, a, b) in dups {
        findings.violation(
            at(format!("IMAGES[{}].BASIC_BLOCKS row {}", b.image, b.block + 1)),
            format!("NODE_ID {id} is used twice (also IMAGES[{}].BASIC_BLOCKS row {})", a.image, a.block + 1),
        );
    }
    for (i, image) in images.iter().enumerate() {
        for (b, block) in image.blocks.iter().enumerate() {
            if specials.iter().any(|(s, _)| *s == block.id) {
                findings.violation(
                    at(format!("IMAGES[{i}].BASIC_BLOCKS row {}", b + 1)),
                    format!("NODE_ID {} is also a special node's id", block.id),
                );
            }
        }
    }
    nodes
}

/// Image `i` of a process in the model: its file names resolved (`files`: FILE_NAME_ID ->
/// file) and its routines' node ids (`nodes`), each unknown id reported.
fn resolve_image(
    i: usize,
    ri: RawImage,
    files: &HashMap<u64, FileId>,
    nodes: &NodeIndex,
    at: &dyn Fn(String) -> Option<Place>,
    findings: &mut Findings,
) -> Image {
    let mut costs = ri.costs;
    let symbols = ri.symbols.len();
    if ri.costs_with_symbols {
        let (covering, mut hint) = (cfghub_analysis::names::SymbolIndex::of(&ri.symbols), 0);
        for c in costs.iter_mut().filter(|c| c.symbol.is_none()) {
            c.symbol = c.offset.and_then(|o| covering.covering_from(o, &mut hint));
        }
    }
    if let Some(row) = costs.iter().position(|c| c.symbol.is_some_and(|s| s as usize >= symbols)) {
        let stated = costs[row].symbol.unwrap_or(0);
        findings.violation(
            at(format!("IMAGES[{i}].IMAGE_DATA.{COSTS_TAG} row {}", row + 1)),
            format!("SYMBOL {stated} is not a row of the image's {symbols} SYMBOLS (0 the first)"),
        );
        for c in &mut costs {
            c.symbol = None;
        }
    }
    let mut image = Image {
        id: ri.id,
        load_addr: ri.load_addr,
        size: Some(ri.size),
        symbols: ri.symbols,
        blocks: ri.blocks,
        costs: costs.into(),
        ..Image::default()
    };
    if let Some(fid) = ri.file {
        image.file = files.get(&fid).copied();
        if image.file.is_none() {
            findings.violation(
                at(format!("IMAGES[{i}].IMAGE_DATA.FILE_NAME_ID")),
                format!("FILE_NAME_ID {fid} is not in FILE_NAMES"),
            );
        }
    }
    image.source_lines = ri.source_lines;
    for (row, (line, fid)) in image.source_lines.iter_mut().zip(ri.source_files).enumerate() {
        line.file = files.get(&fid).copied();
        if line.file.is_none() {
            findings.violation(
                at(format!("IMAGES[{i}].SOURCE_DATA row {}", row + 1)),
                format!("FILE_NAME_ID {fid} is not in FILE_NAMES"),
            );
        }
    }
    if let Some(raw_routines) = ri.routines {
        image.routines = Some(resolve_routines(i, raw_routines, nodes, at, findings));
    }
    image
}

fn resolve_routines(
    i: usize,
    raw_routines: Vec<RawRoutine>,
    nodes: &NodeIndex,
    at: &dyn Fn(String) -> Option<Place>,
    findings: &mut Findings,
) -> Vec<Routine> {
    let mut routines = Vec::with_capacity(raw_routines.len());
    for (r, rr) in raw_routines.into_iter().enumerate() {
        let here = |what: &str| at(format!("IMAGES[{i}].ROUTINES[{r}].{what}"));
        let local = |id: u64, what: &str, findings: &mut Findings| -> Option<u32> {
            match nodes.get(id) {
                Some(b) if b.image as usize == i => Some(b.block),
                Some(b) => {
                    findings.violation(
                        here(what),
                        format!("node {id} is a block of IMAGES[{}], not of this image", b.image),
                    );
                    None
                }
                None => {
                    findings.violation(here(what), format!("node {id} is not a basic block of this process"));
                    None
                }
            }
        };
        let Some(entry) = local(rr.entry, "ENTRY_NODE_ID", findings) else { continue };
        let exits = rr.exits.iter().filter_map(|&id| local(id, "EXIT_NODE_IDS", findings)).collect();
        let mut routine = Routine { entry, exits, ..Routine::default() };
        let with_idoms = !rr.nodes.is_empty() && rr.nodes.iter().all(|n| n.1 != NO_IDOM);
        routine.nodes.reserve_exact(rr.nodes.len());
        if with_idoms {
            routine.idoms.reserve_exact(rr.nodes.len());
        }
        for (id, idom) in rr.nodes {
            let Some(node) = local(id, "NODES", findings) else { continue };
            if with_idoms {
                let Some(idom) = local(idom, "NODES", findings) else { continue };
                routine.idoms.push(idom);
            }
            routine.nodes.push(node);
        }
        for rl in rr.loops {
            let Some(head) = local(rl.head, "LOOPS", findings) else { continue };
            let back_edge_sources =
                rl.back_edge_sources.iter().filter_map(|&id| local(id, "LOOPS", findings)).collect();
            let nodes = rl.nodes.iter().filter_map(|&id| local(id, "LOOPS", findings)).collect();
            let parent = rl.parent.and_then(|id| local(id, "LOOPS", findings));
            routine.loops.push(Loop { head, back_edge_sources, nodes, parent });
        }
        routines.push(routine);
    }
    routines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(s: &str) -> (Result<Profile>, Findings) {
        let mut f = Findings::default();
        let r = read(&mut s.as_bytes(), &mut f);
        (r, f)
    }

    #[test]
    fn header_names_are_trimmed_and_order_is_free() {
        let (p, f) = read_str(
            r#"{ "PROCESSES": [["PROCESS_ID","PROCESS_DATA"], [7, {"IMAGES": [["IMAGE_ID","LOAD_ADDR","SIZE ","IMAGE_DATA"],
                 [1, "0x1000", "0x20", {"SYMBOLS": [["SIZE ", "NAME", "ADDR_OFFSET"], [4, "f", "0x10"]]}]]}]],
               "MAJOR_VERSION": 1, "MINOR_VERSION": 0 }"#,
        );
        let p = p.unwrap();
        assert!(f.items.is_empty(), "{f:?}");
        let im = &p.processes[0].images[0];
        assert_eq!((im.load_addr, im.size), (0x1000, Some(0x20)));
        assert_eq!(im.symbols[0], Symbol { name: "f".into(), offset: Some(0x10), size: Some(4), file: None });
    }

    #[test]
    fn errors_name_the_json_path() {
        let (r, _) = read_str(
            r#"{"PROCESSES": [["PROCESS_ID","PROCESS_DATA"], [7, {"IMAGES": [["IMAGE_ID","LOAD_ADDR","SIZE","IMAGE_DATA"],
                 [1, "0x1000", 32, {}], [2, "0x2000", 32, {"BASIC_BLOCKS": [["NODE_ID","ADDR_OFFSET","SIZE","NUM_INSTRS","LAST_INSTR_OFFSET"],
                 [4, "0x0", 4, 1, 0], [5, "0x4", "four", 1, 0]]}]]}]]}"#,
        );
        let e = r.unwrap_err().to_string();
        assert!(e.contains("PROCESSES[0].IMAGES[1].BASIC_BLOCKS row 2 column SIZE"), "{e}");
        assert!(e.contains("\"four\" is not an integer"), "{e}");
    }

    #[test]
    fn unknown_nodes_are_violations_not_panics() {
        let (p, f) = read_str(
            r#"{"EDGE_TYPES": [["EDGE_TYPE_ID","EDGE_TYPE"],[1,"ENTRY"]], "SPECIAL_NODES": [["NODE_ID","NODE_NAME"],[1,"START"]],
               "PROCESSES": [["PROCESS_ID","PROCESS_DATA"], [7, {"EDGES": [["EDGE_ID","SOURCE_NODE_ID","TARGET_NODE_ID","EDGE_TYPE_ID","COUNT_PER_THREAD"],
               [10, 1, 99, 1, [1]]]}]]}"#,
        );
        assert!(p.is_ok());
        let v: Vec<_> = f.violations().collect();
        assert_eq!(v.len(), 1);
        assert!(v[0].message.contains("TARGET_NODE_ID 99"), "{:?}", v[0]);
        assert_eq!(v[0].place, Some(Place::Path("PROCESSES[0].EDGES row 1".into())));
    }

    #[test]
    fn edge_types_are_resolved_per_edge_and_too_many_distinct_ones_are_an_error() {
        let (p, f) = read_str(
            r#"{"EDGE_TYPES": [["EDGE_TYPE_ID","EDGE_TYPE"],[7,"CALL"],[9,"RETURN"]], "SPECIAL_NODES": [["NODE_ID","NODE_NAME"],[1,"START"]],
               "PROCESSES": [["PROCESS_ID","PROCESS_DATA"], [7, {"EDGES": [["EDGE_ID","SOURCE_NODE_ID","TARGET_NODE_ID","EDGE_TYPE_ID","COUNT_PER_THREAD"],
               [10, 1, 1, 9, [1]], [11, 1, 1, 7, [1]], [12, 1, 1, 9, [1]], [13, 1, 1, 5, [1]]]}]]}"#,
        );
        let kinds: Vec<EdgeKind> = p.unwrap().processes[0].edges.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EdgeKind::Return, EdgeKind::Call, EdgeKind::Return, EdgeKind::Unknown]);
        let v: Vec<_> = f.violations().collect();
        assert_eq!(v.len(), 1);
        assert!(v[0].message.contains("EDGE_TYPE_ID 5 is not in EDGE_TYPES"), "{:?}", v[0]);
        assert_eq!(v[0].place, Some(Place::Path("PROCESSES[0].EDGES row 4".into())));

        let rows: Vec<String> = (0..=65_536u64).map(|k| format!("[{k}, 1, 1, {}, [1]]", 100 + k)).collect();
        let text = format!(
            r#"{{"PROCESSES": [["PROCESS_ID","PROCESS_DATA"], [7, {{"EDGES": [["EDGE_ID","SOURCE_NODE_ID","TARGET_NODE_ID","EDGE_TYPE_ID","COUNT_PER_THREAD"], {}]}}]]}}"#,
            rows.join(",")
        );
        let e = read_str(&text).0.unwrap_err().to_string();
        assert!(e.contains("PROCESSES[0].EDGES row 65537"), "{e}");
        assert!(e.contains("more than 65,536 distinct EDGE_TYPE_IDs"), "{e}");
    }
}
