//! Symbol names as the toolchain's own tools print them: one demangler for every path.
//!
//! C++ names go through libiberty's demangler (`cp-demangle.c`), the one c++filt, addr2line
//! and perf print with. libstdc++ ships it as `__cxa_demangle`, which is loaded at run time
//! (`libstdc++.so.6`, there wherever C++ programs run); it prints what `c++filt` prints except
//! the standard library's abbreviations, which c++filt writes in full (`std::string`,
//! `std::ostream`: c++filt runs verbose, addr2line and perf do not). Where libstdc++ cannot be
//! loaded, cpp_demangle's words stand in. Rust names go through rustc-demangle.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::OnceLock;

/// `char *__cxa_demangle(const char *mangled, char *buffer, size_t *length, int *status)`.
type CxaDemangle = unsafe extern "C" fn(*const c_char, *mut c_char, *mut usize, *mut c_int) -> *mut c_char;

/// libstdc++'s `__cxa_demangle`, loaded once; `None` where the library is not there.
fn cxa_demangle() -> Option<CxaDemangle> {
    static LOADED: OnceLock<Option<usize>> = OnceLock::new();
    let address = LOADED.get_or_init(|| {
        // SAFETY: dlopen and dlsym with NUL-terminated names; the library stays loaded (the
        // handle is never closed), so the function's address stays valid.
        unsafe {
            let handle = libc::dlopen(c"libstdc++.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if handle.is_null() {
                return None;
            }
            let symbol = libc::dlsym(handle, c"__cxa_demangle".as_ptr());
            (!symbol.is_null()).then_some(symbol as usize)
        }
    });
    // SAFETY: the address is that of `__cxa_demangle`, whose C signature `CxaDemangle` is.
    address.map(|a| unsafe { std::mem::transmute::<usize, CxaDemangle>(a) })
}

/// What libiberty prints of the C++ name `raw` in full (with parameters, as c++filt, addr2line
/// and perf's full names print it), or `None` where libstdc++ cannot be loaded or the name does
/// not demangle.
pub fn cpp_in_full(raw: &str) -> Option<String> {
    let demangle = cxa_demangle()?;
    let mangled = CString::new(raw).ok()?;
    let mut status: c_int = -1;
    // SAFETY: a NUL-terminated input, no buffer (the demangler allocates with malloc), and a
    // status to write; the result is copied, then freed with `free`.
    unsafe {
        let out = demangle(mangled.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), &mut status);
        if out.is_null() {
            return None;
        }
        let text = (status == 0).then(|| CStr::from_ptr(out).to_string_lossy().into_owned());
        libc::free(out.cast());
        text
    }
}

/// A symbol's name demangled: Rust names (v0 and legacy) without their hash, C++ names as
/// [`cpp_in_full`] prints them (cpp_demangle's words where libstdc++ is not there), other names
/// as they are. A C++ name neither demangler reads whole (a template whose return type holds a
/// pack expansion inside an expression) is named by its shortest prefix that ends a name and
/// demangles.
pub fn demangle(name: &str) -> String {
    if name.starts_with("_R") || name.starts_with("_ZN") || name.starts_with("__R") {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            return format!("{d:#}");
        }
    }
    if name.starts_with("_Z") {
        if let Some(d) = cpp_in_full(name).or_else(|| cpp_demangle_words(name)) {
            return d;
        }
        for (i, _) in name.match_indices('E') {
            if let Some(d) = cpp_demangle_words(&name[..=i]) {
                return d;
            }
        }
    }
    name.to_string()
}

/// cpp_demangle's words for a C++ name, with parameters.
fn cpp_demangle_words(name: &str) -> Option<String> {
    cpp_demangle::Symbol::new(name).ok()?.demangle(&cpp_demangle::DemangleOptions::default()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// c++filt's words, abbreviations of the standard library aside.
    #[test]
    fn cpp_names_are_what_cxxfilt_prints() {
        if cpp_in_full("_Z1fv").is_none() {
            eprintln!("libstdc++ is not loadable here: cpp_demangle's words stand in");
            return;
        }
        for (raw, printed) in [
            ("_ZN12_GLOBAL__N_14SROA3runEv", "(anonymous namespace)::SROA::run()"),
            ("_ZNK6shapes2Sq4areaEv", "shapes::Sq::area() const"),
            ("_Z1fIJEEvDpT_", "void f<>()"),
            ("_ZNSo3putEc", "std::ostream::put(char)"),
        ] {
            assert_eq!(demangle(raw), printed);
        }
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
    }
}
