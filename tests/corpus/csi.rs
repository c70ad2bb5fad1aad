//! CSI: the section texts csi-cc 1.4.0 wrote for its own test programs (PT at -O0..-O3, BBC,
//! CC, FC) read, write back equal up to order, and decode; the `.debug_PT` writer numbers the
//! routines of a real DCFG and of a Callgrind profile made here so that they decode too.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, csi};
use cfghub::convert::{load, write_to_vec};
use cfghub::format::{ReadOptions, WriteOptions};
use cfghub::formats::csi::{self as csi_format, read_bytes};
use cfghub::ir::CoverageKind;

fn fixtures(suffix: &str) -> Vec<PathBuf> {
    let Some(dir) = common::shared_fixture("csi") else { return Vec::new() };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(suffix))
        .collect();
    v.sort();
    v
}

fn read(path: &Path) -> cfghub::ir::Profile {
    let loaded = load(path.to_str().unwrap(), None, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(loaded.format.name(), "csi", "{}", path.display());
    loaded.profile
}

#[test]
fn every_path_fixture_reads_and_writes_back_equal_up_to_order() {
    let files = fixtures("-PT.expected");
    if files.is_empty() {
        return;
    }
    assert_eq!(files.len(), 28);
    for f in &files {
        let profile = read(f);
        let functions = csi::canonical(&profile);
        // As many functions and edge lines as the text has.
        let text = std::fs::read_to_string(f).unwrap();
        assert_eq!(functions.len(), text.lines().filter(|l| *l == "#").count(), "{}", f.display());
        let edges: usize = functions.iter().map(|f| f.2.len()).sum();
        assert_eq!(edges, text.lines().filter(|l| l.contains("->") || l.contains("~>")).count());
        let (written, findings) =
            write_to_vec(&csi_format::FORMAT, &profile, &WriteOptions::default()).unwrap();
        assert_eq!(findings.warnings().count(), 0, "{}: {findings:?}", f.display());
        let again = read_bytes(&written, None).unwrap();
        assert_eq!(csi::canonical(&again), functions, "{}", f.display());
        // csi-cc's own layout: the same lines, in an order of its making.
        let mut a: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
        let written = String::from_utf8(written).unwrap();
        let mut b: Vec<&str> = written.lines().collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{}", f.display());
    }
}

#[test]
fn every_coverage_fixture_reads() {
    for (suffix, kind) in [
        ("-BBC.expected", CoverageKind::Block),
        ("-CC.expected", CoverageKind::Call),
        ("-FC.expected", CoverageKind::Function),
    ] {
        for f in fixtures(suffix) {
            let profile = read(&f);
            let image = &profile.processes[0].images[0];
            let text = std::fs::read_to_string(&f).unwrap();
            let headers = text.lines().filter(|l| l.starts_with('#')).count();
            let sites = text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).count();
            assert_eq!(image.coverage.len(), headers, "{}", f.display());
            assert!(image.coverage.iter().all(|c| c.kind == kind), "{}", f.display());
            assert_eq!(image.coverage.iter().map(|c| c.sites.len()).sum::<usize>(), sites, "{}", f.display());
            for c in &image.coverage {
                assert!(c.array.contains(&image.symbols[c.symbol as usize].name), "{}", c.array);
            }
        }
    }
    // Indirect calls and sites the optimiser removed.
    let Some(cc) = common::shared_fixture("csi/fnptr__fnptr-O0.csi-static-CC.expected") else { return };
    let profile = read(&cc);
    let sites = &profile.processes[0].images[0].coverage[0].sites;
    assert_eq!((sites[0].lines.as_slice(), sites[0].callee.as_deref()), (&[18][..], None));
    assert_eq!(sites[1].callee.as_deref(), Some("printf"));
}

#[test]
fn every_function_of_every_path_fixture_decodes() {
    let mut total = (0, 0);
    for f in fixtures("-PT.expected") {
        let (r, p) = csi::check_decoding(&read(&f), 100_000);
        total = (total.0 + r, total.1 + p);
    }
    if total.0 > 0 {
        assert!(total.1 >= total.0 as u64);
    }
}

#[test]
fn the_six_paths_of_loop_main() {
    let Some(f) = common::shared_fixture("csi/loop__loop-O0.csi-static-PT.expected") else { return };
    let o = common::run(&["csi", "paths", f.to_str().unwrap(), "--function", "main"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(
        common::stdout(&o),
        "0: 2 4 5 7 9 ~>\n1: 2 4 5 8 9 ~>\n2: 2 4 6 3\n3: ~> 4 5 7 9 ~>\n4: ~> 4 5 8 9 ~>\n5: ~> 4 6 3\n"
    );
}

/// Writes `profile` as `.debug_PT`, reads it back and checks every routine's numbering; returns
/// the number of routines written.
fn write_and_check(profile: &cfghub::ir::Profile, what: &str) -> usize {
    let (written, findings) = write_to_vec(&csi_format::FORMAT, profile, &WriteOptions::default()).unwrap();
    // What .debug_PT cannot hold by its nature is named in a note (`-v`), not a warning.
    assert!(findings.details().any(|w| w.message.contains("addresses")), "{what}: {findings:?}");
    assert_eq!(findings.warnings().count(), 0, "{what}: {findings:?}");
    let back = read_bytes(&written, None).unwrap_or_else(|e| panic!("{what}: {e}"));
    let routines = back.processes[0].images[0].routines.as_ref().map_or(0, |r| r.len());
    assert!(routines > 0, "{what}: nothing written");
    let (checked, _) = csi::check_decoding(&back, 100_000);
    assert!(checked > 0, "{what}: no routine small enough to check");
    // The in-memory numbering decodes the same way.
    csi::check_decoding(profile, 100_000);
    routines
}

#[test]
fn dcfg_routines_are_numbered_and_decode() {
    let local =
        load(common::fixture("dcfg/hello-world.dcfg.json").to_str().unwrap(), None, &ReadOptions::default())
            .unwrap();
    write_and_check(&local.profile, "hello-world");
    let Some(path) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let loaded = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap();
    let written = write_and_check(&loaded.profile, "simple-loop");
    let routines: usize =
        loaded.profile.processes[0].images.iter().map(|i| i.routines.as_ref().map_or(0, |r| r.len())).sum();
    assert!(written * 10 >= routines * 9, "{written} of {routines} routines written");
}

#[test]
fn callgrind_profile_made_here_is_numbered_and_decodes() {
    common::require("gcc");
    common::require("valgrind");
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("recursion-loops");
    let st = Command::new("gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&exe)
        .arg(common::fixture("callgrind/recursion-loops.c"))
        .status()
        .unwrap();
    assert!(st.success());
    let out = dir.path().join("callgrind.out.test");
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let loaded = load(out.to_str().unwrap(), None, &ReadOptions::default()).unwrap();
    assert_eq!(loaded.format.name(), "callgrind");
    write_and_check(&loaded.profile, "callgrind");
    // And through the command line, with the same routines' names.
    let pt = dir.path().join("app.debug_PT");
    let o = common::run(&["convert", out.to_str().unwrap(), "-o", pt.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&pt).unwrap();
    assert!(text.lines().any(|l| l == "main"), "main is written");
}
