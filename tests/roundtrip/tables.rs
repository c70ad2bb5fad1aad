//! Tables: every fixture of every format read, written as Parquet tables and read back gives
//! the same model, and the format's own writer gives the same bytes from either; generated
//! profiles survive too (proptest).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common;
use cfghub::convert::{load, save, write_to_vec};
use cfghub::format::WriteOptions;
use cfghub::ir::{InlineFrame, Inlined, Profile};
use cfghub::synth::{generate, SynthSpec};
use proptest::prelude::*;

/// Writes `profile` as tables into `dir/NAME.tables` and reads them back.
fn through_tables(profile: &Profile, dir: &Path, name: &str) -> Profile {
    let out = dir.join(format!("{name}.tables"));
    let out = out.to_str().unwrap();
    save(profile, out, None, &[], &WriteOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    load(out, None, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}")).profile
}

/// Inputs of every format: the project's fixtures and the real-world ones beside it, less the
/// expected outputs, sources and notes that sit beside them.
fn fixture_inputs() -> Vec<PathBuf> {
    let mut roots = vec![common::fixture("")];
    roots.extend(common::shared_fixture(""));
    let mut files = Vec::new();
    for root in roots {
        for dir in std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
            if dir.ends_with("fuzz") || dir.ends_with("symbols") {
                continue;
            }
            for path in std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
                let name = path.file_name().unwrap().to_str().unwrap().to_string();
                let skip =
                    [".expected", ".c", ".go", ".md", ".annotate.txt", ".info.txt", ".json", ".dot", ".orig"];
                if path.is_file() && !skip.iter().any(|s| name.ends_with(s)) && !name.contains("results__") {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    files
}

/// Stacks as the tables hold them: the samples of one path and thread are one, their values
/// added up (a recording of two events has a sample of each event's on one path), in the
/// order first met.
fn samples_added_up(stacks: &cfghub::ir::Stacks) -> cfghub::ir::Stacks {
    let mut out = cfghub::ir::Stacks::with_width(stacks.width());
    for column in 0..stacks.width() {
        if stacks.decimals_of(column) > 0 {
            out.set_decimals(column, stacks.decimals_of(column));
        }
    }
    type Key = (u32, Option<u32>, Vec<cfghub::ir::Label>);
    let mut order: Vec<Key> = Vec::new();
    let mut sums: std::collections::HashMap<Key, Vec<cfghub::ir::StackValue>> =
        std::collections::HashMap::new();
    for sample in stacks.samples() {
        let key = (sample.node, sample.thread, sample.labels.to_vec());
        let sum = sums.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            vec![0; stacks.width()]
        });
        for (s, v) in sum.iter_mut().zip(sample.values) {
            *s += v;
        }
    }
    for key in order {
        let node = out.path_node(&stacks.frames(key.0));
        let labels = out.label_set(key.2.clone());
        out.push_labelled_sample(node, key.1, labels, &sums[&key]);
    }
    out
}

/// The model as the tables hold it: routines the input states without dominators or loops
/// (Callgrind's, BOLT's) completed, as `info` shows them, and samples of one path and thread
/// added up.
fn completed(profile: &Profile) -> Profile {
    let mut profile = profile.clone();
    for process in &mut profile.processes {
        process.stacks = samples_added_up(&process.stacks);
        let derived: Vec<Vec<cfghub::ir::Routine>> =
            cfghub::analysis::routines::all(process).into_iter().map(|r| r.into_owned()).collect();
        for (image, routines) in process.images.iter_mut().zip(derived) {
            if image.routines.is_some() {
                image.routines = Some(routines);
            }
        }
    }
    profile
}

/// Equal models (the original's routines completed as the tables hold them), or a panic that
/// shows where they first differ (whole profiles are too long to print).
fn assert_same(back: &Profile, original: &Profile, what: &str) {
    let original = &completed(original);
    if back != original {
        let (a, b) = (format!("{back:?}"), format!("{original:?}"));
        let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
        let from = at.saturating_sub(300);
        panic!(
            "{what}: differs after tables\n read back: ...{}\n original:  ...{}",
            &a[from..(at + 200).min(a.len())],
            &b[from..(at + 200).min(b.len())]
        );
    }
}

#[test]
fn every_fixture_survives_tables_and_converts_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let mut formats = BTreeSet::new();
    for (n, path) in fixture_inputs().iter().enumerate() {
        let shown = path.display().to_string();
        let Ok(loaded) = load(path.to_str().unwrap(), None, &Default::default()) else { continue };
        let back = through_tables(&loaded.profile, dir.path(), &format!("f{n}"));
        assert_same(&back, &loaded.profile, &shown);
        formats.insert(loaded.format.name());
        if loaded.format.can_write() && !loaded.format.is_folder() {
            // The tables hold one sample per call path, thread and labels, its values added up
            // (docs/formats/tables.md): writers that write each sample in its time order (V8's
            // profiles, whose samples are a timeline) write the samples as added up.
            let timeline = ["cpuprofile", "chrome-trace"].contains(&loaded.format.name());
            let original = if timeline { completed(&loaded.profile) } else { loaded.profile.clone() };
            let direct = write_to_vec(loaded.format, &original, &WriteOptions::default());
            let via = write_to_vec(loaded.format, &back, &WriteOptions::default());
            match (direct, via) {
                (Ok((a, _)), Ok((b, _))) => {
                    assert!(a == b, "{shown}: {} output differs", loaded.format.name())
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{shown}"),
                (a, b) => panic!("{shown}: direct {:?} vs via tables {:?}", a.err(), b.err()),
            }
        }
    }
    let expected = ["callgrind", "csi", "dcfg", "dcpi", "dcpicat", "dtrace", "folded", "perf", "pprof"];
    for name in expected {
        assert!(formats.contains(name), "no {name} fixture went through tables: {formats:?}");
    }
}

#[test]
fn a_dcfg_trace_replayed_survives_tables() {
    let trace = common::fixture("dcfg-trace/small.trace.json");
    let Ok(loaded) = load(trace.to_str().unwrap(), None, &Default::default()) else { return };
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(through_tables(&loaded.profile, dir.path(), "trace"), loaded.profile);
}

/// The inline chains `--symbols` finds in a `-O2` build (`fixtures/symbols/inlined.c`: `poly`
/// inlined into `work`) survive the tables, and the folded stacks made from either model agree.
#[test]
fn inline_frames_from_symbols_survive_tables() {
    if !common::clients(&["gcc", "nm"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(common::fixture("symbols/inlined.c"), dir.join("inlined.c")).unwrap();
    let o = std::process::Command::new("gcc")
        .args(["-g", "-O2", "-no-pie", "-o", "prog", "inlined.c"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
    let prog = dir.join("prog");
    let nm = std::process::Command::new("nm").arg(&prog).output().unwrap();
    let nm = String::from_utf8_lossy(&nm.stdout).into_owned();
    let address = |name: &str| {
        let line = nm.lines().find(|l| l.ends_with(&format!(" {name}"))).expect("the symbol");
        u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
    };
    // Samples in `work` (where `poly` is inlined) and in `fib`, as dcpicat prints them.
    let mut text = format!(
        "name                 prog\nimage                1\npath                 {}\nepoch                202611230000\n\
         platform             x86_64\ntext_start           0x000000400000\ntext_size            0x000000100000\n\
         event                15 cycles:63488:10000\n",
        prog.display()
    );
    for a in [address("work") + 0x20, address("work") + 0x24, address("fib") + 4] {
        text.push_str(&format!("{a:#014x}      5\n"));
    }
    let input = dir.join("samples.dcpicat");
    std::fs::write(&input, text).unwrap();

    let mut loaded = load(input.to_str().unwrap(), None, &Default::default()).unwrap();
    let options = cfghub::symbolize::Options { paths: vec![prog.clone()], ..Default::default() };
    let kind = loaded.format.address_kind();
    cfghub::symbolize::symbolize(&mut loaded.profile, kind, &options, &mut loaded.findings).unwrap();
    let frames: usize = loaded
        .profile
        .processes
        .iter()
        .flat_map(|p| &p.images)
        .flat_map(|i| &i.inlined)
        .map(|x| x.frames.len())
        .sum();
    assert!(frames > 0, "gcc -O2 inlined nothing the debug information states");

    let back = through_tables(&loaded.profile, dir, "inlined");
    assert_same(&back, &loaded.profile, "inline frames");
    let folded = *cfghub::registry::formats().iter().find(|f| f.name() == "folded").expect("folded");
    let (direct, _) = write_to_vec(folded, &loaded.profile, &WriteOptions::default()).unwrap();
    let (via, _) = write_to_vec(folded, &back, &WriteOptions::default()).unwrap();
    assert_eq!(String::from_utf8_lossy(&via), String::from_utf8_lossy(&direct));
    assert!(String::from_utf8_lossy(&via).contains("work;poly"), "{}", String::from_utf8_lossy(&via));
}

/// A profile bigger than a row group (at most 65,536 rows) and than a read batch (2,048 rows) in its
/// blocks, block counts, edges, edge counts and routine blocks: the rows written a group at a
/// time and read a batch at a time come back as they were, nulls included.
#[test]
fn tables_of_several_row_groups_survive() {
    let spec = SynthSpec {
        seed: 7,
        images: 1,
        routines_per_image: 8000,
        blocks_per_routine: 24,
        threads: 2,
        steps_per_thread: 4_000_000,
        ..SynthSpec::default()
    };
    let mut profile = generate(&spec).profile;
    add_inline_frames(&mut profile, 20_000);
    let blocks: usize = profile.processes.iter().flat_map(|p| &p.images).map(|i| i.blocks.len()).sum();
    let edges: usize = profile.processes.iter().map(|p| p.edges.len()).sum();
    assert!(blocks > 1 << 16 && edges > 1 << 16, "{blocks} blocks, {edges} edges");
    let dir = tempfile::tempdir().unwrap();
    assert_same(&through_tables(&profile, dir.path(), "big"), &profile, "several row groups");
}

/// Inline chains on the first blocks of each image: one name shared by many addresses, lines
/// with and without files.
fn add_inline_frames(profile: &mut Profile, per_image: usize) {
    for image in profile.processes.iter_mut().flat_map(|p| &mut p.images) {
        let mut offsets: Vec<u64> = image.blocks.iter().map(|b| b.offset).collect();
        offsets.sort_unstable();
        offsets.dedup();
        let names = &mut image.inline_names;
        image.inlined = offsets
            .into_iter()
            .take(per_image)
            .enumerate()
            .map(|(k, offset)| Inlined {
                offset,
                frames: (0..=k % 3)
                    .map(|depth| {
                        let name = match depth {
                            0 => names.intern("inlined_helper"),
                            _ => names.intern(&format!("outer{depth}")),
                        };
                        InlineFrame::new(name, None, (depth != 1).then_some(10 + depth as u32))
                    })
                    .collect(),
            })
            .collect();
    }
}

fn spec() -> impl Strategy<Value = SynthSpec> {
    (any::<u64>(), 1usize..3, 1usize..4, 3usize..10, 1usize..4, 1u64..500).prop_map(
        |(seed, images, routines, blocks, threads, steps)| SynthSpec {
            seed,
            images,
            routines_per_image: routines,
            blocks_per_routine: blocks,
            threads,
            steps_per_thread: steps,
            ..SynthSpec::default()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn generated_profiles_survive_tables(spec in spec(), stated in any::<bool>(), inlined in 0usize..6) {
        let mut profile = generate(&spec).profile;
        add_inline_frames(&mut profile, inlined);
        if !stated {
            for image in profile.processes.iter_mut().flat_map(|p| &mut p.images) {
                image.routines = None;
            }
        }
        let dir = tempfile::tempdir().unwrap();
        prop_assert_eq!(through_tables(&profile, dir.path(), "p"), profile);
    }
}

/// Stack values are exact integers in the tables (`BIGINT`, with the event's decimal places in
/// `events`): 2^63 - 1 and a sum of ten 0.1 come back as they were, labels of text and of
/// numbers with units come back on their samples, and a value past 2^63 - 1 is refused with
/// its event named rather than written rounded.
#[test]
fn exact_values_and_labels_survive_tables_and_a_value_past_bigint_is_refused() {
    use cfghub::ir::{Event, Label, LabelValue, Process, Stacks};
    let dir = tempfile::tempdir().unwrap();
    let mut profile = Profile {
        events: vec![
            Event { name: "samples".into(), description: None },
            Event { name: "ms".into(), description: None },
        ],
        ..Profile::default()
    };
    let (main, f) = (profile.frames.intern("main"), profile.frames.intern("f"));
    let mut stacks = Stacks::with_width(2);
    stacks.set_decimals(1, 1);
    let node = stacks.path_node(&[main, f]);
    let web = stacks.label_set(vec![
        Label::text("service", "web"),
        Label { key: "bytes".into(), value: LabelValue::Number(4096, Some("bytes".into())) },
    ]);
    stacks.push_labelled_sample(node, Some(3), web, &[i64::MAX as i128, 1]);
    for _ in 0..10 {
        stacks.push_labelled_sample(node, None, cfghub::ir::NO_INDEX, &[1, 1]);
    }
    profile.processes.push(Process { stacks, ..Process::default() });
    let back = through_tables(&profile, dir.path(), "exact");
    assert_same(&back, &profile, "exact values");
    let s = back.processes[0].stacks.sample(0);
    assert_eq!(s.values, &[i64::MAX as i128, 1]);
    assert_eq!(s.labels.len(), 2);
    let rest = back.processes[0].stacks.sample(1);
    assert_eq!((rest.values, back.processes[0].stacks.decimals_of(1)), (&[10, 10][..], 1), "ten 0.1 are 1.0");

    profile.processes[0].stacks.values_mut(0)[0] = i64::MAX as i128 + 1;
    let out = dir.path().join("past.tables");
    let err = save(&profile, out.to_str().unwrap(), None, &[], &WriteOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("event samples") && err.to_string().contains("9223372036854775808"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A merge of profiles of different sample types (a CPU and a heap profile, the heap's samples
/// labelled with their allocation sizes) converted to tables and back equals the merge.
#[test]
fn a_merge_survives_tables() {
    let dir = tempfile::tempdir().unwrap();
    let mut sum = cfghub::analysis::sum::ProfileSum::new();
    for f in ["pprof/burn.cpu.pb.gz", "pprof/allocs.heap.pb.gz", "folded/two-columns.folded"] {
        let path = common::fixture(f);
        sum.add(load(path.to_str().unwrap(), None, &Default::default()).unwrap().profile).unwrap();
    }
    let merged = sum.finish();
    assert!(merged.processes.iter().any(|p| p.stacks.has_labels()));
    let back = through_tables(&merged, dir.path(), "merged");
    assert_same(&back, &merged, "merge of three");
}
