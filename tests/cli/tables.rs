//! Tables as an output folder: written whole or not at all, replacing only an earlier folder of
//! tables, never an input; read back as an input folder by its content.

use std::path::Path;

use crate::common;

fn convert(args: &[&str]) -> std::process::Output {
    let mut all = vec!["convert", "-q"];
    all.extend_from_slice(args);
    common::run(&all)
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".cfghub-"))
        .collect()
}

#[test]
fn a_folder_is_written_whole_and_replaces_only_an_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::fixture("dcfg/hello-world.dcfg.json");
    let input = input.to_str().unwrap();
    let out = dir.path().join("app.tables");
    let o = convert(&[input, "-o", &format!("{}/", out.display())]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(out.join("blocks.parquet").is_file() && out.join("edges.parquet").is_file());
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&out).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o755);
    // Again, over the earlier folder: replaced whole (a file of ours in it goes too).
    std::fs::write(out.join("stale.parquet"), b"x").unwrap();
    let o = convert(&[input, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(!out.join("stale.parquet").exists());
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    // An existing folder of tables is recognised whatever its name.
    let plain = dir.path().join("plain");
    std::fs::rename(&out, &plain).unwrap();
    let o = convert(&[input, "-o", plain.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let back = common::run(&["info", plain.to_str().unwrap()]);
    assert!(back.status.success() && common::stdout(&back).contains("tables"), "{}", common::stdout(&back));
}

#[test]
fn a_folder_of_other_files_an_input_and_standard_output_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::fixture("dcfg/hello-world.dcfg.json");
    let input = input.to_str().unwrap();
    let other = dir.path().join("notes.tables");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"mine").unwrap();
    let o = convert(&[input, "-o", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("holds files cfghub did not write"), "{}", common::stderr(&o));
    assert_eq!(std::fs::read(other.join("notes.txt")).unwrap(), b"mine");

    let tables = dir.path().join("a.tables");
    assert!(convert(&[input, "-o", tables.to_str().unwrap()]).status.success());
    let before = common::snapshot(&tables);
    let o = convert(&[tables.to_str().unwrap(), "-o", tables.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("is also an input"), "{}", common::stderr(&o));
    assert_eq!(common::snapshot(&tables), before);

    let o = convert(&[input, "--to", "tables", "-o", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("folder"), "{}", common::stderr(&o));
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_failed_run_leaves_no_folder_and_keeps_the_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.dcfg.json");
    std::fs::write(&bad, b"{\"MAJOR_VERSION\": 1, \"PROCESSES\": [[1, ").unwrap();
    let out = dir.path().join("out.tables");
    let o = convert(&[bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(!out.exists());
    assert!(leftovers(dir.path()).is_empty());
    let good = common::fixture("dcfg/hello-world.dcfg.json");
    assert!(convert(&[good.to_str().unwrap(), "-o", out.to_str().unwrap()]).status.success());
    let before = common::snapshot(&out);
    let o = convert(&[bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(common::snapshot(&out), before);
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn tables_convert_back_to_the_same_bytes_as_a_direct_conversion() {
    let dir = tempfile::tempdir().unwrap();
    for (input, out) in [
        ("dcfg/two-processes.dcfg.json", "x.dcfg.json"),
        ("callgrind/callgrind.out.recursion-loops", "callgrind.out.x"),
        ("folded/two-columns.folded", "x.folded"),
        ("dcpi/alpha-cycles.dcpi", "x.dcpi"),
    ] {
        let input = common::fixture(input);
        let input = input.to_str().unwrap();
        let tables = dir.path().join("t.tables");
        let (direct, via) = (dir.path().join("direct").join(out), dir.path().join("via").join(out));
        std::fs::create_dir_all(direct.parent().unwrap()).unwrap();
        std::fs::create_dir_all(via.parent().unwrap()).unwrap();
        assert!(convert(&[input, "-o", tables.to_str().unwrap()]).status.success());
        let o = convert(&[input, "-o", direct.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let o = convert(&[tables.to_str().unwrap(), "-o", via.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert!(std::fs::read(&direct).unwrap() == std::fs::read(&via).unwrap(), "{input}");
    }
}

/// A fleet: profiles added one by one under the partitions of their labels; the folder reads
/// back as their sum (each sample with its partition's label), one profile with `--profile`,
/// and an id it does not hold is refused (exit 2). A profile added again under another label
/// leaves its old partition.
#[test]
fn profiles_added_to_a_fleet_read_back_summed_or_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("web-1.folded"), "main;a 5\nmain;b 1\n").unwrap();
    std::fs::write(d.join("db-2.folded"), "main;a 2\n").unwrap();
    let fleet = d.join("fleet.tables");
    let f = fleet.to_str().unwrap();
    let add = |input: &str, label: &str, extra: &[&str]| {
        let input = d.join(input);
        let mut args = vec!["-q", "convert", input.to_str().unwrap(), "--label", label, "-o", f];
        args.extend(extra);
        let o = common::run(&args);
        assert!(o.status.success(), "{}", common::stderr(&o));
    };
    add("web-1.folded", "service=web/api", &["--partition-by", "service"]);
    add("db-2.folded", "service=db", &[]);
    assert!(fleet.join("samples/service=web%2Fapi/web-1.parquet").is_file());
    assert!(fleet.join("samples/service=db/db-2.parquet").is_file());
    let folded = |args: &[&str]| {
        let out = d.join("out.folded");
        let mut all = vec!["-q", "convert", f, "-o", out.to_str().unwrap()];
        all.extend(args);
        let o = common::run(&all);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let mut lines: Vec<String> =
            std::fs::read_to_string(&out).unwrap().lines().map(String::from).collect();
        lines.sort();
        lines
    };
    assert_eq!(folded(&[]), ["main;a 2", "main;a 5", "main;b 1"]);
    assert_eq!(folded(&["--profile", "db-2"]), ["main;a 2"]);
    // The partition is a label of the samples read back, which --split-by takes.
    let out = d.join("fleet.pb.gz");
    assert!(common::run(&["-q", "convert", f, "-o", out.to_str().unwrap(), "--split-by", "service"])
        .status
        .success());
    let o =
        common::run(&["-q", "convert", f, "--profile", "nope", "-o", d.join("x.folded").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("no profile \"nope\""), "{}", common::stderr(&o));
    assert!(!d.join("x.folded").exists());
    add("db-2.folded", "service=batch", &[]);
    assert!(!fleet.join("samples/service=db/db-2.parquet").exists());
    assert!(fleet.join("samples/service=batch/db-2.parquet").is_file());
    assert_eq!(folded(&[]), ["main;a 2", "main;a 5", "main;b 1"]);
    // Labels alone make a fleet: two profiles labelled on the command line, added one by one.
    let labelled = d.join("labelled.tables");
    for (input, label) in [("web-1.folded", "service=web"), ("db-2.folded", "service=db")] {
        let o = common::run(&[
            "-q",
            "convert",
            d.join(input).to_str().unwrap(),
            "--label",
            label,
            "-o",
            labelled.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
    assert!(
        labelled.join("samples/web-1.parquet").is_file() && labelled.join("samples/db-2.parquet").is_file()
    );
    // A link back up inside the fleet is not followed (it would loop forever).
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&fleet, fleet.join("samples/loop")).unwrap();
        std::os::unix::fs::symlink(&fleet, fleet.join("stack_nodes/loop")).unwrap();
        assert_eq!(folded(&[]), ["main;a 2", "main;a 5", "main;b 1"]);
    }
}
