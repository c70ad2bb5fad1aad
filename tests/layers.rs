//! The layers of the code, checked on every test run: the model (`src/ir`) imports nothing
//! else of the crate, the analyses (`src/analysis`) import no converter, and no converter
//! imports another (what two formats share lives in `src/`). See docs/architecture.md.

use std::path::{Path, PathBuf};

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

/// The crate paths a file names (`crate::a::b`, `cfghub::a::b`), comments left out.
fn paths_named(text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for root in ["crate::", "cfghub::"] {
            let mut rest = code;
            while let Some(i) = rest.find(root) {
                let before = rest[..i].chars().next_back();
                rest = &rest[i + root.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let end =
                    rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
                let parts: Vec<String> =
                    rest[..end].split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
                if !parts.is_empty() {
                    found.push(parts);
                }
            }
        }
    }
    found
}

/// The crossings of one file, given its path relative to the crate root.
fn crossings(relative: &str, text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for path in paths_named(text) {
        let head = path[0].as_str();
        let named = path.join("::");
        if relative.starts_with("src/ir/") && head != "ir" {
            bad.push(format!("{relative}: the model imports {named}"));
        } else if relative.starts_with("src/analysis/") && head == "converters" {
            bad.push(format!("{relative}: an analysis imports {named}"));
        } else if let Some(rest) = relative.strip_prefix("converters/") {
            let own = rest.split('/').next().unwrap_or("").trim_end_matches(".rs");
            if head == "converters" && path.len() > 1 && own != "mod" && path[1] != own {
                bad.push(format!("{relative}: converter {own} imports {named}"));
            }
        }
    }
    bad
}

#[test]
fn no_import_crosses_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("converters"), &mut files);
    assert!(files.len() > 20, "the sources were found");
    let mut bad = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("below the root").to_string_lossy().replace('\\', "/");
        bad.extend(crossings(&relative, &std::fs::read_to_string(&file).expect("source reads")));
    }
    assert!(bad.is_empty(), "{} layer crossing(s):\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn the_check_sees_each_kind_of_crossing() {
    assert_eq!(crossings("src/ir/mod.rs", "use crate::error::Result;").len(), 1);
    assert_eq!(crossings("src/ir/mod.rs", "use crate::ir::Edge; // crate::error").len(), 0);
    assert_eq!(crossings("src/analysis/x.rs", "let f = crate::converters::dcpi::model::f;").len(), 1);
    assert_eq!(crossings("converters/perf/mod.rs", "use crate::converters::folded::read;").len(), 1);
    assert_eq!(crossings("converters/dcpi/cat/read.rs", "use crate::converters::dcpi::model;").len(), 0);
    assert_eq!(crossings("converters/mod.rs", "pub use crate::converters::dcpi::cat;").len(), 0);
    assert_eq!(crossings("src/cli/trace.rs", "use crate::converters::dcfg_trace::paired;").len(), 0);
}
