//! The command line on DCPI inputs: `info` (a dcpiprof-like table), `convert` both ways, and
//! `merge` of DCPI samples into simple-loop's DCFG with known totals per block.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;
use cfghub::analysis::merge::block_costs;
use cfghub::ir::Profile;

fn load(path: &Path) -> Profile {
    cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap().profile
}

#[test]
fn info_prints_a_dcpiprof_like_table() {
    let path = common::fixture("dcpi/alpha-cycles.dcpi");
    let o = common::run(&["info", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let out = common::stdout(&o);
    assert!(out.contains("format:   dcpi 0.07"), "{out}");
    assert!(out.contains("costs by image"), "{out}");
    let row = out.lines().find(|l| l.trim_start().starts_with("xemacs ")).expect("image row");
    assert_eq!(row.split_whitespace().collect::<Vec<_>>(), ["xemacs", "4000000055", "100.00", "100.00"]);
    let hottest: Vec<&str> =
        out.lines().skip_while(|l| !l.contains("hottest addresses")).skip(2).take(2).collect();
    assert!(hottest[0].contains("0x120070004") && hottest[0].contains("4000000000"), "{hottest:?}");
    assert!(hottest[1].contains("0x12006cbb8") && hottest[1].ends_with(" 29"), "{hottest:?}");

    let o = common::run(&["info", "--json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["events"][0], "cycles");
    assert_eq!(v["processes"][0]["costs_by_image"][0]["costs"]["cycles"], 4000000055u64);
}

#[test]
fn a_step_that_does_not_fit_is_refused_with_a_hint() {
    let path = common::fixture("dcpi/x86-step1.dcpi");
    let o = common::run(&["info", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("--address-step"), "{}", common::stderr(&o));
    let o = common::run(&["info", path.to_str().unwrap(), "--address-step", "1"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
}

#[test]
fn merge_attributes_every_sample_to_its_block() {
    let Some(dcfg) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let graph = load(&dcfg);
    let process = &graph.processes[0];
    let (exe_index, exe) = process
        .images
        .iter()
        .enumerate()
        .find(|(_, i)| graph.image_name(i).ends_with("/simple_loop"))
        .unwrap();
    let exe_path = graph.image_name(exe);
    let inside =
        |o: u64| exe.blocks.iter().filter(|b| b.offset <= o && o < b.offset + u64::from(b.size)).count();

    // cycles: 3(k+1) at the first instruction of block k, and 1 more at its last instruction
    // when no other block holds that address; imiss: k % 3 at the first instruction.
    let mut cycles: BTreeMap<u64, u64> = BTreeMap::new();
    let mut imiss: BTreeMap<u64, u64> = BTreeMap::new();
    let mut expected: Vec<(u64, u64)> = vec![(0, 0); exe.blocks.len()];
    let starts: Vec<u64> = exe.blocks.iter().map(|b| b.offset).collect();
    for (k, b) in exe.blocks.iter().enumerate() {
        if b.size == 0 || starts.iter().filter(|&&s| s == b.offset).count() > 1 {
            continue;
        }
        cycles.insert(b.offset, 3 * (k as u64 + 1));
        imiss.insert(b.offset, k as u64 % 3);
        expected[k] = (3 * (k as u64 + 1), k as u64 % 3);
        let last = b.offset + u64::from(b.last_instr_offset);
        if b.last_instr_offset > 0 && inside(last) == 1 {
            cycles.insert(last, 1);
            expected[k].0 += 1;
        }
    }
    // Three addresses in no block: past the image, and in a gap between blocks if there is one.
    let mut stray = vec![exe.size.unwrap() + 0x100, exe.size.unwrap() + 0x204];
    let gap = exe
        .blocks
        .iter()
        .map(|b| b.offset + u64::from(b.size))
        .find(|&o| inside(o) == 0 && !cycles.contains_key(&o));
    stray.push(gap.unwrap_or(exe.size.unwrap() + 0x300));
    for (i, &o) in stray.iter().enumerate() {
        cycles.insert(o, 7 + i as u64);
    }
    let attributed: u64 = expected.iter().map(|e| e.0).sum();

    let dir = tempfile::tempdir().unwrap();
    let cycles_file = dir.path().join("cycles.dcpi");
    std::fs::write(&cycles_file, common::dcpi_bytes(&exe_path, "cycles", exe.load_addr, &cycles)).unwrap();
    let mut dump = format!(
        "name                 simple_loop\npath                 {exe_path}\ntext_start           {:#014x}\n\
         text_size            0x000000001000\nevent                {} imiss:4096:10000\n",
        exe.load_addr,
        imiss.values().sum::<u64>()
    );
    for (o, c) in &imiss {
        dump.push_str(&format!("{:#014x} {c:>7}\n", exe.load_addr + o));
    }
    let imiss_file = dir.path().join("imiss.dcpicat.txt");
    std::fs::write(&imiss_file, dump).unwrap();

    let merged_file = dir.path().join("merged.dcfg.json");
    let o = common::run(&[
        "merge",
        dcfg.to_str().unwrap(),
        cycles_file.to_str().unwrap(),
        imiss_file.to_str().unwrap(),
        "--address-step",
        "1",
        "-o",
        merged_file.to_str().unwrap(),
    ]);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "cycles: {attributed} sample(s) attributed to blocks, 24 sample(s) in no block"
        )),
        "{err}"
    );
    assert!(err.contains("3 sampled address(es) lie in no block"), "{err}");
    for &s in &stray {
        assert!(err.contains(&format!("{:#x}", exe.load_addr + s)), "{err}");
    }

    let merged = load(&merged_file);
    let names: Vec<&str> = merged.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["cycles", "imiss"], "instructions stay in the blocks");
    let mp = &merged.processes[0];
    let image = &mp.images[exe_index];
    let (per_block, outside) = block_costs(image, 2);
    assert_eq!(outside, [24, 0], "samples in no block stay, at their addresses");
    for (k, b) in image.blocks.iter().enumerate() {
        assert_eq!(per_block[k], vec![expected[k].0, expected[k].1], "block {} at {:#x}", b.id, b.offset);
    }
    assert_eq!(mp.images[exe_index].blocks, exe.blocks, "blocks and their counts are kept");
    // The other images carry instructions only.
    for (i, other) in mp.images.iter().enumerate().filter(|(i, _)| *i != exe_index) {
        assert!(other.costs.is_empty(), "image {i}");
    }

    // info: samples, %, instructions and samples per 1000 instructions per routine.
    let o = common::run(&["info", "--json", merged_file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let top = &v["processes"][0]["top_routines"][0];
    let samples = top["samples"]["cycles"].as_u64().unwrap();
    let instructions = top["instructions"].as_u64().unwrap();
    assert!(samples > 0);
    let per_k = top["samples_per_1000_instructions"]["cycles"].as_f64().unwrap();
    assert!((per_k - samples as f64 * 1000.0 / instructions as f64).abs() < 0.001, "{top}");
    let pct = top["samples_percent"]["cycles"].as_f64().unwrap();
    assert!((pct - (samples as f64 * 100.0 / (attributed + 24) as f64)).abs() < 0.01, "{top}");
    let o = common::run(&["info", merged_file.to_str().unwrap()]);
    let out = common::stdout(&o);
    assert!(out.contains("top routines by samples") && out.contains("cycles/1k instr"), "{out}");

    // Back to DCPI: the merged model's cycles in the executable, as a profile of their own.
    let back_file = dir.path().join("back.dcpi");
    let o = common::run(&[
        "convert",
        merged_file.to_str().unwrap(),
        "-o",
        back_file.to_str().unwrap(),
        "--event",
        "cycles",
        "-q",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let back = cfghub::convert::load(
        back_file.to_str().unwrap(),
        None,
        &cfghub::format::ReadOptions::default()
            .with(cfghub::formats::dcpi::Options { address_step: Some(1) }),
    )
    .unwrap()
    .profile;
    let total: u64 = back.processes[0].images[0].costs.iter().map(|c| c.value(0)).sum();
    assert_eq!(total, attributed + 24, "every sample, in a block or not");
}

#[test]
fn merge_without_a_matching_image_is_refused_naming_both_sides() {
    let Some(dcfg) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let dir = tempfile::tempdir().unwrap();
    let samples = BTreeMap::from([(0x10u64, 5u64), (0x20, 6)]);
    let file = dir.path().join("other.dcpi");
    std::fs::write(&file, common::dcpi_bytes("/usr/bin/other", "cycles", 0x400000, &samples)).unwrap();
    let out = dir.path().join("m.dcfg.json");
    let o = common::run(&[
        "merge",
        dcfg.to_str().unwrap(),
        file.to_str().unwrap(),
        "--address-step",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    // No image matches: refused, naming the images on each side.
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no sample image matches a graph image") && err.contains("/usr/bin/other"), "{err}");
    assert!(err.contains("ld-linux-x86-64.so.2") && err.contains("--image"), "{err}");
    assert!(!out.exists());
    // --image names the graph image; --base places the text start. Placed where the graph
    // has no block, no sample is attributed: refused too, naming both sides, with no output.
    let merge_at = |base: &str| {
        common::run(&[
            "merge",
            dcfg.to_str().unwrap(),
            file.to_str().unwrap(),
            "--address-step",
            "1",
            "--image",
            "simple_loop",
            "--base",
            base,
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let o = merge_at("0x3420000000");
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("none of the samples of") && err.contains("the samples are of /usr/bin/other"),
        "{err}"
    );
    assert!(err.contains("simple_loop_dependency-pinplay/simple_loop") && err.contains("--base"), "{err}");
    assert!(!out.exists());
    // At the text of `_init` (0x4003e8, 24 bytes), both samples land in its block.
    let o = merge_at("0x4003d8");
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("-> graph image /home/yan/pintool/DCFG/simple_loop_dependency-pinplay/simple_loop"),
        "{err}"
    );
    assert!(err.contains("cycles: 11 sample(s) attributed to blocks, 0 sample(s) in no block"), "{err}");
    let o = common::run(&[
        "merge",
        dcfg.to_str().unwrap(),
        file.to_str().unwrap(),
        "--image",
        "nosuch",
        "-o",
        out.to_str().unwrap(),
        "--address-step",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("the graph has no image nosuch"), "{}", common::stderr(&o));
}

/// A DCPI file cfghub writes from x86 code (slots a byte apart) records its step in an
/// `addressstep` header line, which dcpiformat(4) has every tool keep: it reads back at the
/// same addresses without `--address-step`, and writes back byte for byte.
#[test]
fn a_step_cfghub_chose_is_recorded_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let source = common::fixture("callgrind/callgrind.out.recursion-loops");
    let out = |name: &str| d.join(name).to_str().unwrap().to_string();
    for (input, output) in
        [(source.to_str().unwrap().to_string(), out("a.dcpi")), (out("a.dcpi"), out("b.dcpi"))]
    {
        let o = common::run(&["convert", &input, "-o", &output]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert!(!common::stderr(&o).contains("--address-step"), "{}", common::stderr(&o));
    }
    let first = std::fs::read(out("a.dcpi")).unwrap();
    assert!(first.windows(14).any(|w| w == b"\naddressstep 1"), "{}", String::from_utf8_lossy(&first[..300]));
    assert_eq!(std::fs::read(out("b.dcpi")).unwrap(), first);
    // The same addresses as the source's: a dump of each.
    for (input, output) in
        [(source.to_str().unwrap().to_string(), out("a.dcpicat")), (out("a.dcpi"), out("b.dcpicat"))]
    {
        let o = common::run(&["convert", &input, "-o", &output]);
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
    let addresses = |name: &str| -> Vec<String> {
        std::fs::read_to_string(out(name))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("0x"))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    assert!(!addresses("a.dcpicat").is_empty());
    assert_eq!(addresses("b.dcpicat"), addresses("a.dcpicat"));
}
