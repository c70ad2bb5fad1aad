//! Reading the CSI section texts: `.debug_PT` (functions' graphs with Ball-Larus numbers) and
//! the coverage sections `.debug_BBC`, `.debug_CC` and `.debug_FC`, alone or concatenated.
//!
//! One parser takes every kind: a line that is `#` alone starts a path-tracing function, a line
//! `#NAME|ARRAY` starts a coverage array (its kind told by the array's name, `__BBC_arr...`,
//! `__CC_arr...`, `__FC_arr...`, else by the section it came from, else by its site lines).
//! Blank lines are skipped anywhere (linked executables concatenate several objects' texts);
//! `#` and what follows it ends an edge line as a comment.

use std::collections::HashMap;

use cfghub_model::error::{self, Error, Result};
use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{
    Block, BlockLines, BlockRef, Coverage, CoverageKind, CoverageSite, Edge, EdgeDetails, EdgeKind, Image,
    LineItem, NodeRef, PathEdge, Process, Profile, Routine, Symbol,
};

/// The kind of section a text came from, when known (an ELF section's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Path-tracing metadata: each function's blocks and edges (`.debug_PT`).
    Paths,
    /// Block coverage arrays (`.debug_BBC`).
    BlockCoverage,
    /// Call coverage arrays (`.debug_CC`).
    CallCoverage,
    /// Function coverage arrays (`.debug_FC`).
    FunctionCoverage,
}

impl Section {
    /// The ELF section name.
    pub fn name(self) -> &'static str {
        match self {
            Section::Paths => ".debug_PT",
            Section::BlockCoverage => ".debug_BBC",
            Section::CallCoverage => ".debug_CC",
            Section::FunctionCoverage => ".debug_FC",
        }
    }

    /// Every section, in the order they are read from an ELF file.
    pub const ALL: [Section; 4] =
        [Section::Paths, Section::BlockCoverage, Section::CallCoverage, Section::FunctionCoverage];
}

/// Accumulates the functions of one or more texts into one image.
#[derive(Default)]
pub struct Builder {
    image: Image,
    edges: Vec<Edge>,
    /// Symbol index by name, for coverage arrays and functions read after each other.
    by_name: HashMap<String, u32>,
    /// Symbols that already have a routine (a second function of that name gets its own).
    has_routine: Vec<bool>,
    next_block_id: u64,
}

/// Where a line is, for error messages.
struct Place<'a> {
    section: Option<&'a str>,
}

impl Place<'_> {
    fn at(&self, line: u64) -> error::Place {
        match self.section {
            None => error::Place::Line(line),
            Some(s) => error::Place::Path(format!("section {s}, line {line}")),
        }
    }

    fn error(&self, line: u64, message: impl Into<String>) -> Error {
        Error::input(message).at(self.at(line))
    }
}

/// One function being read: its header line and blocks (local id -> image block index).
struct Function {
    header_line: u64,
    symbol: u32,
    local: IdTable,
    nodes: Vec<u32>,
    entry: Option<u32>,
    exit: Option<u32>,
}

/// Block ids of one function to image block indices: a direct table while the ids are dense
/// (csi-cc numbers a function's blocks consecutively), a hash map otherwise. Hashing every id
/// took a quarter of the reading time.
#[derive(Default)]
struct IdTable {
    base: u64,
    direct: Vec<u32>,
    count: usize,
    sparse: Option<HashMap<u64, u32>>,
}

impl IdTable {
    /// Adds `id`; `false` when it is there already.
    fn insert(&mut self, id: u64, index: u32) -> bool {
        if let Some(map) = &mut self.sparse {
            return map.insert(id, index).is_none();
        }
        if self.count == 0 {
            self.base = id.saturating_sub(8);
        }
        if id < self.base {
            // Ids below the first one seen (csi-cc prints EXIT before ENTRY): shift down.
            let new_base = id.saturating_sub(8);
            let shift = (self.base - new_base) as usize;
            if shift <= 4 * self.count + 1024 {
                self.direct.splice(0..0, std::iter::repeat_n(NO_INDEX, shift));
                self.base = new_base;
            } else {
                return self.go_sparse(id, index);
            }
        }
        let slot = (id - self.base) as usize;
        if slot > 4 * self.count + 1024 {
            return self.go_sparse(id, index);
        }
        if slot >= self.direct.len() {
            self.direct.resize(slot + 1, NO_INDEX);
        }
        if self.direct[slot] != NO_INDEX {
            return false;
        }
        self.direct[slot] = index;
        self.count += 1;
        true
    }

    fn go_sparse(&mut self, id: u64, index: u32) -> bool {
        let mut map: HashMap<u64, u32> = HashMap::with_capacity(self.count * 2);
        for (k, &v) in self.direct.iter().enumerate() {
            if v != NO_INDEX {
                map.insert(self.base + k as u64, v);
            }
        }
        let fresh = map.insert(id, index).is_none();
        self.sparse = Some(map);
        self.direct = Vec::new();
        fresh
    }

    fn get(&self, id: u64) -> Option<u32> {
        match &self.sparse {
            Some(map) => map.get(&id).copied(),
            None => {
                let slot = id.checked_sub(self.base)?;
                self.direct.get(usize::try_from(slot).ok()?).copied().filter(|&v| v != NO_INDEX)
            }
        }
    }
}

/// Where the parser is.
enum State {
    /// Between functions and arrays.
    Top,
    /// After `#`: the next line is the function's name.
    Name(u64),
    /// Block lines, until `$`.
    Blocks(Function),
    /// Edge lines, until the next `#` or the end.
    Edges(Function),
    /// Site lines of a coverage array (index into `Image::coverage`), until the next `#`.
    Sites(usize),
}

impl Builder {
    /// An empty builder; the first block gets id 1.
    pub fn new() -> Self {
        Builder { next_block_id: 1, ..Builder::default() }
    }

    /// Reads one text. `section` names the ELF section it came from (for locations and the
    /// kind of coverage arrays whose names do not tell); `None` for a text file.
    pub(crate) fn add_text(&mut self, text: &[u8], section: Option<Section>) -> Result<()> {
        let place = Place { section: section.map(Section::name) };
        // At most one block or edge per line that starts with a digit (blank lines, names and
        // `#` lines hold none): reserved once, never grown by doubling (the capacity no line
        // fills is never touched, so never committed). Counting every newline instead would
        // reserve for a text of blank lines (or a section that inflates to them) what it
        // cannot hold.
        let lines = numbered_lines(text);
        self.image.blocks.reserve(lines);
        self.image.block_lines.reserve(lines);
        self.edges.reserve(lines);
        let mut state = State::Top;
        let mut line_no = 0u64;
        let mut rest = text;
        while !rest.is_empty() {
            let (raw, next) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            rest = next;
            line_no += 1;
            let line = trim(raw);
            if line.is_empty() {
                continue;
            }
            state = match state {
                State::Name(header) => {
                    let name = std::str::from_utf8(line)
                        .map_err(|_| place.error(line_no, "expected a function name in UTF-8"))?;
                    if line[0] == b'#' || line == b"$" {
                        return Err(place.error(
                            line_no,
                            format!(
                                "expected the name of the function started at line {header}, found '{name}'"
                            ),
                        ));
                    }
                    let symbol = self.symbol_for_routine(name);
                    State::Blocks(Function {
                        header_line: header,
                        symbol,
                        local: IdTable::default(),
                        nodes: Vec::new(),
                        entry: None,
                        exit: None,
                    })
                }
                State::Blocks(mut f) => {
                    if line == b"$" {
                        State::Edges(f)
                    } else if line[0] == b'#' {
                        return Err(place.error(
                            line_no,
                            "expected a block line (ID|...) or '$' before the edges, found '#'",
                        ));
                    } else {
                        self.block_line(&mut f, line, line_no, &place)?;
                        State::Blocks(f)
                    }
                }
                State::Edges(f) if line[0] == b'#' => {
                    self.finish(f, &place)?;
                    self.header(line, line_no, &place, section)?
                }
                State::Edges(f) => {
                    self.edge_line(&f, line, line_no, &place)?;
                    State::Edges(f)
                }
                State::Top | State::Sites(_) if line[0] == b'#' => {
                    self.header(line, line_no, &place, section)?
                }
                State::Sites(c) => {
                    self.site_line(c, line, line_no, &place)?;
                    State::Sites(c)
                }
                State::Top => {
                    return Err(place.error(
                        line_no,
                        format!(
                            "expected '#' (a function) or '#NAME|ARRAY' (a coverage array), found '{}'",
                            String::from_utf8_lossy(line)
                        ),
                    ))
                }
            };
        }
        match state {
            State::Name(header) => Err(place.error(header, "the text ends before the function's name")),
            State::Blocks(f) => Err(place.error(
                f.header_line,
                "the text ends inside this function's blocks: expected '$' and its edges",
            )),
            State::Edges(f) => self.finish(f, &place),
            State::Top | State::Sites(_) => Ok(()),
        }
    }

    /// A `#` line between entries: a function (`#`), an array (`#NAME|ARRAY`) or a comment.
    fn header(
        &mut self,
        line: &[u8],
        line_no: u64,
        place: &Place<'_>,
        section: Option<Section>,
    ) -> Result<State> {
        let body = trim(&line[1..]);
        if body.is_empty() {
            return Ok(State::Name(line_no));
        }
        let Some(bar) = memchr::memrchr(b'|', body) else {
            // `# text`: a comment line.
            return Ok(State::Top);
        };
        let name = utf8(&body[..bar], line_no, place, "a function name")?;
        let array = utf8(&body[bar + 1..], line_no, place, "an array name")?;
        let kind = if array.starts_with("__BBC_arr") {
            CoverageKind::Block
        } else if array.starts_with("__CC_arr") {
            CoverageKind::Call
        } else if array.starts_with("__FC_arr") {
            CoverageKind::Function
        } else {
            match section {
                Some(Section::CallCoverage) => CoverageKind::Call,
                Some(Section::FunctionCoverage) => CoverageKind::Function,
                _ => CoverageKind::Block,
            }
        };
        let symbol = self.symbol(name);
        self.image.coverage.push(Coverage { kind, symbol, array: array.to_string(), sites: Vec::new() });
        Ok(State::Sites(self.image.coverage.len() - 1))
    }

    fn symbol(&mut self, name: &str) -> u32 {
        if let Some(&s) = self.by_name.get(name) {
            return s;
        }
        let s = self.image.symbols.len() as u32;
        self.image.symbols.push(Symbol { name: name.to_string(), ..Symbol::default() });
        self.has_routine.push(false);
        self.by_name.insert(name.to_string(), s);
        s
    }

    /// The symbol of a new function: the one of that name, unless it has a routine already
    /// (two objects' static functions of the same name).
    fn symbol_for_routine(&mut self, name: &str) -> u32 {
        let s = self.symbol(name);
        let s = if self.has_routine[s as usize] {
            let n = self.image.symbols.len() as u32;
            self.image.symbols.push(Symbol { name: name.to_string(), ..Symbol::default() });
            self.has_routine.push(false);
            n
        } else {
            s
        };
        self.has_routine[s as usize] = true;
        s
    }

    fn block_line(&mut self, f: &mut Function, line: &[u8], line_no: u64, place: &Place<'_>) -> Result<()> {
        let Some(bar) = memchr::memchr(b'|', line) else {
            return Err(place.error(
                line_no,
                format!(
                    "expected a block line ID|ENTRY, ID|EXIT, ID|NULL or ID|LINE|..., found '{}' (no '|')",
                    String::from_utf8_lossy(line)
                ),
            ));
        };
        let id = parse_u64(&line[..bar]).ok_or_else(|| {
            if line.windows(2).any(|w| w == b"->" || w == b"~>") {
                place.error(line_no, "expected a block line or '$', found an edge: '$' ends the blocks")
            } else {
                place.error(line_no, "expected a block id (a decimal number) before '|'")
            }
        })?;
        let mut fields = line[bar + 1..].split(|&c| c == b'|').map(trim).peekable();
        let mut items = Vec::new();
        let mut role = None;
        match fields.peek().copied() {
            Some(b"EXIT") => {
                fields.next();
                if let Some(extra) = fields.next() {
                    return Err(place.error(
                        line_no,
                        format!("the EXIT block has no lines, found '|{}'", String::from_utf8_lossy(extra)),
                    ));
                }
                role = Some(false);
            }
            Some(b"ENTRY") => {
                fields.next();
                role = Some(true);
            }
            _ => {}
        }
        let mut null = false;
        for field in fields {
            if field == b"NULL" {
                null = true;
            } else if field == b"-1" {
                items.push(LineItem::PathEnd);
            } else {
                let n = parse_u64(field).filter(|&n| n <= u32::MAX as u64).ok_or_else(|| {
                    place.error(
                        line_no,
                        format!(
                            "expected a line number, -1 or NULL in block {id}, found '{}'",
                            String::from_utf8_lossy(field)
                        ),
                    )
                })?;
                items.push(LineItem::Line(n as u32));
            }
        }
        if null && !items.is_empty() {
            return Err(place.error(line_no, format!("block {id} is NULL (no lines) but lists lines too")));
        }
        if role.is_none() && !null && items.is_empty() {
            return Err(
                place.error(line_no, format!("block {id}: expected ENTRY, EXIT, NULL or lines after '|'"))
            );
        }
        let index = self.image.blocks.len() as u32;
        if !f.local.insert(id, index) {
            return Err(place.error(line_no, format!("block {id} is defined twice in this function")));
        }
        match role {
            Some(true) if f.entry.is_some() => {
                return Err(
                    place.error(line_no, format!("block {id} is a second ENTRY block: a function has one"))
                )
            }
            Some(true) => f.entry = Some(index),
            Some(false) if f.exit.is_some() => {
                return Err(
                    place.error(line_no, format!("block {id} is a second EXIT block: a function has one"))
                )
            }
            Some(false) => f.exit = Some(index),
            None => {}
        }
        f.nodes.push(index);
        self.image.blocks.push(Block { id: self.next_block_id, ..Block::default() });
        self.next_block_id += 1;
        self.image.block_lines.push(BlockLines { local_id: Some(id), items });
        Ok(())
    }

    fn edge_line(&mut self, f: &Function, line: &[u8], line_no: u64, place: &Place<'_>) -> Result<()> {
        let line = match memchr::memchr(b'#', line) {
            Some(i) => trim(&line[..i]),
            None => line,
        };
        let expected = || {
            place.error(
                line_no,
                format!(
                    "expected an edge SRC->DST|INCREMENT$WEIGHT (or SRC~>DST for a back edge), found '{}'",
                    String::from_utf8_lossy(line)
                ),
            )
        };
        let arrow = line.windows(2).position(|w| w == b"->" || w == b"~>").ok_or_else(expected)?;
        let back = line[arrow] == b'~';
        let bar = memchr::memchr(b'|', line).filter(|&b| b > arrow).ok_or_else(expected)?;
        let dollar = memchr::memchr(b'$', line).filter(|&d| d > bar).ok_or_else(expected)?;
        let src = parse_u64(trim(&line[..arrow])).ok_or_else(expected)?;
        let dst = parse_u64(trim(&line[arrow + 2..bar])).ok_or_else(expected)?;
        let increment = parse_i64(trim(&line[bar + 1..dollar])).ok_or_else(expected)?;
        let weight = parse_i64(trim(&line[dollar + 1..])).ok_or_else(expected)?;
        let block = |id: u64| {
            f.local.get(id).ok_or_else(|| {
                place.error(line_no, format!("edge {src}->{dst}: block {id} is not defined in this function"))
            })
        };
        let (s, t) = (block(src)?, block(dst)?);
        let id = self.edges.len() as u64 + 1;
        self.edges.push(Edge {
            id,
            source: NodeRef::Block(BlockRef { image: 0, block: s }),
            target: NodeRef::Block(BlockRef { image: 0, block: t }),
            kind: EdgeKind::Branch,
            counts: Default::default(),
            details: EdgeDetails::path(PathEdge { increment, weight, back }),
        });
        Ok(())
    }

    fn site_line(&mut self, c: usize, line: &[u8], line_no: u64, place: &Place<'_>) -> Result<()> {
        let kind = self.image.coverage[c].kind;
        let fields: Vec<&[u8]> = line.split(|&b| b == b'|').map(trim).collect();
        let what = match kind {
            CoverageKind::Block => "INDEX|LABEL|LINE... or INDEX|LABEL|NULL",
            CoverageKind::Call => "INDEX|LABEL|LINE|CALLEE",
            CoverageKind::Function => "nothing (a function coverage array has no sites)",
        };
        let bad = |why: &str| {
            place.error(
                line_no,
                format!("expected a coverage site {what}, found '{}'{why}", String::from_utf8_lossy(line)),
            )
        };
        if kind == CoverageKind::Function || fields.len() < 3 {
            return Err(bad(""));
        }
        let index = parse_i64(fields[0]).ok_or_else(|| bad(": the index is not a number"))?;
        let label = utf8(fields[1], line_no, place, "a label")?.to_string();
        let line_of = |f: &[u8]| parse_u64(f).filter(|&n| n <= u32::MAX as u64).map(|n| n as u32);
        let site = match kind {
            CoverageKind::Call => {
                if fields.len() != 4 {
                    return Err(bad(""));
                }
                let l = line_of(fields[2]).ok_or_else(|| bad(": the line is not a number"))?;
                let callee = match fields[3] {
                    b"?" => None,
                    c => Some(utf8(c, line_no, place, "a callee name")?.to_string()),
                };
                CoverageSite { index, label, lines: vec![l], callee }
            }
            _ => {
                let lines = if fields[2..] == [b"NULL".as_slice()] {
                    Vec::new()
                } else {
                    fields[2..]
                        .iter()
                        .map(|f| line_of(f))
                        .collect::<Option<Vec<u32>>>()
                        .ok_or_else(|| bad(": a line is not a number"))?
                };
                CoverageSite { index, label, lines, callee: None }
            }
        };
        self.image.coverage[c].sites.push(site);
        Ok(())
    }

    /// Closes a function: it must have one ENTRY and one EXIT block.
    fn finish(&mut self, f: Function, place: &Place<'_>) -> Result<()> {
        let name = &self.image.symbols[f.symbol as usize].name;
        let (Some(entry), Some(exit)) = (f.entry, f.exit) else {
            let missing = if f.entry.is_none() { "ENTRY" } else { "EXIT" };
            return Err(place.error(f.header_line, format!("function {name} has no {missing} block")));
        };
        let routines = self.image.routines.get_or_insert_with(Vec::new);
        routines.push(Routine {
            entry,
            exits: vec![exit],
            nodes: f.nodes,
            symbol: Some(f.symbol),
            ..Routine::default()
        });
        Ok(())
    }

    /// Linked objects may each have a function of the same name (static functions): a
    /// coverage array of such a name goes to the function whose source lines hold most of its
    /// sites' lines, and among equals to the first that has no array of that kind yet.
    ///
    /// Linear in the sites and the functions' lines (times the functions that share a line):
    /// an index from source line to the same-named functions that hold it answers each site,
    /// and a cursor per name and kind finds the first function without an array.
    fn attach_coverage(&mut self) {
        let image = &mut self.image;
        if image.coverage.is_empty() {
            return;
        }
        let mut same_name: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, s) in image.symbols.iter().enumerate() {
            same_name.entry(s.name.as_str()).or_default().push(i as u32);
        }
        if same_name.values().all(|v| v.len() < 2) {
            return;
        }
        // (source line, symbol) of every function that shares its name with another.
        let shared =
            |s: u32| same_name.get(image.symbols[s as usize].name.as_str()).is_some_and(|v| v.len() > 1);
        let mut line_symbols: Vec<(u32, u32)> = Vec::new();
        for r in image.routines.as_deref().unwrap_or(&[]) {
            let Some(symbol) = r.symbol.filter(|&s| shared(s)) else { continue };
            for &b in &r.nodes {
                if let Some(lines) = image.block_lines.get(b as usize) {
                    line_symbols.extend(lines.lines().map(|l| (l, symbol)));
                }
            }
        }
        line_symbols.sort_unstable();
        line_symbols.dedup();
        let mut taken: std::collections::HashSet<(u32, CoverageKind)> = std::collections::HashSet::new();
        let mut cursor: HashMap<(&str, CoverageKind), usize> = HashMap::new();
        let mut hits: HashMap<u32, usize> = HashMap::new();
        let mut chosen = Vec::with_capacity(image.coverage.len());
        for c in &image.coverage {
            let name = image.symbols[c.symbol as usize].name.as_str();
            let candidates = &same_name[name];
            if candidates.len() < 2 {
                chosen.push(c.symbol);
                continue;
            }
            hits.clear();
            for &l in c.sites.iter().flat_map(|site| &site.lines) {
                let from = line_symbols.partition_point(|&(x, _)| x < l);
                for &(_, s) in line_symbols[from..].iter().take_while(|&&(x, _)| x == l) {
                    if image.symbols[s as usize].name == name {
                        *hits.entry(s).or_default() += 1;
                    }
                }
            }
            let best = match hits
                .iter()
                .map(|(&s, &n)| (n, !taken.contains(&(s, c.kind)), std::cmp::Reverse(s)))
                .max()
            {
                Some((_, _, std::cmp::Reverse(s))) => s,
                None => {
                    // No site line in any of them: the first without an array of this kind.
                    let k = cursor.entry((name, c.kind)).or_default();
                    while *k < candidates.len() && taken.contains(&(candidates[*k], c.kind)) {
                        *k += 1;
                    }
                    candidates.get(*k).copied().unwrap_or(candidates[0])
                }
            };
            taken.insert((best, c.kind));
            chosen.push(best);
        }
        for (c, s) in image.coverage.iter_mut().zip(chosen) {
            c.symbol = s;
        }
    }

    /// The profile read: one process, one image without addresses.
    pub(crate) fn finish_profile(mut self, file: Option<String>) -> Profile {
        self.attach_coverage();
        let mut profile = Profile::default();
        self.image.no_addresses = true;
        self.image.file = file.map(|f| profile.files.intern(&f));
        profile.processes.push(Process { images: vec![self.image], edges: self.edges, ..Process::default() });
        profile
    }
}

/// The line (from 1) of the block line `ID|...` of block `id` in the first function called
/// `function` of a `.debug_PT` text.
pub(crate) fn block_line(text: &[u8], function: &str, id: u64) -> Option<u64> {
    // 0: between functions; 1: after `#`; 2: in the function's blocks; 3: in another's.
    let mut state = 0;
    for (n, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = trim(raw);
        if line.is_empty() {
            continue;
        }
        state = match state {
            _ if line == b"#" => 1,
            1 => {
                if line == function.as_bytes() {
                    2
                } else {
                    3
                }
            }
            2 if line == b"$" => 0,
            2 => match memchr::memchr(b'|', line) {
                Some(bar) if parse_u64(&line[..bar]) == Some(id) => return Some(n as u64 + 1),
                _ => 2,
            },
            s => s,
        };
    }
    None
}

/// Lines that start with a digit: an upper bound on the blocks and edges of a text (whose
/// lines csi-cc writes without leading spaces; a line that has them is counted out, and the
/// lists grow for it).
fn numbered_lines(text: &[u8]) -> usize {
    let first = text.first().is_some_and(u8::is_ascii_digit) as usize;
    first
        + memchr::memchr_iter(b'\n', text)
            .filter(|&i| text.get(i + 1).is_some_and(u8::is_ascii_digit))
            .count()
}

fn utf8<'a>(bytes: &'a [u8], line_no: u64, place: &Place<'_>, what: &str) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|_| place.error(line_no, format!("expected {what} in UTF-8")))
}

/// The line without surrounding spaces, tabs and carriage returns.
fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\r', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut n: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(n)
}

fn parse_i64(s: &[u8]) -> Option<i64> {
    match s {
        [b'-', digits @ ..] => {
            let n = parse_u64(digits)?;
            if n <= i64::MAX as u64 + 1 {
                Some((n as i64).wrapping_neg())
            } else {
                None
            }
        }
        _ => parse_u64(s).and_then(|n| i64::try_from(n).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_table_dense_shifted_and_sparse() {
        let mut t = IdTable::default();
        assert!(t.insert(3, 0) && t.insert(2, 1) && t.insert(4, 2));
        assert!(!t.insert(2, 9), "a repeated id is refused");
        assert_eq!(
            (t.get(2), t.get(3), t.get(4), t.get(5), t.get(0)),
            (Some(1), Some(0), Some(2), None, None)
        );
        assert!(t.insert(1 << 40, 3), "a far id switches to the map");
        assert!(t.sparse.is_some());
        assert_eq!((t.get(2), t.get(1 << 40), t.get(7)), (Some(1), Some(3), None));
        assert!(!t.insert(4, 5));
        let mut u = IdTable::default();
        assert!(u.insert(100_000, 0) && u.insert(0, 1));
        assert_eq!((u.get(0), u.get(100_000)), (Some(1), Some(0)));
    }

    #[test]
    fn numbers_and_trimming() {
        assert_eq!(parse_i64(b"-3"), Some(-3));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(trim(b" \t1|2\r"), b"1|2");
    }
}
