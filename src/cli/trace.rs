//! `cfghub trace ...`: look inside a DCFG-trace without converting it.
//!
//! - `edges`: the decoded edge ids, one per line, `# thread N` before each thread's sequence
//!   (the text `cfghub convert DCFG --trace-from EDGES` encodes back);
//! - `stats`: chunks, edges and instructions per thread; with `--dcfg`, every edge checked
//!   against the DCFG and the recomputed edge counts compared with the DCFG's;
//! - `timeline`: routine and loop entries in time order, as JSON lines;
//! - `generate`: a synthetic DCFG and a consistent trace, for tests and benchmarks.
//!
//! Decoding streams: memory does not grow with the trace. Chunks decode in parallel on
//! `-j` threads (all cores by default).

use std::io::Write;
use std::sync::mpsc;

use clap::{Args, Subcommand};
use serde::Serialize;

use cfghub_analysis::replay::{Timeline, TimelineEntry};
use cfghub_analysis::synth::SynthSpec;
use cfghub_formats::convert::load;
use cfghub_formats::dcfg_trace::decode::{self, EachEdge};
use cfghub_formats::dcfg_trace::encode::EncodeOptions;
use cfghub_formats::dcfg_trace::generate;
use cfghub_formats::dcfg_trace::paired;
use cfghub_formats::format::{ReadOptions, WriteOptions};
use cfghub_model::error::{Error, Result};
use cfghub_model::io::{write_error, write_output, Input};
use cfghub_model::ir::Profile;

#[derive(Args, Debug)]
pub struct TraceArgs {
    /// Most edges a trace may declare before decoding stops with an error (default 5e9, about
    /// a minute of decoding); raise it for longer traces.
    #[arg(long, global = true, value_name = "N")]
    pub max_edges: Option<u64>,
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Print the decoded edge ids, one per line (`# thread N` starts each thread).
    Edges(EdgesArgs),
    /// Chunks, edges and instructions per thread; with --dcfg, check the trace against it.
    Stats(StatsArgs),
    /// Routine and loop entries in time order, one JSON object per line (needs --dcfg).
    Timeline(TimelineArgs),
    /// Write a synthetic DCFG and a consistent DCFG-trace (for tests and benchmarks).
    Generate(GenerateArgs),
}

#[derive(Args, Debug)]
pub struct EdgesArgs {
    /// The DCFG-trace, or - for standard input.
    pub trace: String,
    /// Only this thread.
    #[arg(long)]
    pub thread: Option<u64>,
    /// Check every edge against this DCFG while decoding.
    #[arg(long)]
    pub dcfg: Option<String>,
    /// Output file (default: standard output).
    #[arg(short, long, default_value = "-")]
    pub output: String,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The DCFG-trace, or - for standard input.
    pub trace: String,
    /// The paired DCFG: check every edge and chunk against it and compare edge counts.
    #[arg(long)]
    pub dcfg: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// The DCFG-trace, or - for standard input.
    pub trace: String,
    /// The paired DCFG.
    #[arg(long)]
    pub dcfg: String,
    /// Only this thread.
    #[arg(long)]
    pub thread: Option<u64>,
    /// Output file (default: standard output).
    #[arg(short, long, default_value = "-")]
    pub output: String,
}

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// Where to write the DCFG.
    #[arg(long)]
    pub dcfg_out: String,
    /// Where to write the trace.
    #[arg(long)]
    pub trace_out: String,
    /// Edges per thread.
    #[arg(long, default_value_t = 100_000)]
    pub edges: u64,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Repeat one cycle of each thread's walk with repeat groups (a small file for any number
    /// of edges) instead of encoding the whole walk.
    #[arg(long)]
    pub looped: bool,
    /// Looped traces: edges per chunk.
    #[arg(long, default_value_t = 10_000_000)]
    pub chunk_edges: u64,
    /// Whole walks: instructions per chunk.
    #[arg(long, default_value_t = 1_000_000)]
    pub chunk_instrs: u64,
}

pub fn run(args: TraceArgs, quiet: bool) -> Result<i32> {
    dispatch(args.command, args.max_edges, quiet)
}

fn dispatch(command: TraceCommand, max: Option<u64>, quiet: bool) -> Result<i32> {
    match command {
        TraceCommand::Edges(a) => edges(a, max, quiet),
        TraceCommand::Stats(a) => stats(a, max, quiet),
        TraceCommand::Timeline(a) => timeline(a, max, quiet),
        TraceCommand::Generate(a) => generate_files(a),
    }
}

/// Loads the paired DCFG, refusing one with rule violations.
pub(crate) fn load_dcfg(path: &str, quiet: bool) -> Result<Profile> {
    let loaded = load(path, None, &ReadOptions::default())?;
    super::check_findings(path, &loaded.findings, quiet)?;
    Ok(loaded.profile)
}

/// Runs `produce` (which decodes and sends chunks of output bytes) on its own thread while
/// this one writes the chunks to `out`: decoding keeps streaming, the output stays atomic.
fn pump(
    output: &str,
    inputs: &[&str],
    produce: impl FnOnce(mpsc::SyncSender<Vec<u8>>) -> Result<()> + Send,
) -> Result<()> {
    write_output(output, inputs, |out| {
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(8);
            let producer = scope.spawn(move || produce(tx));
            let mut written = Ok(());
            for chunk in rx.iter() {
                if let Err(e) = out.write_all(&chunk) {
                    written = Err(write_error(output)(e));
                    break;
                }
            }
            drop(rx);
            let produced = producer.join().unwrap_or_else(|_| Err(Error::input("the decoder thread failed")));
            written?;
            produced
        })
    })
}

/// Sends bytes in chunks of about 64 KiB; what is left is sent when dropped.
struct OutputChunks {
    tx: mpsc::SyncSender<Vec<u8>>,
    buf: Vec<u8>,
}

impl OutputChunks {
    fn push(&mut self, f: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        f(&mut self.buf);
        if self.buf.len() >= 1 << 16 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(1 << 16));
        self.tx.send(chunk).map_err(|_| Error::input("output closed"))
    }
}

impl Drop for OutputChunks {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

fn edges(args: EdgesArgs, max: Option<u64>, quiet: bool) -> Result<i32> {
    let dcfg = args.dcfg.as_deref().map(|d| load_dcfg(d, quiet)).transpose()?;
    let input = Input::open(&args.trace)?;
    let name = args.trace.clone();
    let mut inputs = vec![args.trace.as_str()];
    inputs.extend(args.dcfg.as_deref());
    pump(&args.output, &inputs, |tx| {
        let mut chunks = OutputChunks { tx, buf: Vec::with_capacity(1 << 16) };
        let mut last: Option<(u64, u64)> = None;
        let mut digits = itoa::Buffer::new();
        let job = EachEdge {
            f: move |pid: u64, thread: u64, id: u64| {
                if last != Some((pid, thread)) {
                    let new_process = last.is_none_or(|(p, _)| p != pid);
                    last = Some((pid, thread));
                    if new_process {
                        let _ = writeln!(chunks.buf, "# process {pid}");
                    }
                    let _ = writeln!(chunks.buf, "# thread {thread}");
                }
                chunks.buf.extend_from_slice(digits.format(id).as_bytes());
                chunks.buf.push(b'\n');
                if chunks.buf.len() >= 1 << 16 {
                    chunks.flush()?;
                }
                Ok(())
            },
            thread: args.thread,
        };
        // The rest of the output goes when the job (and its buffer) is dropped.
        decode::stream_versioned(&mut input.reader(), dcfg.as_ref(), job, max)
            .map_err(|e| e.in_file(&name))?;
        Ok(())
    })?;
    Ok(0)
}

#[derive(Serialize)]
struct StatsReport {
    file: String,
    processes: Vec<ProcessStats>,
}

#[derive(Serialize)]
struct ProcessStats {
    pid: u64,
    dictionary_entries: usize,
    transition_table_rows: usize,
    threads: Vec<ThreadStats>,
    /// With --dcfg: edges whose traversal count in the trace differs from the DCFG's.
    #[serde(skip_serializing_if = "Option::is_none")]
    edges_differing_from_dcfg: Option<usize>,
}

#[derive(Serialize)]
struct ThreadStats {
    thread: u64,
    chunks: u64,
    edges: u64,
    instructions: u64,
    distinct_edges: usize,
    /// With --dcfg: the thread's instruction count in the DCFG.
    #[serde(skip_serializing_if = "Option::is_none")]
    dcfg_instructions: Option<u64>,
}

fn stats(args: StatsArgs, max: Option<u64>, quiet: bool) -> Result<i32> {
    let dcfg = args.dcfg.as_deref().map(|d| load_dcfg(d, quiet)).transpose()?;
    let input = Input::open(&args.trace)?;
    let totals =
        decode::totals(&mut input.reader(), dcfg.as_ref(), max).map_err(|e| e.in_file(&args.trace))?;
    let mut report = StatsReport { file: args.trace.clone(), processes: Vec::new() };
    for p in &totals.processes {
        let paired = dcfg.as_ref().and_then(|d| d.processes.iter().find(|q| q.pid == p.pid));
        let differing = paired.map(|q| {
            q.edges
                .iter()
                .filter(|e| {
                    let threads =
                        e.counts.len().max(p.threads.keys().max().map(|&t| t as usize + 1).unwrap_or(0));
                    (0..threads).any(|t| {
                        let traced =
                            p.threads.get(&(t as u64)).and_then(|x| x.edge_counts.get(&e.id)).copied();
                        traced.unwrap_or(0) != e.counts.get(t).copied().unwrap_or(0)
                    })
                })
                .count()
        });
        report.processes.push(ProcessStats {
            pid: p.pid,
            dictionary_entries: p.dictionary_entries,
            transition_table_rows: p.table_rows,
            threads: p
                .threads
                .iter()
                .map(|(&t, x)| ThreadStats {
                    thread: t,
                    chunks: x.chunks,
                    edges: x.edges,
                    instructions: x.instrs,
                    distinct_edges: x.edge_counts.len(),
                    dcfg_instructions: paired.and_then(|q| q.thread_instr_counts.get(t as usize).copied()),
                })
                .collect(),
            edges_differing_from_dcfg: differing,
        });
    }
    if args.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| Error::input(e.to_string()))?;
        super::print_out(&(json + "\n"))?;
        return Ok(0);
    }
    let mut out = format!("{}\n", report.file);
    for p in &report.processes {
        out += &format!(
            "process {}: {} dictionary entries, {} transition-table rows\n",
            p.pid, p.dictionary_entries, p.transition_table_rows
        );
        let mut table = super::table::Table::new(
            &["thread", "chunks", "edges", "instructions", "distinct edges", "DCFG instructions"],
            &[0, 1, 2, 3, 4, 5],
        );
        for t in &p.threads {
            table.row(vec![
                t.thread.to_string(),
                t.chunks.to_string(),
                t.edges.to_string(),
                t.instructions.to_string(),
                t.distinct_edges.to_string(),
                t.dcfg_instructions.map(|n| n.to_string()).unwrap_or_else(|| "-".into()),
            ]);
        }
        out += &table.render();
        match p.edges_differing_from_dcfg {
            Some(0) => out += "every edge exists in the DCFG and follows its predecessor; edge counts equal the DCFG's\n",
            Some(n) => out += &format!(
                "every edge exists in the DCFG and follows its predecessor; {n} edge(s) counted differently than in the DCFG (a partial trace?)\n"
            ),
            None => {}
        }
    }
    super::print_out(&out)?;
    Ok(0)
}

fn timeline(args: TimelineArgs, max: Option<u64>, quiet: bool) -> Result<i32> {
    let dcfg = load_dcfg(&args.dcfg, quiet)?;
    let input = Input::open(&args.trace)?;
    let name = args.trace.clone();
    pump(&args.output, &[&args.trace, &args.dcfg], |tx| {
        let chunks = std::sync::Mutex::new(OutputChunks { tx, buf: Vec::with_capacity(1 << 16) });
        let job = Timeline::new(&dcfg, args.thread, |e: TimelineEntry| {
            let line = serde_json::to_string(&e).map_err(|e| Error::input(e.to_string()))?;
            chunks.lock().unwrap_or_else(|e| e.into_inner()).push(|buf| {
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
            })
        });
        paired::run(&mut input.reader(), &dcfg, job, max).map_err(|e| e.in_file(&name))?;
        chunks.into_inner().unwrap_or_else(|e| e.into_inner()).flush()
    })?;
    Ok(0)
}

fn generate_files(args: GenerateArgs) -> Result<i32> {
    let threads = args.threads.max(1);
    let spec = SynthSpec {
        seed: args.seed,
        threads,
        steps_per_thread: if args.looped { 20_000 } else { args.edges },
        keep_sequences: true,
        ..SynthSpec::default()
    };
    let (profile, trace) = if args.looped {
        generate::looped(&spec, args.edges, args.chunk_edges)?
    } else {
        let options = EncodeOptions { chunk_instrs: args.chunk_instrs, ..EncodeOptions::default() };
        let p = generate::pair(&spec, &options)?;
        (p.profile, p.trace)
    };
    let dcfg = Some(cfghub_formats::dcfg::FORMAT.name());
    cfghub_formats::convert::save(&profile, &args.dcfg_out, dcfg, &[], &WriteOptions::default())?;
    write_output(&args.trace_out, &[&args.dcfg_out], |out| {
        out.write_all(&trace).map_err(write_error(&args.trace_out))
    })?;
    Ok(0)
}

/// `cfghub convert DCFG --trace TRACE`: replays the trace into the profile (see
/// [`cfghub_formats::convert::replay_trace`]), naming count differences as warnings.
pub(crate) fn replay_into(
    profile: &mut Profile,
    trace: &str,
    max_edges: Option<u64>,
    quiet: bool,
) -> Result<()> {
    let findings = cfghub_formats::convert::replay_trace(profile, trace, max_edges)?;
    super::check_findings(trace, &findings, quiet)
}

/// `cfghub convert DCFG --trace-from EDGES -o OUT`: encodes edge sequences into a DCFG-trace of
/// the DCFG's first process (see [`cfghub_formats::convert::encode_trace`]), once the output's name and
/// the DCFG have been checked.
pub(crate) fn encode_from(
    dcfg: &str,
    edges: &str,
    output: &str,
    chunk_instrs: u64,
    quiet: bool,
) -> Result<i32> {
    cfghub_formats::convert::check_trace_output(output)?;
    let profile = load_dcfg(dcfg, quiet)?;
    cfghub_formats::convert::encode_trace(&profile, dcfg, edges, output, chunk_instrs)?;
    Ok(0)
}
