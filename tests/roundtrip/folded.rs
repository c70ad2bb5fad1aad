//! Folded stacks: read(write(m)) == m for models restricted to what folded stacks express
//! (one process with pid 0, stacks without threads, frames interned in order of appearance,
//! comments without surrounding whitespace,
//! non-negative values, fractional ones included), and exact text round trips.

use cfghub::format::WriteOptions;
use cfghub::formats::folded::FORMAT as Folded;
use cfghub::ir::{power_of_ten, Event, Process, Profile, StackValue};
use proptest::prelude::*;

/// A value: its digits and its decimal places (`(25, 1)` is 2.5).
type Decimal = (StackValue, u8);

/// The model of `stacks`, each column with the decimal places its values need (as a reader
/// finds them).
fn model(events: Vec<String>, stacks: Vec<(Vec<String>, Vec<Decimal>)>, comments: Vec<String>) -> Profile {
    let width = events.len();
    let mut p = Profile { events: events.into_iter().map(Event::new).collect(), ..Profile::default() };
    p.meta.headers = comments.into_iter().map(|c| ("comment".to_string(), c)).collect();
    let shortest = |(mut digits, mut places): Decimal| {
        while places > 0 && digits % 10 == 0 {
            digits /= 10;
            places -= 1;
        }
        (digits, places)
    };
    let mut places = vec![0u8; width];
    for (_, values) in &stacks {
        for (c, &v) in values.iter().enumerate() {
            places[c] = places[c].max(shortest(v).1);
        }
    }
    let mut process = Process::default();
    process.stacks.widen(width);
    for (c, &d) in places.iter().enumerate() {
        process.stacks.set_decimals(c, d);
    }
    for (names, values) in stacks {
        let frames: Vec<u32> = names.iter().map(|n| p.frames.intern(n)).collect();
        let values: Vec<StackValue> = values
            .iter()
            .enumerate()
            .map(|(c, &v)| {
                let (digits, d) = shortest(v);
                digits * power_of_ten(places[c] - d)
            })
            .collect();
        process.stacks.push(&frames, None, &values);
    }
    p.processes.push(process);
    p
}

/// Frame names: anything but `;`, line breaks and surrounding whitespace; inner spaces and
/// trailing digits allowed (`main 7`).
fn frame() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z_][a-zA-Z0-9_:<>`+.\\[\\]{}()*&,-]{0,12}",
        "[a-z<]{1,6} [a-z0-9:>]{1,6}",
        "[a-z]{1,4} [0-9]{1,3}",
        Just(String::new()),
    ]
}

/// Counts of every size a profile holds exactly: whole, up to `u64::MAX`, and fractional.
fn value() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        (0u64..1_000_000).prop_map(|v| (StackValue::from(v), 0)),
        (0u64..=u64::MAX).prop_map(|v| (StackValue::from(v), 0)),
        (0u64..1_000_000_000_000, 0u8..10).prop_map(|(v, d)| (StackValue::from(v), d)),
        (0u32..100_000).prop_map(|v| (StackValue::from(v), 3)),
    ]
}

fn profile() -> impl Strategy<Value = Profile> {
    (1usize..4)
        .prop_flat_map(|nev| {
            let names = prop_oneof![
                Just(if nev == 1 {
                    vec!["samples".to_string()]
                } else {
                    (1..=nev).map(|i| format!("samples{i}")).collect()
                }),
                proptest::collection::vec("[a-zA-Z][a-zA-Z0-9_.-]{0,8}", nev).prop_filter("distinct", |v| {
                    let mut s = v.clone();
                    s.sort();
                    s.dedup();
                    s.len() == v.len()
                }),
            ];
            let stacks = proptest::collection::vec(
                (
                    proptest::collection::vec(frame(), 1..8)
                        .prop_filter("a lone empty frame is an empty line", |f| {
                            !(f.len() == 1 && f[0].is_empty())
                        }),
                    proptest::collection::vec(value(), nev),
                ),
                0..20,
            );
            let comments = proptest::collection::vec("[a-z]{1,6}: [a-z0-9.]{1,6}", 0..3);
            (names, stacks, comments)
        })
        .prop_map(|(names, stacks, comments)| model(names, stacks, comments))
}

fn write(p: &Profile) -> Vec<u8> {
    cfghub::convert::write_to_vec(&Folded, p, &WriteOptions::default()).unwrap().0
}

fn read(bytes: &[u8]) -> Profile {
    cfghub::convert::read_with(&Folded, &mut &bytes[..]).unwrap().0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn model_round_trips_exactly(p in profile()) {
        let text = write(&p);
        let back = read(&text);
        prop_assert_eq!(&back, &p, "{}", String::from_utf8_lossy(&text));
        // And the text is stable from then on.
        prop_assert_eq!(write(&back), text);
    }

    #[test]
    fn one_event_is_picked_by_name(p in profile()) {
        let last = p.events.last().unwrap().name.clone();
        let options = WriteOptions { event: Some(last.clone()), ..WriteOptions::default() };
        let text = cfghub::convert::write_to_vec(&Folded, &p, &options).unwrap().0;
        let back = read(&text);
        prop_assert_eq!(back.events, vec![Event::new(last)]);
        let col = p.events.len() - 1;
        let theirs: Vec<StackValue> = p.processes[0].stacks.samples().map(|s| s.values[col]).collect();
        let ours: Vec<StackValue> = back.processes[0].stacks.samples().map(|s| s.values[0]).collect();
        prop_assert_eq!(ours, theirs);
        prop_assert_eq!(back.processes[0].stacks.decimals_of(0), p.processes[0].stacks.decimals_of(col));
    }
}

#[test]
fn unknown_event_is_a_usage_error() {
    let p = model(vec!["samples".into()], vec![(vec!["a".into()], vec![(1, 0)])], vec![]);
    let options = WriteOptions { event: Some("cycles".into()), ..WriteOptions::default() };
    let err = cfghub::convert::write_to_vec(&Folded, &p, &options).unwrap_err();
    assert!(err.to_string().contains("no event 'cycles'"), "{err}");
}

#[test]
fn plain_single_event_output_has_no_header() {
    let p = model(vec!["samples".into()], vec![(vec!["a".into(), "b".into()], vec![(25, 1)])], vec![]);
    assert_eq!(write(&p), b"a;b 2.5\n");
}
