//! V8 CPU profiles, `.cpuprofile` files and Chrome traces alike: read(write(m)) keeps every
//! stack's sample count and time, under V8's root frame `(root)`, with each frame's file and
//! line; read(write(read(x))) is read(x). A `.cpuprofile` holds one thread: every process's
//! and thread's samples are compared together; a trace keeps processes and threads apart (its
//! threads numbered in order). Models count samples and time them in microseconds, count
//! them alone (each then lasts 1 ms in the file), or time them alone in nanoseconds; the file
//! names the model's events (its `cfghub` key), and they come back with their units.

use std::collections::BTreeMap;

use cfghub::error::Findings;
use cfghub::format::{Format, ReadOptions, WriteOptions};
use cfghub::formats::{chrome_trace, cpuprofile};
use cfghub::ir::{Event, FrameSource, Process, Profile, StackValue, Stacks, EVENT_UNIT_KEY};
use proptest::prelude::*;

/// What a model's samples measure.
#[derive(Debug, Clone, Copy)]
enum Measures {
    CountAndMicroseconds,
    Count,
    Nanoseconds,
}

/// A sample: its frames (indices into the names), count, microseconds and thread.
type SampleSpec = (Vec<usize>, u64, u64, Option<u32>);

#[derive(Debug, Clone)]
struct Spec {
    measures: Measures,
    names: Vec<String>,
    sources: Vec<(Option<String>, Option<u32>)>,
    /// Per process, its samples.
    processes: Vec<Vec<SampleSpec>>,
}

fn model(spec: &Spec) -> Profile {
    let mut p = Profile::default();
    let (count, time) = match spec.measures {
        Measures::CountAndMicroseconds => (true, Some("microseconds")),
        Measures::Count => (true, None),
        Measures::Nanoseconds => (false, Some("nanoseconds")),
    };
    if count {
        p.events.push(Event::new("samples"));
    }
    if let Some(unit) = time {
        p.events.push(Event::new("cpu"));
        p.meta.headers.push((EVENT_UNIT_KEY.into(), format!("cpu {unit}")));
    }
    for (name, (file, line)) in spec.names.iter().zip(&spec.sources) {
        p.frames.intern(name);
        let file = file.as_ref().map(|f| p.files.intern(f));
        p.frame_sources.push(FrameSource { file, line: *line, ..FrameSource::default() });
    }
    for (n, samples) in spec.processes.iter().enumerate() {
        let mut stacks = Stacks::default();
        for (frames, c, us, thread) in samples {
            let frames: Vec<u32> = frames.iter().map(|&f| f as u32).collect();
            let mut values: Vec<StackValue> = Vec::new();
            if count {
                values.push(StackValue::from(*c));
            }
            match spec.measures {
                Measures::CountAndMicroseconds => values.push(StackValue::from(*us)),
                Measures::Nanoseconds => values.push(StackValue::from(*us) * 1000),
                Measures::Count => {}
            }
            stacks.push(&frames, *thread, &values);
        }
        p.processes.push(Process { pid: 100 + n as u64, stacks, ..Process::default() });
    }
    p
}

/// The values the model says each stack has, per event, keyed as `key` places a sample
/// (process, thread), frames under `(root)`.
fn expected(spec: &Spec, key: impl Fn(usize, Option<u32>) -> (u64, u32)) -> Sums {
    let mut out = Sums::new();
    for (p, samples) in spec.processes.iter().enumerate() {
        for (frames, c, us, thread) in samples {
            let mut names = vec!["(root)".to_string()];
            names.extend(frames.iter().map(|&f| spec.names[f].clone()));
            let values: Vec<StackValue> = match spec.measures {
                Measures::CountAndMicroseconds => vec![(*c).into(), (*us).into()],
                Measures::Count => vec![(*c).into()],
                Measures::Nanoseconds => vec![StackValue::from(*us) * 1000],
            };
            let e = out.entry((key(p, *thread), names)).or_insert_with(|| vec![0; values.len()]);
            for (slot, v) in e.iter_mut().zip(values) {
                *slot += v;
            }
        }
    }
    out
}

type Sums = BTreeMap<((u64, u32), Vec<String>), Vec<StackValue>>;

/// The events a profile read back has, by name and unit: the model's own, as the file's
/// `cfghub` key names them.
fn events(spec: &Spec) -> Vec<(String, Option<String>)> {
    let unit = |u: &str| Some(u.to_string());
    match spec.measures {
        Measures::CountAndMicroseconds => {
            vec![("samples".into(), None), ("cpu".into(), unit("microseconds"))]
        }
        Measures::Count => vec![("samples".into(), None)],
        Measures::Nanoseconds => vec![("cpu".into(), unit("nanoseconds"))],
    }
}

fn events_of(p: &Profile) -> Vec<(String, Option<String>)> {
    p.events
        .iter()
        .map(|e| (e.name.clone(), cfghub::ir::event_unit(&p.meta, &e.name).map(str::to_string)))
        .collect()
}

/// Values per (process, thread in order, frames) of a profile read back.
fn sums(p: &Profile, merged: bool) -> Sums {
    let mut out = Sums::new();
    for process in &p.processes {
        for s in &process.stacks.listed() {
            let names = s.frames.iter().map(|&f| p.frames.get(f).to_string()).collect();
            let place = if merged { (0, 0) } else { (process.pid, s.thread.unwrap()) };
            let e = out.entry((place, names)).or_insert_with(|| vec![0; s.values.len()]);
            for (slot, v) in e.iter_mut().zip(&s.values) {
                *slot += v;
            }
        }
    }
    out
}

/// Every sample with its names, in order, and the file and line of every frame name: what
/// reading a file says, however frames are numbered.
type View =
    (Vec<(u64, Option<u32>, Vec<String>, Vec<StackValue>)>, BTreeMap<String, (Option<String>, Option<u32>)>);

fn view(p: &Profile) -> View {
    let mut samples = Vec::new();
    let mut sources = BTreeMap::new();
    for process in &p.processes {
        for s in &process.stacks.listed() {
            let names = s.frames.iter().map(|&f| p.frames.get(f).to_string()).collect();
            samples.push((process.pid, s.thread, names, s.values.clone()));
            for &f in &s.frames {
                let src = p.frame_source(f).cloned().unwrap_or_default();
                sources.insert(
                    p.frames.get(f).to_string(),
                    (src.file.map(|x| p.file_name(x).to_string()), src.line),
                );
            }
        }
    }
    (samples, sources)
}

fn write(format: &Format, p: &Profile) -> (Vec<u8>, Findings) {
    let mut out = Vec::new();
    let mut findings = Findings::default();
    format.write(p, &mut out, &WriteOptions::default(), &mut findings).expect("writes");
    (out, findings)
}

fn read(format: &Format, bytes: &[u8]) -> Profile {
    let mut findings = Findings::default();
    format.read(&mut &bytes[..], &ReadOptions::default(), &mut findings).expect("reads back")
}

fn spec() -> impl Strategy<Value = Spec> {
    let measures =
        prop_oneof![Just(Measures::CountAndMicroseconds), Just(Measures::Count), Just(Measures::Nanoseconds)];
    (measures, 1usize..8)
        .prop_flat_map(|(measures, nframes)| {
            let names = proptest::collection::btree_set("[a-zA-Z_][a-zA-Z0-9_.<>() ]{0,10}", nframes)
                .prop_map(|s| s.into_iter().filter(|n| n != "(root)").collect::<Vec<_>>())
                .prop_filter("a frame", |n| !n.is_empty());
            let sources = proptest::collection::vec(
                (proptest::option::of("file:///[a-z]{1,6}\\.js"), proptest::option::of(1u32..5000)),
                nframes,
            );
            (Just(measures), names, sources)
        })
        .prop_flat_map(|(measures, names, sources)| {
            let sample = (
                proptest::collection::vec(0..names.len(), 1..6),
                1u64..4,
                0u64..5_000_000,
                proptest::option::of(0u32..3),
            );
            let processes = proptest::collection::vec(proptest::collection::vec(sample, 1..8), 1..3);
            (Just(measures), Just(names), Just(sources), processes)
        })
        .prop_map(|(measures, names, sources, processes)| Spec { measures, names, sources, processes })
}

/// The file and line of each frame the spec uses (the first source of a name wins).
fn expected_sources(spec: &Spec) -> BTreeMap<String, (Option<String>, Option<u32>)> {
    let mut out = BTreeMap::new();
    for samples in &spec.processes {
        for (frames, ..) in samples {
            for &f in frames {
                out.insert(spec.names[f].clone(), spec.sources[f].clone());
            }
        }
    }
    out.insert("(root)".to_string(), (None, None));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cpuprofile_keeps_counts_times_and_sources(spec in spec()) {
        let m = model(&spec);
        let (bytes, findings) = write(&cpuprofile::FORMAT, &m);
        let back = read(&cpuprofile::FORMAT, &bytes);
        prop_assert_eq!(events_of(&back), events(&spec));
        prop_assert_eq!(sums(&back, true), expected(&spec, |_, _| (0, 0)));
        prop_assert_eq!(view(&back).1, expected_sources(&spec));
        let threads: std::collections::BTreeSet<_> = spec.processes.iter().enumerate()
            .flat_map(|(p, s)| s.iter().map(move |x| (p, x.3))).collect();
        let merged = findings.details().any(|w| w.to_string().contains("written as one thread"));
        prop_assert_eq!(merged, threads.len() > 1);
        let again = read(&cpuprofile::FORMAT, &write(&cpuprofile::FORMAT, &back).0);
        prop_assert_eq!(view(&again), view(&back));
    }

    #[test]
    fn chrome_trace_keeps_processes_threads_counts_times_and_sources(spec in spec()) {
        let m = model(&spec);
        let (bytes, _) = write(&chrome_trace::FORMAT, &m);
        let back = read(&chrome_trace::FORMAT, &bytes);
        // Threads numbered in order within their process, a sample of no thread on thread 0.
        let order: Vec<Vec<Option<u32>>> = spec.processes.iter().map(|s| {
            let mut t: Vec<Option<u32>> = s.iter().map(|x| x.3.or(Some(0))).collect();
            t.sort();
            t.dedup();
            t
        }).collect();
        let key = |p: usize, t: Option<u32>| {
            (100 + p as u64, order[p].iter().position(|&x| x == t.or(Some(0))).unwrap() as u32)
        };
        prop_assert_eq!(events_of(&back), events(&spec));
        prop_assert_eq!(sums(&back, false), expected(&spec, key));
        prop_assert_eq!(view(&back).1, expected_sources(&spec));
        let again = read(&chrome_trace::FORMAT, &write(&chrome_trace::FORMAT, &back).0);
        prop_assert_eq!(view(&again), view(&back));
    }
}
