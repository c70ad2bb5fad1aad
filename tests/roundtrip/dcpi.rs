//! DCPI binary profiles: files written by an independent writer (tests/dcpi_make_fixture.py,
//! Python `struct`) read exactly as that writer says, and binary -> model -> binary is
//! byte-identical; generated models survive write -> read.

use std::path::Path;
use std::process::Command;

use crate::common;
use cfghub::error::Findings;
use cfghub::formats::dcpi::{read::from_bytes, write::to_bytes, FORMAT as Dcpi};
use cfghub::ir::{Cost, Event, Image, Meta, Process, Profile};
use proptest::prelude::*;
use serde_json::Value;

const CASES: [&str; 4] = ["alpha-cycles", "v006-imiss", "x86-step1", "empty"];

fn read(bytes: &[u8], step: u64) -> Profile {
    let mut findings = Findings::default();
    let p = from_bytes(bytes, step, &mut findings).unwrap();
    assert!(findings.items.is_empty(), "{:?}", findings.items);
    p
}

fn check_against_expected(name: &str, bytes: &[u8], expected: &Value) {
    let step = expected["step"].as_u64().unwrap();
    let p = read(bytes, step);
    let headers: Vec<(String, String)> = expected["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| (kv[0].as_str().unwrap().to_string(), kv[1].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(p.meta.headers, headers, "{name}: header lines in order");
    let v = &expected["version"];
    assert_eq!(p.meta.format_version, Some((v[0].as_u64().unwrap(), v[1].as_u64().unwrap())), "{name}");
    assert_eq!(p.meta.address_step, Some(step), "{name}");
    assert_eq!(p.events, vec![Event::new(expected["event"].as_str().unwrap())], "{name}");
    assert_eq!(p.processes.len(), 1);
    let image = &p.processes[0].images[0];
    assert_eq!(image.load_addr, expected["tstart"].as_u64().unwrap(), "{name}: tstart");
    assert_eq!(image.size, expected["tsize"].as_u64(), "{name}: tsize");
    assert_eq!(
        image.file.map(|f| p.file_name(f).to_string()),
        expected["path"].as_str().map(String::from),
        "{name}"
    );
    let samples: Vec<(u64, u64)> = expected["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s[0].as_u64().unwrap(), s[1].as_u64().unwrap()))
        .collect();
    let got: Vec<(u64, u64)> = image.costs.iter().map(|c| (c.offset.unwrap(), c.value(0))).collect();
    assert_eq!(got, samples, "{name}: every slot");
    assert!(image.costs.iter().all(|c| c.values.len() == 1 && c.symbol.is_none() && c.line.is_none()));
    let mut findings = Findings::default();
    let again = to_bytes(&p, None, &mut findings).unwrap();
    assert_eq!(again, bytes, "{name}: binary -> model -> binary is byte-identical");
}

#[test]
fn committed_fixtures_read_exactly_and_write_back_byte_identical() {
    for name in CASES {
        let bytes = std::fs::read(common::fixture(&format!("dcpi/{name}.dcpi"))).unwrap();
        let expected: Value = serde_json::from_slice(
            &std::fs::read(common::fixture(&format!("dcpi/{name}.dcpi.expected/model.json"))).unwrap(),
        )
        .unwrap();
        check_against_expected(name, &bytes, &expected);
    }
}

#[test]
fn the_python_writer_still_makes_the_committed_fixtures() {
    common::require("python3");
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dcpi_make_fixture.py");
    let o = Command::new("python3").arg(&script).arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in CASES {
        for file in [format!("{name}.dcpi"), format!("{name}.dcpi.expected/model.json")] {
            let made = std::fs::read(dir.path().join(&file)).unwrap();
            let committed = std::fs::read(common::fixture(&format!("dcpi/{file}"))).unwrap();
            assert_eq!(
                made, committed,
                "{file}: regenerate with python3 tests/dcpi_make_fixture.py fixtures/dcpi"
            );
        }
    }
}

#[test]
fn the_cli_copies_a_profile_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (name, step) in [("alpha-cycles", "4"), ("x86-step1", "1")] {
        let input = common::fixture(&format!("dcpi/{name}.dcpi"));
        let out = dir.path().join(format!("{name}.dcpi"));
        let o = common::run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--address-step",
            step,
            "-q",
        ]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap(), "{name}");
    }
}

#[test]
fn binary_to_dcpicat_and_back_keeps_every_slot_and_line() {
    for name in ["alpha-cycles", "v006-imiss"] {
        let bytes = std::fs::read(common::fixture(&format!("dcpi/{name}.dcpi"))).unwrap();
        let first = read(&bytes, 4);
        let (text, _) =
            cfghub::convert::write_to_vec(&cfghub::formats::dcpicat::FORMAT, &first, &Default::default())
                .unwrap();
        let (second, _) =
            cfghub::convert::read_with(&cfghub::formats::dcpicat::FORMAT, &mut text.as_slice()).unwrap();
        let a = &first.processes[0].images[0];
        let b = &second.processes[0].images[0];
        assert_eq!((a.load_addr, a.size), (b.load_addr, b.size), "{name}");
        assert_eq!(a.costs, b.costs, "{name}");
        // Unknown header lines travel through the dump.
        for (k, v) in &first.meta.headers {
            if !["version", "event", "period", "tstart", "tsize"].contains(&k.as_str()) {
                assert!(second.meta.headers.contains(&(k.clone(), v.clone())), "{name}: {k} {v}");
            }
        }
        let mut second = second;
        second.meta.address_step = Some(4);
        let mut findings = Findings::default();
        let back = read(&to_bytes(&second, None, &mut findings).unwrap(), 4);
        assert_eq!(back.processes[0].images[0].costs, a.costs, "{name}");
    }
}

fn arb_profile() -> impl Strategy<Value = (Profile, u64)> {
    (
        prop::sample::select(vec![1u64, 2, 4, 8]),
        prop::collection::btree_map(0u32..5000, any::<u32>(), 0..200),
        0u64..1 << 40,
        any::<bool>(),
        prop::sample::select(vec!["cycles", "imiss", "retires^!taken", "dmiss"]),
        prop::collection::vec(("[a-z][a-z0-9_]{0,8}", "[!-~][ -~]{0,20}"), 0..4),
        (0u64..10, 6u64..8),
    )
        .prop_map(|(step, slots, tstart, with_path, event, unknown, version)| {
            let mut headers = vec![
                ("version".to_string(), format!("pdb-0.{:02}", version.1)),
                ("image".into(), "19970328081403c0c18b".into()),
            ];
            let mut profile = Profile::default();
            let mut file = None;
            if with_path {
                headers.push(("path".into(), "/usr/bin/app".into()));
                file = Some(profile.files.intern("/usr/bin/app"));
            }
            headers.extend([
                ("epoch".into(), "199805191724".into()),
                ("platform".into(), "walnut".into()),
                ("event".into(), event.to_string()),
                ("period".into(), "63488".into()),
                ("tstart".into(), format!("{tstart:x}")),
                ("tsize".into(), "8388608".into()),
                ("cpuspeed".into(), "500".into()),
            ]);
            for (k, v) in unknown {
                if ![
                    "version",
                    "image",
                    "epoch",
                    "platform",
                    "event",
                    "period",
                    "tstart",
                    "tsize",
                    "cpuspeed",
                    "path",
                    "samples",
                    "cpuamask",
                    "cpuimplv",
                    "cpucount",
                    "addressstep",
                ]
                .contains(&k.as_str())
                {
                    headers.push((k, v.trim_end().to_string()));
                }
            }
            headers.retain(|(_, v)| !v.is_empty());
            let costs = slots
                .into_iter()
                .map(|(slot, count)| Cost {
                    offset: Some(slot as u64 * step),
                    values: vec![count as u64].into(),
                    ..Cost::default()
                })
                .collect();
            profile.meta = Meta {
                format_version: Some((0, version.1)),
                headers,
                address_step: Some(step),
                ..Meta::default()
            };
            profile.events = vec![Event::new(event)];
            profile.processes = vec![Process {
                images: vec![Image {
                    file,
                    load_addr: tstart,
                    size: Some(8388608),
                    costs,
                    ..Image::default()
                }],
                ..Process::default()
            }];
            (profile, step)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_models_round_trip((profile, step) in arb_profile()) {
        let mut findings = Findings::default();
        let bytes = to_bytes(&profile, None, &mut findings).unwrap();
        let back = from_bytes(&bytes, step, &mut Findings::default()).unwrap();
        prop_assert_eq!(&back, &profile);
        let again = to_bytes(&back, None, &mut Findings::default()).unwrap();
        prop_assert_eq!(again, bytes);
    }
}

#[test]
fn the_format_is_sniffed_from_its_header() {
    let bytes = std::fs::read(common::fixture("dcpi/alpha-cycles.dcpi")).unwrap();
    assert!(Dcpi.sniff(&bytes));
    assert!(!Dcpi.sniff(b"version: 1\n"));
}

/// A profile of millions of slots is filled by several threads, a run of chunks each: every
/// slot still comes back at its place, and writing it again gives the same bytes.
#[test]
fn profiles_filled_in_parallel_runs_read_back_exactly() {
    let step = 4;
    let meta = Meta {
        format_version: Some((0, 7)),
        headers: vec![
            ("version".into(), "pdb-0.07".into()),
            ("image".into(), "19970328081403c0c18b".into()),
            ("event".into(), "cycles".into()),
            ("tstart".into(), "120000000".into()),
            ("tsize".into(), "ffffffff".into()),
        ],
        address_step: Some(step),
        ..Meta::default()
    };
    // 3 million slots in chunks of 997, 16 empty slots between chunks: several runs, none
    // ending at a chunk boundary that divides evenly.
    let costs = (0..3_000_000u64)
        .map(|i| Cost {
            offset: Some((i + i / 997 * 16) * step),
            values: vec![i * 7919 % 1000].into(),
            ..Cost::default()
        })
        .collect();
    let profile = Profile {
        meta,
        events: vec![Event::new("cycles")],
        processes: vec![Process {
            images: vec![Image {
                load_addr: 0x1200_0000,
                size: Some(0xffff_ffff),
                costs,
                ..Image::default()
            }],
            ..Process::default()
        }],
        ..Profile::default()
    };
    let bytes = to_bytes(&profile, None, &mut Findings::default()).unwrap();
    let back = read(&bytes, step);
    assert_eq!(back.processes[0].images[0].costs, profile.processes[0].images[0].costs);
    assert_eq!(to_bytes(&back, None, &mut Findings::default()).unwrap(), bytes);
}
