//! Callgrind: real producers and real clients. Valgrind profiles a small C program; cfghub
//! converts the profile Callgrind -> Callgrind and Callgrind -> DCFG -> Callgrind; and
//! `callgrind_annotate` must print the same program total and the same per-function self costs
//! on every result as on Valgrind's own file. A Pin DCFG converted to Callgrind must give
//! `callgrind_annotate` the DCFG's own instruction counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// `callgrind_annotate` output: the program total and the self cost of every `file:function`
/// (all of them: threshold 100%), object suffixes left out.
pub(crate) struct Annotated {
    pub total: u64,
    pub functions: BTreeMap<String, u64>,
}

fn number(s: &str) -> u64 {
    s.replace(',', "").parse().unwrap_or_else(|_| panic!("not a number: {s}"))
}

/// Runs `callgrind_annotate` in the file's folder (it shortens source paths under the current
/// folder).
pub(crate) fn annotate(file: &Path) -> Annotated {
    let o = Command::new("callgrind_annotate")
        .args(["--threshold=100", "--auto=no"])
        .arg(file)
        .current_dir(file.parent().unwrap())
        .output()
        .expect("callgrind_annotate runs");
    assert!(o.status.success(), "callgrind_annotate {}: {}", file.display(), common::stderr(&o));
    let text = common::stdout(&o);
    parse_annotate(&text)
}

fn parse_annotate(text: &str) -> Annotated {
    let mut total = None;
    let mut functions = BTreeMap::new();
    let mut in_functions = false;
    for line in text.lines() {
        let t = line.trim();
        if t.ends_with("PROGRAM TOTALS") {
            total = Some(number(t.split_whitespace().next().unwrap()));
        } else if t.ends_with("file:function") {
            in_functions = true;
        } else if in_functions && t.starts_with(|c: char| c.is_ascii_digit()) {
            // "1,234 (12.34%)  file:function [object]"
            let cost = number(t.split_whitespace().next().unwrap());
            let rest = t.split_once(")  ").map(|(_, r)| r).unwrap_or_else(|| panic!("unexpected line: {t}"));
            let name = match rest.rfind(" [") {
                Some(p) if rest.ends_with(']') => &rest[..p],
                _ => rest,
            };
            *functions.entry(name.to_string()).or_default() += cost;
        }
    }
    Annotated { total: total.expect("a PROGRAM TOTALS line"), functions }
}

/// Folds recursion levels (`fib'2`) into their function, as a DCFG (one routine per code range)
/// does.
fn fold_recursion(functions: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (name, &cost) in functions {
        let base = match name.rsplit_once('\'') {
            Some((b, level)) if !level.is_empty() && level.bytes().all(|c| c.is_ascii_digit()) => b,
            _ => name.as_str(),
        };
        *out.entry(base.to_string()).or_default() += cost;
    }
    out
}

fn convert(input: &Path, output: &Path) {
    let o = common::run(&["convert", "-q", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "convert {} -> {}: {}",
        input.display(),
        output.display(),
        common::stderr(&o)
    );
}

#[test]
fn valgrind_profiles_keep_totals_and_self_costs_through_callgrind_and_dcfg() {
    for tool in ["gcc", "valgrind", "callgrind_annotate"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("recursion-loops");
    std::fs::copy(common::fixture("callgrind/recursion-loops.c"), dir.path().join("recursion-loops.c"))
        .unwrap();
    let o = Command::new("gcc")
        .args(["-O1", "-g", "-o", "recursion-loops", "recursion-loops.c"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "gcc: {}", common::stderr(&o));
    let profile = dir.path().join("callgrind.out.1");
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(&exe)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    let original = annotate(&profile);
    assert!(original.total > 100_000, "the program ran: {}", original.total);
    assert!(original.functions.keys().any(|k| k.ends_with(":fib'2")), "{:?}", original.functions);

    // Callgrind -> Callgrind: everything identical.
    let again = dir.path().join("again.callgrind");
    convert(&profile, &again);
    let a = annotate(&again);
    assert_eq!(a.total, original.total);
    assert_eq!(a.functions, original.functions);

    // Callgrind -> DCFG -> Callgrind: the total is exact; every function of the program is exact
    // once recursion levels are folded (a DCFG has one routine per code range).
    let dcfg = dir.path().join("app.dcfg.json");
    let back = dir.path().join("back.callgrind");
    convert(&profile, &dcfg);
    convert(&dcfg, &back);
    let b = annotate(&back);
    assert_eq!(b.total, original.total);
    let want = fold_recursion(&original.functions);
    let got = fold_recursion(&b.functions);
    for name in ["main", "fib", "is_even"] {
        let key = format!("recursion-loops.c:{name}");
        assert!(want.get(&key).is_some_and(|&c| c > 0), "{key} in {want:?}");
        assert_eq!(got.get(&key), want.get(&key), "{key}");
    }
    for (name, cost) in want.iter().filter(|(k, _)| k.starts_with("recursion-loops.c:")) {
        assert_eq!(got.get(name), Some(cost), "{name}");
    }
    // Library code that several function names share (memcpy entering mempcpy's body) has one
    // owner in a DCFG; everything else matches too.
    let differing: Vec<&String> = want.keys().filter(|k| got.get(*k) != want.get(*k)).collect();
    assert!(differing.len() * 20 <= want.len(), "too many functions differ: {differing:?}");

    // And the DCFG path without the Ir costs the DCFG carries: Ir from blocks alone.
    let stripped = dir.path().join("blocks-only.dcfg.json");
    let mut loaded =
        cfghub::convert::load(dcfg.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    loaded.events.clear();
    for p in &mut loaded.processes {
        for i in &mut p.images {
            i.costs.clear();
        }
    }
    cfghub::convert::save(&loaded, stripped.to_str().unwrap(), None, &[], &Default::default()).unwrap();
    let from_blocks = dir.path().join("from-blocks.callgrind");
    convert(&stripped, &from_blocks);
    // Blocks count executions, the PLT stubs' included (Valgrind's --skip-plt=yes charges them
    // to the calling instruction; the DCFG holds them as blocks of the stubs, from the binary):
    // the total is exact, and main's calls through the stubs lose to the stubs exactly those.
    let c = annotate(&from_blocks);
    assert_eq!(c.total, original.total);
    let plt: u64 = c.functions.iter().filter(|(k, _)| k.ends_with("@plt")).map(|(_, v)| v).sum();
    assert!(plt > 0 && plt * 1000 < original.total, "{plt} of {}", original.total);
    let got = fold_recursion(&c.functions);
    for name in ["fib", "is_even"] {
        let key = format!("recursion-loops.c:{name}");
        assert_eq!(got.get(&key), want.get(&key), "{key} (Ir from blocks)");
    }
    let (m_got, m_want) = (got["recursion-loops.c:main"], want["recursion-loops.c:main"]);
    assert!(m_got <= m_want && m_want - m_got <= plt, "main: {m_got} vs {m_want}");
}

/// The Valgrind fixtures, Callgrind to Callgrind: every `file:function` keeps its self cost
/// (`same-name` holds two static functions `check`, and ld.so's two `check_match`, one name in
/// two files of one object).
#[test]
fn the_committed_valgrind_fixtures_annotate_as_valgrind_wrote_them() {
    common::require("callgrind_annotate");
    for name in ["recursion-loops", "same-name"] {
        let fixture = common::fixture(&format!("callgrind/callgrind.out.{name}"));
        let expected = parse_annotate(
            &std::fs::read_to_string(common::fixture(&format!(
                "callgrind/callgrind.out.{name}.expected/callgrind_annotate.txt"
            )))
            .unwrap(),
        );
        assert_eq!(annotate(&fixture).functions, expected.functions, "{name}");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("callgrind.out.converted");
        convert(&fixture, &out);
        let a = annotate(&out);
        assert_eq!(a.total, expected.total, "{name}");
        assert_eq!(a.functions, expected.functions, "{name}");
    }
}

/// Executions of every block (`NUM_INSTRS x COUNT`) of a DCFG, read straight from its JSON
/// (bzip2-compressed where its name ends in `.bz2`), and those of main's routine.
fn dcfg_block_instrs(path: &Path) -> (u64, u64) {
    let raw = std::fs::File::open(path).unwrap();
    let json: serde_json::Value = if path.extension().is_some_and(|e| e == "bz2") {
        serde_json::from_reader(bzip2::read::MultiBzDecoder::new(raw)).unwrap()
    } else {
        serde_json::from_reader(std::io::BufReader::new(raw)).unwrap()
    };
    let mut total = 0;
    let mut main = 0;
    let hex = |v: &serde_json::Value| {
        u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    for process in json["PROCESSES"].as_array().unwrap().iter().skip(1) {
        for image in process[1]["IMAGES"].as_array().unwrap().iter().skip(1) {
            let data = &image[3];
            let mut blocks = std::collections::HashMap::new();
            for b in data["BASIC_BLOCKS"].as_array().unwrap().iter().skip(1) {
                let n = b[3].as_u64().unwrap() * b[5].as_u64().unwrap();
                total += n;
                blocks.insert(b[0].as_u64().unwrap(), (hex(&b[1]), n));
            }
            let main_at = data["SYMBOLS"]
                .as_array()
                .map(|s| s.iter().skip(1).find(|s| s[0] == "main").map(|s| hex(&s[1])))
                .unwrap_or(None);
            let Some(main_at) = main_at else { continue };
            for r in data["ROUTINES"].as_array().unwrap().iter().skip(1) {
                if blocks[&r[0].as_u64().unwrap()].0 == main_at {
                    for node in r[2].as_array().unwrap().iter().skip(1) {
                        main += blocks[&node[0].as_u64().unwrap()].1;
                    }
                }
            }
        }
    }
    (total, main)
}

#[test]
fn pin_dcfg_converts_to_a_profile_callgrind_annotate_reads() {
    common::require("callgrind_annotate");
    let Some(dcfg) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let (total, main) = dcfg_block_instrs(&dcfg);
    assert_eq!(total, 135_188);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("callgrind.out.simple-loop");
    convert(&dcfg, &out);
    let a = annotate(&out);
    assert_eq!(a.total, total);
    let mains: Vec<(&String, &u64)> = a.functions.iter().filter(|(k, _)| k.ends_with(":main")).collect();
    assert_eq!(mains.len(), 1, "{mains:?}");
    assert_eq!(*mains[0].1, main);
    assert!(mains[0].0.ends_with("simple_loop.c:main"), "{}", mains[0].0);
    // The sum of all functions is the total: nothing lost, nothing counted twice.
    assert_eq!(a.functions.values().sum::<u64>(), total);
}

/// Runs `callgrind_annotate` with auto-annotation on `file`: its whole output, and the
/// complaints it printed (every line of standard error, a `WARNING`, an empty or blank file
/// name among the files it looked for).
fn annotate_complaints(file: &Path) -> (String, Vec<String>) {
    let o = Command::new("callgrind_annotate")
        .args(["--threshold=100", "--auto=yes"])
        .arg(file)
        .current_dir(file.parent().unwrap())
        .output()
        .expect("callgrind_annotate runs");
    let text = common::stdout(&o);
    let mut complaints: Vec<String> = common::stderr(&o).lines().map(str::to_string).collect();
    if !o.status.success() {
        complaints.push(format!("exit status {:?}", o.status.code()));
    }
    let mut in_not_found = false;
    for line in text.lines() {
        if line.contains("could not be found") {
            in_not_found = true;
        } else if line.starts_with("---") {
            continue;
        } else if in_not_found && line.starts_with("  ") {
            if line.trim().is_empty() {
                complaints.push("an empty file name is listed as not found".into());
            }
        } else {
            in_not_found = false;
        }
        if line.contains("WARNING") {
            complaints.push(line.to_string());
        }
    }
    (text, complaints)
}

/// One small input per readable format, written here or bundled, each with facts that the
/// Callgrind header has no line for (DCPI's image, epoch and path; folded comments) and
/// functions without a source file. (A profile of several processes becomes a file of several
/// parts, which callgrind_annotate does not read beyond the first: the writer says so.)
#[test]
fn callgrind_annotate_reads_the_callgrind_output_of_every_readable_format_without_a_warning() {
    common::require("callgrind_annotate");
    let dir = tempfile::tempdir().unwrap();
    let own = |name: &str| common::fixture(name).to_str().unwrap().to_string();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let dcpicat = write(
        "app.dcpicat",
        "name                 app\nimage                19970328081403c0c18b\npath                 /usr/bin/app\n\
         epoch                199805191724\nplatform             walnut\ntext_start           0x000120000000\n\
         text_size            0x000000001000\nevent                40 cycles:63488:10000\n\
         0x000120000010      29\n0x000120000018      11\n",
    );
    let folded = write(
        "austin.folded",
        "# austin: 3.3.0\n# mode: wall\nP1;T1;main.py:main:3;main.py:work:9 105\nP1;T1;main.py:main:3 7\n",
    );
    let dtrace = write("app.stacks", "CPU     ID                    FUNCTION:NAME\n\n  libc.so`read+0x8\n  app`main+0x20\n  3\n\n  app`main+0x24\n  2\n");
    let perf = write(
        "app.perf.txt",
        "app 15294 cpu-clock: \n\t          400570 func_b (/root/app)\n\t          4005b1 main (/root/app)\n\n\
         app 15294 cpu-clock: \n\t          4005b1 main (/root/app)\n\n",
    );
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("dcfg", vec![own("dcfg/hello-world.dcfg.json")]),
        (
            "dcfg-trace",
            vec![own("dcfg-trace/small.dcfg.json"), "--trace".into(), own("dcfg-trace/small.trace.json")],
        ),
        ("callgrind", vec![own("callgrind/callgrind.out.recursion-loops")]),
        ("dcpi", vec![own("dcpi/alpha-cycles.dcpi")]),
        ("dcpi v006", vec![own("dcpi/v006-imiss.dcpi")]),
        ("dcpicat", vec![dcpicat, "--from".into(), "dcpicat".into()]),
        ("folded", vec![folded, "--from".into(), "folded".into()]),
        ("dtrace", vec![dtrace, "--from".into(), "dtrace".into()]),
        ("perf", vec![perf, "--from".into(), "perf".into()]),
    ];
    let mut failures = Vec::new();
    for (k, (name, args)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("callgrind.out.{k}"));
        let mut all: Vec<&str> = vec!["-q", "convert"];
        all.extend(args.iter().map(String::as_str));
        all.extend(["--to", "callgrind", "-o", out.to_str().unwrap()]);
        let o = common::run(&all);
        assert!(o.status.success(), "{name}: {}", common::stderr(&o));
        let (_, complaints) = annotate_complaints(&out);
        if !complaints.is_empty() {
            failures.push(format!("{name}: {}", complaints.join(" | ")));
        }
    }
    assert!(failures.is_empty(), "callgrind_annotate complained:\n{}", failures.join("\n"));
}

/// Compiles `fixtures/callgrind/shapes.c` at -O0 (recursion, plain `if`s in a row that Valgrind
/// runs in overlapping superblocks, code shared by two names, a function entered in the
/// middle) and profiles it with Valgrind. `None` (skipped) where gcc or valgrind is missing.
fn valgrind_profile_of_shapes(dir: &Path) -> PathBuf {
    for tool in ["gcc", "valgrind", "callgrind_annotate"] {
        common::require(tool);
    }
    let program = compiled(dir, "shapes.c", "-O0");
    // The same environment wherever the test runs: the environment's size moves the program's
    // stack, and with it which paths valgrind's superblocks take through `twice`.
    valgrind_profile(&program, &[])
}

/// Compiles `fixtures/callgrind/<source>` with `-g` and `opt` in `dir`; the program's path.
fn compiled(dir: &Path, source: &str, opt: &str) -> PathBuf {
    std::fs::copy(common::fixture(&format!("callgrind/{source}")), dir.join(source)).unwrap();
    let program = dir.join(format!("{}{opt}", source.trim_end_matches(".c")));
    let o = Command::new("gcc")
        .args([opt, "-g", "-o"])
        .arg(&program)
        .arg(source)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "gcc: {}", common::stderr(&o));
    program
}

/// Valgrind's Callgrind profile (instructions and jumps) of `program`, run with only `PATH`
/// and `env` in its environment; the profile's path (beside the program, named after `env`).
fn valgrind_profile(program: &Path, env: &[(&str, &str)]) -> PathBuf {
    let profile = program.with_file_name(format!(
        "callgrind.out.{}.env{}",
        program.file_name().unwrap().to_string_lossy(),
        env.iter().map(|(k, v)| k.len() + v.len() + 2).sum::<usize>()
    ));
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(program)
        .current_dir(program.parent().unwrap())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    profile
}

/// Self cost of every leaf frame of folded stacks (first column).
fn folded_self_costs(path: &Path) -> BTreeMap<String, u64> {
    let mut selfs = BTreeMap::new();
    for line in
        std::fs::read_to_string(path).unwrap().lines().filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (stack, value) = line.rsplit_once(' ').unwrap();
        *selfs.entry(stack.rsplit(';').next().unwrap().to_string()).or_default() += number(value);
    }
    selfs
}

/// Self cost of every function as `go tool pprof -raw` lists the profile: a sample's first
/// value goes to the function of its leaf location.
fn pprof_self_costs(path: &Path) -> BTreeMap<String, u64> {
    let o = Command::new("go").args(["tool", "pprof", "-raw"]).arg(path).output().expect("go runs");
    assert!(o.status.success(), "go tool pprof: {}", common::stderr(&o));
    let text = common::stdout(&o);
    let (mut section, mut samples, mut functions) = ("", Vec::new(), BTreeMap::new());
    for line in text.lines() {
        if matches!(line, "Samples:" | "Locations" | "Mappings") {
            section = line;
            continue;
        }
        let t = line.trim();
        match section {
            "Samples:" if t.starts_with(|c: char| c.is_ascii_digit()) && t.contains(':') => {
                let (values, locations) = t.split_once(':').unwrap();
                let value = number(values.split_whitespace().next().unwrap());
                let leaf: u64 = locations.split_whitespace().next().unwrap().parse().unwrap();
                samples.push((value, leaf));
            }
            "Locations" if t.split_once(": ").is_some_and(|(id, _)| id.parse::<u64>().is_ok()) => {
                // `ID: ADDRESS M=MAPPING FUNCTION FILE:LINE s=START`, then `(SYSTEM_NAME)` where
                // pprof shows a shortened name.
                let (id, rest) = t.split_once(": ").unwrap();
                let rest = rest.splitn(3, ' ').nth(2).unwrap();
                let (shown, after) = rest.rsplit_once(" s=").unwrap();
                let function = match after.split_once('(') {
                    Some((_, system)) => system.strip_suffix(')').unwrap(),
                    None => shown.rsplit_once(' ').map_or(shown, |(f, _)| f),
                };
                functions.insert(id.parse::<u64>().unwrap(), function.to_string());
            }
            _ => {}
        }
    }
    let mut selfs = BTreeMap::new();
    for (value, leaf) in samples {
        *selfs.entry(functions[&leaf].clone()).or_default() += value;
    }
    selfs
}

/// Self cost of every frame of a speedscope file's first profile (sampled: the last frame of
/// each sample takes its weight).
fn speedscope_self_costs(path: &Path) -> BTreeMap<String, u64> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let profile = &doc["profiles"][0];
    assert_eq!(profile["type"], "sampled");
    let mut selfs = BTreeMap::new();
    for (sample, weight) in
        profile["samples"].as_array().unwrap().iter().zip(profile["weights"].as_array().unwrap())
    {
        let leaf = sample.as_array().unwrap().last().unwrap().as_u64().unwrap() as usize;
        *selfs.entry(frames[leaf]["name"].as_str().unwrap().to_string()).or_default() +=
            weight.as_u64().unwrap();
    }
    selfs
}

/// The width of an inferno flame graph's root frame (`all`), in its count unit.
fn svg_total(path: &Path) -> u64 {
    let svg = std::fs::read_to_string(path).unwrap();
    let at = svg.find("<title>all (").expect("a root frame");
    let rect = &svg[at..];
    let w = rect.find("fg:w=\"").unwrap() + 6;
    number(&rect[w..w + rect[w..].find('"').unwrap()])
}

/// Self costs by function name, as frames of one name are one function in stack formats:
/// recursion levels folded, and functions of one name in several files added up.
fn by_function_name(functions: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (name, cost) in fold_recursion(functions) {
        let function = name.split_once(':').map_or(name.as_str(), |(_, f)| f).to_string();
        *out.entry(function).or_default() += cost;
    }
    out
}

#[test]
fn stack_outputs_of_a_valgrind_profile_keep_its_total_and_every_functions_self_cost() {
    let dir = tempfile::tempdir().unwrap();
    let profile = valgrind_profile_of_shapes(dir.path());
    let source = annotate(&profile);
    let want = by_function_name(&source.functions);
    // The shapes are there: code shared by two names, a recursion level.
    for f in ["twice_plus_one", "twice", "skip_first", "fib", "many_ifs", "two_ifs"] {
        assert!(want.get(f).is_some_and(|&c| c > 0), "{f} in {want:?}");
    }
    let mut failures = Vec::new();
    for to in ["folded", "pprof", "speedscope", "svg"] {
        let out = dir.path().join(format!("out.{to}"));
        let o = common::run(&[
            "convert",
            "-q",
            profile.to_str().unwrap(),
            "--to",
            to,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{to}: {}", common::stderr(&o));
        let got = match to {
            "folded" => folded_self_costs(&out),
            "pprof" if common::clients(&["go"]) => pprof_self_costs(&out),
            "pprof" => continue,
            "speedscope" => speedscope_self_costs(&out),
            _ => {
                if svg_total(&out) != source.total {
                    failures.push(format!("svg: total {} of {}", svg_total(&out), source.total));
                }
                continue;
            }
        };
        let total: u64 = got.values().sum();
        if total != source.total {
            failures.push(format!("{to}: total {total} of {}", source.total));
        }
        for name in want.keys().chain(got.keys()) {
            if want.get(name) != got.get(name) {
                failures.push(format!(
                    "{to}: {name}: {:?} (callgrind_annotate {:?})",
                    got.get(name),
                    want.get(name)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Plain `if`s in a row run in two overlapping Valgrind superblocks; the DCFG made of the
/// profile must still say how every block of the program was entered: each block of the
/// program's functions is entered as often as it ran (`cfghub validate`'s flow rule).
#[test]
fn the_dcfg_of_a_valgrind_profile_enters_every_block_of_the_program_as_often_as_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let profile = valgrind_profile_of_shapes(dir.path());
    // Under another environment (a CI runner's), Valgrind's superblocks take other paths
    // through `twice`.
    let elsewhere = valgrind_profile(&dir.path().join("shapes-O0"), &[("CI", "true")]);
    program_blocks_entered_as_often_as_they_ran(&profile);
    program_blocks_entered_as_often_as_they_ran(&elsewhere);
}

fn program_blocks_entered_as_often_as_they_ran(profile: &Path) {
    let dcfg = profile.with_extension("dcfg.json");
    convert(profile, &dcfg);
    let p = cfghub::convert::load(dcfg.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    let process = &p.processes[0];
    let (i, image) = process
        .images
        .iter()
        .enumerate()
        .find(|(_, i)| p.image_name(i).ends_with("/shapes-O0"))
        .expect("the program");
    let index = cfghub::analysis::names::SymbolIndex::new(image);
    let mut into = vec![0u64; image.blocks.len()];
    for e in &process.edges {
        // Entries through the UNKNOWN node are what the profile does not explain: the program's
        // own blocks need none.
        if e.source == cfghub::ir::NodeRef::Unknown {
            continue;
        }
        if let cfghub::ir::NodeRef::Block(t) = e.target {
            if t.image as usize == i {
                into[t.block as usize] += e.total();
            }
        }
    }
    let program =
        ["main", "fib", "is_even", "is_odd", "two_ifs", "many_ifs", "twice", "twice_plus_one", "skip_first"];
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (b, block) in image.blocks.iter().enumerate() {
        let Some(s) = index.covering(block.offset) else { continue };
        let name = &image.symbols[s as usize].name;
        // A function's entry is entered by calls (and main by the C library, which the
        // profile records as a call too).
        if !program.contains(&name.as_str()) {
            continue;
        }
        checked += 1;
        if block.count != Some(into[b]) {
            wrong.push(format!("{name}+{:#x}: ran {:?}, entered {}", block.offset, block.count, into[b]));
        }
    }
    assert!(checked > 100, "{checked} blocks of the program");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every DCFG cfghub writes from a Valgrind profile passes `cfghub validate` (each block entered
/// as often as it ran, every routine node reached from its entry): programs whose control flow
/// a Callgrind profile states only in part (`shapes.c`: overlapping superblocks, code shared
/// by two names, a function entered in the middle; `control.c`: a jump table, `longjmp`, a
/// signal handler, tail calls), at -O0 and -O2, each under two environments (the
/// environment's size moves the stack, and with it the paths Valgrind's superblocks take),
/// with the dynamic loader and the C library in every profile; and the bundled profile whose
/// counts contradict each other (`calls=81` into a function whose first instruction ran once).
#[test]
fn the_dcfg_of_every_valgrind_profile_passes_validate() {
    for tool in ["gcc", "valgrind"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let padding = "x".repeat(3000);
    let mut profiles = vec![common::fixture("callgrind/callgrind.out.recursion-loops")];
    for source in ["shapes.c", "control.c"] {
        for opt in ["-O0", "-O2"] {
            let program = compiled(dir.path(), source, opt);
            profiles.push(valgrind_profile(&program, &[]));
            profiles.push(valgrind_profile(&program, &[("CI", "true"), ("PADDING", &padding)]));
        }
    }
    // A C++ program that throws: code reached by the unwinder, landing pads, and a lazily
    // bound call from a catch block.
    profiles.push(valgrind_profile(&compiled_cpp(dir.path(), "throws.cc"), &[]));
    let mut failures = Vec::new();
    for profile in &profiles {
        let dcfg = dir.path().join(format!("{}.dcfg.json", profile.file_name().unwrap().to_string_lossy()));
        convert(profile, &dcfg);
        let o = common::run(&["validate", "-q", dcfg.to_str().unwrap()]);
        if !o.status.success() {
            failures.push(format!("{}:\n{}{}", profile.display(), common::stdout(&o), common::stderr(&o)));
        }
        // Every instruction execution a profile recorded here counts is in a block: the PLT
        // stubs' (rebuilt from the binary; the bundled profile's binary is not here) and
        // those the run left by non-local exits too.
        let (held, counted) = (dcfg_block_instrs(&dcfg).0, profile_total(profile));
        if held != counted && profile.starts_with(dir.path()) {
            failures.push(format!("{}: the blocks hold {held} of {counted} Ir", profile.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The `Ir` a Valgrind profile counts: the sum of its cost lines, its `totals:` line (which
/// a run that leaves functions by signals or `longjmp` can make larger than its `summary:`).
fn profile_total(profile: &Path) -> u64 {
    let text = std::fs::read_to_string(profile).unwrap();
    let line =
        |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().parse::<u64>().unwrap());
    line("totals: ").or_else(|| line("summary: ")).expect("a total")
}

/// Compiles `fixtures/callgrind/<source>` (C++) with `-O1 -g` in `dir`; the program's path.
fn compiled_cpp(dir: &Path, source: &str) -> PathBuf {
    common::require("g++");
    std::fs::copy(common::fixture(&format!("callgrind/{source}")), dir.join(source)).unwrap();
    let program = dir.join(source.trim_end_matches(".cc"));
    let o = Command::new("g++")
        .args(["-O1", "-g", "-o"])
        .arg(&program)
        .arg(source)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "g++: {}", common::stderr(&o));
    program
}

/// Valgrind charges the PLT stub a call goes through to the calling instruction (its default
/// `--skip-plt=yes`), beyond the call's own executions, and counts the lazy binding's first
/// pass as a call to the resolver. A DCFG's blocks run all their instructions equally often:
/// with the program's binary (found where the profile's `ob=` says) the stubs become blocks of
/// their own, so that the blocks hold every instruction Valgrind counted, as with
/// `--skip-plt=no`; without it the conversion notes (`-v`) how many they hold.
#[test]
fn a_dcfg_holds_the_plt_stubs_valgrind_charges_to_the_calls_through_them() {
    for tool in ["gcc", "valgrind"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let program = compiled(dir.path(), "plt-calls.c", "-fno-builtin");
    let profile = valgrind_profile(&program, &[]);
    let ir = profile_total(&profile);
    let dcfg = dir.path().join("plt-calls.dcfg.json.bz2");
    let o = common::run(&["-v", "convert", profile.to_str().unwrap(), "-o", dcfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(!common::stderr(&o).contains("the blocks hold"), "{}", common::stderr(&o));
    assert_eq!(dcfg_block_instrs(&dcfg).0, ir);
    let o = common::run(&["validate", "-q", dcfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", common::stdout(&o), common::stderr(&o));
    // Each stub is a routine named as objdump names it, entered by its 2,000 calls.
    let json: serde_json::Value =
        serde_json::from_reader(bzip2::read::MultiBzDecoder::new(std::fs::File::open(&dcfg).unwrap()))
            .unwrap();
    let program_image = json["PROCESSES"][1][1]["IMAGES"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .find(|i| i[3]["SYMBOLS"].as_array().is_some_and(|s| s.iter().any(|s| s[0] == "main")))
        .expect("the program's image");
    let symbol_at = |name: &str| {
        let symbols = program_image[3]["SYMBOLS"].as_array().unwrap();
        symbols.iter().find(|s| s[0] == name).map(|s| s[1].as_str().unwrap().to_string())
    };
    for stub in ["memcpy@plt", "mempcpy@plt"] {
        let at = symbol_at(stub).unwrap_or_else(|| panic!("{stub} in {}", program_image[3]["SYMBOLS"]));
        let block = program_image[3]["BASIC_BLOCKS"].as_array().unwrap().iter().find(|b| b[1] == at.as_str());
        assert_eq!(block.map(|b| b[5].as_u64().unwrap()), Some(2000), "{stub}");
    }

    // A DCFG that has the stubs, converted again, has them once.
    let again = dir.path().join("again.dcfg.json");
    convert(&dcfg, &again);
    assert_eq!(dcfg_block_instrs(&again).0, ir);

    // The same run with --skip-plt=no: Valgrind's own stubs, and the same instructions held.
    let whole = dir.path().join("callgrind.out.noskip");
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes", "--skip-plt=no"])
        .arg(format!("--callgrind-out-file={}", whole.display()))
        .arg(&program)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    let whole_dcfg = dir.path().join("noskip.dcfg.json");
    convert(&whole, &whole_dcfg);
    assert_eq!(dcfg_block_instrs(&whole_dcfg).0, profile_total(&whole));

    // Without the binary, what the blocks cannot hold is a note, as the DCFG page says.
    std::fs::rename(&program, dir.path().join("moved")).unwrap();
    let o = common::run(&["-v", "convert", profile.to_str().unwrap(), "-o", dcfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let held = dcfg_block_instrs(&dcfg).0;
    assert!(held + 4000 <= ir, "{held} of {ir}");
    let said = format!("the blocks hold {held} of the {ir} instruction executions its Ir counts: Valgrind charges the other {}", ir - held);
    assert!(common::stderr(&o).contains(&said), "{}", common::stderr(&o));
}

/// Code two functions share (glibc's `__mempcpy_avx_unaligned_erms` runs on into the body of
/// `__memmove_avx_unaligned_erms`, which Valgrind names `__memcpy_avx_unaligned_erms`):
/// Valgrind counts the body's cost under the function that entered it, and the DCFG's cost
/// table keeps the function of each row, so that through a DCFG and back every function of
/// the whole process keeps its self cost (the body swapped 83,421 and 54,197 Ir for 2,000 and
/// 91,454 when the rows' functions were the blocks' routines).
#[test]
fn code_two_functions_share_keeps_each_ones_cost_through_a_dcfg() {
    for tool in ["gcc", "valgrind", "callgrind_annotate"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let program = compiled(dir.path(), "plt-calls.c", "-fno-builtin");
    let profile = valgrind_profile(&program, &[]);
    let (dcfg, back) = (dir.path().join("plt-calls.dcfg.json"), dir.path().join("back.callgrind"));
    convert(&profile, &dcfg);
    convert(&dcfg, &back);
    let (want, got) = (annotate(&profile), annotate(&back));
    assert_eq!(got.total, want.total);
    let shared =
        |a: &Annotated| a.functions.iter().filter(|(k, _)| k.ends_with("cpy_avx_unaligned_erms")).count();
    assert!(
        shared(&want) == 2 || !want.functions.keys().any(|k| k.contains("_erms")),
        "{:?}",
        want.functions
    );
    assert_eq!(fold_recursion(&got.functions), fold_recursion(&want.functions));
}

/// Calls and jumps inside inlined code (the STL's, at -O2) have their lines in the inlined
/// file: the Callgrind cfghub writes, straight from valgrind's and through a DCFG, switches to
/// it (`fi=`, `jfi=`) before their positions, so callgrind_annotate shows no `<bogus line>`
/// and no warning box (it showed both: the lines were read in the caller's file).
#[test]
fn calls_in_inlined_code_keep_their_files() {
    for tool in ["g++", "valgrind", "callgrind_annotate"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(common::fixture("callgrind/inlined-calls.cc"), d.join("inlined-calls.cc")).unwrap();
    let o = Command::new("g++")
        .args(["-O2", "-g", "-o", "inlined-calls", "inlined-calls.cc"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "g++: {}", common::stderr(&o));
    let profile = d.join("callgrind.out.1");
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(d.join("inlined-calls"))
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    let annotated = |file: &Path| {
        let o = Command::new("callgrind_annotate")
            .args(["--auto=yes"])
            .arg(file)
            .current_dir(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", common::stderr(&o));
        common::stdout(&o)
    };
    let clean = |text: &str| !text.contains("<bogus line") && !text.contains("@@ WARNING @@");
    assert!(clean(&annotated(&profile)), "valgrind's own file");
    let again = d.join("again.callgrind");
    convert(&profile, &again);
    let text = annotated(&again);
    assert!(clean(&text), "{text}");
    let dcfg = d.join("app.dcfg.json");
    let back = d.join("back.callgrind");
    convert(&profile, &dcfg);
    convert(&dcfg, &back);
    let text = annotated(&back);
    assert!(clean(&text), "{text}");
}

/// The call tree callgrind_annotate prints (`--tree=both --inclusive=yes`): every function
/// with its callers and callees and their counts and inclusive costs, lines sorted (functions
/// of equal cost are printed in an order of their own), the header left out. The objects
/// are left out too: callgrind_annotate joins functions of one file and name (`__sigsetjmp`
/// of ld.so and of libc) and labels them with the object it met first.
fn call_tree(file: &Path) -> Vec<String> {
    let o = Command::new("callgrind_annotate")
        .args(["--tree=both", "--inclusive=yes"])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    let start = text.find("file:function").expect("callgrind_annotate's function table");
    let without_object = |l: &str| match l.rsplit_once(" [") {
        Some((rest, object)) if object.ends_with(']') => rest.to_string(),
        _ => l.to_string(),
    };
    let mut lines: Vec<String> = text[start..].lines().map(without_object).collect();
    lines.sort();
    lines
}

/// A recursive call is counted per recursion level (`fib'2` calls `fib'2`, `fib` calls
/// `fib'2`), as are calls between functions that share code: Callgrind written from
/// valgrind's profile keeps every call in the functions valgrind named, so callgrind_annotate
/// prints the same call tree (every function's callers and callees were `fib -> fib`, with
/// `fib`'s inclusive cost counted again for every level).
#[test]
fn recursion_levels_keep_their_calls_through_callgrind() {
    for tool in ["gcc", "valgrind", "callgrind_annotate"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let profile = valgrind_profile(&compiled(dir.path(), "recursion-loops.c", "-O1"), &[]);
    let again = dir.path().join("again.callgrind");
    convert(&profile, &again);
    let (theirs, ours) = (call_tree(&profile), call_tree(&again));
    assert!(theirs.iter().any(|l| l.contains("fib'2 (")), "valgrind names recursion levels: {theirs:#?}");
    let differ: Vec<_> = theirs.iter().zip(&ours).filter(|(a, b)| a != b).collect();
    assert!(differ.is_empty() && theirs.len() == ours.len(), "{differ:#?}");
}

/// A catch block is entered by the unwinder, apart from its function's entry: a DCFG gives it
/// a routine of its own, which the way back to Callgrind named `main+0x2f`, moving its cost out
/// of `main`. A routine whose entry lies in a function's stated range is that function, so
/// every function of the program keeps its self cost through the DCFG, as callgrind_annotate
/// prints it.
#[test]
fn a_catch_block_stays_in_its_function_through_a_dcfg() {
    for tool in ["g++", "valgrind", "callgrind_annotate"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(common::fixture("callgrind/throws.cc"), d.join("throws.cc")).unwrap();
    let o =
        Command::new("g++").args(["-O1", "-g", "-o", "throws", "throws.cc"]).current_dir(d).output().unwrap();
    assert!(o.status.success(), "g++: {}", common::stderr(&o));
    let profile = valgrind_profile(&d.join("throws"), &[]);
    let (dcfg, back) = (d.join("throws.dcfg.json"), d.join("back.callgrind"));
    convert(&profile, &dcfg);
    convert(&dcfg, &back);
    let (want, got) = (annotate(&profile), annotate(&back));
    assert_eq!(got.total, want.total);
    let program = |a: &Annotated| -> BTreeMap<String, u64> {
        a.functions
            .iter()
            .filter(|(k, _)| k.starts_with("throws.cc:"))
            .map(|(k, &v)| (k.clone(), v))
            .collect()
    };
    let (want, got) = (program(&want), program(&got));
    assert!(want.contains_key("throws.cc:main") && want.contains_key("throws.cc:check(int)"), "{want:?}");
    assert_eq!(got, want);
    let text = std::fs::read_to_string(&back).unwrap();
    assert!(
        !text.lines().any(|l| l.starts_with("fn=") && l.contains("main+0x")),
        "a part of main named apart"
    );
}
