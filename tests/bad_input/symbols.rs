//! `--symbols` with files that do not help: each gets a message that names the file and what
//! is wrong with it; the command fails (exit 2, no output) only when nothing could be named,
//! and never panics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

fn gcc(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    std::fs::copy(common::fixture("symbols/inlined.c"), dir.join("inlined.c")).unwrap();
    let mut args = vec!["-O2", "-no-pie"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["-o", name, "inlined.c"]);
    let o = Command::new("gcc").args(&args).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "gcc: {}", common::stderr(&o));
    dir.join(name)
}

/// A dcpicat dump of `image` with samples inside `main` of the fixture built by [`gcc`].
fn samples(dir: &Path, image: &Path, of: &Path) -> PathBuf {
    let o = Command::new("nm").arg(of).output().unwrap();
    let text = common::stdout(&o);
    let main = text.lines().find(|l| l.ends_with(" main")).unwrap().split_whitespace().next().unwrap();
    let main = u64::from_str_radix(main, 16).unwrap();
    let body = format!(
        "name                 prog\nimage                1\npath                 {}\nepoch                202611230000\n\
         platform             x86_64\ntext_start           0x000000400000\ntext_size            0x000000100000\n\
         event                2 cycles:63488:10000\n{:#014x}      1\n{:#014x}      1\n",
        image.display(),
        main,
        main + 4
    );
    let path = dir.join("samples.dcpicat");
    std::fs::write(&path, body).unwrap();
    path
}

fn convert(input: &Path, symbols: &Path, output: &Path) -> Output {
    common::run(&[
        "convert",
        input.to_str().unwrap(),
        "--symbols",
        symbols.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ])
}

/// The command fails with exit 2, no output and every `expected` text on standard error.
fn refused(o: &Output, output: &Path, expected: &[&str]) {
    let err = common::stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!output.exists(), "a failed run left {}", output.display());
    for e in expected {
        assert!(err.contains(e), "expected {e:?} in: {err}");
    }
}

#[test]
fn missing_and_non_elf_files_are_named() {
    common::require("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = gcc(dir, "prog", &["-g"]);
    let input = samples(dir, &dir.join("gone/prog"), &prog);
    let out = dir.join("out.folded");
    refused(&convert(&input, &dir.join("nothing-here"), &out), &out, &["nothing-here", "no such file"]);
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not a binary\n").unwrap();
    refused(&convert(&input, &text, &out), &out, &["notes.txt", "not an ELF file"]);
    let empty = dir.join("empty");
    std::fs::write(&empty, "").unwrap();
    refused(&convert(&input, &empty, &out), &out, &["empty"]);
}

#[test]
fn a_build_without_dwarf_names_from_its_symbol_table_with_a_warning() {
    common::require("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = gcc(dir, "prog", &[]);
    let input = samples(dir, &prog, &prog);
    let out = dir.join("out.folded");
    let o = convert(&input, &prog, &out);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("no DWARF") && err.contains("symbol table only"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().last(), Some("main 2"));
}

#[test]
fn a_build_of_another_build_id_is_refused() {
    common::require("gcc");
    common::require("strip");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ran = gcc(dir, "prog", &["-g", "-DOTHER_BUILD=1", "-Wl,--build-id=sha1"]);
    let o = Command::new("strip").arg(&ran).output().unwrap();
    assert!(o.status.success());
    let other = gcc(dir, "other", &["-g", "-O1", "-Wl,--build-id=sha1"]);
    let input = samples(dir, &ran, &other);
    let out = dir.join("out.folded");
    refused(&convert(&input, &other, &out), &out, &["other", "build id", "is not the image's"]);
}

#[test]
fn damaged_dwarf_falls_back_to_the_symbol_table_and_a_truncated_file_is_refused() {
    common::require("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = gcc(dir, "prog", &["-g"]);
    let mut bytes = std::fs::read(&prog).unwrap();
    // Garble the compilation unit headers of .debug_info.
    let (at, size) = {
        let file = object::File::parse(&*bytes).unwrap();
        use object::{Object, ObjectSection};
        let s = file.section_by_name(".debug_info").unwrap();
        let (at, size) = s.file_range().unwrap();
        (at as usize, size as usize)
    };
    for b in &mut bytes[at..at + size.min(64)] {
        *b = 0xff;
    }
    let damaged = dir.join("damaged");
    std::fs::write(&damaged, &bytes).unwrap();
    let input = samples(dir, &dir.join("gone/damaged"), &prog);
    let out = dir.join("out.folded");
    let o = convert(&input, &damaged, &out);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("DWARF") && err.contains("symbol table only"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().last(), Some("main 2"));

    let truncated = dir.join("truncated");
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).unwrap();
    std::fs::remove_file(&out).unwrap();
    let input = samples(dir, &dir.join("gone/truncated"), &prog);
    refused(&convert(&input, &truncated, &out), &out, &["truncated"]);
}

/// The last address of all is in no DWARF range; looking it up (a symbol or sample at
/// `0xffffffffffffffff` in a damaged file, found by fuzzing) finds nothing instead of
/// overflowing in the line-table search. Tests are built with overflow checks, so the
/// overflow would show here as a panic.
#[test]
fn the_last_address_of_all_has_no_source_position() {
    use cfghub::symbolize::{Found, Symbolizer};
    common::require("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let prog = gcc(tmp.path(), "prog", &["-g"]);
    let found = Found { binary: Some(prog.clone()), debug: Some(prog), ..Found::default() };
    let symbolizer = Symbolizer::new(found).unwrap();
    assert!(symbolizer.has_dwarf());
    let lookup = symbolizer.lookup();
    assert!(lookup.find_location(u64::MAX).unwrap().is_none());
    assert!(lookup.find_frames(u64::MAX).unwrap().is_empty());
    // The address below it is looked up as any other.
    assert!(lookup.find_location(u64::MAX - 1).unwrap().is_none());
}
