//! speedscope's own sample profiles of the formats cfghub reads from browsers, Node and the JVM
//! (fixtures/{chrome-trace,cpuprofile,jfr}/upstream; see fixtures/README.md): every one reads,
//! and reads as the files themselves count: the partial and object forms of a trace as the
//! whole array, every sample of the JSON Object Format's list, the older tree form's samples,
//! a heap profile's live bytes.

use cfghub::convert::{load, write_to_vec};
use cfghub::format::WriteOptions;
use cfghub::registry::by_name;
use serde_json::Value;

use crate::common::fixture;

fn files(format: &str) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(fixture(&format!("{format}/upstream")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

fn folded(path: &std::path::Path, event: &str) -> String {
    let loaded = load(path.to_str().unwrap(), None, &Default::default()).unwrap();
    let options = WriteOptions { event: Some(event.into()), ..WriteOptions::default() };
    String::from_utf8(write_to_vec(by_name("folded").unwrap(), &loaded.profile, &options).unwrap().0).unwrap()
}

/// Each event's total over every sample.
fn totals(path: &std::path::Path) -> Vec<(String, i128)> {
    let loaded = load(path.to_str().unwrap(), None, &Default::default()).unwrap();
    let p = &loaded.profile;
    (0..p.events.len())
        .map(|e| {
            let total = p.processes.iter().flat_map(|proc| proc.stacks.samples().map(|s| s.values[e])).sum();
            (p.events[e].name.clone(), total)
        })
        .collect()
}

#[test]
fn every_sample_file_reads_in_its_format() {
    for (format, count) in [("chrome-trace", 31), ("cpuprofile", 3), ("jfr", 1)] {
        let list = files(format);
        assert_eq!(list.len(), count, "{format}");
        for path in list {
            let loaded = load(path.to_str().unwrap(), None, &Default::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(loaded.format.name(), format, "{}", path.display());
            assert!(totals(&path).iter().any(|(_, t)| *t > 0), "{}: no value", path.display());
        }
    }
}

#[test]
fn partial_and_object_forms_of_a_trace_read_as_the_whole_array() {
    let dir = fixture("chrome-trace/upstream");
    let whole = folded(&dir.join("simple.json"), "duration");
    assert!(!whole.is_empty());
    for other in
        ["simple-partial.json", "simple-partial-trailing-comma.json", "simple-partial-whitespace.json"]
    {
        assert_eq!(folded(&dir.join(other), "duration"), whole, "{other}");
    }
    // An `X` event without `dur` lasts its `tdur`; one without a name is `(unnamed)`.
    let object = folded(&dir.join("simple-object.json"), "duration");
    assert_eq!(object, "# events: duration\nalpha 2\nalpha;beta 8\nalpha;beta;(unnamed) 4\n");
    assert!(whole.contains("alpha;beta;epsilon 4\n"), "{whole}");
}

#[test]
fn the_object_formats_samples_are_every_sample_of_its_list() {
    for name in ["multi-thread-with-samples.json", "simple-with-samples.json"] {
        let path = fixture(&format!("chrome-trace/upstream/{name}"));
        let file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let weights: i128 = file["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["weight"].as_str().map_or(1, |w| w.parse::<i128>().unwrap()))
            .sum();
        let samples = totals(&path).into_iter().find(|(e, _)| e == "samples").unwrap().1;
        assert_eq!(samples, weights, "{name}");
    }
}

#[test]
fn the_older_tree_form_and_a_heap_profile_count_what_the_file_states() {
    let dir = fixture("cpuprofile/upstream");
    let old: Value =
        serde_json::from_slice(&std::fs::read(dir.join("node-10-example.cpuprofile")).unwrap()).unwrap();
    let samples = totals(&dir.join("node-10-example.cpuprofile"));
    assert_eq!(samples[0], ("samples".to_string(), old["samples"].as_array().unwrap().len() as i128));
    let heap: Value =
        serde_json::from_slice(&std::fs::read(dir.join("node-10.heapprofile")).unwrap()).unwrap();
    let mut live = 0i128;
    let mut nodes = vec![&heap["head"]];
    while let Some(n) = nodes.pop() {
        live += n["selfSize"].as_i64().unwrap_or(0) as i128;
        nodes.extend(n["children"].as_array().into_iter().flatten());
    }
    assert_eq!(totals(&dir.join("node-10.heapprofile")), [("inuse_space".to_string(), live)]);
}
