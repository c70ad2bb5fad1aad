//! Tables: every fixture of every format read, written as Parquet tables and read back gives
//! the same model, and the format's own writer gives the same bytes from either; generated
//! profiles survive too (proptest).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common;
use cfghub::convert::{load, save, write_to_vec};
use cfghub::ir::Profile;
use cfghub::registry::WriteOptions;
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

/// Equal models, or a panic that shows where they first differ (whole profiles are too long to
/// print).
fn assert_same(back: &Profile, original: &Profile, what: &str) {
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
            let direct = write_to_vec(loaded.format, &loaded.profile, &WriteOptions::default());
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
    fn generated_profiles_survive_tables(spec in spec(), stated in any::<bool>()) {
        let mut profile = generate(&spec).profile;
        if !stated {
            for image in profile.processes.iter_mut().flat_map(|p| &mut p.images) {
                image.routines = None;
            }
        }
        let dir = tempfile::tempdir().unwrap();
        prop_assert_eq!(through_tables(&profile, dir.path(), "p"), profile);
    }
}
