//! `cfghub csi paths|crash FILE --function F`: decode Ball-Larus path numbers and crash states.
//!
//! Works on any routine of any input: CSI metadata numbers its own paths; other formats'
//! routines are numbered as `cfghub convert -o x.debug_PT` would number them. Output: one line
//! per path, `NUMBER: block block ...`, with `~>` before a path that starts just after a back
//! edge and after one that ends by taking one; the unfinished path of a crash as
//! `partial: block ...` (one line per candidate). `--json` gives the same with source lines.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::convert::ReadArgs;
use cfghub_analysis::ball_larus::{Dag, DecodedPath, PathError};
use cfghub_analysis::path_graph::{routine_paths, RoutinePaths};
use cfghub_analysis::{names, routines, source::SourceIndex};
use cfghub_formats::convert::load;
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{Image, Profile};

/// Slots of csi-cc's path trace ring buffer.
pub const SLOTS: usize = 10;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  cfghub csi paths prog --function main             every path number of main and its blocks
  cfghub csi paths prog --function main 3 4         just those
  cfghub csi crash prog --function main --array 1,3,6,3,2,4,8,9,2,-1 --index 2 --current 4 --block 9")]
pub struct CsiArgs {
    #[command(subcommand)]
    pub command: CsiCommand,
}

#[derive(Subcommand, Debug)]
pub enum CsiCommand {
    /// Decode path numbers of a function into its blocks (all of them when none is given).
    Paths(PathsArgs),
    /// Decode the trace of one crashed frame: completed paths oldest first, then every
    /// candidate for the unfinished one.
    Crash(CrashArgs),
}

/// What both subcommands read.
#[derive(Args, Debug)]
pub struct Target {
    /// Input: CSI metadata (an ELF with .debug_PT, or its text), or any profile with routines.
    pub input: String,
    /// Input format; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// The function (routine) by name.
    #[arg(long, value_name = "NAME")]
    pub function: String,
    /// Print JSON (with each block's source lines) instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Args, Debug)]
pub struct PathsArgs {
    #[command(flatten)]
    pub target: Target,
    /// Path numbers to decode; every path when none is given (at most --limit).
    #[arg(allow_negative_numbers = true)]
    pub numbers: Vec<i64>,
    /// Without NUMBERS: decode at most this many paths.
    #[arg(long, default_value_t = 100_000)]
    pub limit: u64,
}

#[derive(Args, Debug)]
pub struct CrashArgs {
    #[command(flatten)]
    pub target: Target,
    /// The ring buffer `__PT_counter_arr`, comma separated (10 slots).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, required = true)]
    pub array: Vec<i64>,
    /// `__PT_counter_idx`: the slot the next completed path goes to.
    #[arg(long)]
    pub index: usize,
    /// `__PT_current_path`: the running sum of the unfinished path.
    #[arg(long, allow_negative_numbers = true)]
    pub current: i64,
    /// The block (its id in the metadata) where the frame stopped.
    #[arg(long)]
    pub block: u64,
}

#[derive(Serialize)]
struct PathJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    number: Option<i64>,
    blocks: Vec<String>,
    lines: Vec<Vec<u32>>,
    after_back_edge: bool,
    ends_at_back_edge: bool,
}

#[derive(Serialize)]
struct CrashJson {
    function: String,
    paths: u64,
    completed: Vec<PathJson>,
    partial: Vec<PathJson>,
    /// The search for candidates stopped at its limit.
    truncated: bool,
}

/// The routine chosen, with what decoding and printing need.
struct Chosen<'p> {
    /// The input is CSI metadata (whose lines errors can name).
    csi: bool,
    file: String,
    name: String,
    image: &'p Image,
    rp: RoutinePaths,
    dag: Dag,
    source: SourceIndex,
}

impl Chosen<'_> {
    fn label(&self, node: u32) -> String {
        node_label(self.image, &self.rp, node)
    }

    fn lines(&self, node: u32) -> Vec<u32> {
        let Some(b) = self.rp.blocks.get(node as usize).copied().flatten() else { return Vec::new() };
        if let Some(l) = self.image.lines_of(b) {
            return l.lines().collect();
        }
        if self.image.no_addresses {
            return Vec::new();
        }
        let blk = &self.image.blocks[b as usize];
        let mut v: Vec<u32> = self
            .source
            .overlapping(self.image, blk.offset, u64::from(blk.size))
            .map(|i| self.image.source_lines[i as usize].line)
            .collect();
        v.dedup();
        v
    }

    fn text(&self, number: Option<i64>, p: &DecodedPath) -> String {
        let mut s = match number {
            Some(n) => format!("{n}:"),
            None => "partial:".to_string(),
        };
        if p.after_back_edge {
            s.push_str(" ~>");
        }
        for &n in &p.nodes {
            s.push(' ');
            s.push_str(&self.label(n));
        }
        if p.ends_at_back_edge {
            s.push_str(" ~>");
        }
        s
    }

    fn json(&self, number: Option<i64>, p: &DecodedPath) -> PathJson {
        PathJson {
            number,
            blocks: p.nodes.iter().map(|&n| self.label(n)).collect(),
            lines: p.nodes.iter().map(|&n| self.lines(n)).collect(),
            after_back_edge: p.after_back_edge,
            ends_at_back_edge: p.ends_at_back_edge,
        }
    }
}

fn choose<'p>(profile: &'p Profile, name: &str, file: &str, csi: bool) -> Result<Chosen<'p>> {
    let mut known = Vec::new();
    for process in &profile.processes {
        let all = routines::all(process);
        for (ii, image) in process.images.iter().enumerate() {
            let index = names::SymbolIndex::new(image);
            let rs = &all[ii];
            let hit = rs.iter().position(|r| {
                let n = names::routine_name(profile, image, &index, r);
                let found = n == name;
                if known.len() < 20 {
                    known.push(n);
                }
                found
            });
            if let Some(k) = hit {
                let rp = routine_paths(process, ii, &rs[k..k + 1]).remove(0);
                let dag = rp.dag().map_err(|e| {
                    let mut e = path_error(e, name, file, image, &rp, csi);
                    e.message = e.message.replacen(": ", " cannot be decoded: ", 1);
                    e
                })?;
                return Ok(Chosen {
                    csi,
                    file: file.to_string(),
                    name: name.to_string(),
                    image,
                    rp,
                    dag,
                    source: SourceIndex::new(image),
                });
            }
        }
    }
    Err(Error::usage(format!("{file} has no function named '{name}'")).with_hint(if known.is_empty() {
        "the input has no routines".to_string()
    } else {
        format!("its functions include: {}", known.join(", "))
    }))
}

/// A numbering error in the input's own terms: blocks by the ids the input gives them (not
/// the graph's node numbers), and for CSI metadata the line that defines the block.
fn path_error(e: PathError, name: &str, file: &str, image: &Image, rp: &RoutinePaths, csi: bool) -> Error {
    let label = |n: u32| node_label(image, rp, n);
    let (message, node) = match e {
        PathError::BadWeights { node } => (
            format!("the edge weights out of block {} do not cover its paths exactly once", label(node)),
            Some(node),
        ),
        PathError::Cycle(n) => (format!("a cycle through block {} has no back edge", label(n)), Some(n)),
        PathError::BadNode(n) => (format!("block {} is not in the graph", label(n)), None),
        PathError::OutOfRange { .. } => return Error::usage(format!("function {name}: {e}")).in_file(file),
        PathError::TooManyPaths => (e.to_string(), None),
    };
    let mut err = Error::input(format!("function {name}: {message}")).in_file(file);
    let block = node.and_then(|n| rp.blocks.get(n as usize).copied().flatten());
    if let (true, Some(b)) = (csi, block) {
        let id = image.display_id(b);
        let data = cfghub_model::io::Input::open(file).ok().and_then(|i| {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut i.reader(), &mut v).ok().map(|_| v)
        });
        if let Some(at) = data.and_then(|d| cfghub_formats::csi::block_location(&d, name, id)) {
            err = err.at(at);
        }
    }
    err
}

/// The id the input gives the block of graph node `n` (`EXIT` for a virtual exit).
fn node_label(image: &Image, rp: &RoutinePaths, n: u32) -> String {
    match rp.blocks.get(n as usize).copied().flatten() {
        Some(b) => image.display_id(b).to_string(),
        None => "EXIT".to_string(),
    }
}

fn decode_error(e: PathError, c: &Chosen) -> Error {
    path_error(e, &c.name, &c.file, c.image, &c.rp, c.csi)
}

/// Prints to standard output; a reader that closed the pipe early (`| head`) is not an error.
fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io("standard output", e)),
        _ => Ok(()),
    }
}

pub fn run(args: CsiArgs, quiet: bool) -> Result<i32> {
    match args.command {
        CsiCommand::Paths(a) => paths(a, quiet),
        CsiCommand::Crash(a) => crash(a, quiet),
    }
}

fn load_target(t: &Target, quiet: bool) -> Result<cfghub_formats::convert::Loaded> {
    let loaded = load(&t.input, t.from.as_deref(), &t.read.options())?;
    super::check_findings(&t.input, &loaded.findings, quiet)?;
    Ok(loaded)
}

/// Standard output, buffered; a reader that closed the pipe early (`| head`) ends the
/// output quietly.
struct Out<'a> {
    w: std::io::BufWriter<std::io::StdoutLock<'a>>,
    closed: bool,
}

impl Out<'_> {
    fn new() -> Self {
        Out { w: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()), closed: false }
    }

    fn put(&mut self, text: &[u8]) -> Result<()> {
        use std::io::Write;
        if self.closed {
            return Ok(());
        }
        match self.w.write_all(text) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => self.closed = true,
            Err(e) => return Err(Error::io("standard output", e)),
            Ok(()) => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        use std::io::Write;
        match self.w.flush() {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe && !self.closed => {
                Err(Error::io("standard output", e))
            }
            _ => Ok(()),
        }
    }
}

/// Decodes and prints the paths asked for one at a time, as they are decoded: memory stays
/// that of one path whatever `--limit` allows.
fn paths(args: PathsArgs, quiet: bool) -> Result<i32> {
    let loaded = load_target(&args.target, quiet)?;
    let c = choose(
        &loaded.profile,
        &args.target.function,
        &args.target.input,
        std::ptr::eq(loaded.format, &cfghub_formats::csi::FORMAT),
    )?;
    let total = c.dag.paths();
    let count = if args.numbers.is_empty() {
        if total > args.limit && !quiet {
            eprintln!("cfghub: {} has {total} paths; the first {} are shown (--limit)", c.name, args.limit);
        }
        total.min(args.limit).min(i64::MAX as u64) as usize
    } else {
        // Numbers named on the command line are checked before anything is printed.
        for &n in &args.numbers {
            c.dag.decode(n).map_err(|e| decode_error(e, &c))?;
        }
        args.numbers.len()
    };
    let number = |k: usize| if args.numbers.is_empty() { k as i64 } else { args.numbers[k] };
    let mut out = Out::new();
    if args.target.json {
        let head = serde_json::json!({ "function": c.name, "paths": total });
        let head = serde_json::to_string_pretty(&head).expect("paths serialise");
        // The object without its closing brace, then the decoded paths one by one.
        out.put(head.trim_end_matches('}').trim_end().as_bytes())?;
        out.put(b",\n  \"decoded\": [")?;
        for k in 0..count {
            if out.closed {
                break;
            }
            let n = number(k);
            let p = c.dag.decode(n).map_err(|e| decode_error(e, &c))?;
            let item = serde_json::to_string_pretty(&c.json(Some(n), &p)).expect("paths serialise");
            out.put(if k == 0 { b"\n" } else { b",\n" })?;
            out.put(indent_json(&item, "    ").as_bytes())?;
        }
        out.put(if count == 0 { b"]\n}\n" } else { b"\n  ]\n}\n" })?;
    } else {
        for k in 0..count {
            if out.closed {
                break;
            }
            let n = number(k);
            let p = c.dag.decode(n).map_err(|e| decode_error(e, &c))?;
            let mut line = c.text(Some(n), &p);
            line.push('\n');
            out.put(line.as_bytes())?;
        }
    }
    out.finish()?;
    Ok(0)
}

/// Pretty JSON indented by `pad` (an item of an array printed by hand).
fn indent_json(json: &str, pad: &str) -> String {
    json.lines().map(|l| format!("{pad}{l}")).collect::<Vec<_>>().join("\n")
}

fn crash(args: CrashArgs, quiet: bool) -> Result<i32> {
    if args.array.len() != SLOTS {
        return Err(Error::usage(format!(
            "--array has {} slot(s); expected {SLOTS}, the length of csi-cc's path trace (__PT_counter_arr)",
            args.array.len()
        )));
    }
    if args.index >= SLOTS {
        return Err(Error::usage(format!(
            "--index {} is not a slot of the trace (0..{})",
            args.index,
            SLOTS - 1
        )));
    }
    let loaded = load_target(&args.target, quiet)?;
    let c = choose(
        &loaded.profile,
        &args.target.function,
        &args.target.input,
        std::ptr::eq(loaded.format, &cfghub_formats::csi::FORMAT),
    )?;
    let node = (0..c.rp.graph.nodes).find(|&n| c.label(n) == args.block.to_string()).ok_or_else(|| {
        let ids: Vec<String> = (0..c.rp.graph.nodes).map(|n| c.label(n)).collect();
        Error::usage(format!("--block {}: function {} has no such block", args.block, c.name))
            .with_hint(format!("its blocks are {}", ids.join(" ")))
    })?;
    let state = c.dag.crash(&args.array, args.index, args.current, node).map_err(|e| decode_error(e, &c))?;
    if state.truncated && !quiet {
        eprintln!(
            "cfghub: the search for the unfinished path stopped at its limit; more candidates may exist"
        );
    }
    if args.target.json {
        let j = CrashJson {
            function: c.name.clone(),
            paths: c.dag.paths(),
            completed: state.completed.iter().map(|(n, p)| c.json(Some(*n), p)).collect(),
            partial: state.partial.iter().map(|p| c.json(None, p)).collect(),
            truncated: state.truncated,
        };
        emit(&(serde_json::to_string_pretty(&j).expect("crash serialises") + "\n"))?;
    } else {
        let mut out = String::new();
        for (n, p) in &state.completed {
            out.push_str(&c.text(Some(*n), p));
            out.push('\n');
        }
        for p in &state.partial {
            out.push_str(&c.text(None, p));
            out.push('\n');
        }
        emit(&out)?;
        if state.partial.is_empty() && !quiet {
            eprintln!(
                "cfghub: no path prefix ending at block {} sums to {}: no candidate for the unfinished path",
                args.block, args.current
            );
        }
    }
    Ok(0)
}
