//! LLVM sample profiles: what the model holds of one (top-level functions, their lines and
//! counts) reads back byte for byte once written, with TOTAL the sum of the lines and HEAD 0
//! as the writer makes them; any profile, discriminators, heads and inlined call sites
//! included, writes a file that reads back to itself, with each function's lines counting
//! what they counted (a line's discriminators added up, inlined functions' lines their own).

use std::collections::BTreeMap;

use cfghub::convert::{read_with, write_to_vec};
use cfghub::format::WriteOptions;
use cfghub::formats::llvm_sample::FORMAT;
use proptest::prelude::*;

const NAMES: [&str; 5] = ["main", "f", "_Z3fibl", "std::vector<int>::at", "g.cold"];

/// Functions: (name, lines (offset, discriminator, count), inlined (offset, callee, lines)).
type Function = (usize, Vec<(u32, u32, u64)>, Vec<(u32, usize, Vec<(u32, u64)>)>);

fn functions() -> impl Strategy<Value = Vec<Function>> {
    let line = (0u32..70, 0u32..3, 1u64..1_000_000);
    let inlined = (0u32..70, 0usize..NAMES.len(), proptest::collection::vec((0u32..70, 1u64..1000), 1..4));
    proptest::collection::vec(
        (
            0usize..NAMES.len(),
            proptest::collection::vec(line, 1..8),
            proptest::collection::vec(inlined, 0..3),
        ),
        1..6,
    )
}

/// The text of `functions` as the writer writes a profile of top-level functions: the
/// busiest first, lines by offset, TOTAL their sum, HEAD 0.
fn canonical(functions: &[Function]) -> String {
    let mut by_name: BTreeMap<&str, BTreeMap<u32, u64>> = BTreeMap::new();
    for (name, lines, _) in functions {
        let f = by_name.entry(NAMES[*name]).or_default();
        for &(offset, _, count) in lines {
            *f.entry(offset).or_default() = count;
        }
    }
    let mut order: Vec<(&str, u64)> = by_name.iter().map(|(n, l)| (*n, l.values().sum())).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut text = String::new();
    for (name, total) in order {
        text.push_str(&format!("{name}:{total}:0\n"));
        for (offset, count) in &by_name[name] {
            text.push_str(&format!(" {offset}: {count}\n"));
        }
    }
    text
}

/// Any sample profile of `functions`: discriminators, heads, call targets and inlined sites.
fn any(functions: &[Function]) -> String {
    let mut text = String::new();
    for (i, (name, lines, inlined)) in functions.iter().enumerate() {
        text.push_str(&format!("{}:{}:{}\n", NAMES[*name], 1000 + i, i));
        for &(offset, d, count) in lines {
            let at = if d == 0 { offset.to_string() } else { format!("{offset}.{d}") };
            text.push_str(&format!(" {at}: {count} g.cold:{}\n", count / 2));
        }
        for (offset, callee, lines) in inlined {
            text.push_str(&format!(" {offset}: {}:5\n", NAMES[*callee]));
            for (o, c) in lines {
                text.push_str(&format!("  {o}: {c}\n"));
            }
        }
    }
    text
}

fn round_trip(text: &str) -> String {
    let (profile, _) = read_with(&FORMAT, &mut text.as_bytes()).expect("reads");
    let (out, findings) = write_to_vec(&FORMAT, &profile, &WriteOptions::default()).expect("writes");
    assert_eq!(findings.warnings().count(), 0, "{findings:?}");
    String::from_utf8(out).unwrap()
}

/// Each function's count per line offset, as the sample profile `text` states them (a line's
/// discriminators added up, an inlined function's lines counted as its own).
fn per_line(text: &str) -> BTreeMap<(String, u32), u64> {
    let parsed = cfghub::formats::llvm_sample::read::parse(text.as_bytes()).unwrap();
    fn add(
        out: &mut BTreeMap<(String, u32), u64>,
        name: &str,
        f: &cfghub::analysis::sample_profile::FunctionSamples,
    ) {
        for (&(offset, _), (count, _)) in &f.body {
            *out.entry((name.to_string(), offset)).or_default() += count;
        }
        for callees in f.inlined.values() {
            for (callee, s) in callees {
                add(out, callee, s);
            }
        }
    }
    let mut out = BTreeMap::new();
    for (name, f) in &parsed.functions {
        add(&mut out, name, f);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn what_the_model_holds_reads_back_byte_for_byte(functions in functions()) {
        let text = canonical(&functions);
        prop_assert_eq!(round_trip(&text), text);
    }

    #[test]
    fn any_profile_writes_a_file_that_reads_back_to_itself_with_its_lines(functions in functions()) {
        let text = any(&functions);
        let once = round_trip(&text);
        prop_assert_eq!(round_trip(&once), once.clone());
        prop_assert_eq!(per_line(&once), per_line(&text));
    }
}
