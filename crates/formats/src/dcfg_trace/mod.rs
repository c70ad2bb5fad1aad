//! Intel DCFG-trace: the order in which a program traversed the edges of its DCFG
//! (spec section 3; `*.trace.json`, usually bzip2-compressed), written by Pin's DCFG tool,
//! PinPlay and SDE beside the DCFG they pair with (edge ids are shared).
//!
//! A trace holds, per process, a string dictionary, a transition table of prefix codes, and per
//! thread a table of chunks; each chunk is a first edge id and a bit string (modified Base64
//! with repeat groups and dictionary references) from which the following edge ids are decoded
//! with the table. See docs/formats/dcfg-trace.md for the mapping to the model.
//!
//! - [`seq`]: sequence strings compiled into bit programs and read without expansion;
//! - [`table`]: the transition table as prefix codes;
//! - [`decode`]: the streaming, parallel decoder and its jobs;
//! - [`encode`]: the encoder (Huffman codes, chunks, repeat groups, dictionary);
//! - [`generate`]: consistent DCFG + trace pairs for tests and benchmarks.
//!
//! Reading a trace alone gives, per process and thread, the edges it traversed with their
//! counts and the instructions its chunks declare; with its DCFG, `cfghub convert --trace`
//! replays it exactly (see `cfghub_analysis::replay`). Writing needs the edge sequences, so a
//! trace is written by `cfghub convert DCFG --trace-from EDGES`, not from a model.

pub mod decode;
pub mod encode;
pub mod generate;
pub mod paired;
pub mod seq;
pub mod table;

use std::io::BufRead;

use crate::format::{Format, ReadOptions};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{Edge, EdgeKind, NodeRef, Process, Profile};

/// The spec's headers: the column names of the process, transition table, thread and chunk
/// arrays, which every trace states and the decoder checks.
pub(crate) const PROCESS_HEADER: [&str; 4] =
    ["PROCESS_ID", "STRING_DICTIONARY", "TRANSITION_TABLE", "THREAD_DATA"];
pub(crate) const TABLE_HEADER: [&str; 3] = ["CURRENT_EDGE_ID", "TRANSITION_CODE", "NEXT_EDGE_IDS"];
pub(crate) const THREAD_HEADER: [&str; 2] = ["THREAD_ID", "TRACE_DATA"];
pub(crate) const CHUNK_HEADER: [&str; 5] =
    ["PRECEDING_INSTR_COUNT", "INSTR_COUNT", "EDGE_COUNT", "FIRST_EDGE_ID", "EDGE_ID_SEQUENCE"];

/// What the DCFG-trace reader can be asked.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Most edges the trace may declare before decoding stops with an error (`--max-edges`);
    /// `None` is [`decode::DEFAULT_MAX_EDGES`].
    pub max_edges: Option<u64>,
    /// Read only what the chunks declare (threads, instruction counts), decoding no edge: the
    /// processes' edges stay empty (`cfghub info`).
    pub declared_only: bool,
}

/// The DCFG-trace format.
pub static FORMAT: Format = Format {
    name: "dcfg-trace",
    description: "Intel DCFG-trace JSON: edge order per thread (Pin, PinPlay, SDE)",
    extensions: &[".trace.json"],
    sniffer: Some(sniff),
    reader: Some(|input, options, findings| read_profile(input.stream(), options, findings)),
    hint: Some(
        "a DCFG-trace is written from edge sequences, not from a profile: \
         cfghub convert APP.dcfg.json --trace-from APP.edges -o APP.trace.json",
    ),
    ..Format::NONE
};

/// A JSON object that names `TRANSITION_TABLE` or `THREAD_DATA` in its first bytes.
fn sniff(head: &[u8]) -> bool {
    let head = &head[..head.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    text.trim_start().starts_with('{')
        && (text.contains("\"TRANSITION_TABLE\"") || text.contains("\"THREAD_DATA\""))
}

/// Decodes the whole trace: per process, its threads' instruction counts (sums of the
/// chunks' `INSTR_COUNT`) and the traversed edges with per-thread counts. Edge ends and
/// kinds are in the paired DCFG, not here; they are left unknown. With
/// [`Options::declared_only`], no edge is decoded (and none is listed).
fn read_profile(input: &mut dyn BufRead, options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let options = options.formats.get::<Options>();
    let totals = if options.declared_only {
        decode::declared(input)?
    } else {
        decode::totals(input, None, options.max_edges)?
    };
    report_surplus(&totals, findings);
    totals_to_profile(&totals)
}

/// Chunks whose sequence holds characters their `EDGE_COUNT` does not need are violations of
/// the format: the trace is not what its producer meant to write.
pub(crate) fn report_surplus(totals: &decode::Totals, findings: &mut Findings) {
    for m in &totals.surplus {
        findings.violation(None, m.clone());
    }
    let more = totals.surplus_chunks.saturating_sub(totals.surplus.len() as u64);
    if more > 0 {
        findings.violation(None, format!("{more} more chunk(s) hold characters beyond their EDGE_COUNT"));
    }
}

/// Most threads a process may have (thread ids index `INSTR_COUNT_PER_THREAD`).
pub(crate) const MAX_THREADS: u64 = 1 << 20;

/// The model of a trace read alone.
pub(crate) fn totals_to_profile(totals: &decode::Totals) -> Result<Profile> {
    let mut profile = Profile::default();
    profile.meta.format_version = totals.version;
    for p in &totals.processes {
        if let Some(&t) = p.threads.keys().max().filter(|&&t| t >= MAX_THREADS) {
            return Err(Error::input(format!(
                "process {}: THREAD_ID {t} is not a thread index (at most {})",
                p.pid,
                MAX_THREADS - 1
            )));
        }
        let threads = p.threads.keys().max().map(|&t| t as usize + 1).unwrap_or(0);
        let mut process = Process { pid: p.pid, ..Process::default() };
        process.thread_instr_counts = vec![0; threads];
        let mut edges: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        for (&t, tt) in &p.threads {
            process.thread_instr_counts[t as usize] = tt.instrs;
            for (&id, &n) in &tt.edge_counts {
                edges.entry(id).or_insert_with(|| vec![0; threads])[t as usize] += n;
            }
        }
        process.instr_count = Some(process.thread_instr_counts.iter().sum());
        process.edges = edges
            .into_iter()
            .map(|(id, counts)| Edge {
                id,
                source: NodeRef::Unknown,
                target: NodeRef::Unknown,
                kind: EdgeKind::Unknown,
                counts: counts.into(),
                ..Edge::default()
            })
            .collect();
        profile.processes.push(process);
    }
    Ok(profile)
}
