//! An image's symbols as perf 6.1 loads them, in the tree it keeps them in, for the addresses
//! where the shape of that tree decides the name: the PLT.
//!
//! perf (`dso__load` in `util/symbol.c`, `dso__load_sym` and `dso__synthesize_plt_symbols` in
//! `util/symbol-elf.c`) loads an image in three steps, each inserting into one red-black
//! tree keyed by start address:
//!
//! 1. the `.symtab` of the file with the fullest symbols: functions, objects and labels (of
//!    text and data sections, not hidden) of allocated sections, in table order; then every
//!    symbol without a size is stretched to the next one's start (the last to the end of the
//!    page after it), and of symbols sharing a start all but the one `choose_best_symbol`
//!    prefers are erased;
//! 2. the same for that file's `.dynsym`, when it has a real one (a separate debug file has
//!    none);
//! 3. one symbol per PLT entry, made from the runtime file (the first with a `.dynsym`):
//!    entry `i` of `.rela.plt` (or `.rel.plt`) is the `i`-th entry of `.plt` after its
//!    header, named `<demangled name>@plt`, sized as the architecture's entries are (on x86
//!    the section's `sh_entsize`, the header one entry).
//!
//! A symbol of a kept kind whose section index names no section (a table a tool rewrote:
//! BOLT leaves `.dynsym` entries pointing past the last section) makes perf abandon the load
//! there: the symbols of that table inserted so far stay, neither stretched nor cleared of
//! aliases, later tables are not read, and no PLT symbols are made. Every address of such an
//! image is then named by the walk down the tree, where an alias of the table abandoned and
//! the one kept before may both cover it.
//!
//! Step 3 comes after the stretching, so `_init` (in `.init`, right before `.plt`, without a
//! size) already covers the whole PLT when the entries arrive. A lookup walks the tree from
//! its root and stops at the first node covering the address: `_init` when it lies on the way
//! down to the entry, the entry otherwise. Entries of `.plt.sec` and `.plt.got` get no
//! symbols (perf 6.1 makes none: `perf script` names their samples `_init` or `[unknown]`)
//! and are named by the same walk.

use std::cmp::Ordering;

use object::elf;
use object::read::elf::{ElfFile, FileHeader, SectionHeader, Sym};

use super::demangle::demangle;
use super::rbtree::RbTree;
use cfghub_analysis::symbolize::elf::{ElfFile as MappedElf, PltEntry};

/// A symbol as perf loads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded {
    pub start: u64,
    pub end: u64,
    pub binding: u8,
    pub raw: &'static str,
    pub plt: bool,
}

/// The symbols perf loads from one table of a file.
#[derive(Debug, Default)]
pub(crate) struct Pass {
    /// In table order.
    pub symbols: Vec<Loaded>,
    /// perf gave up on the table at a symbol whose section does not exist: the symbols before
    /// it stay, unfixed, and the load ends there.
    pub abandoned: bool,
}

/// The symbols perf loads from one table of a file (`dynamic`: `.dynsym`, else `.symtab`);
/// none when the file has no such table (a debug file's `.dynsym` is none).
pub(crate) fn loaded_symbols(file: &MappedElf, dynamic: bool) -> Pass {
    match &file.object {
        object::File::Elf32(f) => loaded_of(f, dynamic, false),
        object::File::Elf64(f) => loaded_of(f, dynamic, false),
        _ => Pass::default(),
    }
}

/// Whether perf gives up on one of the file's tables (see [`Pass::abandoned`]): a quick scan
/// that keeps no symbol.
pub(crate) fn load_is_abandoned(file: &MappedElf) -> bool {
    [false, true].into_iter().any(|dynamic| match &file.object {
        object::File::Elf32(f) => loaded_of(f, dynamic, true).abandoned,
        object::File::Elf64(f) => loaded_of(f, dynamic, true).abandoned,
        _ => false,
    })
}

fn loaded_of<Elf: FileHeader<Endian = object::Endianness>>(
    f: &ElfFile<'static, Elf, &'static [u8]>,
    dynamic: bool,
    scan_only: bool,
) -> Pass {
    let (endian, data, sections) = (f.endian(), f.data(), f.elf_section_table());
    let kind = if dynamic { elf::SHT_DYNSYM } else { elf::SHT_SYMTAB };
    let Ok(table) = sections.symbols(endian, data, kind) else { return Pass::default() };
    let arm = matches!(f.elf_header().e_machine(endian), elf::EM_ARM | elf::EM_AARCH64);
    let mut out = Vec::new();
    for sym in table.iter() {
        let (kind, shndx) = (sym.st_type(), sym.st_shndx(endian));
        if sym.st_name(endian) == 0 || shndx == elf::SHN_UNDEF || shndx == elf::SHN_ABS {
            continue;
        }
        let label =
            kind == elf::STT_NOTYPE && !matches!(sym.st_visibility(), elf::STV_HIDDEN | elf::STV_INTERNAL);
        if !label && !matches!(kind, elf::STT_FUNC | elf::STT_GNU_IFUNC | elf::STT_OBJECT) {
            continue;
        }
        let name = || table.symbol_name(endian, sym).ok().and_then(|n| std::str::from_utf8(n).ok());
        if arm && name().is_some_and(is_arm_mapping_symbol) {
            continue;
        }
        // perf looks the section up before anything else about it, and gives up when there is
        // none (an index past the last section, or a reserved one other than `SHN_ABS`).
        let Ok(section) = sections.section(object::SectionIndex(shndx.0 as usize)) else {
            return Pass { symbols: out, abandoned: true };
        };
        if scan_only {
            continue;
        }
        if section.sh_flags(endian).0 & elf::SHF_ALLOC.0 == 0 {
            continue;
        }
        if label {
            let section_name = sections.section_name(endian, section).unwrap_or_default();
            let has = |w: &[u8]| section_name.windows(w.len()).any(|x| x == w);
            if !has(b"text") && !has(b"data") {
                continue;
            }
        }
        let Some(name) = name() else { continue };
        let start: u64 = sym.st_value(endian).into();
        let size: u64 = sym.st_size(endian).into();
        out.push(Loaded {
            start,
            end: start.saturating_add(size),
            binding: sym.st_bind().0,
            raw: name,
            plt: false,
        });
    }
    Pass { symbols: out, abandoned: false }
}

/// ARM's `$a`, `$d`, `$t`, `$x` (and `$x.n`): marks of where code or data starts, not
/// functions.
fn is_arm_mapping_symbol(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0] == b'$' && b"adtx".contains(&b[1]) && (b.len() == 2 || b[2] == b'.')
}

/// perf's tree of an image's symbols, built as perf builds it.
pub(crate) struct SymbolTree {
    tree: RbTree,
    /// Per node (numbered in insertion order).
    symbols: Vec<Loaded>,
}

impl SymbolTree {
    /// The tree of `passes` (the `.symtab` symbols, then the `.dynsym` ones), each stretched
    /// and cleared of aliases, then the PLT entries, added when any symbol was.
    pub fn build(passes: [Pass; 2], plt: &[PltEntry]) -> SymbolTree {
        let mut t = SymbolTree { tree: RbTree::new(), symbols: Vec::new() };
        // The live nodes, in order (by start, equal starts in insertion order).
        let mut live: Vec<u32> = Vec::new();
        for pass in passes {
            for s in pass.symbols.iter().copied() {
                live.push(t.tree.insert(s.start));
                t.symbols.push(s);
            }
            if pass.abandoned {
                // No fixing up, no further table, no PLT symbols.
                return t;
            }
            if pass.symbols.is_empty() {
                continue;
            }
            live.sort_by_key(|&n| (t.symbols[n as usize].start, n));
            t.stretch(&live);
            live = t.erase_aliases(&live);
        }
        if !t.symbols.is_empty() {
            for e in plt {
                t.tree.insert(e.start);
                t.symbols.push(Loaded { start: e.start, end: e.end, binding: 1, raw: e.raw, plt: true });
            }
        }
        t
    }

    /// `symbols__fixup_end`: a symbol without a size ends where the next one starts.
    fn stretch(&mut self, live: &[u32]) {
        for w in live.windows(2) {
            let next = self.symbols[w[1] as usize].start;
            let s = &mut self.symbols[w[0] as usize];
            if s.end == s.start {
                s.end = next;
            }
        }
        if let Some(&last) = live.last() {
            let s = &mut self.symbols[last as usize];
            if s.end == s.start {
                s.end = s.start.div_ceil(4096).saturating_mul(4096).saturating_add(4096);
            }
        }
    }

    /// `symbols__fixup_duplicate`: of a run of symbols with one start, the kept one is
    /// compared with each next; the loser leaves the tree (in that order). Returns the
    /// nodes left, in order.
    fn erase_aliases(&mut self, live: &[u32]) -> Vec<u32> {
        let mut kept: Vec<u32> = Vec::with_capacity(live.len());
        // The kept alias's name key, demangled once (when needed) however many aliases it meets.
        let mut kept_key: Option<NameKey> = None;
        for &n in live {
            match kept.last_mut() {
                Some(k) if self.symbols[*k as usize].start == self.symbols[n as usize].start => {
                    let (a, b) = (self.symbols[*k as usize], self.symbols[n as usize]);
                    let (second, b_key) = prefers_second(&a, &mut kept_key, &b);
                    if second {
                        kept_key = b_key;
                        self.tree.erase(*k);
                        *k = n;
                    } else {
                        self.tree.erase(n);
                    }
                }
                _ => {
                    kept.push(n);
                    kept_key = None;
                }
            }
        }
        kept
    }

    /// `symbols__find`: the first node on the way down from the root that covers `address`
    /// (a symbol without a size covers its start).
    pub fn find(&self, address: u64) -> Option<&Loaded> {
        self.find_node(address).map(|n| &self.symbols[n as usize])
    }

    /// The number of the node [`SymbolTree::find`] finds.
    pub(crate) fn find_node(&self, address: u64) -> Option<u32> {
        let mut at = self.tree.root();
        while let Some(n) = at {
            let s = &self.symbols[n as usize];
            if address < s.start {
                at = self.tree.left(n);
            } else if address > s.end || (address == s.end && address != s.start) {
                at = self.tree.right(n);
            } else {
                return Some(n);
            }
        }
        None
    }

    /// A node's symbol.
    pub fn node(&self, node: usize) -> &Loaded {
        &self.symbols[node]
    }
}

/// What `choose_best_symbol` asks of a name (demangled, as perf stores names): its leading
/// underscores, its length, whether it is a kernel `SyS` alias.
#[derive(Clone, Copy, Debug)]
struct NameKey {
    leading: usize,
    len: usize,
    sys: bool,
}

impl NameKey {
    fn of(s: &Loaded) -> NameKey {
        let name = demangle(s.raw);
        NameKey {
            leading: name.len() - name.trim_start_matches('_').len(),
            len: name.len(),
            sys: name.starts_with("SyS") || name.starts_with("compat_SyS"),
        }
    }
}

/// perf 6.1's `choose_best_symbol` between two symbols of one start, `a` before `b` in the
/// tree: whether `b` is kept (and `b`'s name key, when it was needed). A symbol with a size,
/// then a non-weak one, then a global one, then the one with fewer leading underscores, then
/// the longer name, else `a` (unless `a` is a kernel `SyS` alias).
fn prefers_second(a: &Loaded, a_key: &mut Option<NameKey>, b: &Loaded) -> (bool, Option<NameKey>) {
    const STB_GLOBAL: u8 = 1;
    const STB_WEAK: u8 = 2;
    let keys = |s: &Loaded| [s.end > s.start, s.binding != STB_WEAK, s.binding == STB_GLOBAL];
    match keys(a).cmp(&keys(b)) {
        Ordering::Less => return (true, None),
        Ordering::Greater => return (false, None),
        Ordering::Equal => {}
    }
    let a_key = *a_key.get_or_insert_with(|| NameKey::of(a));
    let b_key = NameKey::of(b);
    let second = match b_key.leading.cmp(&a_key.leading).then(a_key.len.cmp(&b_key.len)) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => a_key.sys,
    };
    (second, Some(b_key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(start: u64, size: u64, raw: &'static str) -> Loaded {
        Loaded { start, end: start + size, binding: 1, raw, plt: false }
    }

    fn plt(n: u64) -> Vec<PltEntry> {
        const NAMES: [&str; 4] = ["memcpy", "strlen", "write", "read"];
        (0..n)
            .map(|i| PltEntry { start: 0x1030 + 16 * i, end: 0x1040 + 16 * i, raw: NAMES[i as usize] })
            .collect()
    }

    fn name(t: &SymbolTree, address: u64) -> Option<String> {
        t.find(address).map(|s| if s.plt { format!("{}@plt", s.raw) } else { s.raw.to_string() })
    }

    /// `_init` has no size: stretched to `_start` before the PLT entries come, it covers
    /// them. A lookup meets whichever of the two is higher in the tree: with one entry,
    /// `_init` (the entry hangs below it); a second entry rotates the first above `_init`.
    #[test]
    fn a_plt_entry_is_named_by_the_node_met_first() {
        let symbols = || {
            let symbols = vec![sym(0x1000, 0, "_init"), sym(0x1080, 34, "_start"), sym(0x1100, 50, "main")];
            [Pass { symbols, abandoned: false }, Pass::default()]
        };
        let t = SymbolTree::build(symbols(), &plt(1));
        assert_eq!(t.tree.key(t.tree.root().unwrap()), 0x1080);
        assert_eq!(name(&t, 0x1035), Some("_init".into()));
        let t = SymbolTree::build(symbols(), &plt(2));
        assert_eq!(name(&t, 0x1035), Some("memcpy@plt".into()));
        assert_eq!(name(&t, 0x1045), Some("strlen@plt".into()));
        // The PLT's header has no entry.
        assert_eq!(name(&t, 0x1020), Some("_init".into()));
        // Past the entries (`.plt.got`), `_init` still covers the address, but the walk
        // passes beside it: perf finds no symbol.
        assert_eq!(name(&t, 0x1050), None);
    }

    /// Aliases: stretched before they are compared, so of several without a size the last
    /// one (the only one stretched) stays; a second pass (`.dynsym`) adds its copies, which
    /// lose to the first pass's.
    #[test]
    fn aliases_are_erased_as_perf_erases_them() {
        let weak = |mut s: Loaded| {
            s.binding = 2;
            s
        };
        let t = SymbolTree::build(
            [
                Pass {
                    symbols: vec![
                        sym(0x100, 0, "alias_a"),
                        sym(0x100, 0, "alias_b"),
                        weak(sym(0x200, 8, "w")),
                        sym(0x200, 8, "g"),
                    ],
                    abandoned: false,
                },
                Pass { symbols: vec![sym(0x200, 8, "g")], abandoned: false },
            ],
            &[],
        );
        assert_eq!(name(&t, 0x150), Some("alias_b".into()));
        assert_eq!(name(&t, 0x204), Some("g".into()));
    }

    /// A table perf gave up on: its symbols stay as they are, aliases and all, and the walk
    /// meets whichever is higher; no PLT symbols are made.
    #[test]
    fn an_abandoned_table_leaves_its_aliases() {
        let first =
            Pass { symbols: vec![sym(0x100, 8, "usize_fmt"), sym(0x100, 8, "isize_fmt")], abandoned: false };
        let second = Pass {
            symbols: vec![sym(0x100, 8, "isize_fmt"), sym(0x100, 8, "usize_fmt"), sym(0x200, 0, "no_size")],
            abandoned: true,
        };
        let t = SymbolTree::build([first, second], &plt(1));
        // usize_fmt, kept of the first table (its first), stays; the second table's copies
        // hang to its right, and inserting them rotates isize_fmt to the root: the walk meets
        // it first.
        assert_eq!(name(&t, 0x104), Some("isize_fmt".into()));
        // Not stretched: only its own address.
        assert_eq!(name(&t, 0x200), Some("no_size".into()));
        assert_eq!(name(&t, 0x201), None);
        assert_eq!(name(&t, 0x1035), None);
    }
}
