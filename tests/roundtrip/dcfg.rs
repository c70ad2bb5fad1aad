//! DCFG: read -> write -> read gives an equal model, on real and generated files, plain and
//! compressed, compact and pretty.

use crate::common;
use cfghub::convert::{read_with, write_to_vec};
use cfghub::format::WriteOptions;
use cfghub::formats::dcfg::FORMAT as Dcfg;
use cfghub::ir::{Cost, Event, Profile};
use cfghub::synth::{generate, SynthSpec};
use proptest::prelude::*;

fn round_trip(profile: &Profile, pretty: bool) -> Profile {
    let (bytes, findings) = write_to_vec(
        &Dcfg,
        profile,
        &WriteOptions::default().with(cfghub::formats::dcfg::Options { pretty, ..Default::default() }),
    )
    .unwrap();
    assert!(findings.items.is_empty(), "{:?}", findings.items);
    let (back, findings) = read_with(&Dcfg, &mut bytes.as_slice()).unwrap();
    assert!(!findings.has_violations(), "{:?}", findings.items);
    back
}

#[test]
fn every_dcfg_fixture_survives_write_and_read() {
    let mut paths =
        vec![common::fixture("dcfg/hello-world.dcfg.json"), common::fixture("dcfg/two-processes.dcfg.json")];
    paths.extend(common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2"));
    for path in paths {
        let first = cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap().profile;
        for pretty in [false, true] {
            assert_eq!(round_trip(&first, pretty), first, "{} (pretty: {pretty})", path.display());
        }
    }
}

#[test]
fn compressed_outputs_read_back_equal() {
    let Some(path) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let dir = tempfile::tempdir().unwrap();
    let original = cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    for name in ["out.dcfg.json.bz2", "out.dcfg.json.gz", "out.dcfg.json"] {
        let out = dir.path().join(name);
        let o = common::run(&["convert", path.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let back = cfghub::convert::load(out.to_str().unwrap(), None, &Default::default()).unwrap();
        assert_eq!(back.profile, original, "{name}");
    }
}

#[test]
fn costs_survive_in_the_extension_tables() {
    let mut profile = generate(&SynthSpec { steps_per_thread: 500, ..SynthSpec::default() }).profile;
    profile.events = vec![
        Event::new("cycles"),
        Event { name: "imiss".into(), description: Some("I-cache misses".into()) },
    ];
    let image = &mut profile.processes[0].images[0];
    let offsets: Vec<u64> = image.blocks.iter().map(|b| b.offset).take(5).collect();
    for (i, offset) in offsets.into_iter().enumerate() {
        image.costs.push(Cost {
            offset: Some(offset),
            values: vec![i as u64 * 10, 1].into(),
            ..Cost::default()
        });
    }
    assert_eq!(round_trip(&profile, false), profile);
}

fn spec() -> impl Strategy<Value = SynthSpec> {
    (any::<u64>(), 1usize..4, 1usize..6, 3usize..14, 1usize..4, 1u64..3000).prop_map(
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
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// read(write(m)) == m for generated models: every field the model holds, DCFG expresses.
    #[test]
    fn generated_models_round_trip(spec in spec(), pretty in any::<bool>(), huge_ids in any::<bool>()) {
        let mut profile = generate(&spec).profile;
        if huge_ids {
            // 64-bit ids, as some producers write, must survive exactly.
            for image in &mut profile.processes[0].images {
                for b in &mut image.blocks { b.id += 1 << 60; }
            }
            for e in &mut profile.processes[0].edges { e.id += (1 << 62) + 7; }
        }
        prop_assert_eq!(round_trip(&profile, pretty), profile);
    }
}
