//! An image's functions as perf names them: the table perf builds from an ELF symbol table
//! (`dso__load_sym` in perf's `util/symbol-elf.c`, then `symbols__fixup_end` and
//! `symbols__fixup_duplicate` in `util/symbol.c`), so that an address gets the name `perf
//! script` prints for it.
//!
//! - Kept: functions (`STT_FUNC`, `STT_GNU_IFUNC`) and labels (`STT_NOTYPE` in a text
//!   section, such as the dynamic loader's `_dl_start_user`), of `.symtab`, else `.dynsym`.
//! - A symbol of size 0 ends where the next one (in address order) starts; the last one
//!   at the end of the page after its start.
//! - Of several symbols at one address (aliases: the C library's `write`, `__write`,
//!   `__libc_write`, `__GI___libc_write`; functions folded into one by the linker) one is
//!   kept, pairwise, by perf's `choose_best_symbol`: one with a size over one without, a
//!   function over a label, a non-weak over a weak one, a global over a local one, fewer
//!   leading underscores, the longer name, else the first; the names compared as perf
//!   compares them, demangled.

use std::cell::OnceCell;
use std::cmp::Ordering;

use super::demangle::demangle;
use super::symbol_tree::{self, SymbolTree};
use cfghub_analysis::symbolize::elf::{plt_entries, PltEntry};
use cfghub_analysis::symbolize::elf::{ElfFile, TableSymbol};

const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;

/// One function of the table: `[start, end)` in the file's stated addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function {
    pub start: u64,
    pub end: u64,
    /// The raw (mangled) name; [`demangle`] makes it the name perf prints.
    pub raw: &'static str,
    /// A PLT entry perf made a symbol of, named after `raw` with `@plt` added.
    pub plt: bool,
}

/// The functions of one image, sorted by start, one per start; and the PLT entries perf
/// makes symbols of, which overlap a function (see [`symbol_tree`]).
pub struct Table<'a> {
    functions: Vec<Function>,
    plt: Vec<Function>,
    /// The file whose symbols perf loads, to rebuild perf's tree of them when an address
    /// falls in the PLT.
    symbols_file: Option<&'a ElfFile>,
    tree: OnceCell<SymbolTree>,
    /// Whether perf gives up loading the file's symbols part way (see [`symbol_tree`]): then
    /// every address is named by perf's tree.
    abandoned: OnceCell<bool>,
}

impl<'a> Table<'a> {
    /// The table of a file's symbols, with the PLT entries of `runtime` (the file with the
    /// image's `.dynsym`, `.rela.plt` and `.plt`: the binary, not a separate debug file).
    pub fn of(file: &'a ElfFile, runtime: Option<&ElfFile>) -> Table<'a> {
        let mut table = Table::new(file.table_symbols());
        table.plt = runtime
            .map(plt_entries)
            .unwrap_or_default()
            .into_iter()
            .map(|PltEntry { start, end, raw }| Function { start, end, raw, plt: true })
            .collect();
        table.symbols_file = Some(file);
        table
    }

    /// The table of `symbols` (in the ELF table's order).
    pub fn new(symbols: Vec<TableSymbol>) -> Table<'a> {
        let mut symbols: Vec<(TableSymbol, u64)> =
            symbols.into_iter().map(|s| (s, s.address.saturating_add(s.size))).collect();
        // Stable: aliases stay in table order, the order perf's tree keeps them in.
        symbols.sort_by_key(|(s, _)| s.address);
        for i in 1..symbols.len() {
            let next = symbols[i].0.address;
            let (prev, end) = &mut symbols[i - 1];
            if *end == prev.address {
                *end = next;
            }
        }
        if let Some((last, end)) = symbols.last_mut() {
            if *end == last.address {
                *end = last.address.div_ceil(4096).saturating_mul(4096).saturating_add(4096);
            }
        }
        let mut functions: Vec<(Function, TableSymbol)> = Vec::with_capacity(symbols.len());
        for (s, end) in symbols {
            let f = Function { start: s.address, end, raw: s.name, plt: false };
            match functions.last_mut() {
                Some(kept) if kept.0.start == f.start => {
                    if choose(&kept.0, &kept.1, &f, &s) == Ordering::Greater {
                        *kept = (f, s);
                    }
                }
                _ => functions.push((f, s)),
            }
        }
        Table {
            functions: functions.into_iter().map(|(f, _)| f).collect(),
            plt: Vec::new(),
            symbols_file: None,
            tree: OnceCell::new(),
            abandoned: OnceCell::new(),
        }
    }

    /// The index of the function covering a stated address: the last to start at or before
    /// it, if it ends after it; in the PLT, the entry or the function perf's tree meets
    /// first; in a file whose load perf abandons, the symbol perf's tree meets first.
    pub fn find(&self, address: u64) -> Option<usize> {
        let abandoned =
            *self.abandoned.get_or_init(|| self.symbols_file.is_some_and(symbol_tree::load_is_abandoned));
        if abandoned {
            let tree = self.tree();
            let node = tree.find_node(address)?;
            return Some(self.functions.len() + self.plt.len() + node as usize);
        }
        let i = self.functions.partition_point(|f| f.start <= address).checked_sub(1);
        let covering = i.filter(|&i| address < self.functions[i].end);
        let in_entry = |k: usize| self.plt.get(k).is_some_and(|e| address < e.end);
        let entry = self.plt.partition_point(|e| e.start <= address).checked_sub(1).filter(|&k| in_entry(k));
        if entry.is_some() || self.overlaps_plt(covering) {
            // perf's walk may meet the entry, the function, or (past the entries) neither.
            let found = self.tree().find(address)?;
            if let (true, Some(k)) = (found.plt, entry) {
                return Some(self.functions.len() + k);
            }
        }
        covering
    }

    /// perf's tree of the file's symbols, built on first use.
    fn tree(&self) -> &SymbolTree {
        self.tree.get_or_init(|| {
            let Some(file) = self.symbols_file else { return SymbolTree::build(Default::default(), &[]) };
            let passes = [false, true].map(|dynamic| symbol_tree::loaded_symbols(file, dynamic));
            let entries: Vec<PltEntry> =
                self.plt.iter().map(|f| PltEntry { start: f.start, end: f.end, raw: f.raw }).collect();
            SymbolTree::build(passes, &entries)
        })
    }

    /// Whether the function covering an address (`index`) also covers PLT entries: then
    /// perf's tree, not the address order, decides what the address is named by.
    fn overlaps_plt(&self, index: Option<usize>) -> bool {
        let Some(f) = index.map(|i| &self.functions[i]) else { return false };
        let k = self.plt.partition_point(|e| e.start < f.start);
        self.plt.get(k).is_some_and(|e| e.start < f.end)
    }

    pub fn get(&self, index: usize) -> Function {
        if let Some(f) = self.functions.get(index).or_else(|| self.plt.get(index - self.functions.len())) {
            return *f;
        }
        let node = self.tree().node(index - self.functions.len() - self.plt.len());
        Function { start: node.start, end: node.end, raw: node.raw, plt: node.plt }
    }
}

/// perf's `choose_best_symbol` for two symbols at one address: `Less` keeps `a`, `Greater`
/// keeps `b`.
fn choose(a: &Function, a_sym: &TableSymbol, b: &Function, b_sym: &TableSymbol) -> Ordering {
    let sized = |f: &Function| f.end > f.start;
    // Each rule prefers the symbol for which its key is the larger.
    let by_elf = [
        (sized(a), sized(b)),
        (!a_sym.label, !b_sym.label),
        (a_sym.binding != STB_WEAK, b_sym.binding != STB_WEAK),
        (a_sym.binding == STB_GLOBAL, b_sym.binding == STB_GLOBAL),
    ];
    if let Some(&(key_a, key_b)) = by_elf.iter().find(|(key_a, key_b)| key_a != key_b) {
        return key_b.cmp(&key_a);
    }
    // The names, demangled only here: most symbols have no alias.
    let (a_name, b_name) = (demangle(a.raw), demangle(b.raw));
    let leading = |n: &str| n.len() - n.trim_start_matches('_').len();
    let by_name = [(leading(&b_name), leading(&a_name)), (a_name.len(), b_name.len())];
    if let Some(&(key_a, key_b)) = by_name.iter().find(|(key_a, key_b)| key_a != key_b) {
        return key_b.cmp(&key_a);
    }
    // x86's tie-break: a kernel syscall's `SyS` alias loses.
    if a_name.starts_with("SyS") || a_name.starts_with("compat_SyS") {
        Ordering::Greater
    } else {
        Ordering::Less
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbol(address: u64, size: u64, name: &'static str, binding: u8, label: bool) -> TableSymbol {
        TableSymbol { address, size, name, binding, label }
    }

    /// The C library's `write` and its aliases (binding as in the Debian 12 build): perf
    /// prints `__GI___libc_write` (none global, the weak ones lose, the longest name wins);
    /// of `read`'s, the global one with no leading underscore.
    #[test]
    fn aliases_are_chosen_as_perf_chooses_them() {
        const LOCAL: u8 = 0;
        let table = Table::new(vec![
            symbol(0x100, 157, "__GI___libc_read", LOCAL, false),
            symbol(0x100, 157, "__libc_read", LOCAL, false),
            symbol(0x100, 157, "__read", STB_GLOBAL, false),
            symbol(0x100, 157, "read", STB_GLOBAL, false),
            symbol(0x200, 157, "__GI___write", LOCAL, false),
            symbol(0x200, 157, "__libc_write", LOCAL, false),
            symbol(0x200, 157, "write", STB_WEAK, false),
            symbol(0x200, 157, "__GI___libc_write", LOCAL, false),
            symbol(0x200, 157, "__write", STB_WEAK, false),
        ]);
        assert_eq!(table.get(table.find(0x150).unwrap()).raw, "read");
        assert_eq!(table.get(table.find(0x200).unwrap()).raw, "__GI___libc_write");
        assert_eq!(table.find(0x200 + 157), None);
    }

    /// A label of size 0 (the dynamic loader's `_dl_start_user`) runs to the next symbol; the
    /// last symbol of size 0 to the end of the next page; a sized symbol wins over an
    /// alias without a size, a function over a label.
    #[test]
    fn symbols_without_a_size_end_where_the_next_starts() {
        let table = Table::new(vec![
            symbol(0x10, 0, "_start", 0, true),
            symbol(0x18, 0, "_dl_start_user", 0, true),
            symbol(0x40, 0, "a_label", STB_GLOBAL, true),
            symbol(0x40, 8, "f", 0, false),
            symbol(0x50, 0, "g", STB_GLOBAL, true),
            symbol(0x50, 0, "g_function", 0, false),
        ]);
        let name = |a| table.find(a).map(|i| table.get(i).raw);
        assert_eq!(name(0x17), Some("_start"));
        assert_eq!(name(0x3f), Some("_dl_start_user"));
        assert_eq!(name(0x47), Some("f"));
        assert_eq!(name(0x48), None);
        assert_eq!(name(0x1fff), Some("g_function"));
        assert_eq!(name(0x2000), None);
    }
}
