//! Symbol names as perf prints them: Rust names without their hash, C++ names as libiberty's
//! demangler prints them without options. Shared by perf's symbol table ([`super::symtab`]) and
//! its naming of PLT entries ([`super::symbol_tree`]).

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
/// arguments); other names as [`cfghub_analysis::demangle::demangle`] writes them.
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
    cfghub_analysis::demangle::demangle(raw)
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
