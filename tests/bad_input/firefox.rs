//! The Firefox Profiler's processed format: a broken reference is an error that names its JSON
//! path, never a panic; the command line exits 2 and writes nothing.

use cfghub::error::{Findings, Place};
use cfghub::formats::firefox::read_bytes;
use proptest::prelude::*;

use crate::common;

/// A valid version-49 profile of one thread (samply's layout): `main` calling `work` at
/// address 0x1139 of `app`, sampled twice. `edit` changes its JSON before it is written.
fn profile(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut p = serde_json::json!({
        "meta": { "preprocessedProfileVersion": 49, "version": 24, "interval": 1, "product": "app" },
        "libs": [{ "name": "app", "path": "/nonexistent/app", "debugName": "app",
                   "debugPath": "/nonexistent/app", "breakpadId": "", "codeId": null }],
        "threads": [{
            "name": "app", "pid": "7", "tid": "7",
            "samples": { "length": 2, "stack": [1, 1], "time": [0, 1], "weight": null, "weightType": "samples" },
            "stackTable": { "length": 2, "prefix": [null, 0], "frame": [0, 1] },
            "frameTable": { "length": 2, "address": [-1, 4409], "inlineDepth": [0, 0], "func": [0, 1],
                            "line": [null, null], "category": [0, 0] },
            "funcTable": { "length": 2, "name": [0, 1], "resource": [-1, 0], "fileName": [null, null],
                           "lineNumber": [null, null] },
            "resourceTable": { "length": 1, "lib": [0], "name": [2] },
            "stringArray": ["main", "0x1139", "app"]
        }]
    });
    edit(&mut p);
    serde_json::to_vec(&p).unwrap()
}

fn error_path(bytes: &[u8]) -> (String, String) {
    let e = read_bytes(bytes, &mut Findings::default()).expect_err("refused");
    match &e.place {
        Some(Place::Path(p)) => (p.clone(), e.message.clone()),
        other => panic!("no JSON path: {other:?} ({e})"),
    }
}

#[test]
fn the_valid_profile_reads() {
    let p = read_bytes(&profile(|_| {}), &mut Findings::default()).unwrap();
    let stacks = p.processes[0].stacks.listed();
    let frames: Vec<&str> = stacks[0].frames.iter().map(|&f| p.frames.get(f)).collect();
    assert_eq!(frames, ["main", "app+0x1139"]);
    assert_eq!(stacks[0].values, [2]);
}

#[test]
fn string_index_out_of_range() {
    let (path, message) = error_path(&profile(|p| p["threads"][0]["funcTable"]["name"][1] = 9.into()));
    assert_eq!(path, "threads[0].funcTable.name[1]");
    assert!(message.contains("string index 9 is out of range"), "{message}");
}

#[test]
fn stack_prefix_cycle() {
    let (path, message) = error_path(&profile(|p| p["threads"][0]["stackTable"]["prefix"][0] = 1.into()));
    assert!(path.starts_with("threads[0].stackTable.prefix["), "{path}");
    assert!(message.contains("form a cycle"), "{message}");
}

#[test]
fn sample_naming_a_missing_stack() {
    let (path, message) = error_path(&profile(|p| p["threads"][0]["samples"]["stack"][1] = 5.into()));
    assert_eq!(path, "threads[0].samples.stack[1]");
    assert!(message.contains("stack 5"), "{message}");
}

/// Weights whose sum or decimal places pass what is held exactly (2^127) are refused where
/// they are (the sum wrapped).
#[test]
fn sums_past_2_127_are_refused_at_their_sample() {
    let (path, message) =
        error_path(&profile(|p| p["threads"][0]["samples"]["weight"] = serde_json::json!([9e37, 9e37])));
    assert_eq!(path, "threads[0].samples.weight[1]");
    assert!(message.contains("2^127"), "{message}");
    let (path, message) =
        error_path(&profile(|p| p["threads"][0]["samples"]["weight"] = serde_json::json!([1e37, 0.000001])));
    assert_eq!(path, "threads[0].samples.weight[1]");
    assert!(message.contains("2^127"), "{message}");
}

#[test]
fn frame_naming_a_missing_function_or_library() {
    let (path, _) = error_path(&profile(|p| p["threads"][0]["frameTable"]["func"][1] = 4.into()));
    assert_eq!(path, "threads[0].frameTable.func[1]");
    let (path, _) = error_path(&profile(|p| p["threads"][0]["resourceTable"]["lib"][0] = 3.into()));
    assert_eq!(path, "threads[0].resourceTable.lib[0]");
}

#[test]
fn a_newer_version_is_refused_with_its_number_and_the_versions_read() {
    let e = read_bytes(
        &profile(|p| p["meta"]["preprocessedProfileVersion"] = 71.into()),
        &mut Findings::default(),
    )
    .expect_err("refused");
    let text = e.to_string();
    assert!(text.contains("version 71") && text.contains("versions 0 to 70"), "{text}");
}

#[test]
fn the_command_line_exits_2_names_the_path_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.json");
    std::fs::write(&input, profile(|p| p["threads"][0]["stackTable"]["prefix"][0] = 1.into())).unwrap();
    let out = dir.path().join("out.folded");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("threads[0].stackTable.prefix["), "{err}");
    assert!(!out.exists());
}

#[test]
fn a_truncated_file_is_refused_where_it_ends_gzip_compressed_or_plain() {
    use std::io::Write;
    // Long enough (a few hundred KB of samples) that reading is under way when the end comes.
    let text = profile(|p| {
        let n = 100_000;
        p["threads"][0]["samples"]["stack"] = serde_json::json!(vec![1; n]);
        p["threads"][0]["samples"]["time"] =
            serde_json::json!((0..n).map(|i| i as f64 + 0.25).collect::<Vec<_>>());
    });
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text).unwrap();
    let gz = gz.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("cut.fxprof.json.gz", &gz[..gz.len() / 2], "decompressed byte"),
        ("cut.fxprof.json", &text[..text.len() / 2], "ends too early"),
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
    // Bad JSON inside a column is placed by line and column.
    let text = String::from_utf8(text).unwrap().replacen("\"stack\":[1,1", "\"stack\":[1,x", 1);
    let e = read_bytes(text.as_bytes(), &mut Findings::default()).expect_err("refused");
    assert!(matches!(e.place, Some(Place::Line(1))), "{e}");
    assert!(e.message.contains("column"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any number anywhere in the tables, any byte cut: an answer, never a panic.
    #[test]
    fn any_edit_is_read_or_refused(column in 0usize..9, row in 0usize..3, value in -3i64..12, cut in 0usize..2000) {
        let edited = profile(|p| {
            let t = &mut p["threads"][0];
            let cell = match column {
                0 => &mut t["samples"]["stack"],
                1 => &mut t["stackTable"]["prefix"],
                2 => &mut t["stackTable"]["frame"],
                3 => &mut t["frameTable"]["func"],
                4 => &mut t["frameTable"]["address"],
                5 => &mut t["funcTable"]["name"],
                6 => &mut t["funcTable"]["resource"],
                7 => &mut t["resourceTable"]["lib"],
                _ => &mut t["samples"]["weight"],
            };
            match cell.as_array_mut() {
                Some(a) if row < a.len() => a[row] = value.into(),
                Some(a) => a.push(value.into()),
                None => *cell = serde_json::json!([value, value, value]),
            }
        });
        let _ = read_bytes(&edited, &mut Findings::default());
        let _ = read_bytes(&edited[..cut.min(edited.len())], &mut Findings::default());
    }
}

/// Negative weights (a comparison's differences, which the Firefox Profiler writes) are kept:
/// writers of counts say how many stacks they write as 0, and the folded writer, which cannot
/// hold them, names the stack.
#[test]
fn a_difference_profile_is_read_and_its_negative_stacks_are_told() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = profile(|p| {
        p["threads"][0]["samples"] = serde_json::json!({ "length": 3, "stack": [1, 0, 1], "time": [0, 1, 2],
            "weight": [1, 2, -5], "weightType": "samples" });
    });
    std::fs::write(dir.path().join("diff.fxprof.json"), bytes).unwrap();
    for (output, told) in [
        ("out.callgrind", "callgrind: 1 stack(s) with negative values (a difference profile) count as 0"),
        ("out.svg", "svg: 1 stack(s) with negative values (a difference profile) drawn as 0"),
    ] {
        let o = crate::common::run_limited(dir.path(), 60, &["convert", "diff.fxprof.json", "-o", output]);
        let err = crate::common::stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{output}: {err}");
        assert!(err.contains(told), "{output}: {err}");
    }
    let o = crate::common::run_limited(dir.path(), 60, &["convert", "diff.fxprof.json", "-o", "out.folded"]);
    let err = crate::common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("the stack main;app+0x1139 has -4 for 'samples'"), "{err}");
}
