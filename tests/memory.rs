//! The model's memory grows like the input: `cfghub info` reports what the model takes, part by
//! part, and on large generated profiles that is at most three times the input's size.
//!
//! The profiles are written here, shaped like what the tools write: a DCPI profile of chunks of
//! 64 slots (as the DCPI daemon stores an image's samples), and a Callgrind profile as Valgrind
//! writes it by default (line positions, calls with inclusive costs), as dense in calls as a
//! real one: a default profile of `cc1plus` has a call every 49 bytes, 1.2 cost lines of its
//! own per call, and names the callee's file for one call in twenty. Each call is an edge with
//! its inclusive cost and call site, about 110 bytes of model against 30 to 50 of text, which
//! makes calls the largest part of such a model (`scripts/bench-memory.sh`).

mod common;

use std::fmt::Write as _;
use std::path::Path;

/// What `cfghub info --json` says of the model's memory: (total bytes, input bytes, ratio).
fn reported_memory(path: &Path) -> (u64, u64, f64) {
    let o = common::run(&["info", "--json", "--quiet", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["memory"];
    let parts: u64 = m["parts"].as_object().unwrap().values().map(|p| p.as_u64().unwrap()).sum();
    assert_eq!(parts, m["total"].as_u64().unwrap(), "the parts add up to the total");
    (m["total"].as_u64().unwrap(), m["input"].as_u64().unwrap(), m["ratio"].as_f64().unwrap())
}

/// A DCPI profile of at least `bytes` bytes: chunks of 64 slots 4 bytes apart, 64-byte gaps
/// between chunks, counts from 0 to 1023.
fn dcpi_profile(bytes: usize) -> Vec<u8> {
    let mut head = String::from(
        "version pdb-0.07\nimage 19970328081403c0c18b\npath /usr/bin/app\nepoch 9805191724\n\
         platform walnut\nevent cycles\nperiod 63488\ntstart 120000000\ntsize 4294967295\n\
         cpuspeed 500\nsamples",
    );
    while !(head.len() + 1).is_multiple_of(4) {
        head.push(' ');
    }
    head.push('\n');
    let mut out = head.into_bytes();
    let counts: Vec<u32> = (0..64u64).map(|i| ((i * 2_654_435_761) >> 20 & 0x3ff) as u32).collect();
    let (mut offset, mut nonzero, mut sum) = (0u32, 0u32, 0u32);
    while out.len() < bytes {
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&64u32.to_le_bytes());
        for &c in &counts {
            out.extend_from_slice(&c.to_le_bytes());
            nonzero += (c != 0) as u32;
            sum = sum.wrapping_add(c);
        }
        offset += 64 * 4 + 64;
    }
    out.extend_from_slice(&nonzero.to_le_bytes());
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// A small deterministic generator, so that the profiles look irregular but are the same on
/// every run.
struct Noise(u64);

impl Noise {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// A Callgrind profile of at least `bytes` bytes as Valgrind writes it by default: functions
/// of 3 to 14 source lines in 300 files, with name compression, a cost per line, and a call
/// (with the callee's inclusive cost) after five cost lines in six, to a function of the same
/// file but for one call in twenty.
fn callgrind_lines(bytes: usize) -> String {
    let mut out = String::from(
        "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 4242\ncmd: ./app\npart: 1\n\n\
         positions: line\nevents: Ir\nsummary: 123456789\n\n",
    );
    let mut noise = Noise(7);
    let (mut f, files) = (0u64, 300u64);
    let mut calls = 0usize;
    while out.len() < bytes {
        let file = f % files;
        if f < files {
            writeln!(out, "ob=(1) /usr/bin/app\nfl=({file}) src/module{file}.c\nfn=({f}) function_{f}")
                .unwrap();
        } else {
            writeln!(out, "fl=({file})\nfn=({f}) function_{f}").unwrap();
        }
        writeln!(out, "{} {}", 10 + noise.below(4000), 1 + noise.below(500)).unwrap();
        for _ in 0..3 + noise.below(12) {
            writeln!(out, "+{} {}", noise.below(4), 1 + noise.below(1000)).unwrap();
            if noise.below(6) != 0 {
                let same_file = f >= files && noise.below(20) != 0;
                let callee =
                    if same_file { file + files * noise.below(f / files) } else { noise.below(f + 1) };
                // Valgrind names the callee's file when it is not the caller's.
                if callee % files != file {
                    writeln!(out, "cfi=({})", callee % files).unwrap();
                }
                if noise.below(10) != 0 {
                    writeln!(out, "cfn=({callee})").unwrap();
                } else {
                    writeln!(out, "cfn=({callee}) function_{callee}").unwrap();
                }
                writeln!(
                    out,
                    "calls={} +{}\n* {}",
                    1 + noise.below(100),
                    noise.below(100),
                    noise.below(1_000_000)
                )
                .unwrap();
                calls += 1;
            }
        }
        out.push('\n');
        f += 1;
    }
    assert!(out.len() / calls <= 50, "a call every {} bytes", out.len() / calls);
    out
}

#[test]
fn a_dcpi_profile_of_50_mb_takes_at_most_three_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.dcpi");
    std::fs::write(&path, dcpi_profile(50_000_000)).unwrap();
    let (total, input, ratio) = reported_memory(&path);
    assert!(input >= 50_000_000);
    assert!(total <= 3 * input && ratio <= 3.0, "{total} bytes for {input}: {ratio}x");
}

#[test]
fn a_line_level_callgrind_profile_of_50_mb_takes_at_most_three_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("callgrind.out.4242");
    std::fs::write(&path, callgrind_lines(50_000_000)).unwrap();
    let (total, input, ratio) = reported_memory(&path);
    println!("{total} bytes of model for {input} of input: {ratio:.2}x");
    assert!(input >= 50_000_000);
    assert!(total <= 3 * input && ratio <= 3.0, "{total} bytes for {input}: {ratio}x");
}

#[test]
fn info_prints_the_models_memory_by_part() {
    let input = common::fixture("dcpi/alpha-cycles.dcpi");
    let o = common::run(&["info", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    let line = text.lines().find(|l| l.starts_with("memory:")).expect("a memory line");
    assert!(
        line.contains("in the model") && line.contains("x the input") && line.contains("costs "),
        "{line}"
    );
}

/// C source of a function whose every instruction lies under `depth` levels of inlined calls:
/// each level calls the one below twice, so the bottom's code is copied 2^depth times.
fn deeply_inlined_c(depth: u32) -> String {
    let mut c =
        String::from("#define INL static inline __attribute__((always_inline))\nvolatile int sink;\n");
    c.push_str("INL void l0(int x) {\n");
    for i in 0..8 {
        writeln!(c, "  sink += x * {};", i + 3).unwrap();
    }
    c.push_str("}\n");
    for d in 1..=depth {
        writeln!(c, "INL void l{d}(int x) {{ l{}(x); l{}(x + {d}); }}", d - 1, d - 1).unwrap();
    }
    writeln!(c, "__attribute__((noinline)) void deep(int x) {{ l{depth}(x); }}").unwrap();
    c.push_str("int main(int argc, char **argv) { (void)argv; deep(argc); return 0; }\n");
    c
}

/// Peak resident memory (KiB) of `cfghub ARGS` run in `dir`.
fn peak_kib(dir: &Path, args: &[&str]) -> u64 {
    let o = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M", "-o", "rss"])
        .arg(env!("CARGO_BIN_EXE_cfghub"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    std::fs::read_to_string(dir.join("rss")).unwrap().lines().last().unwrap().trim().parse().unwrap()
}

#[test]
fn symbolizing_addresses_takes_memory_per_address_not_per_inlined_frame() {
    if !common::clients(&["cc", "/usr/bin/time"]) {
        return;
    }
    // 166 KB of code, every address under 11 frames (`deep` and 10 inlined levels).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("deep.c"), deeply_inlined_c(10)).unwrap();
    let o =
        std::process::Command::new("cc").args(["-g", "-O1", "-o", "deep", "deep.c"]).current_dir(d).output();
    assert!(o.unwrap().status.success());
    let nm = std::process::Command::new("nm").args(["-S", "deep"]).current_dir(d).output().unwrap();
    let (start, size) = common::stdout(&nm)
        .lines()
        .find(|l| l.ends_with(" T deep"))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (u64::from_str_radix(f[0], 16).unwrap(), u64::from_str_radix(f[1], 16).unwrap())
        })
        .expect("deep in the symbol table");
    // Every address of `deep`, and the first quarter of them: the difference in peak memory is
    // what the other three quarters cost.
    let mut peaks = Vec::new();
    for count in [size, size / 4] {
        let mut text = format!(
            "name deep\nimage 1\npath deep\nepoch 202611230000\nplatform x86_64\ntext_start 0x0\n\
             text_size 0x10000000\nevent {count} cycles:63488:10000\n"
        );
        for a in start..start + count {
            writeln!(text, "{a:#014x} 1").unwrap();
        }
        std::fs::write(d.join("in.dcpicat"), text).unwrap();
        peaks.push(peak_kib(d, &["convert", "-q", "in.dcpicat", "--symbols", "deep", "-o", "out.folded"]));
        let folded = std::fs::read_to_string(d.join("out.folded")).unwrap();
        assert!(
            folded.contains("deep;l10;l9;l8;l7;l6;l5;l4;l3;l2;l1;l0 "),
            "{}",
            &folded[..folded.len().min(500)]
        );
    }
    let per_address = (peaks[0] as f64 - peaks[1] as f64) * 1024.0 / (size - size / 4) as f64;
    // The answers of an address and its entry in the model's inline table take about 70 bytes;
    // a copy of its 10 inlined frames per address would take about 1.6 KB.
    assert!(per_address < 300.0, "{per_address:.0} bytes per address (peaks {peaks:?} KiB)");
}

#[test]
fn stacks_of_a_dcpi_profile_without_symbols_take_little_beside_its_model() {
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("skipping: /usr/bin/time is not installed");
        return;
    }
    // 5 million sampled addresses, each a stack of its own (`app+0x1a4 87`), written as folded
    // stacks, pprof, a flame graph and speedscope. Kept as model stacks with a name each, they took about 170 bytes an
    // address: 42x the input, where reading it alone takes 2.2x (scripts/bench-flat-stacks.sh
    // measures release builds).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = dcpi_profile(20_000_000);
    std::fs::write(d.join("big.dcpi"), &input).unwrap();
    let reading = peak_kib(d, &["info", "-q", "big.dcpi"]);
    // Converts to `out` and checks the peak took at most `limit` times the input beside reading,
    // give or take one 2 MiB huge page (0.1x of this input: peaks moved by one from run to run).
    // Each output is removed once checked: together they take about a gigabyte of disk.
    let remove = |out: &str| std::fs::remove_file(d.join(out)).unwrap();
    let convert_within = |out: &str, limit: f64| {
        let kib = peak_kib(d, &["convert", "-q", "big.dcpi", "-o", out]);
        let beside = kib.saturating_sub(reading + 2048) as f64 * 1024.0 / input.len() as f64;
        assert!(
            beside <= limit,
            "writing {out} took {beside:.2}x the input beside reading it ({kib} against {reading} KiB)"
        );
    };
    convert_within("out.folded", 0.1);
    let folded = std::fs::read_to_string(d.join("out.folded")).unwrap();
    assert!(folded.starts_with("# events: cycles\napp+0x4 "), "{}", &folded[..100]);
    // One line per address with samples, as many as the footer counts.
    let nonzero = u32::from_le_bytes(input[input.len() - 8..input.len() - 4].try_into().unwrap());
    assert_eq!(folded.lines().count(), 1 + nonzero as usize);
    let first_count = folded.lines().nth(1).unwrap().rsplit(' ').next().unwrap().to_string();
    drop(folded);
    remove("out.folded");
    // As pprof: a sample and an unsymbolized location (mapping and address) per address,
    // encoded as they are met; with a function, a location and a name kept per address they
    // took 64x the input.
    convert_within("out.pb", 0.1);
    // As a flame graph: no address is wide enough to draw (each is far under inferno's 0.01%
    // of the samples), so inferno is handed groups of them, not a line each (it held, sorted
    // and boxed every line: about 23x the input).
    convert_within("out.svg", 0.2);
    let svg = std::fs::read_to_string(d.join("out.svg")).unwrap();
    assert!(svg.contains("<title>all ("), "the root is drawn");
    drop(svg);
    remove("out.svg");
    // As speedscope: a frame and a sample per address, written as the stacks are walked (as
    // model stacks with a name each they took about 47x the input).
    convert_within("out.speedscope.json", 0.1);
    // A frame and a weight per address (counted in the text: parsing 190 MB of JSON in a debug
    // build takes a minute).
    let speedscope = std::fs::read_to_string(d.join("out.speedscope.json")).unwrap();
    assert_eq!(speedscope.matches("{\"name\":\"app+0x").count(), nonzero as usize);
    let weights = &speedscope[speedscope.find("\"weights\":[").unwrap()..];
    assert_eq!(weights[..weights.find(']').unwrap()].matches(',').count() + 1, nonzero as usize);
    drop(speedscope);
    remove("out.speedscope.json");
    // As a Firefox Profiler file: a string, function, frame, stack and sample per address,
    // written column by column as the stacks are walked (through fxprof-processed-profile's
    // tables, and its JSON serialized in memory, they took about 176x the input).
    convert_within("out.fxprof.json", 0.1);
    let firefox = std::fs::read_to_string(d.join("out.fxprof.json")).unwrap();
    assert_eq!(firefox.matches("\"app+0x").count(), nonzero as usize);
    assert!(firefox.contains(&format!("\"frameTable\":{{\"length\":{nonzero},")));
    drop(firefox);
    remove("out.fxprof.json");
    // Callgrind (a function named by its address per address, written whole), DCFG (a cost
    // row per address) and llvm-profgen's unsymbolized form (a range per address) keep
    // nothing per address either: they took 30x, 17x and 14x the input.
    for out in ["callgrind.out.big", "out.dcfg.json", "out.rawprof"] {
        convert_within(out, 0.1);
        remove(out);
    }
    // Read back, every address is a frame named by its runtime address, with its count.
    let o = common::cfghub().args(["convert", "-q", "out.pb", "-o", "back.folded"]).current_dir(d).output();
    assert!(o.as_ref().unwrap().status.success(), "{}", common::stderr(&o.unwrap()));
    let back = std::fs::read_to_string(d.join("back.folded")).unwrap();
    assert_eq!(back.lines().filter(|l| !l.starts_with('#')).count(), nonzero as usize);
    let count = |text: &str| {
        text.lines().find(|l| !l.starts_with('#')).unwrap().rsplit(' ').next().unwrap().to_string()
    };
    assert!(back.contains("\n0x120000004 "), "{}", &back[..100]);
    assert_eq!(count(&back), first_count);
}

/// A Callgrind profile of `main` over `layers` layers of two functions, each calling both
/// functions of the layer below: 2^layers call paths, every function with a cost of its own.
fn lattice_callgrind(layers: usize) -> String {
    let at = |layer: usize, j: usize| 0x400200 + 0x100 * (2 * layer + j);
    let mut c = String::from("positions: instr line\nevents: Ir\nob=lattice\nfl=lattice.c\nfn=main\n");
    // (A jump, so that the profile has blocks to estimate stacks from.)
    c.push_str("0x400100 1 1\njump=1 0x400104 1\n0x400100 1\n");
    for j in 0..2 {
        writeln!(c, "cfn=L0_{j}\ncalls=1 {:#x} 2\n{:#x} 1 {}", at(0, j), 0x400104 + 4 * j, 2 * layers)
            .unwrap();
    }
    for l in 0..layers {
        for j in 0..2 {
            writeln!(c, "fn=L{l}_{j}\n{:#x} {} 1", at(l, j), l + 2).unwrap();
            for k in (0..2).filter(|_| l + 1 < layers) {
                let (to, from) = (at(l + 1, k), at(l, j) + 4 + 4 * k);
                writeln!(
                    c,
                    "cfn=L{}_{k}\ncalls=1 {to:#x} {}\n{from:#x} {} {}",
                    l + 1,
                    l + 3,
                    l + 2,
                    layers - l
                )
                .unwrap();
            }
        }
    }
    c
}

#[test]
fn estimating_a_million_deep_call_paths_keeps_no_list_of_each_paths_frames() {
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("skipping: /usr/bin/time is not installed");
        return;
    }
    // 2^60 paths 60 calls deep: the estimate walks a million of them (its limit). Kept as a
    // list of frames per path they took 276 MB; as the tree of the walk, 8 bytes per path.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("callgrind.out.lattice"), lattice_callgrind(60)).unwrap();
    let kib = peak_kib(d, &["convert", "-q", "callgrind.out.lattice", "-o", "out.folded"]);
    let folded = std::fs::read_to_string(d.join("out.folded")).unwrap();
    assert!(folded.contains("main;L0_0;L1_0 1") || folded.contains("main;L0_0;L1_1 1"), "{folded}");
    assert!(kib < 150 * 1024, "peak {} MiB", kib / 1024);
}

/// A Firefox Profiler profile (version 49, one thread) whose stack table is a chain of `depth`
/// nodes, each calling a function of its own, with `leaves` more nodes under the deepest one;
/// `samples` lists the sampled stack table rows (with repeats).
fn firefox_chain(depth: usize, leaves: usize, samples: &[usize]) -> String {
    let n = depth + leaves;
    let list = |f: &dyn Fn(usize) -> String| (0..n).map(f).collect::<Vec<_>>().join(",");
    let prefix = list(&|i| if i == 0 { "null".into() } else { (i.min(depth) - 1).to_string() });
    let index = list(&|i| i.to_string());
    let nulls = list(&|_| "null".into());
    let zeros = list(&|_| "0".into());
    let minus = list(&|_| "-1".into());
    let names = list(&|i| format!("\"f{i}\""));
    let stack: Vec<String> = samples.iter().map(usize::to_string).collect();
    let times: Vec<String> = (0..samples.len()).map(|t| t.to_string()).collect();
    format!(
        "{{\"meta\":{{\"preprocessedProfileVersion\":49,\"version\":24,\"interval\":1,\"product\":\"chain\"}},\
         \"libs\":[],\"threads\":[{{\"name\":\"chain\",\"pid\":\"7\",\"tid\":\"7\",\
         \"samples\":{{\"length\":{},\"stack\":[{}],\"time\":[{}],\"weight\":null,\"weightType\":\"samples\"}},\
         \"stackTable\":{{\"length\":{n},\"prefix\":[{prefix}],\"frame\":[{index}]}},\
         \"frameTable\":{{\"length\":{n},\"address\":[{minus}],\"inlineDepth\":[{zeros}],\"func\":[{index}],\
         \"line\":[{nulls}],\"category\":[{zeros}]}},\
         \"funcTable\":{{\"length\":{n},\"name\":[{index}],\"resource\":[{minus}],\"fileName\":[{nulls}],\
         \"lineNumber\":[{nulls}]}},\
         \"resourceTable\":{{\"length\":0,\"lib\":[],\"name\":[]}},\"stringArray\":[{names}]}}]}}",
        samples.len(),
        stack.join(","),
        times.join(",")
    )
}

/// Deep stacks take memory per distinct call path, not per frame of every stack: a chain of
/// 50,000 stacks each sampled once (1.25 billion frames written out as lists), 30,000 samples
/// at the bottom of a 30,000-deep chain, and 30,000 stacks each 30,000 deep (900 million
/// frames), read, summed by `info` and written to the tree formats (Firefox, tables), each
/// within 100 MB. Folded stacks are lists: their text grows with every frame of every stack,
/// and is written as it is made, the memory staying that of the tree.
#[test]
fn deep_stacks_take_memory_per_call_path_not_per_frame() {
    if !Path::new("/usr/bin/time").exists() {
        common::unavailable("/usr/bin/time is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let every: Vec<usize> = (0..50_000).collect();
    std::fs::write(d.join("chain.json"), firefox_chain(50_000, 0, &every)).unwrap();
    std::fs::write(d.join("bottom.json"), firefox_chain(30_000, 0, &vec![29_999; 30_000])).unwrap();
    let leaves: Vec<usize> = (30_000..60_000).collect();
    std::fs::write(d.join("wide.json"), firefox_chain(30_000, 30_000, &leaves)).unwrap();
    const LIMIT_KIB: u64 = 100 * 1024;
    for input in ["chain.json", "bottom.json", "wide.json"] {
        let kib = peak_kib(d, &["info", "-q", input]);
        assert!(kib < LIMIT_KIB, "info {input}: {kib} KiB");
        for out in ["out.fxprof.json", "out.tables"] {
            let kib = peak_kib(d, &["convert", "-q", input, "-o", out]);
            assert!(kib < LIMIT_KIB, "{input} to {out}: {kib} KiB");
        }
        // The tables read back into the same tree.
        let kib = peak_kib(d, &["info", "-q", "out.tables"]);
        assert!(kib < LIMIT_KIB, "info of {input} as tables: {kib} KiB");
        std::fs::remove_dir_all(d.join("out.tables")).unwrap();
    }
    // One stack, 30,000 frames deep, of weight 30,000: pprof holds it as one sample.
    let kib = peak_kib(d, &["convert", "-q", "bottom.json", "-o", "out.pb"]);
    assert!(kib < LIMIT_KIB, "bottom.json to pprof: {kib} KiB");
    // Folded text of a 3,000-deep chain sampled at every node: 4.5 million frames in 24 MB
    // of text, written as it is made.
    let every: Vec<usize> = (0..3_000).collect();
    std::fs::write(d.join("small.json"), firefox_chain(3_000, 0, &every)).unwrap();
    let reading = peak_kib(d, &["info", "-q", "small.json"]);
    let kib = peak_kib(d, &["convert", "-q", "small.json", "-o", "out.folded"]);
    let written = std::fs::metadata(d.join("out.folded")).unwrap().len();
    assert!(written > 20_000_000, "{written} bytes");
    let beside = kib.saturating_sub(reading) * 1024;
    assert!(beside < written / 4, "folded: {kib} KiB (reading {reading} KiB) for {written} bytes of text");
}

/// The model's stacks take 8 bytes and 16 per value a sample, and 8 bytes a distinct call path
/// (its parent and frame; the lookup a reader finds nodes with is let go once it is done),
/// whatever the stacks' depths.
#[test]
fn stacks_take_bytes_per_sample_and_per_call_path() {
    let mut stacks = cfghub::ir::Stacks::with_width(2);
    // 1,000 paths of depth 1,000 sharing their first 999 frames: 1,999 nodes.
    let base: Vec<u32> = (0..999).collect();
    let leaves: Vec<u32> = (0..1_000)
        .map(|i| {
            let mut frames = base.clone();
            frames.push(1_000 + i);
            stacks.path_node(&frames)
        })
        .collect();
    for i in 0..1_000_000u32 {
        stacks.push_sample(leaves[(i % 1_000) as usize], Some(i % 4), &[1, i128::from(i)]);
    }
    stacks.shrink_to_fit();
    assert_eq!(stacks.nodes().len(), 1_999);
    let per_sample = 8 + 2 * 16;
    let bytes = stacks.heap_bytes();
    let nodes = bytes - 1_000_000 * per_sample;
    assert!(bytes >= 1_000_000 * per_sample, "{bytes}");
    assert!(nodes <= 1_999 * 8, "{nodes} bytes for 1,999 call paths");
}
