//! C++ names as perf prints them, from libiberty's demangler itself.
//!
//! perf 6.1 demangles a symbol with libiberty's `cplus_demangle(name, 0)`: the top-level
//! function's name without its parameters, return type, qualifiers or clone suffix
//! (`llvm::LazyCallGraph::SCC::operator=`), everything inside that name (template arguments,
//! the functions of local names, thunks' targets) printed in full. cpp_demangle's printing
//! differs where a substitution is a qualified type: of
//! `St4pairIPN5clang13CXXRecordDeclEPNS1_14DefinitionDataEE` it writes
//! `clang::CXXRecordDecl*::DefinitionData` where libiberty writes
//! `clang::CXXRecordDecl::DefinitionData*`; it writes `std::nullptr_t` where libiberty writes
//! `decltype(nullptr)`, and a member function's address, a lambda in a template argument and a
//! function's reference qualifiers otherwise. No rewriting of its text mends all of that.
//!
//! libiberty's demangler (`cp-demangle.c`) is also the C++ runtime's: libstdc++'s
//! `__cxa_demangle` is that code, called with the parameters, and every C++ name cfghub prints
//! comes from it ([`cfghub_analysis::demangle`]). Here the parameters, qualifiers, clone
//! suffixes and the return type of a template function are taken off what it prints. Where libstdc++ cannot be loaded, or the printed
//! name has a shape this cannot take apart (a return type wrapped around the name:
//! `void (*f<int>())(int)`), [`demangle`] says so with `None`.

use cfghub_analysis::demangle::cpp_in_full;

/// A C++ symbol (`_Z...`) as perf 6.1 prints it (libiberty, no options); `None` where
/// libstdc++ is not there, the name does not demangle, or its shape is beyond [`name_of`].
pub fn demangle(raw: &str) -> Option<String> {
    let mut full = cpp_in_full(raw)?;
    // `.cold`, `.isra.0`: libiberty reads clone suffixes only with parameters.
    while let Some(at) = full.strip_suffix(']').and_then(|f| f.rfind(" [clone ")) {
        full.truncate(at);
    }
    // Special names (vtables, thunks, guard variables): no top-level function, printed whole.
    if raw.starts_with("_ZT") || raw.starts_with("_ZG") {
        return Some(full);
    }
    name_of(&full).map(str::to_string)
}

/// The name of a function as libiberty prints it in full: without its parameters, the
/// qualifiers after them and, for a template function, its return type. A name that is not
/// a function's (a variable's) is itself.
fn name_of(full: &str) -> Option<&str> {
    let mut s = full;
    loop {
        let before = s.len();
        for qualifier in [" const", " volatile", " restrict", " &&", " &", " transaction_safe", " noexcept"] {
            s = s.strip_suffix(qualifier).unwrap_or(s);
        }
        // `noexcept(...)`, `throw(...)`
        if let Some(open) = s.strip_suffix(')').and_then(|_| matching_open(s)) {
            let head = &s[..open];
            if let Some(h) = head.strip_suffix(" noexcept").or_else(|| head.strip_suffix(" throw")) {
                s = h;
            }
        }
        if s.len() == before {
            break;
        }
    }
    if s.ends_with(']') {
        // An array's reference or pointer as the return type, around the name.
        return None;
    }
    if !s.ends_with(')') {
        return Some(s);
    }
    let name = &s[..matching_open(s)?];
    if name.ends_with(')') && !name.ends_with("operator()") {
        // A function's pointer as the return type, around the name.
        return None;
    }
    if !name.ends_with('>') {
        return Some(name);
    }
    Some(match return_type_end(name) {
        Some(space) => &name[space + 1..],
        None => name,
    })
}

/// The `(` that the `)` ending `s` closes.
fn matching_open(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The operators' symbols, longer before their prefixes.
const OPERATORS: [&str; 39] = [
    "->*", "<<=", ">>=", "<=>", "()", "[]", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--",
    "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=",
    ",", "<", ">",
];

/// The space between a template function's return type and its name: the last one outside
/// brackets, where an operator's symbols (`operator<`, `operator()`) and the space after
/// `operator` (`operator new`) open or close nothing.
fn return_type_end(name: &str) -> Option<usize> {
    let b = name.as_bytes();
    let (mut depth, mut last, mut i) = (0i32, None, 0);
    while i < b.len() {
        if b[i..].starts_with(b"operator") && (i == 0 || matches!(b[i - 1], b':' | b' ' | b'~' | b'&')) {
            i += "operator".len();
            // A space, then a word (`new`, `delete`, a conversion's type); or the operator's
            // symbols, and the space libiberty writes between `<` and a template's `<`.
            let symbols = OPERATORS.iter().find(|o| b[i..].starts_with(o.as_bytes())).map_or(0, |o| o.len());
            i += symbols;
            i += usize::from(b.get(i) == Some(&b' '));
            continue;
        }
        match b[i] {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => depth -= 1,
            b' ' if depth == 0 => last = Some(i),
            _ => {}
        }
        i += 1;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_taken_off_what_libiberty_prints() {
        assert_eq!(name_of("foo::bar(int, char const*) const &&"), Some("foo::bar"));
        assert_eq!(name_of("void f<int>(int)"), Some("f<int>"));
        assert_eq!(
            name_of("std::vector<int, std::allocator<int> > const& g<unsigned int>()"),
            Some("g<unsigned int>")
        );
        assert_eq!(name_of("bool operator< <int>(A<int> const&, A<int> const&)"), Some("operator< <int>"));
        assert_eq!(name_of("X::operator()(int) const"), Some("X::operator()"));
        assert_eq!(name_of("void* operator new<A>(unsigned long)"), Some("operator new<A>"));
        assert_eq!(name_of("A<int>::A<long>(long)"), Some("A<int>::A<long>"));
        assert_eq!(name_of("(anonymous namespace)::f()"), Some("(anonymous namespace)::f"));
        assert_eq!(name_of("void h<int>() noexcept"), Some("h<int>"));
        assert_eq!(
            name_of("llvm::cl::opt<bool, false, llvm::cl::parser<bool> >"),
            Some("llvm::cl::opt<bool, false, llvm::cl::parser<bool> >")
        );
        assert_eq!(name_of("void (*f<int>())(double)"), None);
        assert_eq!(name_of("int (&f<int>())[3]"), None);
    }

    /// Where libstdc++ is there (it is wherever g++ or perf is): libiberty's own words.
    #[test]
    fn cpp_names_are_libiberty_s() {
        if cpp_in_full("_Z1fv").is_none() {
            eprintln!("skipped: libstdc++.so.6 cannot be loaded");
            return;
        }
        let pair =
            "_ZN4llvm15SmallVectorImplISt4pairIPN5clang13CXXRecordDeclEPNS3_14DefinitionDataEEEaSEOS8_";
        assert_eq!(
            demangle(pair).as_deref(),
            Some("llvm::SmallVectorImpl<std::pair<clang::CXXRecordDecl*, clang::CXXRecordDecl::DefinitionData*> >::operator=")
        );
        let erase = "_ZN4llvm5eraseINS_11SmallVectorIPNS_10BasicBlockELj8EEEDnEEvRT_T0_";
        assert_eq!(
            demangle(erase).as_deref(),
            Some("llvm::erase<llvm::SmallVector<llvm::BasicBlock*, 8u>, decltype(nullptr)>")
        );
        let rvalue_method = "_ZNO5clang6format22MacroCallReconstructor10takeResultEv";
        assert_eq!(
            demangle(rvalue_method).as_deref(),
            Some("clang::format::MacroCallReconstructor::takeResult")
        );
        assert_eq!(demangle("_Z3foov.cold").as_deref(), Some("foo"));
        assert_eq!(demangle("_ZThn8_N1C1gEl").as_deref(), Some("non-virtual thunk to C::g(long)"));
        assert_eq!(
            demangle("_Z3viaIXadL_Z3incRlEEPFidEElS0_").as_deref(),
            Some("via<&(inc(long&)), int (*)(double)>")
        );
    }
}
