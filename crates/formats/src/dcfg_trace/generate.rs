//! Consistent DCFG + DCFG-trace pairs for tests and benchmarks.
//!
//! [`pair`] runs [`cfghub_analysis::synth`] (structured routines with loops, calls and recursion, executed
//! by a random walk per thread) and encodes the walks it kept: a whole-run trace whose edge
//! counts equal the DCFG's. [`looped`] makes very long traces that stay small on disk: it takes
//! a cycle of a generated walk (the edges between two traversals of the same edge) and repeats
//! it with a repeat group over a dictionary entry, so a trace of 10^9 edges is a few kilobytes.

use std::collections::HashMap;

use super::encode::{encode, transition_codes, write_parts, EncodeOptions, EncodedChunk, Piece, ThreadEdges};
use cfghub_analysis::synth::{generate, SynthSpec};
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{NodeRef, Profile};

/// A DCFG model, the edge sequences of its threads, and their encoded trace.
pub struct Pair {
    /// The DCFG.
    pub profile: Profile,
    /// Each thread's edge ids in execution order, as the trace encodes them.
    pub sequences: Vec<ThreadEdges>,

    /// The DCFG-trace JSON.
    pub trace: Vec<u8>,
}

/// A whole-run pair: the synthetic DCFG of `spec` and the trace of every thread's walk.
pub fn pair(spec: &SynthSpec, options: &EncodeOptions) -> Result<Pair> {
    let synth = generate(&SynthSpec { keep_sequences: true, ..spec.clone() });
    let sequences: Vec<ThreadEdges> = synth
        .sequences
        .into_iter()
        .enumerate()
        .map(|(t, edges)| ThreadEdges { thread: t as u64, edges })
        .collect();
    let mut trace = Vec::new();
    encode(&synth.profile, spec.pid, &sequences, options, &mut trace)?;
    Ok(Pair { profile: synth.profile, sequences, trace })
}

/// A long trace over the synthetic DCFG of `spec`: each thread repeats one cycle of its walk
/// until it has `edges_per_thread` edges (rounded to whole cycles), in chunks of about
/// `chunk_edges` edges. The edges are consistent with the DCFG (each starts where the last
/// ended; `INSTR_COUNT`s are exact) but their counts are not the DCFG's.
pub fn looped(spec: &SynthSpec, edges_per_thread: u64, chunk_edges: u64) -> Result<(Profile, Vec<u8>)> {
    let synth = generate(&SynthSpec { keep_sequences: true, ..spec.clone() });
    let process = synth
        .profile
        .processes
        .iter()
        .find(|p| p.pid == spec.pid)
        .ok_or_else(|| Error::usage("the synthetic profile has no process"))?;
    let weight: HashMap<u64, u64> = process
        .edges
        .iter()
        .map(|e| {
            let w = match e.source {
                NodeRef::Block(b) => u64::from(process.block(b).num_instrs),
                _ => 0,
            };
            (e.id, w)
        })
        .collect();
    let threads: Vec<ThreadEdges> = synth
        .sequences
        .iter()
        .enumerate()
        .map(|(t, edges)| ThreadEdges { thread: t as u64, edges: edges.clone() })
        .collect();
    let codes = transition_codes(&threads);
    let mut dict = Vec::new();
    let mut keys = HashMap::new();
    let mut parts = Vec::new();
    for t in &threads {
        let (start, cycle) = find_cycle(&t.edges)
            .ok_or_else(|| Error::usage(format!("thread {} has no repeated edge to loop on", t.thread)))?;
        // One pass of the cycle: its bits, repeated until they fill whole characters.
        let mut bits: Vec<(u32, u8)> = Vec::with_capacity(cycle.len());
        let mut prev = t.edges[start];
        for &e in cycle {
            bits.push(codes.code(prev, e));
            prev = e;
        }
        let total: u64 = bits.iter().map(|b| b.1 as u64).sum();
        let copies = if total == 0 { 1 } else { 6 / gcd(total % 6, 6).max(1) } as usize;
        let copies = if total.is_multiple_of(6) { 1 } else { copies };
        let mut text = super::encode::BitText::default();
        for _ in 0..copies {
            for &(c, l) in &bits {
                text.push(c as u64, l as u32);
            }
        }
        let unit = String::from_utf8(text.finish()).unwrap_or_default();
        let unit_edges = (cycle.len() * copies) as u64;
        let unit_instrs: u64 = cycle.iter().map(|e| weight[e]).sum::<u64>() * copies as u64;
        let key = format!("t{}", t.thread);
        keys.insert(unit.clone(), key.clone());
        dict.push((key, unit.clone()));
        let per_chunk = (chunk_edges / unit_edges).max(1);
        let mut units_left = edges_per_thread.div_ceil(unit_edges);
        let mut preceding: u64 =
            t.edges[..=start].iter().map(|e| weight[e]).sum::<u64>() - weight[&t.edges[start]];
        let mut chunks = Vec::new();
        while units_left > 0 {
            let n = per_chunk.min(units_left);
            units_left -= n;
            let instrs = n * unit_instrs;
            chunks.push(EncodedChunk {
                preceding,
                instrs,
                edges: n * unit_edges,
                first: t.edges[start],
                pieces: vec![Piece::Rep(n, vec![Piece::Lit(unit.clone().into_bytes())])],
            });
            preceding += instrs;
        }
        parts.push((t.thread, chunks));
    }
    let mut trace = Vec::new();
    write_parts(&mut trace, spec.pid, &dict, &codes, &parts, &keys).map_err(|e| Error::io("trace", e))?;
    Ok((synth.profile, trace))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A cycle of the walk: a position `i` and the edges after it up to and including the next
/// traversal of the edge at `i`, preferring cycles of a few thousand edges.
fn find_cycle(edges: &[u64]) -> Option<(usize, &[u64])> {
    let mut last: HashMap<u64, usize> = HashMap::new();
    let mut best: Option<(usize, usize)> = None;
    for (j, &e) in edges.iter().enumerate() {
        if let Some(&i) = last.get(&e) {
            let len = j - i;
            let score = |l: usize| (l as i64 - 2000).abs();
            if best.is_none_or(|(bi, bj)| score(len) < score(bj - bi)) {
                best = Some((i, j));
            }
        }
        last.insert(e, j);
    }
    best.map(|(i, j)| (i, &edges[i + 1..=j]))
}
