//! bzip2-compressed inputs on the command line: a DCFG of many blocks reads the same from its
//! `.bz2` (written by bzip2, lbzip2 or pbzip2) as from the plain file, from a path or from
//! standard input.

use crate::common;
use std::process::{Command, Stdio};

fn info(args: &[&str]) -> serde_json::Value {
    let o = common::run(args);
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_object_mut().unwrap().remove("file");
    // The input's size (and the model's size over it) is that of the file named.
    let memory = v["memory"].as_object_mut().unwrap();
    memory.remove("input");
    memory.remove("ratio");
    v
}

#[test]
fn info_of_a_bz2_dcfg_is_info_of_the_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    let plain = common::synth_dcfg(dir.path());
    let expected = info(&["info", "--json", plain.to_str().unwrap()]);
    for (program, args) in [
        ("bzip2", &["-1", "-c"][..]),
        ("lbzip2", &["-n", "2", "-c"][..]),
        ("pbzip2", &["-1", "-b1", "-p2", "-c"][..]),
    ] {
        common::require(program);
        let compressed = dir.path().join(format!("{program}.dcfg.json.bz2"));
        let o = Command::new(program)
            .args(args)
            .stdin(std::fs::File::open(&plain).unwrap())
            .stdout(std::fs::File::create(&compressed).unwrap())
            .status()
            .unwrap();
        assert!(o.success());
        assert_eq!(info(&["info", "--json", compressed.to_str().unwrap()]), expected, "{program}");
        let piped = common::cfghub()
            .args(["info", "--json", "-"])
            .stdin(std::fs::File::open(&compressed).unwrap())
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(piped.status.success());
        let mut v: serde_json::Value = serde_json::from_slice(&piped.stdout).unwrap();
        v.as_object_mut().unwrap().remove("file");
        assert_eq!(v, expected, "{program} through standard input");
    }
}

/// `-j N` limits every command to N threads (bzip2 decoding among them), placed before or
/// after the command; the output is the same at any count.
#[test]
fn jobs_limit_the_threads_and_change_nothing_else() {
    let input = common::fixture("dcfg/hello-world.dcfg.json.bz2");
    let input = input.to_str().unwrap();
    let all = common::run(&["info", input]);
    assert!(all.status.success(), "{}", common::stderr(&all));
    for args in
        [vec!["-j", "1", "info", input], vec!["info", input, "--jobs", "3"], vec!["info", "-j", "0", input]]
    {
        let o = common::run(&args);
        assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
        assert_eq!(
            common::without_memory_line(&common::stdout(&o)),
            common::without_memory_line(&common::stdout(&all)),
            "{args:?}"
        );
    }
    let o = common::run(&["info", input, "-j", "many"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
}
