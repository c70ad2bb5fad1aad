//! DCFG-trace: encode -> decode is the identity on edge sequences (generated walks over
//! synthetic DCFGs with loops, calls and recursion, several threads), checked against the paired
//! DCFG, and the counts recomputed from a whole-run trace equal the DCFG's.

use cfghub::formats::dcfg_trace::decode::{decode_all, totals};
use cfghub::formats::dcfg_trace::encode::{encode, EncodeOptions, ThreadEdges};
use cfghub::formats::dcfg_trace::generate::pair;
use cfghub::synth::SynthSpec;
use proptest::prelude::*;

fn spec(seed: u64, threads: usize, steps: u64) -> SynthSpec {
    SynthSpec { seed, threads, steps_per_thread: steps, keep_sequences: true, ..SynthSpec::default() }
}

#[test]
fn a_million_edges_over_four_threads_decode_to_what_was_encoded() {
    let options = EncodeOptions { chunk_instrs: 200_000, ..EncodeOptions::default() };
    let p = pair(&spec(11, 4, 250_000), &options).unwrap();
    let total: usize = p.sequences.iter().map(|t| t.edges.len()).sum();
    assert!(total >= 1_000_000, "{total} edges");
    let back = decode_all(&mut p.trace.as_slice(), Some(&p.profile)).unwrap();
    assert_eq!(back, p.sequences);
    // Huffman codes: well under two bits per edge.
    assert!(p.trace.len() < total / 4, "{} bytes for {total} edges", p.trace.len());
}

#[test]
fn repeated_cycles_become_repeat_groups_and_dictionary_entries() {
    let p = pair(&spec(3, 1, 5_000), &EncodeOptions::default()).unwrap();
    let walk = &p.sequences[0].edges;
    // A cycle of the walk: the edges after one traversal of an edge up to its next traversal.
    let (i, j) = (0..walk.len())
        .find_map(|i| walk[i + 1..].iter().position(|&e| e == walk[i]).map(|d| (i, i + 1 + d)))
        .filter(|&(i, j)| j - i > 3)
        .unwrap_or_else(|| {
            (0..walk.len())
                .find_map(|i| walk[i + 1..].iter().position(|&e| e == walk[i]).map(|d| (i, i + 1 + d)))
                .unwrap()
        });
    let mut edges = walk[..=i].to_vec();
    for _ in 0..200 {
        edges.extend_from_slice(&walk[i + 1..=j]);
    }
    // The same cycle on four threads: its repeat body recurs, so it goes into the dictionary.
    let threads: Vec<ThreadEdges> = (0..4).map(|t| ThreadEdges { thread: t, edges: edges.clone() }).collect();
    let mut out = Vec::new();
    encode(&p.profile, 4242, &threads, &EncodeOptions::default(), &mut out).unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.contains("(") && text.contains("*<"), "no repeat group over a dictionary entry:\n{text}");
    assert_eq!(decode_all(&mut out.as_slice(), Some(&p.profile)).unwrap(), threads);
}

#[test]
fn whole_run_edge_counts_equal_the_dcfgs() {
    let p = pair(&spec(5, 3, 20_000), &EncodeOptions { chunk_instrs: 5_000, ..Default::default() }).unwrap();
    let t = totals(&mut p.trace.as_slice(), Some(&p.profile), None).unwrap();
    let process = &p.profile.processes[0];
    let found = &t.processes[0];
    for edge in &process.edges {
        for (thread, &count) in edge.counts.iter().enumerate() {
            let got = found.threads[&(thread as u64)].edge_counts.get(&edge.id).copied().unwrap_or(0);
            assert_eq!(got, count, "edge {} thread {thread}", edge.id);
        }
    }
    for (thread, &instrs) in process.thread_instr_counts.iter().enumerate() {
        assert_eq!(found.threads[&(thread as u64)].instrs, instrs, "thread {thread}");
    }
}

#[test]
fn the_format_reader_gives_edges_with_per_thread_counts() {
    let p = pair(&spec(2, 2, 3_000), &EncodeOptions::default()).unwrap();
    let (profile, _) =
        cfghub::convert::read_with(&cfghub::formats::dcfg_trace::FORMAT, &mut p.trace.as_slice()).unwrap();
    let dcfg = &p.profile.processes[0];
    let read = &profile.processes[0];
    assert_eq!(read.pid, dcfg.pid);
    assert_eq!(read.thread_instr_counts, dcfg.thread_instr_counts);
    for e in &read.edges {
        let d = dcfg.edges.iter().find(|x| x.id == e.id).unwrap();
        assert_eq!(e.counts, d.counts, "edge {}", e.id);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn small_traces_round_trip(seed in 0u64..1000, threads in 1usize..4, steps in 1u64..400,
                               chunk in 1u64..300, dictionary: bool, max_period in 1usize..64) {
        let options = EncodeOptions { chunk_instrs: chunk, dictionary, max_period };
        let p = pair(&spec(seed, threads, steps), &options).unwrap();
        let back = decode_all(&mut p.trace.as_slice(), Some(&p.profile)).unwrap();
        prop_assert_eq!(back, p.sequences);
    }

    #[test]
    fn any_consistent_subsequence_round_trips(seed in 0u64..1000, start in 0usize..200, len in 1usize..300) {
        // A trace need not start at ENTRY nor end at EXIT: any slice of a walk is a valid trace.
        let p = pair(&spec(seed, 1, 300), &EncodeOptions::default()).unwrap();
        let all = &p.sequences[0].edges;
        let s = start.min(all.len() - 1);
        let e = (s + len).min(all.len());
        let threads = vec![ThreadEdges { thread: 0, edges: all[s..e].to_vec() }];
        let mut out = Vec::new();
        encode(&p.profile, 4242, &threads, &EncodeOptions { chunk_instrs: 50, ..Default::default() }, &mut out).unwrap();
        let back = decode_all(&mut out.as_slice(), Some(&p.profile)).unwrap();
        prop_assert_eq!(back, threads);
    }
}
