//! What the BOLT forms share: the binary's function symbols, and the records a model gives
//! (taken branches and fall-throughs between instruction addresses).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::analysis::names::SymbolIndex;
use crate::error::{Error, Findings, Result};
use crate::ir::{BlockRef, EdgeKind, Image, NodeRef, Process, Profile, Symbol};
use crate::symbolize::elf::ElfFile;
use object::{Object, ObjectSymbol, SymbolKind};

/// The function symbols of a binary with the names BOLT gives them: a local (static)
/// function is `name/N`, the N-th local function of that name in the symbol table (BOLT also
/// takes `name/FILE/N`).
pub struct BinarySymbols {
    /// By address; `name` is BOLT's.
    pub symbols: Vec<Symbol>,
    by_name: HashMap<String, u32>,
    /// The lowest address a segment is loaded at (0 for a position-independent executable).
    pub base: u64,
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
        let mut by_name = HashMap::new();
        let symbols: Vec<Symbol> = found
            .into_iter()
            .enumerate()
            .map(|(k, (address, size, name))| {
                by_name.entry(name.clone()).or_insert(k as u32);
                Symbol { name, offset: Some(address), size: Some(size), file: None }
            })
            .collect();
        let base = elf.segments().iter().filter(|s| s.size > 0).map(|s| s.address).min().unwrap_or(0);
        Ok(BinarySymbols { symbols, by_name, base })
    }

    /// The symbol a BOLT name stands for: `name`, `name/N`, or `name/FILE/N`.
    pub fn find(&self, name: &str) -> Option<u32> {
        if let Some(&k) = self.by_name.get(name) {
            return Some(k);
        }
        let (rest, n) = name.rsplit_once('/')?;
        let base = rest.split('/').next()?;
        self.by_name.get(&format!("{base}/{n}")).or_else(|| self.by_name.get(base)).copied()
    }
}

/// One record of a BOLT profile: a branch taken, or a fall-through from the last instruction
/// of one block to the first of the next, between (image, offset) addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record {
    pub from: (u32, u64),
    pub to: (u32, u64),
    pub fall_through: bool,
    pub count: u64,
    pub mispredicts: u64,
}

/// The image a BOLT profile is of: BOLT optimizes one binary. The image with a function
/// `main`, else the one whose edges were traversed most.
pub fn binary_image(process: &Process) -> Option<u32> {
    if let Some(i) =
        process.images.iter().position(|i| i.symbols.iter().any(|s| s.name == "main" && s.offset.is_some()))
    {
        return Some(i as u32);
    }
    let mut traversals = vec![0u64; process.images.len()];
    for e in &process.edges {
        if let NodeRef::Block(s) = e.source {
            traversals[s.image as usize] = traversals[s.image as usize].saturating_add(e.total());
        }
    }
    let costs = |i: &Image| i.costs.len() as u64;
    (0..process.images.len()).max_by_key(|&i| (traversals[i], costs(&process.images[i]))).map(|i| i as u32)
}

/// The records of the first process's edges between blocks of its binary's image
/// ([`binary_image`]), repeats added up, sorted by source. Calls and branches are taken
/// branches from the source block's last instruction to the target block's first;
/// fall-throughs the same with `fall_through` set. Left out as perf2bolt leaves them out:
/// returns (BOLT takes a function's exits from its code), and with `pair_jumps` (`.fdata`)
/// the fall-through into a lone unconditional jump after a conditional one (BOLT ends one
/// block with the pair; perf2bolt reads the pre-aggregated form's fall-through into it and
/// writes none). Left out
/// too: call bypasses, edges counted zero times and, named in a warning, edges to or from
/// other images (shared libraries) and edges between functions rather than blocks.
pub fn model_records(profile: &Profile, pair_jumps: bool, findings: &mut Findings) -> Vec<Record> {
    let mut out = Vec::new();
    let Some(process) = profile.processes.first() else { return out };
    if profile.processes.len() > 1 {
        findings.warn(None, "BOLT profiles describe one process: only the first is written");
    }
    let Some(binary) = binary_image(process) else { return out };
    let paired = if pair_jumps { jumps_paired_with_conditionals(process) } else { HashSet::new() };
    let (mut between_functions, mut other_images) = (0u64, 0u64);
    for e in &process.edges {
        let count = e.total();
        if count == 0 || e.kind.is_bypass() || e.kind == EdgeKind::CallBypass || e.kind.is_return() {
            continue;
        }
        if let (EdgeKind::FallThrough, NodeRef::Block(t)) = (e.kind, e.target) {
            if paired.contains(&t) {
                continue;
            }
        }
        let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else {
            if matches!(e.source, NodeRef::Symbol(_)) || matches!(e.target, NodeRef::Symbol(_)) {
                between_functions += 1;
            }
            continue;
        };
        if s.image != binary || t.image != binary {
            other_images += 1;
            continue;
        }
        let (sb, tb) = (process.block(s), process.block(t));
        out.push(Record {
            from: (s.image, sb.last_instr()),
            to: (t.image, tb.offset),
            fall_through: e.kind == EdgeKind::FallThrough,
            count,
            mispredicts: e.mispredicts(),
        });
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
        let name = profile.image_name(&process.images[binary as usize]);
        findings.warn(
            None,
            format!("{other_images} edges to or from images other than {name} (BOLT optimizes one binary): left out"),
        );
    }
    out.sort_unstable_by_key(|r| (r.from, r.to, r.fall_through));
    out.dedup_by(|next, kept| {
        let same = (next.from, next.to, next.fall_through) == (kept.from, kept.to, kept.fall_through);
        if same {
            kept.count = kept.count.saturating_add(next.count);
            kept.mispredicts = kept.mispredicts.saturating_add(next.mispredicts);
        }
        same
    });
    out
}

/// Blocks of one instruction that only jump on, reached only by falling through from a block
/// that ends in a conditional branch: BOLT sees `jcc A; jmp B` as the two exits of one block.
fn jumps_paired_with_conditionals(process: &Process) -> HashSet<BlockRef> {
    let counted = |e: &&crate::ir::Edge| !e.kind.is_bypass() && e.kind != EdgeKind::CallBypass;
    // Per block: whether every edge out is a plain jump, and whether one is conditional.
    let mut out: HashMap<BlockRef, (bool, bool)> = HashMap::new();
    for e in process.edges.iter().filter(counted) {
        if let NodeRef::Block(s) = e.source {
            let plain_jump = !e.kind.is_call()
                && !e.kind.is_return()
                && e.kind != EdgeKind::FallThrough
                && !e.kind.is_conditional();
            let (only_jumps, conditional) = out.entry(s).or_insert((true, false));
            *only_jumps &= plain_jump;
            *conditional |= e.kind.is_conditional();
        }
    }
    // Per block: edges in, and whether the last one seen falls through from a conditional.
    let mut incoming: HashMap<BlockRef, (u32, bool)> = HashMap::new();
    for e in process.edges.iter().filter(counted) {
        if let NodeRef::Block(t) = e.target {
            let (n, from_conditional) = incoming.entry(t).or_default();
            *n += 1;
            *from_conditional = e.kind == EdgeKind::FallThrough
                && matches!(e.source, NodeRef::Block(s) if out.get(&s).is_some_and(|o| o.1));
        }
    }
    incoming
        .into_iter()
        .filter(|&(t, (n, from_conditional))| {
            n == 1 && from_conditional && process.block(t).num_instrs == 1 && out.get(&t).is_some_and(|o| o.0)
        })
        .map(|(t, _)| t)
        .collect()
}

/// Names the binary image's addresses by function and offset: by the binary's own symbol
/// table, with BOLT's names for local functions, when the image's file is an ELF file that can
/// be read; else by the model's symbols.
pub struct Namer<'a> {
    image: &'a Image,
    model: SymbolIndex,
    binary: Option<(BinarySymbols, SymbolIndex)>,
}

impl<'a> Namer<'a> {
    pub fn new(profile: &'a Profile, image: &'a Image) -> Namer<'a> {
        let binary = image
            .file
            .map(|f| Path::new(profile.file_name(f)))
            .filter(|p| p.is_file())
            .and_then(|p| BinarySymbols::open(p).ok())
            .map(|b| {
                let index = SymbolIndex::new(&Image { symbols: b.symbols.clone(), ..Image::default() });
                (b, index)
            });
        Namer { image, model: SymbolIndex::new(image), binary }
    }

    /// The function covering an image offset, and the offset into it.
    pub fn name(&self, offset: u64) -> Option<(&str, u64)> {
        if let Some((b, index)) = &self.binary {
            // A position-dependent binary's addresses are its load address on; a PIE's are
            // offsets from where it was loaded (a profile that states ELF addresses has a load
            // address of 0 either way).
            let address = if b.base == 0 { offset } else { offset.wrapping_add(self.image.load_addr) };
            let s = &b.symbols[index.covering(address)? as usize];
            return Some((s.name.as_str(), address - s.offset?));
        }
        let s = &self.image.symbols[self.model.covering(offset)? as usize];
        Some((s.name.as_str(), offset - s.offset?))
    }
}

/// Whether a profile's model has code addresses to write: some image states no addresses
/// (CSI) and nothing else has any, or it has only lines (a Callgrind profile without
/// `--dump-instr=yes`, folded stacks): the error that says how to record it with addresses.
pub fn refuse_without_addresses(profile: &Profile, format: &str) -> Result<()> {
    let has_blocks =
        profile.processes.iter().any(|p| p.images.iter().any(|i| !i.no_addresses && !i.blocks.is_empty()));
    let has_samples = profile.processes.iter().any(|p| p.images.iter().any(|i| i.costs.has_offsets()));
    if has_blocks || has_samples {
        return Ok(());
    }
    Err(Error::input(format!(
        "{format}: this profile has no code addresses (no blocks, no samples at addresses)"
    ))
    .with_hint(
        "record one with addresses: valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes, \
             a Pin/SDE DCFG, perf record, or pprof with addresses",
    ))
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
