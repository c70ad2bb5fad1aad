//! CSI: bad metadata and impossible requests exit 2 with a message that says where (file:line,
//! or the section) and what was expected, and leave no output file behind.

use crate::common;

const LOOP: &str =
    "#\nrand\n1|EXIT\n0|ENTRY|5|5|-1|5\n$\n0->1|0$0\n#\nmain\n3|EXIT\n2|ENTRY|9|9\n4|10\n5|11|12\n\
6|-1|20|21\n7|14\n8|17\n9|18|-1\n$\n2->4|0$0\n4->5|0$0\n4->6|2$2\n5->7|0$0\n5->8|1$1\n6->3|0$0\n7->9|0$0\n\
8->9|0$0\n9~>4|3$3\n";

/// Converts `content` (written to `bad.debug_PT`) and checks the failure.
fn refused(content: &str, expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.debug_PT");
    std::fs::write(&input, content).unwrap();
    let output = dir.path().join("out.debug_PT");
    let o =
        common::run(&["convert", input.to_str().unwrap(), "--from", "csi", "-o", output.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for e in expected {
        assert!(err.contains(e), "expected {e:?} in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(!output.exists(), "a failed conversion left {}", output.display());
    assert_eq!(std::fs::read_to_string(&input).unwrap(), content, "the input was changed");
}

#[test]
fn the_good_text_converts() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("good.debug_PT");
    std::fs::write(&input, LOOP).unwrap();
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", "-", "--to", "csi"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(common::stdout(&o), LOOP);
}

#[test]
fn a_block_line_without_a_bar() {
    refused(&LOOP.replace("7|14\n", "7 14\n"), &["bad.debug_PT:14:", "expected a block line", "no '|'"]);
}

#[test]
fn an_edge_to_an_undefined_block() {
    refused(&LOOP.replace("7->9|0$0", "7->12|0$0"), &["bad.debug_PT:24:", "block 12 is not defined"]);
}

#[test]
fn two_entry_blocks() {
    refused(&LOOP.replace("4|10\n", "4|ENTRY|10\n"), &["bad.debug_PT:11:", "second ENTRY"]);
}

#[test]
fn a_function_without_exit_and_a_malformed_edge() {
    refused(
        &LOOP.replace("1|EXIT\n", "").replace("0->1|0$0\n", ""),
        &["bad.debug_PT:1:", "rand has no EXIT block"],
    );
    refused(&LOOP.replace("5->8|1$1", "5->8|1"), &["bad.debug_PT:22:", "INCREMENT$WEIGHT"]);
    refused(&LOOP.replace("4|10\n", "4|10|x\n"), &["bad.debug_PT:11:", "expected a line number"]);
    refused(&LOOP.replace("$\n0->1", "0->1"), &["bad.debug_PT:5:", "found an edge: '$' ends the blocks"]);
}

fn with_loop(f: impl FnOnce(&str)) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("loop.debug_PT");
    std::fs::write(&input, LOOP).unwrap();
    f(input.to_str().unwrap());
}

#[test]
fn a_path_number_out_of_range() {
    with_loop(|input| {
        let o = common::run(&["csi", "paths", input, "--function", "main", "2", "6"]);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("loop.debug_PT") && err.contains("path number 6 is out of range"), "{err}");
        assert!(err.contains("6 paths, 0 to 5"), "{err}");
        assert!(common::stdout(&o).is_empty(), "no partial output");
    });
}

#[test]
fn a_crash_array_of_the_wrong_length_or_an_unknown_block() {
    with_loop(|input| {
        let args = ["csi", "crash", input, "--function", "main", "--index", "2", "--current", "4"];
        let o = common::run(&[&args[..], &["--array", "1,3,-1", "--block", "9"]].concat());
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--array has 3 slot(s); expected 10"), "{err}");
        let o = common::run(&[&args[..], &["--array", "1,3,6,3,2,4,8,9,2,-1", "--block", "77"]].concat());
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--block 77") && err.contains("its blocks are"), "{err}");
        let o = common::run(&[&args[..], &["--array", "1,7,6,3,2,4,8,9,2,-1", "--block", "9"]].concat());
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("path number 7 is out of range"), "{err}");
        let o = common::run(&["csi", "paths", input, "--function", "nope"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(common::stderr(&o).contains("its functions include: rand, main"), "{}", common::stderr(&o));
    });
}

#[test]
fn an_elf_without_csi_sections() {
    common::require("gcc");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.c"), "int f(void) { return 1; }\n").unwrap();
    let st = std::process::Command::new("gcc").current_dir(dir.path()).args(["-c", "a.c"]).status().unwrap();
    assert!(st.success());
    let obj = dir.path().join("a.o");
    let out = dir.path().join("a.debug_PT");
    let o = common::run(&["convert", obj.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("a.o") && err.contains("no CSI section: expected .debug_PT"), "{err}");
    assert!(!out.exists());
    // A truncated ELF header, and a section whose text is bad: the section is named.
    std::fs::write(&obj, b"\x7fELF\x02\x01\x01").unwrap();
    let o = common::run(&["info", obj.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("not a readable object file"), "{}", common::stderr(&o));
    if common::clients(&["objcopy", "gcc"]) {
        let st =
            std::process::Command::new("gcc").current_dir(dir.path()).args(["-c", "a.c"]).status().unwrap();
        assert!(st.success());
        let text = dir.path().join("bad.txt");
        std::fs::write(&text, LOOP.replace("7|14\n", "7 14\n")).unwrap();
        let st = std::process::Command::new("objcopy")
            .arg("--add-section")
            .arg(format!(".debug_PT={}", text.display()))
            .arg(&obj)
            .status()
            .unwrap();
        assert!(st.success());
        let o = common::run(&["info", obj.to_str().unwrap()]);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("section .debug_PT, line 14") && err.contains("no '|'"), "{err}");
    }
}
