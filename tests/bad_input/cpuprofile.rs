//! V8 CPU profiles, as `.cpuprofile` files and inside Chrome traces: callers in a cycle,
//! references to node ids that do not exist, time deltas past 64 bits, huge counts and
//! truncated JSON are errors that name their JSON path (or line), never a panic; the command
//! line exits 2 and writes nothing. Nothing is allocated from a count the input states.

use cfghub::error::{Findings, Place};
use cfghub::format::{Format, ReadOptions};
use cfghub::formats::{chrome_trace, cpuprofile};
use proptest::prelude::*;

use crate::common;

/// A valid profile: `(root)` calling `main` calling an anonymous function, sampled three
/// times. `edit` changes its JSON before it is written.
fn profile(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let frame = |name: &str, line: i64| serde_json::json!({ "functionName": name, "scriptId": "1", "url": "file:///app.js", "lineNumber": line, "columnNumber": 0 });
    let mut p = serde_json::json!({
        "nodes": [
            { "id": 1, "callFrame": frame("(root)", -1), "hitCount": 0, "children": [2] },
            { "id": 2, "callFrame": frame("main", 3), "hitCount": 1, "children": [3] },
            { "id": 3, "callFrame": frame("", 9), "hitCount": 2 }
        ],
        "startTime": 1000, "endTime": 4000,
        "samples": [3, 2, 3], "timeDeltas": [100, 1000, 1000]
    });
    edit(&mut p);
    serde_json::to_vec(&p).unwrap()
}

/// The same profile as a trace's `Profile` and `ProfileChunk` events.
fn trace(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let p: serde_json::Value = serde_json::from_slice(&profile(|_| {})).unwrap();
    let mut nodes = p["nodes"].clone();
    for n in nodes.as_array_mut().unwrap() {
        n.as_object_mut().unwrap().remove("children");
    }
    nodes[1]["parent"] = 1.into();
    nodes[2]["parent"] = 2.into();
    let mut t = serde_json::json!({ "traceEvents": [
        { "ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "ts": 0, "args": { "name": "main" } },
        { "ph": "P", "name": "Profile", "id": "0x1", "pid": 7, "tid": 7, "ts": 1000, "args": { "data": { "startTime": 1000 } } },
        { "ph": "P", "name": "ProfileChunk", "id": "0x1", "pid": 7, "tid": 8, "ts": 2000,
          "args": { "data": { "cpuProfile": { "nodes": nodes, "samples": p["samples"] }, "timeDeltas": p["timeDeltas"], "endTime": 4000 } } },
        { "ph": "X", "name": "task", "pid": 7, "tid": 7, "ts": 1000, "dur": 2500 }
    ]});
    edit(&mut t);
    serde_json::to_vec(&t).unwrap()
}

fn read(format: &Format, bytes: &[u8]) -> cfghub::error::Result<cfghub::ir::Profile> {
    format.read(&mut &bytes[..], &ReadOptions::default(), &mut Findings::default())
}

fn error_path(format: &Format, bytes: &[u8]) -> (String, String) {
    let e = read(format, bytes).expect_err("refused");
    match &e.place {
        Some(Place::Path(p)) => (p.clone(), e.message.clone()),
        other => panic!("no JSON path: {other:?} ({e})"),
    }
}

#[test]
fn the_valid_profile_and_trace_read() {
    for (format, bytes) in [(&cpuprofile::FORMAT, profile(|_| {})), (&chrome_trace::FORMAT, trace(|_| {}))] {
        let p = read(format, &bytes).unwrap();
        let stacks = p.processes[0].stacks.listed();
        let frames: Vec<&str> = stacks[0].frames.iter().map(|&f| p.frames.get(f)).collect();
        assert_eq!(frames, ["(root)", "main", "(anonymous)"], "{}", format.name());
        let times: Vec<_> = stacks.iter().filter(|s| s.values[0] == 1).map(|s| s.values[1]).collect();
        assert_eq!(times, [1000, 1000, 900], "{}", format.name());
    }
}

#[test]
fn callers_in_a_cycle() {
    let (path, message) =
        error_path(&cpuprofile::FORMAT, &profile(|p| p["nodes"][2]["children"] = serde_json::json!([1])));
    assert!(path.starts_with("nodes["), "{path}");
    assert!(message.contains("cycle"), "{message}");
    let (path, message) = error_path(
        &chrome_trace::FORMAT,
        &trace(|t| t["traceEvents"][2]["args"]["data"]["cpuProfile"]["nodes"][0]["parent"] = 3.into()),
    );
    assert!(path.starts_with("traceEvents[2].args.data.cpuProfile.nodes["), "{path}");
    assert!(message.contains("cycle"), "{message}");
}

/// The warnings of reading `bytes` as `format`, which must succeed.
fn warnings(format: &Format, bytes: &[u8]) -> Vec<String> {
    let mut findings = Findings::default();
    format.read(&mut &bytes[..], &ReadOptions::default(), &mut findings).expect("read");
    findings.warnings().map(|w| w.message.clone()).collect()
}

/// References to ids no node has, as a trace cut after its profile started holds them: read
/// as speedscope reads them (a node whose caller is unknown is called from the root; a sample
/// at an unknown node is left out), with one warning line each.
#[test]
fn references_to_unknown_node_ids_are_left_out_and_told() {
    let w = warnings(&cpuprofile::FORMAT, &profile(|p| p["samples"][1] = 77.into()));
    assert!(w.iter().any(|w| w.contains("1 sample(s) at node ids no node has")), "{w:?}");
    let w = warnings(&cpuprofile::FORMAT, &profile(|p| p["nodes"][0]["children"][0] = 9.into()));
    assert!(w.iter().any(|w| w.contains("no node has left out")), "{w:?}");
    let w = warnings(&cpuprofile::FORMAT, &profile(|p| p["nodes"][1]["parent"] = 4.into()));
    assert!(w.iter().any(|w| w.contains("called from the root")), "{w:?}");
    let w = warnings(
        &chrome_trace::FORMAT,
        &trace(|t| t["traceEvents"][2]["args"]["data"]["cpuProfile"]["samples"][2] = 12.into()),
    );
    assert!(w.iter().any(|w| w.contains("1 sample(s) at node ids no node has")), "{w:?}");
}

#[test]
fn a_node_with_two_callers_or_one_id_twice() {
    let (path, message) = error_path(&cpuprofile::FORMAT, &profile(|p| p["nodes"][1]["parent"] = 3.into()));
    assert_eq!(path, "nodes[1].parent");
    assert!(message.contains("two callers"), "{message}");
    let (path, _) = error_path(&cpuprofile::FORMAT, &profile(|p| p["nodes"][2]["id"] = 2.into()));
    assert_eq!(path, "nodes[2].id");
}

#[test]
fn time_deltas_past_64_bits() {
    let (path, message) = error_path(&cpuprofile::FORMAT, &profile(|p| p["timeDeltas"][1] = i64::MAX.into()));
    assert_eq!(path, "timeDeltas[1]");
    assert!(message.contains("2^63"), "{message}");
    let (path, _) = error_path(
        &chrome_trace::FORMAT,
        &trace(|t| t["traceEvents"][2]["args"]["data"]["timeDeltas"][2] = i64::MAX.into()),
    );
    assert_eq!(path, "traceEvents[2].args.data.timeDeltas[2]");
    // A delta that is no 64-bit integer at all is placed too.
    let (path, _) = error_path(
        &chrome_trace::FORMAT,
        &trace(|t| t["traceEvents"][2]["args"]["data"]["timeDeltas"][0] = serde_json::json!(1e30)),
    );
    assert_eq!(path, "traceEvents[2].args.data.timeDeltas[0]");
    let (path, _) =
        error_path(&cpuprofile::FORMAT, &profile(|p| p["timeDeltas"] = serde_json::json!([1, 2])));
    assert_eq!(path, "timeDeltas");
}

/// Counts as large as a u64 holds are kept exactly (no sample is made per count on reading),
/// and larger numbers are refused where they are.
#[test]
fn huge_counts() {
    let p = read(
        &cpuprofile::FORMAT,
        &profile(|p| {
            p.as_object_mut().unwrap().remove("samples");
            p.as_object_mut().unwrap().remove("timeDeltas");
            p["nodes"][2]["hitCount"] = u64::MAX.into();
        }),
    )
    .unwrap();
    let values: Vec<_> = p.processes[0].stacks.listed().iter().map(|s| s.values[0]).collect();
    assert_eq!(values, [1, i128::from(u64::MAX)]);
    // Written back, such a count would be as many samples lasting 1 ms each, past 2^64 µs:
    // left out, and said, before any is made; 60 million samples are refused.
    for format in [&cpuprofile::FORMAT, &chrome_trace::FORMAT] {
        let mut findings = Findings::default();
        format.write(&p, &mut Vec::new(), &cfghub::format::WriteOptions::default(), &mut findings).unwrap();
        let said = findings.warnings().map(|w| w.to_string()).collect::<Vec<_>>().join("\n");
        assert!(said.contains("left out 184467440737095516") && said.contains("past 2^64"), "{said}");
        let mut many = p.clone();
        many.processes[0].stacks.values_mut(1)[0] = 60_000_000;
        let e = format
            .write(&many, &mut Vec::new(), &cfghub::format::WriteOptions::default(), &mut Findings::default())
            .expect_err("refused");
        assert!(e.to_string().contains("past 50000000 samples"), "{e}");
    }
    let text = String::from_utf8(profile(|_| {}))
        .unwrap()
        .replace("\"hitCount\":2", "\"hitCount\":184467440737095516150");
    let e = read(&cpuprofile::FORMAT, text.as_bytes()).expect_err("refused");
    assert!(matches!(e.place, Some(Place::Line(1))), "{e}");
}

#[test]
fn trace_events_of_any_shape_that_make_no_stacks_are_skipped() {
    let p = read(
        &chrome_trace::FORMAT,
        &trace(|t| {
            let events = t["traceEvents"].as_array_mut().unwrap();
            events.push(serde_json::json!({ "ph": "C", "name": "x", "pid": "7", "args": [1, {"a": null}] }));
            events.push(serde_json::json!({ "ph": 3, "name": {"not": "a name"} }));
            events.push(serde_json::json!({ "ph": "i", "ts": "later", "args": "text" }));
        }),
    )
    .unwrap();
    assert_eq!(p.processes.len(), 1);
}

#[test]
fn the_command_line_exits_2_names_the_path_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("bad.cpuprofile", profile(|p| p["nodes"][0]["parent"] = 3.into()), "nodes[0]"),
        ("bad-trace.json", trace(|t| t["traceEvents"][3]["dur"] = (-5).into()), "traceEvents[3].dur"),
        ("cut.cpuprofile", profile(|_| {})[..150].to_vec(), "ends too early"),
        ("cut-trace.json", trace(|_| {})[..300].to_vec(), "ends too early"),
    ];
    for (name, bytes, expected) in cases {
        let input = dir.path().join(name);
        std::fs::write(&input, bytes).unwrap();
        let out = dir.path().join("out.folded");
        let o = common::run(&["convert", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(expected) && err.contains(name), "{name}: {err}");
        assert!(!out.exists(), "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any number in any node or sample field, any byte cut: an answer, never a panic.
    #[test]
    fn any_edit_is_read_or_refused(field in 0usize..6, row in 0usize..3, value in -3i64..12, cut in 0usize..700) {
        let edited = profile(|p| {
            match field {
                0 => p["samples"][row] = value.into(),
                1 => p["timeDeltas"][row] = value.into(),
                2 => p["nodes"][row]["id"] = value.into(),
                3 => p["nodes"][row]["parent"] = value.into(),
                4 => p["nodes"][row]["children"] = serde_json::json!([value]),
                _ => p["nodes"][row]["hitCount"] = value.into(),
            }
        });
        let _ = read(&cpuprofile::FORMAT, &edited);
        let _ = read(&cpuprofile::FORMAT, &edited[..cut.min(edited.len())]);
        let edited = trace(|t| {
            let data = &mut t["traceEvents"][2]["args"]["data"];
            match field {
                0 => data["cpuProfile"]["samples"][row] = value.into(),
                1 => data["timeDeltas"][row] = value.into(),
                2 => data["cpuProfile"]["nodes"][row]["id"] = value.into(),
                3 => data["cpuProfile"]["nodes"][row]["parent"] = value.into(),
                4 => t["traceEvents"][3]["ts"] = value.into(),
                _ => t["traceEvents"][3]["dur"] = value.into(),
            }
        });
        let _ = read(&chrome_trace::FORMAT, &edited);
        let _ = read(&chrome_trace::FORMAT, &edited[..cut.min(edited.len())]);
    }
}
