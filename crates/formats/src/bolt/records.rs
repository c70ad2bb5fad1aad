//! What the BOLT forms share: the binary's function symbols, and the records a model gives
//! (taken branches and fall-throughs between instruction addresses).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use cfghub_analysis::addresses::ElfLayout;
use cfghub_analysis::machine_code::{BinaryCode, FunctionCode};
use cfghub_analysis::names::{ChosenBinary, SymbolIndex};
use cfghub_analysis::repeats::add_up;
use cfghub_analysis::symbolize::elf::ElfFile;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{BlockRef, EdgeKind, Image, NodeRef, Process, Profile, Symbol};
use object::{Object, ObjectSymbol, SymbolKind};

/// The function symbols of a binary with the names BOLT gives them: a local (static)
/// function is `name/N`, the N-th local function of that name in the symbol table (BOLT also
/// takes `name/FILE/N`), and an entry of the PLT is `name@PLT`, after the function it jumps to.
pub(crate) struct BinarySymbols {
    /// By address; `name` is BOLT's.
    pub symbols: Vec<Symbol>,
    /// Indices into `symbols` sorted by name, the first of each name first (a map of
    /// copies of the names took 4 MB more for the 31,000 symbols of `cc1plus`).
    by_name: Vec<u32>,
    /// Where its segments go, to turn image offsets into its addresses.
    pub layout: ElfLayout,
}

impl BinarySymbols {
    pub fn open(path: &Path) -> Result<BinarySymbols> {
        let elf = ElfFile::open(path)?;
        let mut found: Vec<(u64, u64, String)> = Vec::new();
        let mut locals: HashMap<&str, u32> = HashMap::new();
        for s in elf.object.symbols().chain(elf.object.dynamic_symbols()) {
            if s.kind() != SymbolKind::Text || !s.is_definition() || s.address() == 0 {
                continue;
            }
            let Ok(name) = s.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let name = if s.is_local() {
                let n = locals.entry(name).or_default();
                *n += 1;
                format!("{name}/{n}")
            } else {
                name.to_string()
            };
            found.push((s.address(), s.size(), name));
        }
        // PLT stubs are functions of their own to BOLT (and so to perf2bolt); without them
        // a sample in the PLT would fall in the sizeless symbol before it (`_init`).
        let entries = super::plt::bolt_plt_entries(&elf);
        for entry in &entries {
            if !entry.raw.is_empty() {
                found.push((entry.start, entry.end - entry.start, format!("{}@PLT", entry.raw)));
            }
        }
        if let Some((start, end)) = super::plt::bolt_plt_header(&elf, &entries) {
            found.push((start, end - start, "__BOLT_PSEUDO_.plt".to_string()));
        }
        found.sort();
        found.dedup_by(|a, b| a.0 == b.0 && a.2 == b.2);
        if found.is_empty() {
            return Err(Error::input(format!("{}: no function symbols", path.display()))
                .with_hint("BOLT profiles name functions: give an unstripped binary"));
        }
        // A symbol without a size (crt code) ends where the next one starts.
        for k in 0..found.len() {
            if found[k].1 == 0 {
                let next = found[k + 1..].iter().map(|f| f.0).find(|&a| a > found[k].0);
                found[k].1 = next.map_or(1, |n| n - found[k].0);
            }
        }
        let symbols: Vec<Symbol> = found
            .into_iter()
            .map(|(address, size, name)| Symbol { name, offset: Some(address), size: Some(size), file: None })
            .collect();
        Ok(BinarySymbols::new(symbols, ElfLayout::of(&elf)))
    }

    /// The symbols (sorted by address) of a binary laid out as `layout`.
    fn new(symbols: Vec<Symbol>, layout: ElfLayout) -> BinarySymbols {
        let mut by_name: Vec<u32> = (0..symbols.len() as u32).collect();
        by_name.sort_by(|&a, &b| symbols[a as usize].name.cmp(&symbols[b as usize].name).then(a.cmp(&b)));
        BinarySymbols { symbols, by_name, layout }
    }

    /// The symbol a BOLT name stands for: `name`, `name/N`, or `name/FILE/N`.
    pub fn find(&self, name: &str) -> Option<u32> {
        if let Some(k) = self.named(name) {
            return Some(k);
        }
        let (rest, n) = name.rsplit_once('/')?;
        let base = rest.split('/').next()?;
        self.named(&format!("{base}/{n}")).or_else(|| self.named(base))
    }

    /// The first symbol (by address) named `name` exactly.
    fn named(&self, name: &str) -> Option<u32> {
        let at = self.by_name.partition_point(|&k| self.symbols[k as usize].name.as_str() < name);
        self.by_name.get(at).copied().filter(|&k| self.symbols[k as usize].name == name)
    }
}

/// One record of a BOLT profile: a branch taken, or a fall-through from the last instruction
/// of one block to the first of the next, between offsets into the chosen binary (40 bytes a
/// record: with an image number beside each offset they took 56, and the fdata of the 21 MB
/// `cc1plus` Callgrind profile peaked 3.5 MB higher).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record {
    /// Offset of the branch (or of the block's last instruction, for a fall-through).
    pub from: u64,
    /// Offset of the target (or of the next block's first instruction).
    pub to: u64,
    /// Whether the record is a fall-through rather than a branch taken.
    pub fall_through: bool,
    /// Times the branch was taken or the fall-through executed.
    pub count: u64,
    /// Times the branch was mispredicted.
    pub mispredicts: u64,
}

impl Record {
    /// Adds `other`'s counts to this record's (saturating).
    pub fn add(&mut self, other: &Record) {
        self.count = self.count.saturating_add(other.count);
        self.mispredicts = self.mispredicts.saturating_add(other.mispredicts);
    }
}

/// The records of the edges between blocks of the chosen binary ([`ChosenBinary`]: its image
/// in every process that loaded it, added up as perf2bolt adds up the processes of a binary),
/// repeats added up, sorted by source; offsets are into the first place's image. Calls and
/// branches are taken branches from the source block's last instruction to the target
/// block's first; fall-throughs the same with `fall_through` set. Left out as perf2bolt
/// leaves them out: returns (BOLT takes a function's exits from its code), and with
/// `fdata` the fall-through into a lone unconditional jump after a conditional one (BOLT
/// ends one block with the pair; perf2bolt reads the pre-aggregated form's fall-through
/// into it and writes none). With `fdata`, a fall-through rebuilt from branch records is
/// counted as the records state it ([`cfghub_model::ir::Edge::stated`]), as perf2bolt
/// counts the traces it saw; and a call's bypass is written as the fall-through BOLT reads
/// from traces that start just after the call ([`cfghub_model::ir::RecordedRuns::over_call`]), where
/// the records state one. Left out too: other call bypasses, edges counted
/// zero times and, named in a warning, edges to or from other images (shared libraries) and
/// edges between functions rather than blocks.
pub(crate) fn model_records(
    profile: &Profile,
    binary: &ChosenBinary,
    fdata: bool,
    findings: &mut Findings,
) -> Vec<Record> {
    let mut out = Vec::new();
    let (mut between_functions, mut other_images) = (0u64, 0u64);
    for (p, process) in profile.processes.iter().enumerate() {
        let here = binary.places.iter().find(|&&(q, _)| q == p).map(|&(_, i)| i);
        let paired = match (here, fdata) {
            (Some(_), true) => jumps_paired_with_conditionals(process),
            _ => HashSet::new(),
        };
        for e in &process.edges {
            let count = match e.kind {
                EdgeKind::FallThrough if fdata => e.stated(),
                // BOLT's blocks hold calls: a run on from a call is a fall-through to it.
                EdgeKind::CallBypass if fdata => e.details.as_ref().map_or(0, |d| d.over_call()),
                _ => e.total(),
            };
            let over_call = e.kind == EdgeKind::CallBypass && count > 0;
            if count == 0 || (e.kind.is_bypass() && !over_call) || e.kind.is_return() {
                continue;
            }
            if let (EdgeKind::FallThrough, NodeRef::Block(t)) = (e.kind, e.target) {
                if paired.contains(&t) {
                    continue;
                }
            }
            let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else {
                // A transfer whose target never ran as far as the profile saw (Valgrind counts
                // no instruction of the block in which the process exits): its site still
                // says from where to where it went.
                let site = e.site().and_then(|site| Some((site.source_offset()?, site.target_offset()?)));
                match (e.source, e.target, site) {
                    (NodeRef::Symbol(a), NodeRef::Symbol(b), _)
                        if Some(a.image) != here || Some(b.image) != here =>
                    {
                        other_images += 1
                    }
                    (NodeRef::Symbol(_), NodeRef::Symbol(_), Some((from, to))) => {
                        let fall_through = e.kind == EdgeKind::FallThrough;
                        out.push(Record { from, to, fall_through, count, mispredicts: e.mispredicts() });
                    }
                    (NodeRef::Symbol(_), _, _) | (_, NodeRef::Symbol(_), _) => between_functions += 1,
                    _ => {}
                }
                continue;
            };
            if Some(s.image) != here || Some(t.image) != here {
                other_images += 1;
                continue;
            }
            let (sb, tb) = (process.block(s), process.block(t));
            out.push(Record {
                from: sb.last_instr(),
                to: tb.offset,
                fall_through: e.kind == EdgeKind::FallThrough || over_call,
                count,
                mispredicts: e.mispredicts(),
            });
        }
    }
    if between_functions > 0 {
        findings.warn(
            None,
            format!(
                "{between_functions} edges join functions, not blocks (a profile without instruction \
                 addresses): left out"
            ),
        );
    }
    if other_images > 0 {
        let (p, i) = binary.places[0];
        let name = profile.image_name(&profile.processes[p].images[i as usize]);
        findings.detail(
            None,
            format!(
                "{other_images} edges to or from images other than {name} left out (BOLT optimizes one \
                 binary): {}",
                binary.left_out_note()
            ),
        );
    }
    add_up(&mut out, |r| (r.from, r.to, r.fall_through), Record::add);
    out
}

/// Adds to `records` (sorted as [`model_records`] leaves them) the fall-throughs between
/// BOLT's blocks inside the blocks of the chosen binary ([`Namer::fall_throughs_inside`]),
/// each as often as its block ran, added up with the rest.
pub(crate) fn add_fall_throughs_inside_blocks(
    profile: &Profile,
    binary: &ChosenBinary,
    namer: &Namer,
    records: &mut Vec<Record>,
) {
    let blocks = binary.places.iter().flat_map(|&(p, i)| &profile.processes[p].images[i as usize].blocks);
    let inside = namer.fall_throughs_inside(
        blocks.filter_map(|b| Some((b.offset, b.last_instr(), b.count.filter(|&c| c > 0)?))),
    );
    if !inside.is_empty() {
        records.extend(inside);
        add_up(records, |r| (r.from, r.to, r.fall_through), Record::add);
    }
}

/// Blocks of one instruction that only jump on, reached only by falling through from a block
/// that ends in a conditional branch: BOLT sees `jcc A; jmp B` as the two exits of one block.
fn jumps_paired_with_conditionals(process: &Process) -> HashSet<BlockRef> {
    let counted = |e: &&cfghub_model::ir::Edge| !e.kind.is_bypass() && e.kind != EdgeKind::CallBypass;
    // Blocks numbered process-wide.
    let mut base = Vec::with_capacity(process.images.len());
    let mut n = 0usize;
    for image in &process.images {
        base.push(n);
        n += image.blocks.len();
    }
    let at = |r: BlockRef| base[r.image as usize] + r.block as usize;
    // Per block: whether every edge out is a plain jump, whether one is conditional, edges
    // in, and whether the last edge in falls through from a conditional.
    let mut only_jumps = vec![true; n];
    let mut jumps = vec![false; n];
    let mut conditional = vec![false; n];
    for e in process.edges.iter().filter(counted) {
        if let NodeRef::Block(s) = e.source {
            let plain_jump = !e.kind.is_call()
                && !e.kind.is_return()
                && e.kind != EdgeKind::FallThrough
                && !e.kind.is_conditional();
            only_jumps[at(s)] &= plain_jump;
            jumps[at(s)] = true;
            conditional[at(s)] |= e.kind.is_conditional();
        }
    }
    let mut incoming = vec![(0u32, false); n];
    for e in process.edges.iter().filter(counted) {
        if let NodeRef::Block(t) = e.target {
            let slot = &mut incoming[at(t)];
            slot.0 = slot.0.saturating_add(1);
            slot.1 = e.kind == EdgeKind::FallThrough
                && matches!(e.source, NodeRef::Block(s) if conditional[at(s)]);
        }
    }
    let mut out = HashSet::new();
    for (i, image) in process.images.iter().enumerate() {
        for (k, block) in image.blocks.iter().enumerate() {
            let g = base[i] + k;
            if incoming[g] == (1, true) && block.num_instrs == 1 && jumps[g] && only_jumps[g] {
                out.insert(BlockRef { image: i as u32, block: k as u32 });
            }
        }
    }
    out
}

/// Names the binary image's addresses by function and offset: by the binary's own symbol
/// table, with BOLT's names for local functions, when the binary (`--symbols`, else the
/// image's file) is an ELF file that can be read; else by the model's symbols.
pub(crate) struct Namer<'a> {
    image: &'a Image,
    model: SymbolIndex,
    binary: Option<(BinarySymbols, SymbolIndex)>,
    /// The binary's file, when it was read.
    path: Option<&'a Path>,
}

impl<'a> Namer<'a> {
    /// `binary`: the file `--symbols` named, else the image's own file is tried.
    pub fn new(profile: &'a Profile, image: &'a Image, binary: Option<&'a Path>) -> Namer<'a> {
        let path =
            binary.or_else(|| image.file.map(|f| Path::new(profile.file_name(f)))).filter(|p| p.is_file());
        let binary = path.and_then(|p| BinarySymbols::open(p).ok()).map(|b| {
            let index = SymbolIndex::of(&b.symbols);
            (b, index)
        });
        Namer { image, model: SymbolIndex::new(image), path: binary.as_ref().and(path), binary }
    }

    /// The fall-throughs between BOLT's blocks inside the code of `blocks` (image offsets of
    /// each block's first and last instruction, with its executions), as records: a profile
    /// whose blocks end only where its input saw control leave (Valgrind states no jump a
    /// conditional never took; a DCFG's blocks are Pin's) runs straight through places where
    /// BOLT starts a block (the target of that conditional), and BOLT counts a block entered
    /// only as records say. Empty without the binary's code.
    pub fn fall_throughs_inside(&self, blocks: impl Iterator<Item = (u64, u64, u64)>) -> Vec<Record> {
        let (Some((b, index)), Some(code)) = (&self.binary, self.path.and_then(BinaryCode::open)) else {
            return Vec::new();
        };
        // Blocks come in address order, a function's together: its code is decoded once, and
        // let go for the next (kept, the decoded functions of cc1plus took 60 MB).
        let mut decoded: Option<(u64, Option<FunctionCode>)> = None;
        let mut out = Vec::new();
        for (start, last, count) in blocks {
            let (a, z) = (b.layout.address(self.image, start), b.layout.address(self.image, last));
            let Some(s) = index.covering(a).map(|k| &b.symbols[k as usize]) else { continue };
            let (Some(at), Some(size)) = (s.offset, s.size) else { continue };
            if decoded.as_ref().is_none_or(|d| d.0 != at) {
                decoded = Some((at, code.function_at_address(at, size)));
            }
            let function = decoded.as_ref().and_then(|d| d.1.as_ref());
            let Some(pairs) = function.and_then(|f| f.fall_throughs(a, z)) else { continue };
            for (from, to) in pairs {
                // A run that starts in the padding after its block's last instruction (a
                // profile of another build's addresses can) leaves from before its start:
                // no record of it.
                let (Some(from), Some(to)) = (from.checked_sub(a), to.checked_sub(a)) else { continue };
                out.push(Record {
                    from: start + from,
                    to: start + to,
                    fall_through: true,
                    count,
                    mispredicts: 0,
                });
            }
        }
        out
    }

    /// The function covering an image offset, and the offset into it.
    pub fn name(&self, offset: u64) -> Option<(&str, u64)> {
        if let Some((b, index)) = &self.binary {
            let address = b.layout.address(self.image, offset);
            let s = &b.symbols[index.covering(address)? as usize];
            return Some((s.name.as_str(), address - s.offset?));
        }
        let s = &self.image.symbols[self.model.covering(offset)? as usize];
        Some((s.name.as_str(), offset - s.offset?))
    }
}

/// The whitespace-separated fields of a line with their 1-based columns.
pub fn fields(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_ascii_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s + 1, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_analysis::names::choose_binary;
    use cfghub_model::ir::{Block, Counts, Edge};

    /// A process with `app` (a conditional branch taken `count` times) and, when `with_lib`,
    /// `libc.so.6` with a call into it.
    fn process(profile: &mut Profile, pid: u64, count: u64, with_lib: bool) -> Process {
        let block =
            |id, offset| Block { id, offset, size: 4, num_instrs: 2, last_instr_offset: 2, count: None };
        let app = Image {
            id: 1,
            file: Some(profile.files.intern("/bin/app")),
            blocks: vec![block(10, 0x10), block(11, 0x20)],
            ..Image::default()
        };
        let at = |image, block| NodeRef::Block(BlockRef { image, block });
        let mut edges = vec![Edge {
            source: at(0, 0),
            target: at(0, 1),
            kind: EdgeKind::ConditionalBranch,
            counts: Counts::from_slice(&[count]),
            ..Edge::default()
        }];
        let mut images = vec![app];
        if with_lib {
            let libc = profile.files.intern("/lib/libc.so.6");
            images.push(Image {
                id: 2,
                file: Some(libc),
                blocks: vec![block(20, 0x100)],
                ..Image::default()
            });
            edges.push(Edge {
                source: at(0, 1),
                target: at(1, 0),
                kind: EdgeKind::DirectCall,
                counts: Counts::from_slice(&[3]),
                ..Edge::default()
            });
        }
        Process { pid, images, edges, ..Process::default() }
    }

    #[test]
    fn the_binary_is_added_up_over_processes_and_other_images_are_named() {
        let mut profile = Profile::default();
        let first = process(&mut profile, 1, 5, true);
        let second = process(&mut profile, 2, 7, false);
        profile.processes = vec![first, second];
        let chosen = choose_binary(&profile, None, None).unwrap().unwrap();
        assert_eq!(chosen.places, vec![(0, 0), (1, 0)]);
        assert_eq!(chosen.others, vec!["/lib/libc.so.6".to_string()]);
        let mut findings = Findings::default();
        let records = model_records(&profile, &chosen, false, &mut findings);
        assert_eq!(records.len(), 1);
        assert_eq!((records[0].from, records[0].to, records[0].count), (0x12, 0x20, 12));
        // One binary is what a BOLT profile is: said as a note (`-v`), not a warning.
        assert_eq!(findings.warnings().count(), 0);
        let warning = findings.details().map(|w| w.message.clone()).collect::<Vec<_>>().join("\n");
        assert!(warning.contains("1 edges to or from images other than /bin/app"), "{warning}");
        assert!(warning.contains("/lib/libc.so.6; write one of them with --image NAME"), "{warning}");
        // The library instead, by its base name or its id.
        for name in ["libc.so.6", "2", "/lib/libc.so.6"] {
            let libc = choose_binary(&profile, Some(name), None).unwrap().unwrap();
            assert_eq!(
                (libc.places.clone(), libc.others.clone()),
                (vec![(0, 1)], vec!["/bin/app".to_string()])
            );
            assert!(model_records(&profile, &libc, false, &mut Findings::default()).is_empty());
        }
        let err = choose_binary(&profile, Some("libm.so.6"), None).unwrap_err();
        assert!(err.hint.unwrap().contains("/bin/app, /lib/libc.so.6"));
        // `--symbols` naming the library's file picks it.
        let by_file = choose_binary(&profile, None, Some(Path::new("/tmp/copy/libc.so.6"))).unwrap().unwrap();
        assert_eq!(by_file.places, vec![(0, 1)]);
    }

    #[test]
    fn bolt_names_find_the_first_symbol_of_the_name_with_or_without_its_file() {
        let names = ["foo/1", "bar", "foo/2", "bar", "baz"];
        let symbols = names
            .iter()
            .enumerate()
            .map(|(k, n)| Symbol {
                name: n.to_string(),
                offset: Some(k as u64 * 16),
                size: Some(16),
                file: None,
            })
            .collect();
        let binary = BinarySymbols::new(symbols, ElfLayout::default());
        let found = |name| binary.find(name);
        assert_eq!(found("foo/2"), Some(2));
        assert_eq!(found("foo/a.c/2"), Some(2), "name/FILE/N is name/N");
        assert_eq!(found("bar"), Some(1), "the first of a repeated name, by address");
        assert_eq!(found("baz/3"), Some(4), "a global named with a number is the global");
        assert_eq!(found("foo"), None);
        assert_eq!(found("qux/1"), None);
    }

    /// A call's bypass is a fall-through to fdata where branch records state runs on from the
    /// call (perf2bolt's traces after it), and nothing to bolt-pa (whose records say it
    /// themselves) nor where they state none.
    #[test]
    fn a_call_bypass_is_a_fall_through_where_runs_on_from_the_call_are_stated() {
        let mut profile = Profile::default();
        let mut p = process(&mut profile, 1, 5, false);
        let bypass = |over_call| Edge {
            source: NodeRef::Block(BlockRef { image: 0, block: 0 }),
            target: NodeRef::Block(BlockRef { image: 0, block: 1 }),
            kind: EdgeKind::CallBypass,
            details: (over_call > 0).then(|| {
                let mut d = Box::<cfghub_model::ir::EdgeDetails>::default();
                d.runs_mut().over_call = over_call;
                d
            }),
            ..Edge::default()
        };
        p.edges = vec![bypass(4)];
        profile.processes = vec![p];
        let chosen = choose_binary(&profile, None, None).unwrap().unwrap();
        let records = model_records(&profile, &chosen, true, &mut Findings::default());
        let got: Vec<_> = records.iter().map(|r| (r.from, r.to, r.fall_through, r.count)).collect();
        assert_eq!(got, vec![(0x12, 0x20, true, 4)]);
        assert!(model_records(&profile, &chosen, false, &mut Findings::default()).is_empty());
        profile.processes[0].edges = vec![bypass(0)];
        assert!(model_records(&profile, &chosen, true, &mut Findings::default()).is_empty());
    }
}
