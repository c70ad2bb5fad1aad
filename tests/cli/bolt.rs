//! Profiles of one binary (BOLT's fdata and pre-aggregated form, LLVM sample profiles) on the
//! command line: which image is written (`--image`), and what a pprof profile gives without
//! its binary.

use crate::common::{self, protobuf};

/// A pprof profile of `/nowhere/prog` (a binary that is not here): function `work` (first line
/// 10 of /src/w.go) sampled 3 times at 0x401000 (line 13) and twice at 0x401010 (line 15).
fn pprof_without_its_binary() -> Vec<u8> {
    let strings = ["", "samples", "count", "/nowhere/prog", "work", "/src/w.go"];
    let s = |x: &str| strings.iter().position(|t| *t == x).unwrap() as u64;
    let message = |fields: &[(u64, u64)]| {
        let mut m = Vec::new();
        for &(n, v) in fields {
            protobuf::uint(&mut m, n, v);
        }
        m
    };
    let mut out = Vec::new();
    protobuf::field(&mut out, 1, &message(&[(1, s("samples")), (2, s("count"))]));
    for (location, value) in [(1u64, 3u64), (2, 2)] {
        let mut sample = Vec::new();
        protobuf::field(&mut sample, 1, &[location as u8]);
        protobuf::field(&mut sample, 2, &[value as u8]);
        protobuf::field(&mut out, 2, &sample);
    }
    protobuf::field(&mut out, 3, &message(&[(1, 1), (2, 0x400000), (3, 0x500000), (5, s("/nowhere/prog"))]));
    for (id, address, line) in [(1u64, 0x401000u64, 13u64), (2, 0x401010, 15)] {
        let mut location = message(&[(1, id), (2, 1), (3, address)]);
        protobuf::field(&mut location, 4, &message(&[(1, 1), (2, line)]));
        protobuf::field(&mut out, 4, &location);
    }
    let function = message(&[(1, 1), (2, s("work")), (3, s("work")), (4, s("/src/w.go")), (5, 10)]);
    protobuf::field(&mut out, 5, &function);
    for t in strings {
        protobuf::field(&mut out, 6, t.as_bytes());
    }
    out
}

/// Without the binary, the sample profile is the profile's own: its function's name, its
/// lines as offsets from the function's first line; the fdata, made of byte offsets into
/// functions, names nothing and says how to name them.
#[test]
fn a_pprof_profile_without_its_binary_gives_its_own_names_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("prog.pb");
    std::fs::write(&input, pprof_without_its_binary()).unwrap();
    let input = input.to_str().unwrap();
    let prof = dir.path().join("prog.prof");
    let o = common::run(&["convert", input, "-o", prof.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(std::fs::read_to_string(&prof).unwrap(), "work:5:0\n 3: 3\n 5: 2\n");
    assert!(common::stderr(&o).contains("no binary found"), "{}", common::stderr(&o));
    let fdata = dir.path().join("prog.fdata");
    let o = common::run(&["convert", input, "-o", fdata.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(std::fs::read_to_string(&fdata).unwrap(), "no_lbr samples\n");
    assert!(common::stderr(&o).contains("2 records at addresses no symbol covers"), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("--symbols BINARY"), "{}", common::stderr(&o));
}

/// A whole-program DCFG (the program, ld.so and libc): the program by default, another image
/// with `--image`, and the warning names the images left out and the option.
#[test]
fn image_picks_the_binary_a_bolt_profile_is_written_for() {
    let Some(dcfg) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else {
        eprintln!("skipped: ../shared/fixtures is absent");
        return;
    };
    let dcfg = dcfg.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let program = out("program.fdata");
    // One binary is what a BOLT profile holds: the images left out are a note, told under -v.
    let o = common::run(&["convert", dcfg, "-o", &program]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(!common::stderr(&o).contains("images other than"), "{}", common::stderr(&o));
    let o = common::run(&["-v", "convert", dcfg, "-o", &program]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let said = common::stderr(&o);
    assert!(
        said.contains(
            "images other than /home/yan/pintool/DCFG/simple_loop_dependency-pinplay/simple_loop left out"
        ) && said
            .contains("/lib64/ld-linux-x86-64.so.2, /lib64/libc.so.6; write one of them with --image NAME"),
        "{said}"
    );
    let program = std::fs::read_to_string(&program).unwrap();
    assert!(program.lines().any(|l| l.starts_with("1 main ")), "{program}");
    let libc = out("libc.fdata");
    let o = common::run(&["-v", "convert", dcfg, "-o", &libc, "--image", "libc.so.6"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("images other than /lib64/libc.so.6 left out"),
        "{}",
        common::stderr(&o)
    );
    let libc = std::fs::read_to_string(&libc).unwrap();
    assert!(!libc.is_empty() && libc != program && !libc.lines().any(|l| l.starts_with("1 main ")), "{libc}");
    // The same image by its full path.
    let by_path = out("by-path.fdata");
    assert!(common::run(&["convert", dcfg, "-o", &by_path, "--image", "/lib64/libc.so.6"]).status.success());
    assert_eq!(std::fs::read_to_string(&by_path).unwrap(), libc);
    // An image the profile does not have: exit 2, the images listed, nothing written.
    let none = out("none.fdata");
    let o = common::run(&["convert", dcfg, "-o", &none, "--image", "libm.so.6"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("its images: "), "{}", common::stderr(&o));
    assert!(!std::path::Path::new(&none).exists());
}
