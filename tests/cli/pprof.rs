//! pprof profiles on the command line: what `info` says of them.

use crate::common;

/// `info` gives a pprof profile's totals per sample type and its top functions, self and
/// total, as `go tool pprof -top` gives flat and cum.
#[test]
fn info_gives_totals_per_sample_type_and_the_top_functions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sampler.pb");
    std::fs::write(&path, common::protobuf::sampler_profile()).unwrap();
    let path = path.to_str().unwrap();
    let o = common::run(&["info", path]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    assert!(text.contains("stack totals: samples 5, cpu 50"), "{text}");
    let row = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    // function, then per event: self, %, total, %.
    assert_eq!(row("0x42ef04"), "0x42ef04 3 60.00 3 60.00 30 60.00 30 60.00", "{text}");
    assert_eq!(row("main"), "main 0 0.00 5 100.00 0 0.00 50 100.00", "{text}");

    let o = common::run(&["info", path, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["processes"][0];
    assert_eq!(p["stack_totals"], serde_json::json!({"samples": 5.0, "cpu": 50.0}));
    let first = &p["top_functions"][0];
    assert_eq!(first["name"], "0x42ef04");
    assert_eq!(first["self"], serde_json::json!({"samples": 3.0, "cpu": 30.0}));
    assert_eq!(p["top_functions"].as_array().unwrap().len(), 3);
}

/// A pprof profile on standard input, gzip-compressed or raw, is told by its content (Go
/// writes `time_nanos` or `period_type` before `sample_type`): it read as "cannot tell the
/// format of this input".
#[test]
fn a_profile_on_standard_input_is_told_by_its_content() {
    use std::io::Write;
    let gz = std::fs::read(common::fixture("pprof/burn.cpu.pb.gz")).unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
    for bytes in [gz, raw] {
        let mut child = common::cfghub()
            .args(["info", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert!(common::stdout(&o).contains("format:   pprof"), "{}", common::stdout(&o));
    }
}
