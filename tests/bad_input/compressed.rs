//! Compressed inputs: decompression bombs (hundreds of MB of zeros from a few hundred KB of
//! gzip or bzip2, one endless line) are refused by every line-based reader at the line limit,
//! within the memory and time limits, naming the byte where the line starts.

use crate::common;
use std::path::Path;
use std::process::Command;

/// Writes `mb` MB of zeros compressed with `tool` (gzip or bzip2) to `path`.
fn zeros(tool: &str, mb: u32, path: &Path) {
    common::require(tool);
    let script = format!("head -c {mb}M /dev/zero | {tool} -1 > '{}'", path.display());
    let status = Command::new("sh").arg("-c").arg(script).status().expect("sh runs");
    assert!(status.success(), "{tool} failed");
}

/// Every line-based reader that takes a stream.
pub const LINE_READERS: &[&str] = &["callgrind", "dcpi", "dcpicat", "folded", "dtrace", "perf"];

#[test]
fn decompression_bombs_stop_at_the_line_limit() {
    let dir = tempfile::tempdir().unwrap();
    for (tool, name) in [("gzip", "zeros.gz"), ("bzip2", "zeros.bz2")] {
        zeros(tool, 200, &dir.path().join(name));
        let before = common::snapshot(dir.path());
        for format in LINE_READERS {
            let what = format!("{format} {name}");
            let o = common::run_limited(
                dir.path(),
                120,
                &["-q", "convert", "--from", format, name, "-o", "out.folded"],
            );
            let err = common::assert_contained(&o, &what);
            assert_eq!(o.status.code(), Some(2), "{what}: {err}");
            assert!(err.contains("longer than 64 MiB"), "{what}: {err}");
            assert_eq!(common::snapshot(dir.path()), before, "{what}: files changed");
        }
    }
}

#[test]
fn one_endless_json_string_stops_at_the_string_limit() {
    // 100 MB of one DCFG string from a few hundred KB of gzip: refused at 64 MiB, not collected.
    common::require("gzip");
    let dir = tempfile::tempdir().unwrap();
    let script = "(printf '{\"FILE_NAMES\": [[\"FILE_NAME_ID\",\"FILE_NAME\"],[1,\"'; \
                  head -c 100M /dev/zero | tr '\\0' a) | gzip -1 > string.dcfg.json.gz";
    let status = Command::new("sh").arg("-c").arg(script).current_dir(dir.path()).status().unwrap();
    assert!(status.success());
    let o = common::run_limited(dir.path(), 120, &["convert", "string.dcfg.json.gz", "-o", "out.folded"]);
    let err = common::assert_contained(&o, "string bomb");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("FILE_NAMES row 1 column FILE_NAME") && err.contains("longer than 64 MiB"), "{err}");
    assert!(!dir.path().join("out.folded").exists());
}
