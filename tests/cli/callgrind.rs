//! Callgrind files as peers write them: what callgrind_annotate and KCachegrind read, cfghub
//! reads; what cannot become another format is refused with what to do.

use crate::common;

/// Writes `text` to `name` in a fresh folder; the folder and the path.
fn input(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap().to_string();
    (dir, path)
}

/// Callgrind of the 0.10 era refers to a compressed name in `cob=`/`cfi=`/`cfn=` before the
/// line that defines it.
const NAME_USED_BEFORE_DEFINED: &str = "version: 1\ncreator: callgrind-0.10.1\npositions: line\n\
    events: Ir\nsummary: 30\n\nob=(1) /bin/prog\nfl=(1) main.c\nfn=(1) main\n3 10\ncob=(2)\n\
    cfi=(3)\ncfn=(4)\ncalls=1 5\n4 20\nob=(2) /lib/libc.so\nfl=(3) string.c\nfn=(4) strlen\n5 20\n";

#[test]
fn a_compressed_name_used_before_its_definition_is_resolved_when_it_comes() {
    let (dir, path) = input("callgrind.out.old", NAME_USED_BEFORE_DEFINED);
    let out = dir.path().join("again.callgrind");
    let o = common::run(&["convert", &path, "--to", "callgrind", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(!common::stderr(&o).contains("warning"), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("/lib/libc.so") && text.contains("strlen") && text.contains("string.c"), "{text}");
    // One image for libc (the call's and the definition's), one function strlen with its 20 Ir.
    let o = common::run(&["info", &path, "--json"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let info: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let images = info["processes"][0]["images"].as_array().unwrap();
    assert_eq!(images.len(), 2, "{info}");
    assert_eq!(images[1]["path"], "/lib/libc.so", "{info}");
    // A reference never defined is kept under its id, with a warning naming its line.
    let (_d, path) = input("never", &NAME_USED_BEFORE_DEFINED.replace("ob=(2) /lib", "ob=(5) /lib"));
    let o = common::run(&["info", &path]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(err.contains("line 11") && err.contains("(2)") && err.contains("never defined"), "{err}");
}

/// Old Callgrind writes `rcalls=` for recursive calls: read as `calls=`, as KCachegrind does.
#[test]
fn rcalls_lines_of_old_callgrind_read_as_calls() {
    let (_d, path) =
        input("callgrind.out.rcalls", "events: Ir\nfl=a.c\nfn=f\n3 10\ncfn=f\nrcalls=2 3\n4 25\n");
    let o = common::run(&["convert", &path, "--to", "callgrind", "-o", "-"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("line 6") && common::stderr(&o).contains("rcalls="));
    let text = common::stdout(&o);
    assert!(text.contains("calls=2 "), "{text}");
}

#[test]
fn a_star_where_a_cost_is_expected_is_read_as_kcachegrind_does_with_a_warning() {
    let (_d, path) = input("star.callgrind", "events: Ir Dr\nfl=a.c\nfn=main\n3 10 *\n4 7 5\n5 * 5\n");
    let o = common::run(&["convert", &path, "--to", "callgrind", "-o", "-"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(err.contains("line 4") && err.contains("2 cost line(s)") && err.contains("'*'"), "{err}");
    // Ir: 10 + 7 + nothing; Dr: nothing + 5 + nothing.
    let text = common::stdout(&o);
    assert!(text.contains("summary: 17 5\n"), "{text}");
}

#[test]
fn a_line_level_profile_is_refused_as_dcfg_with_how_to_record_addresses() {
    let (dir, path) =
        input("callgrind.out.lines", "events: Ir\nfl=a.c\nfn=main\n3 10\ncfn=f\ncalls=1 9\n4 3\nfn=f\n9 3\n");
    let out = dir.path().join("x.dcfg.json");
    let o = common::run(&["convert", &path, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(err.contains("no instruction addresses") && err.contains("--dump-instr=yes"), "{err}");
    assert!(!out.exists(), "no output");
}

/// pprof writes `calls=0` lines whose target is the caller's own position, and zero-cost rows at
/// call sites that share an address with another function's costs: through DCFG and back,
/// every function keeps its own self cost.
#[test]
fn call_targets_do_not_move_cost_between_functions_through_dcfg() {
    let (dir, path) = input(
        "pprof.callgrind",
        "positions: instr line\nevents: cpu(ms)\n\nob=(1) /bin/app\nfl=(1) a.src\nfn=(1) leaf\n\
         0x1000 1 1100\n\nob=(1)\nfl=(2) b.src\nfn=(2) caller\n0x2000 9 10\ncfl=(1)\ncfn=(1)\n\
         calls=0 * 1\n* * 1000\n\nob=(1)\nfl=(2)\nfn=(3) other\n0x2000 4 0\ncfl=(2)\ncfn=(2)\n\
         calls=0 * 9\n* * 1010\n",
    );
    let dcfg = dir.path().join("app.dcfg.json");
    let back = dir.path().join("back.callgrind");
    let o = common::run(&["-q", "convert", &path, "-o", dcfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::run(&["-q", "convert", dcfg.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::run(&["diff", &path, back.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let table = common::stdout(&o);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|n| ["leaf", "caller", "other"].contains(n)))
        .collect();
    assert_eq!(rows.len(), 3, "{table}");
    for row in rows {
        let expected = match row[0] {
            "leaf" => "1100",
            "caller" => "10",
            _ => "0",
        };
        assert_eq!((row[1], row[2]), (expected, expected), "{table}");
    }
}

/// Two static functions of one name in one object are two routines, in the Callgrind profile
/// and in the DCFG made of it.
#[test]
fn functions_of_one_name_in_two_files_stay_two() {
    let fixture = common::fixture("callgrind/callgrind.out.same-name");
    let dir = tempfile::tempdir().unwrap();
    let dcfg = dir.path().join("same-name.dcfg.json");
    let o = common::run(&["-q", "convert", fixture.to_str().unwrap(), "-o", dcfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    for input in [fixture.as_path(), dcfg.as_path()] {
        let o = common::run(&["info", input.to_str().unwrap(), "--json", "--top", "1000"]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let info: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let routines = info["processes"][0]["top_routines"].as_array().unwrap();
        let of = |name: &str| -> Vec<(String, u64)> {
            let mut v: Vec<(String, u64)> = routines
                .iter()
                .filter(|r| r["name"] == name)
                .map(|r| (r["entry"].as_str().unwrap().to_string(), r["instructions"].as_u64().unwrap()))
                .collect();
            v.sort_by_key(|r| r.1);
            v
        };
        let check = of("check");
        assert_eq!(
            check.iter().map(|c| c.1).collect::<Vec<_>>(),
            [312, 393],
            "{}: {check:?}",
            input.display()
        );
        assert_ne!(check[0].0, check[1].0);
        let check_match = of("check_match");
        assert_eq!(check_match.iter().map(|c| c.1).collect::<Vec<_>>(), [153, 4378], "{}", input.display());
    }
}

/// An untouched Valgrind profile is valid: `validate` judges it by Callgrind's rules, in its
/// own terms (lines), not by a DCFG's flow conservation in DCFG JSON paths.
#[test]
fn valgrind_profiles_validate_clean_by_their_own_rules() {
    for name in ["callgrind.out.recursion-loops", "callgrind.out.same-name"] {
        let path = common::fixture(&format!("callgrind/{name}"));
        let o = common::run(&["validate", path.to_str().unwrap()]);
        let out = common::stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{out}");
        assert!(out.contains("valid (0 violation(s)") && !out.contains("PROCESSES["), "{out}");
    }
    // What the reader finds is said by line.
    let (_d, path) = input("star.callgrind", "events: Ir Dr\nfl=a.c\nfn=main\n3 10 *\n");
    let o = common::run(&["validate", &path]);
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("line 4") && out.contains("1 warning(s)"), "{out}");
}

/// Positions are the addresses the object states, as valgrind writes them: a fixed-address
/// executable's own addresses (`_start` of the hello-world DCFG at 0x400440, its load address
/// 0x400000), a shared library's from 0 (`puts` at 0x6f6a0 of libc loaded at 0x7f0000000000);
/// DCPI samples of an Alpha executable at 0x120000000 likewise. And no word of the DCFG's
/// ENTRY and EXIT edges, which lose nothing.
#[test]
fn positions_are_the_objects_addresses_and_entry_and_exit_edges_are_no_loss() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("callgrind.out.hello");
    let hello = common::fixture("dcfg/hello-world.dcfg.json.bz2");
    let o = common::run(&["convert", hello.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(common::stderr(&o), "", "nothing is lost: no warning");
    let text = std::fs::read_to_string(&out).unwrap();
    let after =
        |what: &str| text.split(what).nth(1).and_then(|t| t.lines().nth(1)).unwrap_or_default().to_string();
    assert!(after("fn=(1) _start").starts_with("0x400440 "), "{text}");
    assert!(text.contains("calls=3 0x6f6a0 "), "{text}");
    // Read back, the addresses are the executable's own.
    let o = common::run(&["info", out.to_str().unwrap()]);
    let info = common::stdout(&o);
    assert!(info.contains("0x400440") && !info.contains(" 0x440 "), "{info}");

    let alpha = common::fixture("dcpi/alpha-cycles.dcpi");
    let o = common::run(&["convert", alpha.to_str().unwrap(), "--to", "callgrind", "-o", "-"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    let positions: Vec<&str> =
        text.lines().filter(|l| l.starts_with("0x")).map(|l| l.split(' ').next().unwrap()).collect();
    assert!(!positions.is_empty() && positions.iter().all(|p| p.starts_with("0x120")), "{text}");
}
