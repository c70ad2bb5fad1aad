//! Where outputs go: through symbolic links to their target, straight into devices and FIFOs,
//! atomically (temporary file renamed) onto regular files only; standard output that fails is
//! an error (exit 2, a message), one whose reader went away ends the run quietly, as it ends
//! any Unix tool, and never as a success.

use crate::common;
use std::os::unix::fs::FileTypeExt;
use std::process::{Command, Stdio};

fn hello() -> String {
    common::fixture("dcfg/hello-world.dcfg.json").to_str().unwrap().to_string()
}

#[test]
fn an_output_named_by_a_symlink_is_written_to_its_target_and_the_link_stays() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.folded");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.folded");
    std::os::unix::fs::symlink("real.folded", &link).unwrap();
    let o = common::run(&["-q", "convert", &hello(), "-o", link.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    let written = std::fs::read_to_string(&target).unwrap();
    assert!(written.contains("main"), "{written}");
    // A dangling link: its target is created.
    let dangling = dir.path().join("dangling.folded");
    std::os::unix::fs::symlink("new.folded", &dangling).unwrap();
    let o = common::run(&["-q", "convert", &hello(), "-o", dangling.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    assert!(dir.path().join("new.folded").is_file());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4, "no temporary file left");
}

#[test]
fn devices_and_fifos_are_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    // A device through a link (as /dev/stdout is a link): the device stays a device.
    let null = dir.path().join("null.folded");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let o = common::run(&["-q", "convert", &hello(), "-o", null.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    // A FIFO: a reader on the other end gets the whole output.
    let fifo = dir.path().join("pipe.folded");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = common::run(&["-q", "convert", &hello(), "-o", fifo.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let got = reader.join().unwrap();
    let expected = common::run(&["-q", "convert", &hello(), "-o", "-", "--to", "folded"]);
    assert_eq!(got, common::stdout(&expected));
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
}

#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    let trace = common::fixture("dcfg-trace/small.trace.json");
    let trace = trace.to_str().unwrap();
    let h = hello();
    for args in [
        vec!["formats"],
        vec!["info", h.as_str()],
        vec!["info", "--json", h.as_str()],
        vec!["validate", h.as_str()],
        vec!["trace", "stats", trace],
        vec!["trace", "edges", trace],
        vec!["convert", h.as_str(), "-o", "-", "--to", "dcfg"],
    ] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = common::cfghub().args(&args).stdout(full).output().unwrap();
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
    }
}

#[test]
fn a_closed_pipe_ends_the_run_quietly_and_not_as_a_success() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.dcfg.json");
    let o = common::run(&["-q", "synth", "-o", big.to_str().unwrap(), "--routines", "200", "--pretty"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(std::fs::metadata(&big).unwrap().len() > 1 << 18, "more than a pipe holds");
    let exe = env!("CARGO_BIN_EXE_cfghub");
    let big = big.to_str().unwrap();
    for command in [
        format!("'{exe}' convert '{big}' -o - --to dcfg --pretty | true"),
        format!("'{exe}' -q convert '{big}' -o - --to dcfg | head -c 1 >/dev/null"),
    ] {
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!("set -o pipefail; {command}"))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = common::stderr(&o);
        assert!(!o.status.success(), "{command}: a cut-off output is not a success");
        assert!(!err.contains("panicked") && !err.contains("error"), "{command}: {err}");
    }
}

/// A run stopped by SIGINT (Ctrl-C), SIGTERM or SIGHUP while it writes its output leaves no
/// `.cfghub-*` temporary, file or folder, and the output as it was; it ends by that signal.
#[test]
fn a_run_stopped_by_a_signal_leaves_no_temporary_and_the_output_as_it_was() {
    use std::os::unix::process::ExitStatusExt;
    let outputs = [
        ("big.dcfg.json.bz2", libc::SIGINT),
        ("big.dcfg.json.bz2", libc::SIGTERM),
        ("big.tables", libc::SIGHUP),
        ("big.tables", libc::SIGINT),
    ];
    for (name, signal) in outputs {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join(name);
        if name.ends_with(".tables") {
            std::fs::create_dir(&output).unwrap();
        } else {
            std::fs::write(&output, "old").unwrap();
        }
        let before = common::snapshot(dir.path());
        let mut child = common::cfghub()
            .args(["-q", "synth", "--routines", "1000", "--blocks", "40", "--steps", "600000", "-o"])
            .arg(&output)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let temporary = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .any(|e| e.unwrap().file_name().to_string_lossy().starts_with(".cfghub-"))
        };
        let started = std::time::Instant::now();
        while !temporary() && started.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(temporary(), "{name}: no temporary appeared");
        // SAFETY: sends a signal to the child started above, which has not been waited for.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "{name}: {status:?}");
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".cfghub-"))
            .collect();
        assert!(left.is_empty(), "{name}, signal {signal}: {left:?}");
        assert_eq!(common::snapshot(dir.path()), before, "{name}, signal {signal}");
    }
}

/// `--to` and `--from` take the names users know formats by (`flamegraph`, `valgrind`), and a
/// name one slip from a format's is answered with it; `cfghub formats` lists both, in columns
/// that line up.
#[test]
fn formats_go_by_the_names_users_know_them_by() {
    let dir = tempfile::tempdir().unwrap();
    for (to, output, starts) in
        [("flamegraph", "x.svg", "<?xml"), ("valgrind", "x.out", "# callgrind format")]
    {
        let out = dir.path().join(output);
        let o = common::run(&["-q", "convert", &hello(), "--to", to, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{to}: {}", common::stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.starts_with(starts), "{to}: {}", &text[..text.len().min(80)]);
    }
    let o = common::run(&["convert", &hello(), "--to", "foldd", "-o", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("did you mean 'folded'?"), "{}", common::stderr(&o));
    let o = common::run(&["formats"]);
    let text = common::stdout(&o);
    assert!(text.contains("flamegraph = svg") && text.contains("valgrind = callgrind"), "{text}");
    // Every row's cells start where the header's names start.
    let header = text.lines().next().unwrap();
    for name in ["read", "write", "extensions", "description"] {
        let at = header.find(name).unwrap();
        for row in text.lines().take_while(|l| !l.is_empty()) {
            let row = row.as_bytes();
            assert!(row[at - 1] == b' ' && row[at] != b' ', "{name} in {}", String::from_utf8_lossy(row));
        }
    }
}

/// Mistakes that need no input are told before the input is read: an unknown `--to`, an
/// output whose folder does not exist (named, not the temporary), a format that cannot be
/// written. The input here is a FIFO nobody writes to: reading it would wait forever.
#[test]
fn mistakes_in_the_output_are_told_before_the_input_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.folded");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    for (args, expected) in [
        (&["--to", "nonesuch", "-o", "out"][..], "unknown format 'nonesuch'"),
        (&["-o", "no/such/folder/out.folded"][..], "the folder no/such/folder of the output"),
        (&["--to", "dtrace", "-o", "out.txt"][..], "dtrace"),
    ] {
        let mut all = vec!["convert", "in.folded"];
        all.extend_from_slice(args);
        let o = common::run_limited(dir.path(), 10, &all);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains(".cfghub-"), "{args:?}: {err}");
    }
}

/// `synth` of a large profile says on a terminal what it is at (generating, writing) once it
/// has worked a second; with `-q`, or off a terminal, nothing.
#[test]
fn synth_shows_its_step_on_a_terminal() {
    if !common::clients(&["script"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.dcfg.json");
    let command = |quiet: &str| {
        format!(
            "{} {quiet} synth --routines 400 --blocks 200 --steps 1500000 -o {}",
            env!("CARGO_BIN_EXE_cfghub"),
            out.display()
        )
    };
    // `script` runs the command on a pseudo-terminal and copies what it drew.
    let o = std::process::Command::new("script").args(["-qec", &command(""), "/dev/null"]).output().unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let drawn = common::stdout(&o);
    assert!(drawn.contains("synth: generating") || drawn.contains("synth: writing"), "{drawn}");
    let o =
        std::process::Command::new("script").args(["-qec", &command("-q"), "/dev/null"]).output().unwrap();
    assert!(o.status.success());
    assert!(!common::stdout(&o).contains("synth:"), "{}", common::stdout(&o));
}
