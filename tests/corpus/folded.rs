//! Folded stacks: every file in ../shared/fixtures/folded reads, and
//! read(write(read(x))) == read(x).

use cfghub::format::WriteOptions;
use cfghub::formats::folded::FORMAT as Folded;

use crate::common::shared_fixture;

#[test]
fn fixtures_survive_a_round_trip() {
    let Some(dir) = shared_fixture("folded") else { return };
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let (first, _) = cfghub::convert::read_with(&Folded, &mut &bytes[..]).unwrap();
        assert!(!first.processes[0].stacks.is_empty(), "{}", path.display());
        let (text, findings) =
            cfghub::convert::write_to_vec(&Folded, &first, &WriteOptions::default()).unwrap();
        assert!(findings.items.is_empty(), "{findings:?}");
        let (second, _) = cfghub::convert::read_with(&Folded, &mut &text[..]).unwrap();
        assert_eq!(first, second, "{}", path.display());
    }
}

#[test]
fn fractional_and_differential_counts_are_kept() {
    let Some(path) = shared_fixture("folded/tests_data_flamegraph_fractional-samples_fractional.txt") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let (p, _) = cfghub::convert::read_with(&Folded, &mut &bytes[..]).unwrap();
    // Exact: each count as its text says it, in thousandths (the finest places in the file).
    let stacks = &p.processes[0].stacks;
    assert_eq!(stacks.decimals_of(0), 3);
    let values: Vec<i128> = stacks.samples().map(|s| s.values[0]).collect();
    assert!(values.contains(&31_230) && values.contains(&2_567) && values.contains(&274_321), "{values:?}");

    let Some(path) = shared_fixture(
        "folded/tests_data_flamegraph_differential_perf-cycles-instructions-01-collapsed-all-diff.txt",
    ) else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let (p, _) = cfghub::convert::read_with(&Folded, &mut &bytes[..]).unwrap();
    let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["samples1", "samples2"]);
    assert_eq!(p.processes[0].stacks.sample(0).values, [31, 56]);
}

#[test]
fn austin_comments_and_spaces_in_frame_names() {
    let Some(path) = shared_fixture("folded/tests_data_flamegraph_austin_flames.txt") else { return };
    let bytes = std::fs::read(path).unwrap();
    let (p, _) = cfghub::convert::read_with(&Folded, &mut &bytes[..]).unwrap();
    assert!(p.meta.headers.iter().any(|(k, v)| k == "comment" && v == "austin: 3.3.0"));
    assert!(p.frames.iter().any(|(_, n)| n == "<frozen importlib._bootstrap>:_find_and_load:1007"));
    let (text, _) = cfghub::convert::write_to_vec(&Folded, &p, &WriteOptions::default()).unwrap();
    assert!(String::from_utf8(text).unwrap().starts_with("# austin: 3.3.0\n"));
}

#[test]
fn a_dcfg_without_stacks_gives_estimated_stacks_that_add_up() {
    let Some(path) = shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let loaded = cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap();
    let (text, findings) =
        cfghub::convert::write_to_vec(&Folded, &loaded.profile, &WriteOptions::default()).unwrap();
    assert!(findings.warnings().any(|w| w.message.contains("estimated")), "{findings:?}");
    let (back, _) = cfghub::convert::read_with(&Folded, &mut &text[..]).unwrap();
    assert_eq!(back.events[0].name, "instructions");
    let sum: i128 = back.processes[0].stacks.samples().map(|s| s.values[0]).sum();
    let executed = cfghub::analysis::executions::executed_instructions(&loaded.profile.processes[0]);
    assert_eq!(sum as u64, executed);
    // Every stack starts at a routine nothing calls, and the hot loader path is there.
    let stacks = &back.processes[0].stacks;
    assert!(stacks.samples().all(|s| stacks.depth(s.node) < 64));
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.lines().any(|l| l.contains("_dl_start;_dl_sysdep_start;dl_main;_dl_relocate_object")),
        "{text}"
    );
}

#[test]
fn a_dcfg_with_stacks_writes_them_exactly() {
    // What a DCFG-trace replay gives: the DCFG's blocks plus exact stacks.
    let Some(path) = shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let mut profile =
        cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    profile.events.push(cfghub::ir::Event::new("Ir"));
    let ir = profile.events.len() - 1;
    let frames: Vec<u32> = ["main", "work", "leaf"].iter().map(|f| profile.frames.intern(f)).collect();
    let mut values = vec![0; profile.events.len()];
    values[ir] = 1234;
    profile.processes[0].stacks.push(&frames, None, &values);
    let options = WriteOptions { event: Some("Ir".into()), ..WriteOptions::default() };
    let (text, findings) = cfghub::convert::write_to_vec(&Folded, &profile, &options).unwrap();
    assert!(!findings.warnings().any(|w| w.message.contains("estimated")), "{findings:?}");
    assert_eq!(String::from_utf8(text).unwrap(), "# events: Ir\nmain;work;leaf 1234\n");
}
