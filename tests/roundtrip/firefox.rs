//! The Firefox Profiler's processed format: read(write(m)) keeps every stack and weight of m,
//! for models of several processes, threads and events with integer weights (of either sign,
//! and above the format's 32-bit weights, which the writer splits), frames with their
//! function's file and first line. A stack's place may change (the format merges equal stacks
//! of a track), so stacks are compared as sums per (process, thread, frames, event).

use std::collections::BTreeMap;

use cfghub::error::Findings;
use cfghub::format::WriteOptions;
use cfghub::formats::firefox::FORMAT as Firefox;
use cfghub::ir::{Event, FrameSource, ListedStack, Process, Profile, StackValue, Stacks};
use proptest::prelude::*;

type StackSpec = (Vec<usize>, Vec<i64>, Option<u32>);

#[derive(Debug, Clone)]
struct Spec {
    events: Vec<String>,
    names: Vec<String>,
    sources: Vec<(Option<String>, Option<u32>)>,
    processes: Vec<Vec<StackSpec>>,
}

fn model(spec: &Spec) -> Profile {
    let mut p = Profile { events: spec.events.iter().map(Event::new).collect(), ..Profile::default() };
    for (name, (file, line)) in spec.names.iter().zip(&spec.sources) {
        p.frames.intern(name);
        let file = file.as_ref().map(|f| p.files.intern(f));
        p.frame_sources.push(FrameSource { file, line: *line, ..FrameSource::default() });
    }
    for (n, stacks) in spec.processes.iter().enumerate() {
        let mut listed = Stacks::default();
        for (frames, values, thread) in stacks {
            let frames: Vec<u32> = frames.iter().map(|&f| f as u32).collect();
            let values: Vec<StackValue> = values.iter().map(|&v| StackValue::from(v)).collect();
            listed.push(&frames, *thread, &values);
        }
        let stacks = listed;
        p.processes.push(Process { pid: 1000 + n as u64, stacks, ..Process::default() });
    }
    p
}

/// (pid, thread, frame names, event name) -> summed weight, zero sums left out.
fn sums(p: &Profile) -> BTreeMap<(u64, Option<u32>, Vec<String>, String), StackValue> {
    let mut out = BTreeMap::new();
    for process in &p.processes {
        for s in &process.stacks.listed() {
            let frames: Vec<String> = s.frames.iter().map(|&f| p.frames.get(f).to_string()).collect();
            for (e, &v) in s.values.iter().enumerate() {
                *out.entry((process.pid, s.thread, frames.clone(), p.events[e].name.clone())).or_insert(0) +=
                    v;
            }
        }
    }
    out.retain(|_, v| *v != 0);
    out
}

/// The function's file and line each frame name has.
fn sources(p: &Profile) -> BTreeMap<String, (Option<String>, Option<u32>)> {
    let mut out = BTreeMap::new();
    for process in &p.processes {
        for s in &process.stacks.listed() {
            for &f in &s.frames {
                let src = p.frame_source(f).cloned().unwrap_or_default();
                let file = src.file.map(|x| p.file_name(x).to_string());
                out.insert(p.frames.get(f).to_string(), (file, src.line));
            }
        }
    }
    out
}

fn write(p: &Profile) -> (Vec<u8>, Findings) {
    let mut out = Vec::new();
    let mut findings = Findings::default();
    Firefox.write(p, &mut out, &WriteOptions::default(), &mut findings).expect("writes");
    (out, findings)
}

fn read(bytes: &[u8]) -> Profile {
    let mut findings = Findings::default();
    cfghub::formats::firefox::read_bytes(bytes, &mut findings).expect("reads back")
}

fn spec() -> impl Strategy<Value = Spec> {
    (1usize..3, 1usize..8)
        .prop_flat_map(|(nev, nframes)| {
            let events = proptest::collection::btree_set("[a-z][a-z_]{0,6}", nev)
                .prop_map(|s| s.into_iter().collect::<Vec<_>>());
            let names = proptest::collection::btree_set("[a-zA-Z_][a-zA-Z0-9_:<>() ]{0,10}", nframes)
                .prop_map(|s| s.into_iter().collect::<Vec<_>>());
            let sources = proptest::collection::vec(
                (proptest::option::of("/src/[a-z]{1,6}\\.c"), proptest::option::of(1u32..5000)),
                nframes,
            );
            (Just(nev), Just(nframes), events, names, sources)
        })
        .prop_flat_map(|(nev, nframes, events, names, sources)| {
            let nev = events.len().min(nev);
            let value = prop_oneof![8 => -1000i64..100_000, 1 => (1i64 << 31)..(1i64 << 34)];
            let stack = (
                proptest::collection::vec(0..names.len().min(nframes), 1..6),
                proptest::collection::vec(value, nev),
                proptest::option::of(0u32..3),
            );
            let processes = proptest::collection::vec(proptest::collection::vec(stack, 1..8), 1..3);
            (Just(events), Just(names), Just(sources), processes)
        })
        .prop_map(|(events, names, sources, processes)| Spec { events, names, sources, processes })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn stacks_and_weights_survive(spec in spec()) {
        let m = model(&spec);
        let (bytes, _) = write(&m);
        let back = read(&bytes);
        prop_assert_eq!(sums(&back), sums(&m));
        // Every function keeps its file and first line.
        let want = sources(&m);
        for (name, src) in sources(&back) {
            prop_assert_eq!(Some(&src), want.get(&name), "{}", name);
        }
        // And once more: what cfghub wrote and read, it writes and reads the same.
        let again = read(&write(&back).0);
        prop_assert_eq!(sums(&again), sums(&back));
    }
}

#[test]
fn tracks_keep_their_process_thread_and_event_whatever_order_the_file_has() {
    // pids 999 and 1000 sort one way as numbers and the other as text; threads of both have
    // the same names.
    let spec = Spec {
        events: vec!["a".into(), "b".into()],
        names: vec!["f".into(), "g".into()],
        sources: vec![(None, None); 2],
        processes: vec![
            vec![
                (vec![0], vec![1, 2], Some(0)),
                (vec![1], vec![3, 4], Some(1)),
                (vec![0, 1], vec![5, 6], None),
            ],
            vec![(vec![1], vec![7, 8], Some(0)), (vec![0], vec![9, 10], Some(2))],
        ],
    };
    let mut m = model(&spec);
    m.processes[1].pid = 999;
    let back = read(&write(&m).0);
    assert_eq!(sums(&back), sums(&m));
}

#[test]
fn weights_past_32_bits_are_split_exactly_and_said_so() {
    let spec = Spec {
        events: vec!["Ir".into()],
        names: vec!["main".into(), "work".into()],
        sources: vec![(None, None); 2],
        processes: vec![vec![(vec![0, 1], vec![5_000_000_000], None), (vec![0], vec![7], Some(1))]],
    };
    let m = model(&spec);
    let (bytes, findings) = write(&m);
    assert!(findings.warnings().any(|w| w.message.contains("split into 3 samples")), "{findings:?}");
    assert_eq!(sums(&read(&bytes)), sums(&m));
}

#[test]
fn weights_too_large_to_split_are_scaled_with_a_warning() {
    let many: Vec<StackSpec> = (0..3).map(|i| (vec![i % 2], vec![1i64 << 52], None)).collect();
    let spec = Spec {
        events: vec!["cycles".into()],
        names: vec!["a".into(), "b".into()],
        sources: vec![(None, None); 2],
        processes: vec![many],
    };
    let m = model(&spec);
    let (bytes, findings) = write(&m);
    assert!(findings.warnings().any(|w| w.message.contains("scaled down by")), "{findings:?}");
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\"cfghubScale\""));
    // Scaled weights are read back multiplied: within the rounding of one scale step.
    let back = sums(&read(&bytes));
    for (k, v) in sums(&m) {
        let got = back[&k];
        assert!((got - v).abs() as f64 / v as f64 <= 1e-6, "{k:?}: {got} vs {v}");
    }
}

#[test]
fn frames_named_by_their_address_are_written_as_addresses_in_their_library() {
    use cfghub::ir::{FrameAddress, Image};
    // An unsymbolized Go location: runtime address 0x401234 in /bin/app, mapped at 0x400000
    // from file offset 0; a named frame has no address to write.
    let mut m = Profile { events: vec![Event::new("samples")], ..Profile::default() };
    let file = m.files.intern("/bin/app");
    let main = m.frames.intern("main");
    let unnamed = m.frames.intern("0x401234");
    m.frame_sources = vec![
        FrameSource::default(),
        FrameSource {
            address: Some(FrameAddress { image: Some(0), address: 0x401234 }),
            ..FrameSource::default()
        },
    ];
    let image =
        Image { id: 1, file: Some(file), load_addr: 0x400000, size: Some(0x10000), ..Image::default() };
    m.processes.push(Process {
        pid: 7,
        images: vec![image],
        stacks: Stacks::from_listed([ListedStack {
            frames: vec![main, unnamed],
            values: vec![3],
            thread: None,
        }]),
        ..Process::default()
    });
    let (bytes, _) = write(&m);
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let t = &v["threads"][0];
    let strings = t["stringArray"].as_array().unwrap();
    let frames = &t["frameTable"];
    let funcs = &t["funcTable"];
    let row = |name: &str| {
        (0..frames["func"].as_array().unwrap().len())
            .find(|&i| {
                let func = frames["func"][i].as_u64().unwrap() as usize;
                strings[funcs["name"][func].as_u64().unwrap() as usize] == name
            })
            .unwrap_or_else(|| panic!("no frame {name}: {t}"))
    };
    let at = row("0x1234");
    assert_eq!(frames["address"][at], 0x1234);
    let resource =
        funcs["resource"][frames["func"][at].as_u64().unwrap() as usize].as_u64().unwrap() as usize;
    let lib = t["resourceTable"]["lib"][resource].as_u64().unwrap() as usize;
    assert_eq!(v["libs"][lib]["path"], "/bin/app");
    assert_eq!(frames["address"][row("main")], -1);
    // Read back, the frame is the library's address, as samply's unsymbolized frames are.
    let back = read(&bytes);
    let names: Vec<&str> =
        back.processes[0].stacks.listed()[0].frames.iter().map(|&f| back.frames.get(f)).collect();
    assert_eq!(names, ["main", "app+0x1234"]);
}

/// A thread's name is the `thread_name` label of its samples: the samply recording's thread
/// `burn` labels its samples so, the written track is named by it, and reading the written file
/// back gives the same labels.
#[test]
fn thread_names_are_labels_that_name_the_tracks_and_come_back() {
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/firefox/burn.samply.json.gz");
    let loaded = cfghub::convert::load(input, None, &Default::default()).unwrap();
    let names = |p: &Profile| -> Vec<String> {
        let mut v: Vec<String> = p
            .processes
            .iter()
            .flat_map(|p| {
                p.stacks.samples().flat_map(|s| s.labels.iter().map(|l| format!("{}={}", l.key, l.value)))
            })
            .collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(names(&loaded.profile), ["thread_name=burn"]);
    let (bytes, _) = write(&loaded.profile);
    let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let tracks: Vec<&str> =
        doc["threads"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tracks, ["burn"]);
    let back = read(&bytes);
    assert_eq!(names(&back), ["thread_name=burn"]);
    assert_eq!(sums(&back), sums(&loaded.profile));
}
