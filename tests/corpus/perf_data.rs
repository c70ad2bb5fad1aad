//! perf.data with branch stacks, recorded by others (fixtures/perf-data, see fixtures/README.md):
//! the branch records cfghub adds up are those `perf script -F pid,brstack` prints, added up
//! independently (tests/perf_brstack_aggregate.py), and they become the binary's blocks and
//! edges with its functions named from perf's build-id cache.

use std::process::Command;

use cfghub::error::Findings;
use cfghub::formats::perf::data::{layout, records};

use crate::common;

const RECORDING: &str = "perf-data/propeller_sample_1.perf.data";

#[test]
fn branch_records_add_up_as_perf_script_prints_them() {
    if !common::clients(&["perf", "python3"]) {
        return;
    }
    let path = common::fixture(RECORDING);
    let bytes = std::fs::read(&path).unwrap();
    let frame = layout::check(&bytes).unwrap();
    let rec =
        records::replay(&bytes, cfghub::mem::PageReleaser::none(), &frame, &mut Findings::default()).unwrap();
    let mut ours = Vec::new();
    for (pid, totals) in &rec.branches {
        for (&(from, to), &(count, mispredicted)) in &totals.taken {
            ours.push(format!("B {pid} {from:x} {to:x} {count} {mispredicted}"));
        }
        for (&(start, end), &count) in &totals.ranges {
            ours.push(format!("F {pid} {start:x} {end:x} {count}"));
        }
    }
    ours.sort();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perf_brstack_aggregate.py");
    let o = Command::new("python3").arg(script).arg(&path).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect();
    assert!(theirs.len() > 20, "{theirs:?}");
    assert_eq!(ours, theirs);
}

#[test]
fn branch_records_become_the_binarys_blocks_and_edges() {
    // perf's build-id cache, holding the recorded binary under its build id.
    let cache = tempfile::tempdir().unwrap();
    let slot = cache.path().join(".build-id/57/2ac72487ae1966");
    std::fs::create_dir_all(&slot).unwrap();
    std::fs::copy(common::fixture("perf-data/propeller_sample_1.bin"), slot.join("elf")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cfghub"))
        .args(["dot", "--routine", "compute_flag", "-o", "-"])
        .arg(common::fixture(RECORDING))
        .env("PERF_BUILDID_DIR", cache.path())
        .output()
        .unwrap();
    let dot = common::stdout(&o);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(dot.contains("compute_flag") && dot.contains("fall-through"), "{dot}");
    assert!(dot.matches("->").count() >= 4, "{dot}");
}

/// `--symbols` of the binary names what perf's build-id cache names: the binary is linked by
/// lld, whose text lies a page above its file offset, so file offsets are mapped through the
/// segments, not taken for addresses.
#[test]
fn the_binary_named_with_symbols_places_addresses_as_the_build_id_cache_does() {
    let cache = tempfile::tempdir().unwrap();
    let slot = cache.path().join(".build-id/57/2ac72487ae1966");
    std::fs::create_dir_all(&slot).unwrap();
    let binary = common::fixture("perf-data/propeller_sample_1.bin");
    std::fs::copy(&binary, slot.join("elf")).unwrap();
    let fdata = |cache: &std::path::Path, extra: &[&std::path::Path]| {
        let o = Command::new(env!("CARGO_BIN_EXE_cfghub"))
            .args(["convert", "-q", "--to", "fdata", "-o", "-"])
            .args(extra.iter().flat_map(|p| [std::path::Path::new("--symbols"), p]))
            .arg(common::fixture(RECORDING))
            .env("PERF_BUILDID_DIR", cache)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", common::stderr(&o));
        common::stdout(&o)
    };
    let from_cache = fdata(cache.path(), &[]);
    assert!(from_cache.contains("1 compute_flag 13 1 compute_flag 29 1 130\n"), "{from_cache}");
    let named = fdata(std::path::Path::new("/nonexistent"), &[&binary]);
    assert_eq!(named, from_cache);
}

/// The `edge kind` table of `cfghub info`.
fn edge_table(args: &[&str], file: &std::path::Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_cfghub"))
        .arg("info")
        .args(args)
        .arg(file)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    let table: Vec<&str> =
        text.lines().skip_while(|l| !l.contains("edge kind")).take_while(|l| !l.trim().is_empty()).collect();
    table.join("\n")
}

#[test]
fn brstack_text_gives_the_edges_of_the_perf_data_file() {
    if !common::clients(&["perf"]) {
        return;
    }
    let path = common::fixture(RECORDING);
    let o = Command::new("perf").args(["script", "-F", "pid,brstack", "-i"]).arg(&path).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("brstack.perf.txt");
    std::fs::write(&text, &o.stdout).unwrap();
    let direct = edge_table(&[], &path);
    assert!(direct.contains("CONDITIONAL_BRANCH") && direct.contains("FALL_THROUGH"), "{direct}");
    assert_eq!(direct, edge_table(&["--from", "perf"], &text));
}

/// A stack of a process: pid, thread, frame names root first, values.
type StackByName = (u64, Option<u32>, Vec<String>, Vec<i128>);

/// A reading for stacks alone (folded stacks, flame graphs) has the processes, stacks,
/// events and headers of a full reading, and no images.
#[test]
fn a_reading_for_stacks_alone_has_the_stacks_of_a_full_one_without_images() {
    use cfghub::formats::perf::data;
    let bytes = std::fs::read(common::fixture("perf-data/hot-small.perf.data")).unwrap();
    let needs = |name: &str| cfghub::registry::by_name(name).unwrap().needs;
    let alone = data::Reading::serving(needs("folded"), data::Options::default());
    assert!(
        !alone.images
            && !alone.source_lines
            && !data::Reading::serving(needs("svg"), Default::default()).images
    );
    assert!(data::Reading::serving(needs("callgrind"), Default::default()).images);
    let full = data::Reading { images: true, ..alone.clone() };
    let read = |options: &data::Reading| data::read_with(&bytes, options, &mut Findings::default()).unwrap();
    let (full, alone) = (read(&full), read(&alone));
    let stacks = |p: &cfghub::Profile| -> Vec<StackByName> {
        p.processes
            .iter()
            .flat_map(|process| {
                process.stacks.listed().into_iter().map(move |s| {
                    let names = s.frames.iter().map(|&f| p.frames.get(f).to_string()).collect();
                    (process.pid, s.thread, names, s.values.to_vec())
                })
            })
            .collect()
    };
    assert!(!stacks(&full).is_empty());
    assert_eq!(stacks(&alone), stacks(&full));
    let pids = |p: &cfghub::Profile| p.processes.iter().map(|p| p.pid).collect::<Vec<_>>();
    assert_eq!(pids(&alone), pids(&full));
    assert_eq!(alone.meta.headers, full.meta.headers);
    assert_eq!(alone.events.len(), full.events.len());
    assert!(full.processes.iter().any(|p| !p.images.is_empty()));
    assert!(alone.processes.iter().all(|p| p.images.is_empty()));
}

/// Where no stack is left, a reading for stacks alone reads the records again for the
/// images (stack writers make their stacks from them): it gives what a full reading gives,
/// its findings once.
#[test]
fn a_reading_for_stacks_alone_that_leaves_no_stack_is_a_full_one() {
    use cfghub::formats::perf::data;
    let bytes = std::fs::read(common::fixture("perf-data/no-samples.perf.data")).unwrap();
    let folded = cfghub::registry::by_name("folded").unwrap().needs;
    let alone = data::Reading::serving(folded, data::Options::default());
    let full = data::Reading { images: true, ..alone.clone() };
    let read = |options: &data::Reading| {
        let mut findings = Findings::default();
        let profile = data::read_with(&bytes, options, &mut findings).unwrap();
        (format!("{:?}", profile.processes), profile.meta.headers, profile.events.len(), findings.items.len())
    };
    let (full, alone) = (read(&full), read(&alone));
    assert!(!full.1.is_empty(), "the recording's header features");
    assert_eq!(alone, full);
}

/// The fdata of the recording's branch stacks, as `perf2bolt-19 -aggregate-only` writes it
/// (its output, kept here so that the check runs where BOLT is not installed;
/// tests/real_clients/bolt.rs runs perf2bolt itself): fall-throughs of conditional branches
/// to the next instruction, from a block's last instruction into a jump target, counted as
/// the traces state them; the interrupt in the recording left out.
#[test]
fn branch_stacks_give_the_fdata_perf2bolt_writes() {
    let o = Command::new(env!("CARGO_BIN_EXE_cfghub"))
        .args(["convert", "-q", "--to", "fdata", "-o", "-", "--symbols"])
        .arg(common::fixture("perf-data/propeller_sample_1.bin"))
        .arg(common::fixture(RECORDING))
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let mut ours: Vec<String> = common::stdout(&o).lines().map(str::to_string).collect();
    ours.sort();
    let perf2bolt = [
        "1 compute_flag 13 1 compute_flag 19 0 102",
        "1 compute_flag 13 1 compute_flag 29 1 130",
        "1 compute_flag 24 1 compute_flag 31 0 104",
        "1 compute_flag 29 1 compute_flag 31 0 130",
        "1 main 106 1 main 140 0 232",
        "1 main 140 1 main 145 0 235",
        "1 main 14e 1 main 37 0 235",
        "1 main 3e 1 main 44 0 233",
        "1 main 47 1 compute_flag 0 0 240",
        "1 main 62 1 main ba 0 234",
        "1 main be 1 main c4 0 87",
        "1 main be 1 main f2 0 141",
        "1 main ed 1 main f2 0 87",
    ];
    assert_eq!(ours, perf2bolt);
}
