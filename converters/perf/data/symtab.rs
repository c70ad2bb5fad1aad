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

use super::symbol_tree::{self, SymbolTree};
use crate::symbolize::elf::{plt_entries, PltEntry};
use crate::symbolize::elf::{ElfFile, TableSymbol};

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

/// A symbol's name as perf prints it: Rust names without their hash, and v0 ones without
/// the suffix after a `.` (`.llvm.123`, `.warm`, `.cold`); C++ names as libiberty's
/// demangler prints them without options (no parameters, no return type, an empty template
/// pack left out, `64u` for an `unsigned int` argument): libiberty's own words where the C++
/// runtime's demangler can be loaded ([`super::libiberty`]), else cpp_demangle's, mended
/// where they differ in form; other names as they are.
pub fn demangle(raw: &str) -> String {
    if raw.starts_with("_R") {
        let v0 = raw.split('.').next().unwrap_or(raw);
        if let Ok(d) = rustc_demangle::try_demangle(v0) {
            return format!("{d:#}");
        }
    }
    if raw.starts_with("_ZN") {
        if let Ok(d) = rustc_demangle::try_demangle(raw) {
            let text = format!("{d:#}");
            // A C++ name can parse as a legacy Rust one too; Rust's have a hash.
            if format!("{d}") != text {
                return text;
            }
        }
    }
    if raw.starts_with("_Z") {
        if let Some(d) = super::libiberty::demangle(raw) {
            return d;
        }
    }
    mended(raw)
}

/// A name as cpp_demangle prints it, mended where it differs in form from libiberty's (C++
/// without parameters, thunks, integer literals, function types and addresses among template
/// arguments); other names as [`crate::symbolize::demangle`] writes them.
fn mended(raw: &str) -> String {
    if let Some((kind, encoding)) = thunk(raw) {
        // `{virtual override thunk(...)}` in cpp_demangle's words; libiberty's, as perf prints
        // them, name the target after what it is.
        return format!("{kind}{}", mended(&format!("_Z{encoding}")));
    }
    if raw.starts_with("_Z") {
        let options = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
        if let Some(d) = cpp_demangle::Symbol::new(raw).ok().and_then(|s| s.demangle(&options).ok()) {
            // A local entity's method keeps its qualifier; libiberty prints none without
            // parameters.
            let d = d.replace(", >", ">");
            return function_addresses(&function_types(&integer_literals(d.trim_end_matches(" const"))));
        }
    }
    crate::symbolize::demangle(raw)
}

/// A thunk's name (`_ZTh`, `_ZTv`, `_ZTc` and their call offsets): what libiberty calls it,
/// and the encoding of the function it leads to (without its `_Z`).
fn thunk(raw: &str) -> Option<(&'static str, &str)> {
    // `[n]<digits>_`
    fn number(s: &str) -> Option<&str> {
        let s = s.strip_prefix('n').unwrap_or(s);
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        s[digits..].strip_prefix('_')
    }
    // `h <offset> _` or `v <offset> _ <virtual offset> _`
    fn call_offset(s: &str) -> Option<&str> {
        match s.strip_prefix('h') {
            Some(rest) => number(rest),
            None => number(number(s.strip_prefix('v')?)?),
        }
    }
    let rest = raw.strip_prefix("_ZT")?;
    let (kind, encoding) = match rest.as_bytes().first()? {
        b'h' => ("non-virtual thunk to ", call_offset(rest)?),
        b'v' => ("virtual thunk to ", call_offset(rest)?),
        b'c' => ("covariant return thunk to ", call_offset(call_offset(&rest[1..])?)?),
        _ => return None,
    };
    (!encoding.is_empty()).then_some((kind, encoding))
}

/// A function type among template arguments as libiberty writes it, with a space before its
/// parameters (`function_ref<InstructionCost (unsigned int)>`, where cpp_demangle writes
/// `InstructionCost(unsigned int)`): a `(` after a name, inside `<>`, whose `)` ends the
/// argument. Not a function's address (`&f(int)`, which libiberty writes otherwise), a local
/// entity's function (`f(int)::$_0`) or a lambda's parameters.
fn function_types(name: &str) -> String {
    if !name.contains('<') {
        return name.to_string();
    }
    let b = name.as_bytes();
    let mut out = String::with_capacity(name.len() + 8);
    // Where the template argument being read starts, per open `<`.
    let mut argument_starts: Vec<usize> = Vec::new();
    for (i, c) in name.char_indices() {
        match c {
            '<' => argument_starts.push(i + 1),
            '>' => {
                argument_starts.pop();
            }
            ',' => {
                if let Some(start) = argument_starts.last_mut() {
                    *start = i + 1;
                }
            }
            '(' if i > 0
                && (b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'_' | b'>' | b'*' | b'&')) =>
            {
                if let Some(&start) = argument_starts.last() {
                    let address = name[start..i].trim_start().starts_with('&');
                    if !address && !name[..i].ends_with("lambda") && ends_an_argument(b, i) {
                        out.push(' ');
                    }
                }
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// A function's address among template arguments as libiberty writes it: `&(f(long&))`
/// (cpp_demangle writes `&f(long&)`).
fn function_addresses(name: &str) -> String {
    if !name.contains("<&") && !name.contains(", &") {
        return name.to_string();
    }
    let b = name.as_bytes();
    let mut out = String::with_capacity(name.len() + 8);
    let (mut copied, mut depth) = (0, 0);
    for i in 0..b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b'&' if depth > 0 && i >= copied && (b[i - 1] == b'<' || b[..i].ends_with(b", ")) => {
                let end = argument_end(b, i + 1);
                let argument = &name[i + 1..end];
                let Some(open) = argument.find('(') else { continue };
                let callee = &argument[..open];
                if callee.is_empty() || callee.contains(['<', ' ', '(']) {
                    continue;
                }
                out.push_str(&name[copied..=i]);
                out.push('(');
                out.push_str(argument);
                out.push(')');
                copied = end;
            }
            _ => {}
        }
    }
    out.push_str(&name[copied..]);
    out
}

/// Where the template argument starting at `from` ends: the `,` or `>` outside brackets.
fn argument_end(b: &[u8], from: usize) -> usize {
    let mut level = 0;
    for (j, &d) in b.iter().enumerate().skip(from) {
        match d {
            b'<' | b'(' => level += 1,
            b'>' | b')' if level > 0 => level -= 1,
            b'>' | b',' => return j,
            _ => {}
        }
    }
    b.len()
}

/// Whether the parenthesis opened at `open` closes right before a `>` or `,`.
fn ends_an_argument(b: &[u8], open: usize) -> bool {
    let mut level = 0;
    for (j, &d) in b.iter().enumerate().skip(open) {
        match d {
            b'(' => level += 1,
            b')' => {
                level -= 1;
                if level == 0 {
                    return matches!(b.get(j + 1), Some(b'>' | b','));
                }
            }
            _ => {}
        }
    }
    false
}

/// Template arguments that are integers of the types libiberty writes with a suffix
/// (`(unsigned int)64` as `64u`, `(unsigned long)4096` as `4096ul`).
fn integer_literals(name: &str) -> String {
    const SUFFIXES: [(&str, &str); 5] = [
        ("(unsigned int)", "u"),
        ("(long)", "l"),
        ("(unsigned long)", "ul"),
        ("(long long)", "ll"),
        ("(unsigned long long)", "ull"),
    ];
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    'scan: while let Some(at) = rest.find('(') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        for (cast, suffix) in SUFFIXES {
            let Some(after) = rest.strip_prefix(cast) else { continue };
            let sign = usize::from(after.starts_with('-'));
            let digits = after[sign..].bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                out.push_str(&after[..sign + digits]);
                out.push_str(suffix);
                rest = &after[sign + digits..];
                continue 'scan;
            }
        }
        out.push('(');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
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

    #[test]
    fn names_are_demangled_as_perf_prints_them() {
        // Both ways: libiberty's words, and cpp_demangle's mended (without the C++ runtime).
        let check = |raw: &str, expected: &str| {
            assert_eq!(demangle(raw), expected);
            assert_eq!(mended(raw), expected, "mended: {raw}");
        };
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        check("_ZN3foo3barEv", "foo::bar");
        assert_eq!(demangle("_RNvCs1234_5crate4main.warm"), "crate::main");
        check("_ZN4llvm6detail9PassModelIiE3runEv", "llvm::detail::PassModel<int>::run");
        check("__GI___libc_write", "__GI___libc_write");
        check("_ZN4llvm1AIjLj64EE3fooEv", "llvm::A<unsigned int, 64u>::foo");
        check("_ZN4llvm1AImLm4096EE3fooEv", "llvm::A<unsigned long, 4096ul>::foo");
        check("_ZN4llvm1AIlLln5EE3fooEv", "llvm::A<long, -5l>::foo");
        check("_ZN4llvm1AIcLc65EE3fooEv", "llvm::A<char, (char)65>::foo");
        // Thunks: libiberty writes their target's parameters (`perf script` does); without
        // the C++ runtime, cpp_demangle's words mended as far as the folding both routes share
        // (which leaves the parameters out).
        let thunks = [
            ("_ZThn272_N4llvm5VPPhiD0Ev", "non-virtual thunk to llvm::VPPhi::~VPPhi"),
            (
                "_ZThn752_N4llvm8RAGreedy19LRE_CanEraseVirtRegENS_8RegisterE",
                "non-virtual thunk to llvm::RAGreedy::LRE_CanEraseVirtReg",
            ),
            ("_ZTv0_n24_N4llvm1AD1Ev", "virtual thunk to llvm::A::~A"),
            ("_ZTch0_h16_N1A1fEv", "covariant return thunk to A::f"),
        ];
        for (raw, folded) in thunks {
            assert_eq!(mended(raw), folded);
            assert_eq!(demangle(raw).split('(').next(), Some(folded));
        }
        check(
            "_ZN4llvm12function_refIFNS_15InstructionCostEjEE11callback_fnIZNS_13slpvectorizer7BoUpSLP12getEntryCostEPKNS6_9TreeEntryENS_8ArrayRefIPNS_5ValueEEERNS_15SmallPtrSetImplISC_EEE4$_16EES1_lj",
            "llvm::function_ref<llvm::InstructionCost (unsigned int)>::callback_fn<llvm::slpvectorizer::BoUpSLP::\
             getEntryCost(llvm::slpvectorizer::BoUpSLP::TreeEntry const*, llvm::ArrayRef<llvm::Value*>, \
             llvm::SmallPtrSetImpl<llvm::Value*>&)::$_16>"
        );
        check(
            "_ZN4llvm12function_refIFNS_15InstructionCostES1_EE11callback_fnIZNS_13slpvectorizer7BoUpSLP12getEntryCostEPKNS6_9TreeEntryENS_8ArrayRefIPNS_5ValueEEERNS_15SmallPtrSetImplISC_EEE4$_19EES1_lS1_",
            "llvm::function_ref<llvm::InstructionCost (llvm::InstructionCost)>::callback_fn<llvm::slpvectorizer::\
             BoUpSLP::getEntryCost(llvm::slpvectorizer::BoUpSLP::TreeEntry const*, llvm::ArrayRef<llvm::Value*>, \
             llvm::SmallPtrSetImpl<llvm::Value*>&)::$_19>"
        );
        // A function's address and a function type among template arguments, references in
        // them (the program: fixtures/perf-data/hot-cpp.cc).
        check("_Z3viaIXadL_Z3incRlEEPFidEElS0_", "via<&(inc(long&)), int (*)(double)>");
        check("_ZN3RefIRFlicEE4callIRlEElRT_l", "Ref<long (&)(int, char)>::call<long&>");
        check("_ZN1SIXadL_Z1fvEEE1gEv", "S<&(f())>::g");
        check(
            "_ZZ41LLVMRustContextConfigureDiagnosticHandlerENK21RustDiagnosticHandler18isAnyRemarkEnabledEv",
            "LLVMRustContextConfigureDiagnosticHandler::RustDiagnosticHandler::isAnyRemarkEnabled",
        );
    }
}
