//! SVG flame graphs: inferno's output is well-formed XML (checked with quick-xml) and names
//! every frame of the profile, for DTrace, perf and folded inputs and every layout option.

use std::collections::BTreeSet;

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::common::{run, shared_fixture, stderr};

/// Parses the whole document (quick-xml checks that end tags match) and returns the text of
/// every `<title>` element, entities resolved.
fn titles(svg: &str) -> Vec<String> {
    let mut reader = Reader::from_str(svg);
    let mut depth = 0i64;
    let mut in_title = false;
    let mut text = String::new();
    let mut out = Vec::new();
    loop {
        match reader.read_event().unwrap_or_else(|e| panic!("not well-formed XML: {e}")) {
            Event::Start(e) => {
                depth += 1;
                if e.name().as_ref() == b"title" {
                    in_title = true;
                    text.clear();
                }
            }
            Event::End(e) => {
                depth -= 1;
                if e.name().as_ref() == b"title" {
                    in_title = false;
                    out.push(text.clone());
                }
            }
            Event::Text(t) if in_title => text.push_str(&t.decode().expect("UTF-8 text")),
            // Entity and character references arrive as events of their own.
            Event::GeneralRef(r) if in_title => match r.resolve_char_ref().expect("valid reference") {
                Some(c) => text.push(c),
                None => {
                    let name = r.decode().expect("UTF-8 reference");
                    let resolved = quick_xml::escape::resolve_predefined_entity(&name);
                    text.push_str(resolved.unwrap_or_else(|| panic!("unknown entity &{name};")));
                }
            },
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "unbalanced elements");
    out
}

/// Every frame name of a folded file, as cfghub reads it.
fn frame_names(folded: &std::path::Path) -> BTreeSet<String> {
    let loaded =
        cfghub::convert::load(folded.to_str().unwrap(), Some("folded"), &Default::default()).unwrap();
    loaded.profile.frames.iter().map(|(_, n)| n.to_string()).collect()
}

fn check(input: &std::path::Path, from: &str, extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("out.svg");
    let folded = dir.path().join("out.folded");
    let i = input.to_str().unwrap();
    let mut args = vec!["-q", "convert", i, "--from", from, "-o", svg.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}: {}", input.display(), stderr(&o));
    let o = run(&["-q", "convert", i, "--from", from, "-o", folded.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg).unwrap();
    let titles = titles(&svg);
    for name in frame_names(&folded) {
        // inferno titles a frame `NAME (N samples, P%)`, without the `_[k]`, `_[i]`, `_[j]`
        // annotations of kernel, inlined and JIT frames (it colours them instead).
        let shown =
            ["_[k]", "_[i]", "_[j]", "_[w]"].iter().find_map(|a| name.strip_suffix(a)).unwrap_or(&name);
        assert!(
            titles.iter().any(|t| t.starts_with(&format!("{shown} ("))),
            "{}: frame {name:?} is not in the flame graph",
            input.display()
        );
    }
}

#[test]
fn dtrace_flame_graphs_name_every_frame() {
    let Some(dir) = shared_fixture("dtrace") else { return };
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.starts_with("inferno__") && !name.contains("results") && !name.contains("only-header") {
            check(&path, "dtrace", &[]);
            check(&path, "dtrace", &["--reverse", "--title", "reversed"]);
            check(&path, "dtrace", &["--inverted", "--colors", "rust"]);
            check(&path, "dtrace", &["--flamechart"]);
        }
    }
}

#[test]
fn perf_and_folded_flame_graphs_name_every_frame() {
    for (folder, from) in [("perf", "perf"), ("folded", "folded")] {
        let Some(dir) = shared_fixture(folder) else { return };
        for entry in std::fs::read_dir(dir).unwrap() {
            check(&entry.unwrap().path(), from, &[]);
        }
    }
}

#[test]
fn title_count_name_and_fractional_counts() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.folded");
    std::fs::write(&input, "# events: cycles\nmain;work 2.5\nmain;idle 1\n").unwrap();
    let svg = dir.path().join("out.svg");
    let o = run(&["convert", input.to_str().unwrap(), "-o", svg.to_str().unwrap(), "--title", "my app"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("my app"));
    let titles = titles(&svg);
    assert!(titles.iter().any(|t| t == "work (25 \u{d7} 0.1 cycles, 71.43%)"), "{titles:?}");
    assert!(titles.iter().any(|t| t == "all (35 \u{d7} 0.1 cycles, 100%)"), "{titles:?}");
}

#[test]
fn bad_palette_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.folded");
    std::fs::write(&input, "a;b 1\n").unwrap();
    let out = dir.path().join("out.svg");
    let o = run(&["convert", input.to_str().unwrap(), "-o", out.to_str().unwrap(), "--colors", "plaid"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("palette"), "{}", stderr(&o));
    assert!(!out.exists());
}
