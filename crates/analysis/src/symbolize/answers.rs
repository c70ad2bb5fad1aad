//! The answers of a look-up of many addresses, in memory that follows the debug information.
//!
//! A million addresses of a 45 MB Rust binary name 6,468 functions and 110,525 distinct inline
//! chains: what each address gets is a small record of indices (24 bytes) into tables that
//! hold each name, file, function and inline chain once. Without the tables, the answers
//! held each inline chain per address, and memory grew with addresses times frames (830 of
//! the 935 MB of a million addresses of a 44 MB binary).
//!
//! The addresses are looked up in contiguous runs side by side, each run with its own DWARF
//! context and its own tables; the runs' tables are then merged into one, and the records
//! renumbered.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use hashbrown::HashTable;
use rayon::prelude::*;
use rustc_hash::FxBuildHasher;

use super::{Lookup, Symbolizer};
use cfghub_model::ir::NO_INDEX;

/// What one address gets: indices into [`Answers`]' tables.
#[derive(Clone, Copy, Debug)]
struct Answer {
    /// Its function: [`Answers::functions`].
    function: u32,
    /// The innermost frame's file ([`Answers::strings`], or [`NO_INDEX`]) and line.
    file: u32,
    line: Option<u32>,
    /// Inlined frames, innermost first, without the outermost function: [`Answers::chains`]
    /// (0: none).
    chain: u32,
    /// DWARF could not be read at the address: the symbol table answered.
    failed: bool,
}

/// The function an address falls in: shared by every address of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Function {
    /// Outermost function's name (DWARF, else the symbol table), or [`NO_INDEX`].
    name: u32,
    /// The function's own file (of its outermost frame), or [`NO_INDEX`].
    file: u32,
    /// The covering symbol's start and size (stated addresses).
    start: Option<u64>,
    size: Option<u64>,
}

/// An inlined frame: its function's name and its file ([`Answers::strings`], or [`NO_INDEX`]),
/// and line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ChainFrame {
    pub function: u32,
    pub file: u32,
    pub line: Option<u32>,
}

/// A list that holds each distinct item once, with the index of each: the lookup holds
/// indices into the list (4 bytes an item), hashed by the item they name.
struct Interned<T: Hash + Eq> {
    items: Vec<T>,
    ids: HashTable<u32>,
}

impl<T: Hash + Eq> Default for Interned<T> {
    fn default() -> Self {
        Interned { items: Vec::new(), ids: HashTable::new() }
    }
}

fn hash<Q: Hash + ?Sized>(item: &Q) -> u64 {
    FxBuildHasher.hash_one(item)
}

impl<T: Hash + Eq> Interned<T> {
    /// The index of an item equal to `item` (which hashes as the item would), if any.
    fn find<Q>(&self, item: &Q) -> Option<u32>
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.ids.find(hash(item), |&i| self.items[i as usize].borrow() == item).copied()
    }

    fn id(&mut self, item: T) -> u32 {
        let h = hash(&item);
        if let Some(&id) = self.ids.find(h, |&i| self.items[i as usize] == item) {
            return id;
        }
        let id = self.items.len() as u32;
        self.items.push(item);
        let items = &self.items;
        self.ids.insert_unique(h, id, |&i| hash(&items[i as usize]));
        id
    }
}

/// The tables of one run of look-ups (and, merged, of all).
#[derive(Default)]
struct Tables {
    strings: Interned<Arc<str>>,
    functions: Interned<Function>,
    chains: Interned<Arc<[ChainFrame]>>,
    /// The chain being built (one allocation for every look-up of a run).
    chain: Vec<ChainFrame>,
}

impl Tables {
    fn new() -> Tables {
        let mut t = Tables::default();
        t.chains.id(Arc::from(Vec::new()));
        t
    }

    /// The index of the chain in [`Tables::chain`].
    fn chain_id(&mut self) -> u32 {
        match self.chains.find(self.chain.as_slice()) {
            Some(id) => id,
            None => self.chains.id(Arc::from(self.chain.as_slice())),
        }
    }

    fn string(&mut self, s: Option<String>) -> u32 {
        let Some(s) = s else { return NO_INDEX };
        match self.strings.find(s.as_str()) {
            Some(id) => id,
            None => self.strings.id(Arc::from(s)),
        }
    }
}

/// The answers of `offsets` (sorted, distinct), one per address in their order.
pub(crate) struct Answers {
    of: Vec<Answer>,
    strings: Vec<Arc<str>>,
    functions: Vec<Function>,
    chains: Vec<Arc<[ChainFrame]>>,
}

impl Answers {
    /// Looks up every address (`stated` turns a model offset into a stated address), in
    /// contiguous runs side by side.
    pub(crate) fn look_up(
        sym: &Symbolizer,
        offsets: &[u64],
        stated: &(dyn Fn(u64) -> Option<u64> + Sync),
        inline: bool,
    ) -> Answers {
        let threads = rayon::current_num_threads().max(1);
        let run = offsets.len().div_ceil(threads * 4).max(256);
        let units = if offsets.len() > run { sym.unit_ranges() } else { Vec::new() };
        let runs: Vec<(Tables, Vec<Answer>)> = runs(offsets, stated, &units, run)
            .into_par_iter()
            .map(|chunk| {
                let lookup = sym.lookup();
                let mut tables = Tables::new();
                // Room for a function and a name per address (5 bytes each): growing the
                // tables as a million functions arrive rehashes them many times over.
                tables.functions.ids.reserve(chunk.len(), |&i| hash(&tables.functions.items[i as usize]));
                tables.strings.ids.reserve(chunk.len(), |&i| hash(&tables.strings.items[i as usize]));
                let answers =
                    chunk.iter().map(|&o| answer(sym, &lookup, &mut tables, stated(o), inline)).collect();
                (tables, answers)
            })
            .collect();
        merge(runs)
    }

    /// Number of addresses.
    pub fn len(&self) -> usize {
        self.of.len()
    }

    fn function(&self, a: usize) -> &Function {
        &self.functions[self.of[a].function as usize]
    }

    /// A string of the tables (a name or a file), `None` for [`NO_INDEX`].
    pub fn string(&self, id: u32) -> Option<&Arc<str>> {
        self.strings.get(id as usize)
    }

    /// Number of functions: every [`Answers::function_id`] is below it.
    pub(crate) fn function_count(&self) -> usize {
        self.functions.len()
    }

    /// Number of strings in the tables: every string id is below it.
    pub(crate) fn string_count(&self) -> usize {
        self.strings.len()
    }

    /// Address `a`'s function name.
    pub fn name(&self, a: usize) -> Option<&Arc<str>> {
        self.string(self.function(a).name)
    }

    /// Address `a`'s function: an index equal for every address of one function.
    pub fn function_id(&self, a: usize) -> u32 {
        self.of[a].function
    }

    /// The start and size of the symbol covering address `a`.
    pub fn start(&self, a: usize) -> Option<u64> {
        self.function(a).start
    }

    pub fn size(&self, a: usize) -> Option<u64> {
        self.function(a).size
    }

    /// Address `a`'s file (of its innermost frame) and its function's own file, as string ids.
    pub fn file_id(&self, a: usize) -> u32 {
        self.of[a].file
    }

    pub(crate) fn function_file_id(&self, a: usize) -> u32 {
        self.function(a).file
    }

    pub fn line(&self, a: usize) -> Option<u32> {
        self.of[a].line
    }

    pub fn failed(&self, a: usize) -> bool {
        self.of[a].failed
    }

    /// Address `a`'s inlined frames, innermost first, and their chain's index (0: none),
    /// equal for addresses with equal chains.
    pub fn chain(&self, a: usize) -> &[ChainFrame] {
        &self.chains[self.of[a].chain as usize]
    }

    pub(crate) fn chain_id(&self, a: usize) -> u32 {
        self.of[a].chain
    }

    /// Distinct (start, name) pairs of the functions named.
    pub(crate) fn distinct_functions(&self) -> usize {
        let mut named: Vec<(Option<u64>, &str)> =
            self.functions.iter().filter_map(|f| Some((f.start, self.string(f.name)?.as_ref()))).collect();
        named.sort_unstable();
        named.dedup();
        named.len()
    }
}

/// `offsets` cut into runs of about `size` addresses, each run ending where a compilation unit
/// does (`units`: [`Symbolizer::unit_ranges`]), so that each unit is parsed by one run's
/// context only.
fn runs<'o>(
    offsets: &'o [u64],
    stated: &(dyn Fn(u64) -> Option<u64> + Sync),
    units: &[(u64, u64, usize)],
    size: usize,
) -> Vec<&'o [u64]> {
    let unit_of = |offset: u64| {
        let address = stated(offset)?;
        let k = units.partition_point(|u| u.0 <= address);
        let (_, end, unit) = *units.get(k.checked_sub(1)?)?;
        (address < end).then_some(unit)
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < offsets.len() {
        let mut end = (start + size).min(offsets.len());
        if let Some(unit) = offsets.get(end).and_then(|_| unit_of(offsets[end - 1])) {
            while end < offsets.len() && unit_of(offsets[end]) == Some(unit) {
                end += 1;
            }
        }
        out.push(&offsets[start..end]);
        start = end;
    }
    out
}

/// One table of the runs' tables, and each run's answers renumbered into it.
fn merge(mut runs: Vec<(Tables, Vec<Answer>)>) -> Answers {
    if runs.len() == 1 {
        // One run (one compilation unit, or few addresses): its tables are already all.
        let (tables, of) = runs.pop().expect("one run");
        return Answers {
            of,
            strings: tables.strings.items,
            functions: tables.functions.items,
            chains: tables.chains.items,
        };
    }
    let mut all = Tables::new();
    let mut of = Vec::with_capacity(runs.iter().map(|r| r.1.len()).sum());
    for (tables, answers) in runs {
        let strings: Vec<u32> = tables.strings.items.into_iter().map(|s| all.strings.id(s)).collect();
        let string = |id: u32| if id == NO_INDEX { NO_INDEX } else { strings[id as usize] };
        let functions: Vec<u32> = tables
            .functions
            .items
            .into_iter()
            .map(|f| all.functions.id(Function { name: string(f.name), file: string(f.file), ..f }))
            .collect();
        let chains: Vec<u32> = tables
            .chains
            .items
            .into_iter()
            .map(|c| {
                all.chain.clear();
                all.chain.extend(c.iter().map(|f| ChainFrame {
                    function: string(f.function),
                    file: string(f.file),
                    line: f.line,
                }));
                all.chain_id()
            })
            .collect();
        of.extend(answers.into_iter().map(|a| Answer {
            function: functions[a.function as usize],
            file: string(a.file),
            chain: chains[a.chain as usize],
            ..a
        }));
    }
    Answers { of, strings: all.strings.items, functions: all.functions.items, chains: all.chains.items }
}

/// The answer for one stated address (`None`: none, as for an address outside the file).
fn answer(
    sym: &Symbolizer,
    lookup: &Lookup,
    tables: &mut Tables,
    address: Option<u64>,
    inline: bool,
) -> Answer {
    let no_function = Function { name: NO_INDEX, file: NO_INDEX, start: None, size: None };
    let mut a = Answer { function: 0, file: NO_INDEX, line: None, chain: 0, failed: false };
    let Some(address) = address else {
        a.function = tables.functions.id(no_function);
        return a;
    };
    // The covering symbol, found once; its name only where DWARF gives none: demangling costs
    // more than the look-up.
    let symbol = sym.symbol_at(address);
    let range = symbol.map(|s| sym.symbol_range(s));
    let mut function = Function { start: range.map(|r| r.0), size: range.map(|r| r.1), ..no_function };
    let hit = || symbol.map(|s| sym.symbol_hit(s).name);
    match lookup.find_frames(address) {
        Ok(mut frames) if !frames.is_empty() => {
            let outer = frames.pop().expect("not empty");
            // The innermost frame's file and line are the address's; without inlined frames,
            // the function's own.
            function.file = match frames.first() {
                Some(innermost) => {
                    a.file = tables.string(innermost.position.file.clone());
                    a.line = innermost.position.line;
                    tables.string(outer.position.file)
                }
                None => {
                    a.file = tables.string(outer.position.file);
                    a.line = outer.position.line;
                    a.file
                }
            };
            function.name = tables.string(match outer.function {
                // A bare DWARF name (a member without its class): the symbol table's, qualified.
                Some(n) if !n.contains("::") => symbol.and_then(|s| lookup.qualified_name(s, &n)).or(Some(n)),
                Some(n) => Some(n),
                None => hit(),
            });
            if inline && !frames.is_empty() {
                tables.chain.clear();
                for f in frames {
                    let frame = ChainFrame {
                        function: tables.string(f.function),
                        file: tables.string(f.position.file),
                        line: f.position.line,
                    };
                    tables.chain.push(frame);
                }
                a.chain = tables.chain_id();
            }
        }
        Ok(_) => {
            function.name = tables.string(hit());
            if let Ok(Some(loc)) = lookup.find_location(address) {
                a.file = tables.string(loc.file);
                a.line = loc.line;
            }
        }
        Err(_) => {
            a.failed = true;
            function.name = tables.string(hit());
        }
    }
    a.function = tables.functions.id(function);
    a
}
