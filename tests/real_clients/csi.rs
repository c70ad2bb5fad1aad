//! CSI metadata in real object files: gcc builds two objects, objcopy adds a `.debug_PT` text to
//! each (and a coverage section to one), the linker concatenates them, and cfghub reads both
//! texts back from the executable, from a copy whose debug sections objcopy compressed, and from
//! a separate debug file. Graphviz draws a CSI routine without a word on standard error.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, csi};
use cfghub::convert::load;
use cfghub::format::ReadOptions;
use cfghub::formats::csi::read_bytes;

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// Builds `prog` from two objects, `a.o` with `first`'s text and `b.o` with `second`'s text
/// and `coverage` as `.debug_BBC`.
fn build(dir: &Path, first: &Path, second: &Path, coverage: &Path) -> PathBuf {
    std::fs::write(dir.join("a.c"), "int f(void) { return 1; }\n").unwrap();
    std::fs::write(dir.join("b.c"), "int f(void);\nint main(void) { return f(); }\n").unwrap();
    run(Command::new("gcc").current_dir(dir).args(["-c", "a.c", "b.c"]));
    run(Command::new("objcopy")
        .current_dir(dir)
        .arg("--add-section")
        .arg(format!(".debug_PT={}", first.display()))
        .arg("a.o"));
    run(Command::new("objcopy")
        .current_dir(dir)
        .arg("--add-section")
        .arg(format!(".debug_PT={}", second.display()))
        .arg("--add-section")
        .arg(format!(".debug_BBC={}", coverage.display()))
        .arg("b.o"));
    run(Command::new("gcc").current_dir(dir).args(["a.o", "b.o", "-o", "prog"]));
    dir.join("prog")
}

fn read(path: &Path) -> cfghub::ir::Profile {
    let loaded = load(path.to_str().unwrap(), None, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(loaded.format.name(), "csi");
    loaded.profile
}

#[test]
fn both_objects_texts_come_back_from_the_executable_compressed_or_not_and_from_a_debug_file() {
    let (Some(first), Some(second), Some(coverage)) = (
        common::shared_fixture("csi/loop__loop-O0.csi-static-PT.expected"),
        common::shared_fixture("csi/fnptr__fnptr-O0.csi-static-PT.expected"),
        common::shared_fixture("csi/fnptr__fnptr-O0.csi-static-BBC.expected"),
    ) else {
        return;
    };
    common::require("gcc");
    common::require("objcopy");
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), &first, &second, &coverage);

    // What the two texts say, read one after the other as the linker concatenated them.
    let mut joined = std::fs::read(&first).unwrap();
    joined.extend(std::fs::read(&second).unwrap());
    let expected = csi::canonical(&read_bytes(&joined, None).unwrap());
    assert_eq!(expected.len(), 5);

    let plain = read(&prog);
    assert_eq!(csi::canonical(&plain), expected);
    // The coverage array goes to fnptr's main, not to loop's.
    let image = &plain.processes[0].images[0];
    let bbc_main = image.coverage.iter().find(|c| c.array.ends_with("fnptr_c_main")).unwrap();
    let routine =
        image.routines.as_ref().unwrap().iter().find(|r| r.symbol == Some(bbc_main.symbol)).unwrap();
    assert_eq!(routine.nodes.len(), 5, "fnptr's main has 5 blocks");
    assert_eq!(image.coverage.len(), 3);

    // Compressed debug sections (SHF_COMPRESSED, flag C).
    let z = dir.path().join("prog.z");
    run(Command::new("objcopy").arg("--compress-debug-sections=zlib").arg(&prog).arg(&z));
    if common::clients(&["readelf"]) {
        let o = Command::new("readelf").args(["-S", "-W"]).arg(&z).output().unwrap();
        let table = String::from_utf8_lossy(&o.stdout);
        let line = table.lines().find(|l| l.contains(".debug_PT")).expect(".debug_PT in the section table");
        assert!(line.split_whitespace().any(|f| f.contains('C')), "not compressed: {line}");
    }
    assert_eq!(csi::canonical(&read(&z)), expected);

    // A separate debug file.
    let dbg = dir.path().join("prog.debug");
    run(Command::new("objcopy").arg("--only-keep-debug").arg(&prog).arg(&dbg));
    assert_eq!(csi::canonical(&read(&dbg)), expected);

    // `cfghub convert prog -o prog.debug_PT` extracts the text.
    let out = dir.path().join("prog.debug_PT");
    let o = common::run(&["convert", prog.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), joined);
}

#[test]
fn graphviz_draws_every_csi_routine_silently() {
    let Some(dir) = common::shared_fixture("csi") else { return };
    for name in
        ["loop__loop-O0", "fnptr__fnptr-O1", "pi__pi-O0", "funcs__funcs-O2", "multifile__multifile-O0"]
    {
        let f = dir.join(format!("{name}.csi-static-PT.expected"));
        let text = std::fs::read_to_string(&f).unwrap();
        let functions: Vec<&str> =
            text.lines().zip(text.lines().skip(1)).filter(|(a, _)| *a == "#").map(|(_, b)| b).collect();
        for function in functions {
            let o = common::run(&["dot", f.to_str().unwrap(), "--routine", function, "--increments"]);
            assert!(o.status.success(), "{}", common::stderr(&o));
            let dot_text = common::stdout(&o);
            if text.contains("~>") && function == "main" && name.starts_with("loop") {
                assert!(dot_text.contains("style=\"bold,dashed\""), "back edge dashed:\n{dot_text}");
                assert!(dot_text.contains("restart 3"), "back edge's increment:\n{dot_text}");
                assert!(dot_text.contains("lines 11-13"), "line ranges:\n{dot_text}");
            }
            common::render_dot(&dot_text, &format!("{name} {function}"));
        }
        // The whole-program view too.
        let o = common::run(&["convert", f.to_str().unwrap(), "-o", "-", "--to", "dot"]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        common::render_dot(&common::stdout(&o), name);
    }
}
