//! DCFG: real files made by Pin, and the project's own fixtures with their expected `info`.

use crate::common;
use cfghub::analysis::executions;
use cfghub::convert::load;
use cfghub::format::ReadOptions;
use cfghub::formats::dcfg::validate;
use cfghub::ir::{EdgeKind, NodeRef};

#[test]
fn simple_loop_reads_as_pin_wrote_it() {
    let Some(path) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let loaded = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap();
    assert_eq!(loaded.format.name(), "dcfg");
    assert!(!loaded.findings.has_violations(), "{:?}", loaded.findings);
    let profile = &loaded.profile;
    assert_eq!(profile.meta.format_version, Some((1, 0)));
    assert_eq!(profile.processes.len(), 1);
    let p = &profile.processes[0];
    assert_eq!(p.pid, 29003);
    assert_eq!(p.thread_count(), 1);
    assert_eq!(p.instr_count, Some(135213));
    assert_eq!(p.thread_instr_counts, vec![135213]);
    assert_eq!(p.images.len(), 3);

    // The numbers of blocks, edges, routines and loops equal the file's rows, counted
    // independently from the decompressed JSON text.
    let text = decompress(&path);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pdata = &json["PROCESSES"][1][1];
    let rows = |v: &serde_json::Value| v.as_array().map_or(0, |a| a.len() - 1);
    assert_eq!(p.edges.len(), rows(&pdata["EDGES"]));
    for (i, image) in p.images.iter().enumerate() {
        let data = &pdata["IMAGES"][i + 1][3];
        assert_eq!(image.blocks.len(), rows(&data["BASIC_BLOCKS"]));
        assert_eq!(image.symbols.len(), rows(&data["SYMBOLS"]));
        let routines = image.routines.as_ref().unwrap();
        assert_eq!(routines.len(), rows(&data["ROUTINES"]));
        let loops: usize =
            data["ROUTINES"].as_array().unwrap()[1..].iter().map(|r| r.get(3).map_or(0, rows)).sum();
        assert_eq!(routines.iter().map(|r| r.loops.len()).sum::<usize>(), loops);
    }

    // `main` is one routine with one loop (blocks 30 and 31).
    let exe = &p.images[0];
    let main = exe.symbols.iter().find(|s| s.name == "main").unwrap();
    let routine = exe
        .routines
        .as_ref()
        .unwrap()
        .iter()
        .find(|r| Some(exe.blocks[r.entry as usize].offset) == main.offset)
        .expect("a routine starts at main");
    assert_eq!(routine.loops.len(), 1);
    let mut loop_ids: Vec<u64> = routine.loops[0].nodes.iter().map(|&b| exe.blocks[b as usize].id).collect();
    loop_ids.sort();
    assert_eq!(loop_ids, vec![30, 31]);

    // Exactly one ENTRY edge, from START.
    let entries: Vec<_> = p.edges.iter().filter(|e| e.kind == EdgeKind::Entry).collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].source, NodeRef::Start);

    // Pin's file keeps every structural rule; its only flaw is the 25 instructions it counted
    // outside any block, reported as a warning.
    let findings = validate::check(profile);
    assert!(!findings.has_violations(), "{:?}", findings.items);
    assert_eq!(executions::executed_instructions(p), 135188);
    assert!(findings.warnings().any(|w| w.message.contains("25 short")));
}

fn decompress(path: &std::path::Path) -> String {
    use std::io::Read;
    let mut text = String::new();
    bzip2::read::BzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    text
}

#[test]
fn project_fixtures_pass_validate() {
    // Their `info` output is checked by tests/golden.rs (`<input>.expected/info.txt`).
    for name in ["hello-world", "two-processes"] {
        let dir = common::fixture("dcfg");
        let v = common::cfghub()
            .current_dir(&dir)
            .args(["validate", &format!("{name}.dcfg.json")])
            .output()
            .unwrap();
        assert_eq!(v.status.code(), Some(0), "{}", common::stdout(&v));
    }
}
