//! The layers of the code, checked on every test run. Cargo refuses a cycle between the crates
//! (model <- analysis <- formats <- the command-line tool); inside each crate these tests refuse
//! what Cargo cannot see:
//! - an import cycle between sibling modules (a module and its parent may name each other; two
//!   modules of one folder, or two folders, may not name each other both ways);
//! - a format that imports another format (what two formats share lives in the formats crate's
//!   shared modules or in the analysis crate);
//! - a module mounted from elsewhere with `#[path]`.
//!
//! See docs/architecture.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose modules are checked, as folders below the workspace root.
const CRATES: &[&str] = &["crates/model/src", "crates/analysis/src", "crates/formats/src", "src"];

/// The modules of the formats crate that are not formats: the interface every format implements,
/// the format list, the conversion glue, the stack text the stack formats share and V8's CPU
/// profile, which the `.cpuprofile` and Chrome trace formats share.
const SHARED_FORMAT_MODULES: &[&str] = &["convert", "folded_stacks", "format", "registry", "v8_profile"];

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder reads") {
        let path = entry.expect("folder entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file relative to its crate's `src`: `lib.rs` and `main.rs` are the
/// root, `a/mod.rs` and `a.rs` are `a`, `a/b.rs` is `a::b`.
fn module_of(relative: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// Code without comments: line comments and block comments removed, strings kept.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |i| &rest[i..]);
        } else if rest.starts_with("/*") {
            rest = rest.find("*/").map_or("", |i| &rest[i + 2..]);
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The paths of a use tree that starts at `text` (after `crate::` or `super::`), braces expanded:
/// `a::{b, c::d}` gives `a::b` and `a::c::d`. Returns the paths and the bytes read.
fn use_tree(text: &str) -> (Vec<Vec<String>>, usize) {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut prefix = Vec::new();
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'{' {
            i += 1;
            let mut all = Vec::new();
            loop {
                let (inner, used) = use_tree(&text[i..]);
                i += used;
                for tail in inner {
                    all.push(prefix.iter().cloned().chain(tail).collect());
                }
                while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
                match bytes.get(i) {
                    Some(b',') => i += 1,
                    Some(b'}') => return (all, i + 1),
                    _ => return (all, i),
                }
                while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
                if bytes.get(i) == Some(&b'}') {
                    return (all, i + 1);
                }
            }
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i == start {
            return (if prefix.is_empty() { vec![] } else { vec![prefix] }, i);
        }
        prefix.push(text[start..i].to_string());
        if text[i..].starts_with("::") {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// The module paths a file names, absolute within its crate: `crate::a::b`, and `super::x`
/// resolved from the file's own module.
fn paths_named(module: &[String], text: &str) -> Vec<Vec<String>> {
    let code = without_comments(text);
    let mut found = Vec::new();
    for (root, up) in [("crate::", None), ("super::", Some(1usize))] {
        let mut at = 0;
        while let Some(i) = code[at..].find(root) {
            let start = at + i;
            at = start + root.len();
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut base: Vec<String> = match up {
                None => vec![],
                Some(_) => module.to_vec(),
            };
            let mut rest = &code[at..];
            if up.is_some() {
                base.pop();
                while let Some(r) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = r;
                }
            }
            let (paths, _) = use_tree(rest);
            for path in paths {
                found.push(base.iter().cloned().chain(path).collect());
            }
        }
    }
    found
}

/// The deepest module of `modules` that `path` names (a path names items inside modules).
fn owning_module(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Vec<String> {
    (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| modules.contains(m)).unwrap_or_default()
}

/// One crate's sources: module path -> text.
fn crate_sources(root: &Path, src: &str) -> BTreeMap<Vec<String>, (String, String)> {
    let dir = root.join(src);
    let mut files = Vec::new();
    sources(&dir, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&dir).expect("below src").to_string_lossy().replace('\\', "/");
        if relative == "main.rs" || relative.starts_with("bin/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("source reads");
        modules.insert(module_of(&relative), (format!("{src}/{relative}"), text));
    }
    modules
}

/// Edges between sibling modules: for each import from module `m` of module `n`, the children of
/// their deepest common ancestor that hold them, unless one of them is that ancestor.
fn sibling_edges(
    modules: &BTreeMap<Vec<String>, (String, String)>,
) -> BTreeMap<(Vec<String>, Vec<String>), String> {
    let known: BTreeSet<Vec<String>> = modules.keys().cloned().collect();
    let mut edges = BTreeMap::new();
    for (module, (file, text)) in modules {
        for path in paths_named(module, text) {
            let target = owning_module(&known, &path);
            let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common == module.len() || common == target.len() {
                continue;
            }
            let from = module[..=common].to_vec();
            let to = target[..=common].to_vec();
            edges.entry((from, to)).or_insert_with(|| format!("{file} names {}", path.join("::")));
        }
    }
    edges
}

/// The cycles among sibling modules, each as one line naming an import of each direction.
fn sibling_cycles(modules: &BTreeMap<Vec<String>, (String, String)>) -> Vec<String> {
    let edges = sibling_edges(modules);
    let mut graph: BTreeMap<&Vec<String>, Vec<&Vec<String>>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from).or_default().push(to);
    }
    let mut cycles = Vec::new();
    for (from, to) in edges.keys() {
        // A cycle through this edge: `to` reaches `from` again.
        let mut seen = BTreeSet::new();
        let mut stack = vec![to];
        let mut back = false;
        while let Some(m) = stack.pop() {
            if m == from {
                back = true;
                break;
            }
            if seen.insert(m) {
                stack.extend(graph.get(m).into_iter().flatten().copied());
            }
        }
        if back && from < to {
            cycles.push(format!(
                "{} <-> {}: {}",
                from.join("::"),
                to.join("::"),
                edges[&(from.clone(), to.clone())]
            ));
        }
    }
    cycles
}

/// The imports of one format module of another format.
fn format_crossings(modules: &BTreeMap<Vec<String>, (String, String)>) -> Vec<String> {
    let mut bad = Vec::new();
    let is_format = |name: &str| !SHARED_FORMAT_MODULES.contains(&name);
    for (module, (file, text)) in modules {
        let Some(own) = module.first() else { continue };
        for path in paths_named(module, text) {
            let Some(named) = path.first() else { continue };
            let shared_names_format = !is_format(own) && !["registry", "convert"].contains(&own.as_str());
            if named != own && is_format(named) && (is_format(own) || shared_names_format) {
                let known = modules.contains_key(&vec![named.clone()]);
                if known {
                    bad.push(format!("{file}: {own} imports {}", path.join("::")));
                }
            }
        }
    }
    bad
}

#[test]
fn no_import_cycle_between_sibling_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    for src in CRATES {
        let modules = crate_sources(root, src);
        assert!(modules.len() > 5, "the sources of {src} were found");
        bad.extend(sibling_cycles(&modules));
    }
    assert!(bad.is_empty(), "{} import cycle(s):\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn no_format_imports_another() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bad = format_crossings(&crate_sources(root, "crates/formats/src"));
    assert!(bad.is_empty(), "{} crossing(s):\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn no_module_is_mounted_from_elsewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in CRATES {
        for (file, text) in crate_sources(root, src).values() {
            assert!(!without_comments(text).contains("#[path"), "{file} mounts a module with #[path]");
        }
    }
}

fn modules_of(files: &[(&str, &str)]) -> BTreeMap<Vec<String>, (String, String)> {
    files.iter().map(|(f, t)| (module_of(f), (f.to_string(), t.to_string()))).collect()
}

#[test]
fn the_checks_see_each_kind_of_crossing() {
    // Grouped imports, `super::` and comments.
    let m = vec!["a".to_string(), "b".to_string()];
    let named = paths_named(&m, "use crate::{x::y, z::{p, q}};\nuse super::c::D; // crate::w");
    assert_eq!(named, vec![s(&["x", "y"]), s(&["z", "p"]), s(&["z", "q"]), s(&["a", "c", "D"])]);
    // Siblings naming each other, through a group and through `super::`.
    let two = modules_of(&[
        ("lib.rs", "pub mod a; pub mod b;"),
        ("a.rs", "use crate::{b::B};"),
        ("b.rs", "use super::a::A;"),
    ]);
    assert_eq!(sibling_cycles(&two).len(), 1);
    // A parent and its child may name each other; so may a child and an uncle one way.
    let fine = modules_of(&[
        ("lib.rs", "pub mod a; pub mod b; use crate::a::x::X;"),
        ("a/mod.rs", "mod x; pub use x::X; use crate::b::B;"),
        ("a/x.rs", "use super::Y; use crate::b::C;"),
        ("b.rs", ""),
    ]);
    assert!(sibling_cycles(&fine).is_empty(), "{:?}", sibling_cycles(&fine));
    // Folders naming each other through files deep inside.
    let deep = modules_of(&[
        ("a/mod.rs", "mod x;"),
        ("a/x.rs", "use crate::b::y::Y;"),
        ("b/mod.rs", "mod y;"),
        ("b/y.rs", "use crate::a::x::X;"),
    ]);
    assert_eq!(sibling_cycles(&deep).len(), 1);
    // A format naming another; a format naming the shared modules.
    let formats = modules_of(&[
        ("lib.rs", ""),
        ("perf/mod.rs", "use crate::folded::read;"),
        ("folded.rs", "use crate::format::Format; use crate::folded_stacks::x;"),
        ("format.rs", ""),
        ("folded_stacks.rs", "use crate::perf::x;"),
        ("registry.rs", "use crate::{perf, folded};"),
    ]);
    assert_eq!(format_crossings(&formats).len(), 2, "{:?}", format_crossings(&formats));
}

fn s(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}
