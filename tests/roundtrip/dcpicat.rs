//! dcpicat text dumps: read -> write -> read keeps the model, for generated models with
//! several events and for the dump printed in dcpicat(1).

use crate::common;
use cfghub::convert::{read_with, write_to_vec};
use cfghub::formats::dcpicat::FORMAT as Dcpicat;
use cfghub::ir::{Cost, Event, Image, Meta, Process, Profile};
use proptest::prelude::*;

fn round_trip(profile: &Profile) -> (Profile, Vec<u8>) {
    let (bytes, _) = write_to_vec(&Dcpicat, profile, &Default::default()).unwrap();
    let (back, findings) = read_with(&Dcpicat, &mut bytes.as_slice()).unwrap();
    assert!(findings.items.is_empty(), "{:?}", findings.items);
    (back, bytes)
}

#[test]
fn the_manual_page_dump_survives_write_and_read() {
    let Some(path) = common::shared_fixture("dcpi/dcpicat-example.txt") else { return };
    let first = cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    let (back, bytes) = round_trip(&first);
    assert_eq!(back, first);
    // Everything but the stated totals (the manual shows an excerpt) is reproduced verbatim.
    let original = std::fs::read_to_string(&path).unwrap();
    let written = String::from_utf8(bytes).unwrap();
    let differing: Vec<(&str, &str)> =
        original.lines().zip(written.lines()).filter(|(a, b)| a != b).collect();
    assert_eq!(
        differing,
        vec![
            ("event                470352 cycles:63488:10000", "event                47 cycles:63488:10000"),
            ("event                134705 imiss:4096:10000", "event                29 imiss:4096:10000"),
        ]
    );
    assert_eq!(original.lines().count(), written.lines().count());
}

fn arb_profile() -> impl Strategy<Value = Profile> {
    (
        prop::collection::vec(("[a-z][a-z^!]{0,10}", 1u64..100_000, 1u64..=10_000), 1..4),
        prop::collection::btree_map(0u64..1 << 24, prop::collection::vec(0u64..1 << 40, 3), 0..100),
        0u64..1 << 44,
        any::<bool>(),
    )
        .prop_map(|(events, rows, start, label)| {
            let mut seen = std::collections::BTreeSet::new();
            let events: Vec<_> = events.into_iter().filter(|e| seen.insert(e.0.clone())).collect();
            let n = events.len();
            let mut p = Profile::default();
            let file = p.files.intern("/usr/local/bin/xemacs");
            let mut headers: Vec<(String, String)> =
                vec![("name".into(), "xemacs".into()), ("image".into(), "19970328081403c0c18b".into())];
            if label {
                headers.push(("label".into(), "foo bar".into()));
            }
            headers.extend([
                ("path".into(), "/usr/local/bin/xemacs".into()),
                ("epoch".into(), "199805191724".into()),
                ("platform".into(), "walnut".into()),
            ]);
            for (name, period, z) in &events {
                headers.push(("event".into(), format!("{name}:{period}:{z}")));
            }
            p.meta = Meta { headers, ..Meta::default() };
            p.events = events.iter().map(|e| Event::new(e.0.clone())).collect();
            let costs = rows
                .into_iter()
                .map(|(o, v)| Cost { offset: Some(o), values: v[..n].into(), ..Cost::default() })
                .collect();
            p.processes = vec![Process {
                images: vec![Image {
                    file: Some(file),
                    load_addr: start,
                    size: Some(1 << 24),
                    costs,
                    ..Image::default()
                }],
                ..Process::default()
            }];
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_models_round_trip(profile in arb_profile()) {
        let (back, bytes) = round_trip(&profile);
        prop_assert_eq!(&back, &profile);
        let (_, again) = round_trip(&back);
        prop_assert_eq!(again, bytes);
    }
}
