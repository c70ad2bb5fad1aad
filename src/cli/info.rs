//! `cfghub info FILE`: what a profile holds, as aligned tables or `--json`.
//!
//! The JSON schema (stable; documented in docs/user-guide.md):
//! ```text
//! { "file": str, "format": str, "format_version": str|null, "events": [str],
//!   "processes": [ { "pid": int, "threads": int, "instr_count": int|null,
//!       "thread_instr_counts": [int], "executed_instructions": int,
//!       "images": [ { "id": int, "path": str, "load_address": "0x..", "size": int|null,
//!                     "symbols": int, "blocks": int, "routines": int, "loops": int,
//!                     "source_lines": int, "costs": int } ],
//!       "edges": int, "edges_by_kind": { KIND: { "edges": int, "count": int } },
//!       "stacks": int,
//!       "stack_totals": { EVENT: float },                     (profiles with stacks)
//!       "top_functions": [ { "name": str, "self": { EVENT: float },
//!                            "total": { EVENT: float } } ],   (profiles with stacks)
//!       "top_routines": [ { "name": str, "image": str, "entry": "0x..", "blocks": int,
//!                           "instructions": int, "percent": float } ],
//!       "top_loops": [ { "routine": str, "head": int, "address": "0x..", "blocks": int,
//!                        "depth": int, "instructions": int, "percent": float } ],
//!       "costs_by_image": [ { "image": str, "costs": { EVENT: int }, "percent": { EVENT: float } } ],
//!       "top_addresses": [ { "image": str, "address": "0x..", "costs": { EVENT: int } } ] } ],
//!   "symbols": [ { "pid": int, "image": str, "build_id": str|null, "debug_file": str|null,
//!                 "symbol_file": str|null, "addresses": int, "functions": int, "lines": int,
//!                 "inlined_addresses": int, "inline_frames": int, "unnamed": int, "note": str } ] }
//! ```
//! When the profile has sampled events (every event but `Ir`) and blocks (a DCFG merged with
//! DCPI samples), routines and loops also carry, per sampled event, `"samples": { EVENT: int }`,
//! `"samples_percent": { EVENT: float }` and `"samples_per_1000_instructions": { EVENT: float|null }`,
//! and are ranked by the first sampled event. `costs_by_image` is the `dcpiprof -i` view (every
//! event, also Ir); `top_addresses` lists the hottest addresses of images without blocks.
//! `symbols` is there only with `--symbols` (docs/symbols.md).

pub mod rankings;

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;

use super::convert::ReadArgs;
use super::table::Table;
use cfghub_analysis::{executions, loops, names, path_graph, routines};
use cfghub_formats::convert::load;
use cfghub_formats::dcfg_trace;
use cfghub_formats::format::Format;
use cfghub_model::error::Result;
use cfghub_model::ir::{CoverageKind, Image, Process, Profile, Routine};

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Input file, or - for standard input.
    pub input: String,
    /// Input format; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// Print JSON for scripts instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub read: ReadArgs,
    /// How many routines and loops to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub symbols: super::symbols::SymbolArgs,
    #[command(flatten)]
    pub infer: super::symbols::InferArgs,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub file: String,
    pub format: String,
    /// Whether the format states edge sequences that `info` does not decode (a DCFG-trace:
    /// `cfghub trace stats` decodes and counts them).
    #[serde(skip)]
    pub edges_not_decoded: bool,
    pub format_version: Option<String>,
    pub events: Vec<String>,
    /// The unit of each event that states one other than a plain count (`cpu-clock`:
    /// `nanoseconds`), by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub event_units: BTreeMap<String, String>,
    pub processes: Vec<ProcessReport>,
    /// What `--symbols` found and named, per image.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<cfghub_analysis::symbolize::ImageReport>,
    /// The memory the model takes, part by part.
    pub memory: MemoryReport,
}

impl Report {
    /// ` ns` (or another unit) after a number or column of event `e`, when it has a unit
    /// other than a count.
    fn unit_suffix(&self, e: &str) -> String {
        match self.event_units.get(e).map(String::as_str) {
            Some("nanoseconds") => " ns".into(),
            Some("microseconds") => " us".into(),
            Some("milliseconds") => " ms".into(),
            Some("seconds") => " s".into(),
            Some(unit) => format!(" {unit}"),
            None => String::new(),
        }
    }

    /// ` (ns)` (or another unit) after a column title of event `e`, when it has a unit other
    /// than a count.
    fn unit_label(&self, e: &str) -> String {
        match self.unit_suffix(e) {
            s if s.is_empty() => s,
            s => format!(" ({})", s.trim_start()),
        }
    }
}

/// The heap memory the model holds (see [`cfghub_model::ir::ModelMemory`]), in bytes.
#[derive(Serialize, Debug)]
pub struct MemoryReport {
    pub total: u64,
    /// Each part, in a fixed order.
    pub parts: BTreeMap<String, u64>,
    /// The input's size in bytes, when it is a file that is not compressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// `total` over `input`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

impl MemoryReport {
    pub fn of(profile: &Profile, input: Option<u64>) -> MemoryReport {
        let memory = profile.memory();
        let total = memory.total();
        MemoryReport {
            total,
            parts: memory.parts().iter().map(|&(name, bytes)| (name.to_string(), bytes)).collect(),
            input,
            ratio: input.filter(|&n| n > 0).map(|n| (total as f64 / n as f64 * 100.0).round() / 100.0),
        }
    }
}

/// A byte count for people: B, KB, MB or GB (powers of 1000, one decimal).
fn human_bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

#[derive(Serialize, Debug)]
pub struct ProcessReport {
    pub pid: u64,
    pub threads: usize,
    pub instr_count: Option<u64>,
    pub thread_instr_counts: Vec<u64>,
    pub executed_instructions: u64,
    pub images: Vec<ImageReport>,
    pub edges: usize,
    pub edges_by_kind: BTreeMap<String, KindReport>,
    pub stacks: usize,
    /// Per event, the sum of the stacks' values.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stack_totals: BTreeMap<String, f64>,
    /// The functions of the stacks, by self cost of the default event.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top_functions: Vec<FunctionReport>,
    pub top_routines: Vec<RoutineReport>,
    pub top_loops: Vec<LoopReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub costs_by_image: Vec<ImageCosts>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top_addresses: Vec<AddressCosts>,
    /// Routines with stated path numbering or without addresses (CSI): their acyclic paths.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path_functions: Vec<PathFunctionReport>,
}

/// A function of a profile's stacks: its self and total costs per event (pprof's flat and cum).
#[derive(Serialize, Debug)]
pub struct FunctionReport {
    pub name: String,
    #[serde(rename = "self")]
    pub self_cost: BTreeMap<String, f64>,
    pub total: BTreeMap<String, f64>,
}

/// One function of path-tracing metadata.
#[derive(Serialize, Debug)]
pub struct PathFunctionReport {
    pub name: String,
    pub blocks: usize,
    pub edges: usize,
    pub back_edges: usize,
    /// Acyclic paths; `None` when the graph cannot be numbered (`error` says why).
    pub paths: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Coverage arrays of the function: `BBC`, `CC` or `FC`, the array's name and its sites.
    pub coverage: Vec<CoverageReport>,
}

#[derive(Serialize, Debug)]
pub struct CoverageReport {
    pub kind: &'static str,
    pub array: String,
    pub sites: usize,
}

/// Costs of one image per event, as `dcpiprof -i` shows them.
#[derive(Serialize, Debug)]
pub struct ImageCosts {
    pub image: String,
    pub costs: BTreeMap<String, u64>,
    pub percent: BTreeMap<String, f64>,
}

/// Costs at one address.
#[derive(Serialize, Debug)]
pub struct AddressCosts {
    pub image: String,
    pub address: String,
    pub costs: BTreeMap<String, u64>,
}

/// Samples of a routine or loop, per sampled event.
#[derive(Serialize, Debug, Default)]
pub struct Samples {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub samples: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub samples_percent: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub samples_per_1000_instructions: BTreeMap<String, Option<f64>>,
}

#[derive(Serialize, Debug)]
pub struct ImageReport {
    pub id: u64,
    pub path: String,
    pub load_address: String,
    pub size: Option<u64>,
    pub symbols: usize,
    pub blocks: usize,
    pub routines: usize,
    pub loops: usize,
    pub source_lines: usize,
    pub costs: usize,
}

#[derive(Serialize, Debug, Default)]
pub struct KindReport {
    pub edges: usize,
    pub count: u64,
}

#[derive(Serialize, Debug)]
pub struct RoutineReport {
    pub name: String,
    pub image: String,
    pub entry: String,
    pub blocks: usize,
    pub instructions: u64,
    pub percent: f64,
    #[serde(flatten)]
    pub sampled: Samples,
}

#[derive(Serialize, Debug)]
pub struct LoopReport {
    pub routine: String,
    pub head: u64,
    pub address: String,
    pub blocks: usize,
    pub depth: usize,
    pub instructions: u64,
    pub percent: f64,
    #[serde(flatten)]
    pub sampled: Samples,
}

pub fn run(args: InfoArgs, quiet: bool) -> Result<i32> {
    // A summary never decodes a DCFG-trace's edges (a few hundred bytes can claim 10^15 of
    // them): the chunks' declared counts are enough; `cfghub trace stats` decodes.
    let options = args
        .symbols
        .reader_options(args.read.options())
        .with(dcfg_trace::Options { declared_only: true, max_edges: None });
    let mut loaded = load(&args.input, args.from.as_deref(), &options)?;
    if !quiet {
        for w in loaded.findings.items.iter().filter(|f| super::shown(f)) {
            eprintln!("cfghub: {}: {w}", args.input);
        }
    }
    let named = args.symbols.apply(&mut loaded, &args.input, quiet)?;
    args.infer.apply(&args.symbols, &mut loaded, &args.input, quiet)?;
    let mut report = build(&args.input, loaded.format, &loaded.profile, args.top);
    report.symbols = named;
    report.memory.input = cfghub_model::io::Input::open(&args.input)
        .ok()
        .filter(|i| i.compression == cfghub_model::io::Compression::None)
        .and_then(|i| i.size);
    report.memory = MemoryReport::of(&loaded.profile, report.memory.input);
    if args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| cfghub_model::error::Error::input(e.to_string()))?;
        super::print_out(&(json + "\n"))?;
    } else {
        super::print_out(&escape_controls(&render(&report)))?;
    }
    Ok(0)
}

/// The text with control characters other than line ends and tabs shown as escapes (`\0`,
/// `\x1b`), as error messages show them: names from the input never reach the terminal raw.
fn escape_controls(text: &str) -> String {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, part) in line.split('\t').enumerate() {
            if j > 0 {
                out.push('\t');
            }
            let _ = cfghub_model::error::write_escaped(&mut out, part);
        }
    }
    out
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 10000.0 / whole as f64).round() / 100.0
    }
}

/// Builds the report for a profile (`top` routines and loops per process).
pub fn build(file: &str, format: &Format, profile: &Profile, top: usize) -> Report {
    Report {
        file: file.to_string(),
        format: format.name().to_string(),
        edges_not_decoded: std::ptr::eq(format, &dcfg_trace::FORMAT),
        format_version: profile.meta.format_version.map(|(a, b)| format!("{a}.{b:02}")),
        events: profile.events.iter().map(|e| e.name.clone()).collect(),
        event_units: profile
            .events
            .iter()
            .filter_map(|e| {
                let unit = cfghub_model::ir::event_unit(&profile.meta, &e.name)?;
                (unit != "count").then(|| (e.name.clone(), unit.to_string()))
            })
            .collect(),
        processes: profile.processes.iter().map(|p| process_report(profile, p, top)).collect(),
        symbols: Vec::new(),
        memory: MemoryReport::of(profile, None),
    }
}

fn process_report(profile: &Profile, process: &Process, top: usize) -> ProcessReport {
    let executed = executions::executed_instructions(process);
    let all_routines = routines::all(process);
    let mut images = Vec::new();
    for (i, image) in process.images.iter().enumerate() {
        let rs = &all_routines[i];
        images.push(ImageReport {
            id: image.id,
            path: profile.image_name(image),
            load_address: if image.no_addresses {
                "-".to_string()
            } else {
                format!("{:#x}", image.load_addr)
            },
            size: image.size,
            symbols: image.symbols.len(),
            blocks: image.blocks.len(),
            routines: rs.len(),
            loops: rs.iter().map(|r| r.loops.len()).sum(),
            source_lines: image.source_lines.len(),
            costs: image.costs.len(),
        });
    }
    // Keyed by the kinds' static names while counting: hundreds of thousands of edges, a
    // dozen kinds.
    let mut by_kind: BTreeMap<&str, KindReport> = BTreeMap::new();
    for e in &process.edges {
        let k = by_kind.entry(e.kind.as_str()).or_default();
        k.edges += 1;
        k.count = k.count.saturating_add(e.total());
    }
    let by_kind: BTreeMap<String, KindReport> =
        by_kind.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let events = profile.events.len();
    let sampled = rankings::sampled_events(profile);
    let event_totals: Vec<u64> = (0..events)
        .map(|e| process.images.iter().fold(0u64, |s, i| s.saturating_add(i.costs.total(e))))
        .collect();
    let samples_of = |r: &rankings::Ranked| -> Samples {
        let mut s = Samples::default();
        for (&e, &n) in sampled.iter().zip(&r.samples) {
            let name = profile.events[e].name.clone();
            s.samples.insert(name.clone(), n);
            s.samples_percent.insert(name.clone(), percent(n, event_totals[e]));
            let per_k = (r.instructions > 0)
                .then(|| (n as f64 * 1000.0 / r.instructions as f64 * 1000.0).round() / 1000.0);
            s.samples_per_1000_instructions.insert(name, per_k);
        }
        s
    };
    let (ranked_routines, ranked_loops) = rankings::routines_and_loops(profile, process, &all_routines, top);
    let top_routines = ranked_routines
        .iter()
        .map(|r| {
            let image = &process.images[r.image];
            let entry = &image.blocks[all_routines[r.image][r.routine].entry as usize];
            RoutineReport {
                name: r.name.clone(),
                image: names::image_base_name(profile, image),
                entry: if image.no_addresses {
                    "-".to_string()
                } else {
                    format!("{:#x}", image.load_addr.wrapping_add(entry.offset))
                },
                blocks: all_routines[r.image][r.routine].nodes.len(),
                instructions: r.instructions,
                percent: percent(r.instructions, executed),
                sampled: samples_of(r),
            }
        })
        .collect();
    let top_loops = ranked_loops
        .iter()
        .map(|r| {
            let image = &process.images[r.image];
            let loops = &all_routines[r.image][r.routine].loops;
            let k = r.r#loop.unwrap_or(0);
            let l = &loops[k];
            let head = &image.blocks[l.head as usize];
            LoopReport {
                routine: r.name.clone(),
                head: image.display_id(l.head),
                address: if image.no_addresses {
                    "-".to_string()
                } else {
                    format!("{:#x}", image.load_addr.wrapping_add(head.offset))
                },
                blocks: l.nodes.len(),
                depth: loops::depth(loops, k),
                instructions: r.instructions,
                percent: percent(r.instructions, executed),
                sampled: samples_of(r),
            }
        })
        .collect();
    let costs_by_image = rankings::images_by_cost(profile, process)
        .into_iter()
        .map(|i| {
            let image = &process.images[i];
            let mut costs = BTreeMap::new();
            let mut pct = BTreeMap::new();
            for (e, ev) in profile.events.iter().enumerate() {
                let n = image.costs.total(e);
                costs.insert(ev.name.clone(), n);
                pct.insert(ev.name.clone(), percent(n, event_totals[e]));
            }
            ImageCosts { image: names::image_base_name(profile, image), costs, percent: pct }
        })
        .collect();
    let top_addresses = rankings::hottest_addresses(process, events, top)
        .into_iter()
        .map(|hot| {
            let image = &process.images[hot.image];
            let costs = profile
                .events
                .iter()
                .enumerate()
                .map(|(e, ev)| (ev.name.clone(), image.costs.value(hot.row, e)))
                .collect();
            AddressCosts {
                image: names::image_base_name(profile, image),
                address: format!("{:#x}", hot.address),
                costs,
            }
        })
        .collect();
    let (stack_totals, top_functions) = stack_report(profile, process, top);
    ProcessReport {
        pid: process.pid,
        threads: process.thread_count(),
        instr_count: process.instr_count,
        thread_instr_counts: process.thread_instr_counts.clone(),
        executed_instructions: executed,
        images,
        edges: process.edges.len(),
        edges_by_kind: by_kind,
        stacks: process.stacks.len(),
        stack_totals,
        top_functions,
        top_routines,
        top_loops,
        costs_by_image,
        top_addresses,
        path_functions: path_functions(profile, process, &all_routines),
    }
}

/// The totals of a process's stacks per event and its top functions (none without stacks).
fn stack_report(
    profile: &Profile,
    process: &Process,
    top: usize,
) -> (BTreeMap<String, f64>, Vec<FunctionReport>) {
    if process.stacks.is_empty() {
        return (BTreeMap::new(), Vec::new());
    }
    let by = cfghub_analysis::events::stated_default(profile);
    let (totals, functions) = rankings::stack_functions(profile, process, by, top);
    let per_event = |values: &[f64]| -> BTreeMap<String, f64> {
        profile.events.iter().zip(values).map(|(e, &v)| (e.name.clone(), v)).collect()
    };
    let functions = functions
        .iter()
        .map(|f| FunctionReport {
            name: profile.frames.get(f.frame).to_string(),
            self_cost: per_event(&f.self_cost),
            total: per_event(&f.total),
        })
        .collect();
    (per_event(&totals), functions)
}

/// Per function of an image without addresses (CSI), or any routine whose input numbered its
/// paths: blocks, edges, back edges, acyclic paths and coverage arrays; functions with coverage
/// arrays but no graph too.
fn path_functions(
    profile: &Profile,
    process: &Process,
    all: &[std::borrow::Cow<'_, [Routine]>],
) -> Vec<PathFunctionReport> {
    let mut out = Vec::new();
    let stated = process.edges.iter().any(|e| e.path().is_some());
    for (i, image) in process.images.iter().enumerate() {
        if !image.no_addresses && !stated && image.coverage.is_empty() {
            continue;
        }
        let index = names::SymbolIndex::new(image);
        let rs: &[Routine] = &all[i];
        let mut named = vec![false; image.symbols.len()];
        for (r, rp) in rs.iter().zip(path_graph::routine_paths(process, i, rs)) {
            let (paths, error) = match rp.dag() {
                Ok(d) => (Some(d.paths()), None),
                Err(e) => (None, Some(e.to_string())),
            };
            if let Some(s) = r.symbol {
                if let Some(n) = named.get_mut(s as usize) {
                    *n = true;
                }
            }
            out.push(PathFunctionReport {
                name: names::routine_name(profile, image, &index, r),
                blocks: r.nodes.len(),
                edges: rp.graph.edges.len(),
                back_edges: rp.graph.edges.iter().filter(|e| e.back).count(),
                paths,
                error,
                coverage: r.symbol.map(|s| coverage_of(image, s)).unwrap_or_default(),
            });
        }
        for (s, sym) in image.symbols.iter().enumerate() {
            if !named[s] && image.coverage.iter().any(|c| c.symbol == s as u32) {
                out.push(PathFunctionReport {
                    name: sym.name.clone(),
                    blocks: 0,
                    edges: 0,
                    back_edges: 0,
                    paths: None,
                    error: None,
                    coverage: coverage_of(image, s as u32),
                });
            }
        }
    }
    out
}

fn coverage_of(image: &Image, symbol: u32) -> Vec<CoverageReport> {
    image
        .coverage
        .iter()
        .filter(|c| c.symbol == symbol)
        .map(|c| CoverageReport {
            kind: match c.kind {
                CoverageKind::Block => "BBC",
                CoverageKind::Call => "CC",
                CoverageKind::Function => "FC",
            },
            array: c.array.clone(),
            sites: c.sites.len(),
        })
        .collect()
}

/// One line: the model's memory, against the input's size when known, and its parts.
fn render_memory(m: &MemoryReport) -> String {
    let parts: Vec<String> = m
        .parts
        .iter()
        .filter(|p| *p.1 > 0)
        .map(|(name, &bytes)| format!("{name} {}", human_bytes(bytes)))
        .collect();
    let ratio = m.ratio.map_or(String::new(), |r| format!(", {r:.2}x the input"));
    format!("memory:   {} in the model{ratio} ({})\n", human_bytes(m.total), parts.join(", "))
}

/// The report as aligned text tables.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(&format!("file:     {}\nformat:   {}", report.file, report.format));
    if let Some(v) = &report.format_version {
        out.push_str(&format!(" {v}"));
    }
    out.push('\n');
    if !report.events.is_empty() {
        let named: Vec<String> = report
            .events
            .iter()
            .map(|e| match report.event_units.get(e) {
                Some(unit) => format!("{e} ({unit})"),
                None => e.clone(),
            })
            .collect();
        out.push_str(&format!("events:   {}\n", named.join(" ")));
    }
    out.push_str(&format!("processes: {}\n", report.processes.len()));
    out.push_str(&render_memory(&report.memory));
    for p in &report.processes {
        render_process_summary(&mut out, report, p);
        render_images_and_edges(&mut out, p);
        render_top_functions(&mut out, report, p);
        render_costs_by_image(&mut out, report, p);
        render_top_addresses(&mut out, report, p);
        render_path_functions(&mut out, p);
        let samples = SampleColumns::of(report, p);
        render_top_routines(&mut out, p, &samples);
        render_top_loops(&mut out, p, &samples);
    }
    render_symbols(&mut out, report);
    out
}

/// A process's first lines: threads, instructions, stacks.
fn render_process_summary(out: &mut String, report: &Report, p: &ProcessReport) {
    out.push_str(&format!("\nprocess {}", p.pid));
    if p.threads > 0 {
        out.push_str(&format!(": {} thread(s)", p.threads));
    }
    if let Some(n) = p.instr_count {
        out.push_str(&format!(", INSTR_COUNT {n}"));
    }
    out.push('\n');
    if p.thread_instr_counts.len() > 1 {
        let per: Vec<String> = p.thread_instr_counts.iter().map(|c| c.to_string()).collect();
        out.push_str(&format!("  instructions per thread: {}\n", per.join(" ")));
    }
    if p.images.iter().any(|i| i.blocks > 0) {
        out.push_str(&format!(
            "  instructions executed in blocks (NUM_INSTRS x COUNT): {}\n",
            p.executed_instructions
        ));
    }
    if p.stacks > 0 {
        out.push_str(&format!("  stacks: {}\n", p.stacks));
        let totals: Vec<String> = report
            .events
            .iter()
            .filter_map(|e| {
                p.stack_totals.get(e).map(|v| format!("{e} {}{}", number(*v), report.unit_suffix(e)))
            })
            .collect();
        if !totals.is_empty() {
            out.push_str(&format!("  stack totals: {}\n", totals.join(", ")));
        }
    }
    if report.edges_not_decoded {
        out.push_str(&format!(
            "  edges: not decoded here (`cfghub trace stats {}` decodes and counts them)\n",
            report.file
        ));
    }
}

/// The table of a process's images, and of its edges by kind.
fn render_images_and_edges(out: &mut String, p: &ProcessReport) {
    let mut t = Table::new(
        &["image", "path", "load address", "size", "symbols", "blocks", "routines", "loops"],
        &[0, 3, 4, 5, 6, 7],
    );
    for i in &p.images {
        t.row(vec![
            i.id.to_string(),
            i.path.clone(),
            i.load_address.clone(),
            i.size.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
            i.symbols.to_string(),
            i.blocks.to_string(),
            i.routines.to_string(),
            i.loops.to_string(),
        ]);
    }
    out.push('\n');
    out.push_str(&indent(&t.render()));
    if p.edges > 0 {
        let mut t = Table::new(&["edge kind", "edges", "traversals"], &[1, 2]);
        for (k, v) in &p.edges_by_kind {
            t.row(vec![k.clone(), v.edges.to_string(), v.count.to_string()]);
        }
        t.row(vec![
            "total".into(),
            p.edges.to_string(),
            p.edges_by_kind.values().map(|v| v.count).sum::<u64>().to_string(),
        ]);
        out.push('\n');
        out.push_str(&indent(&t.render()));
    }
}

/// Each image's cost per event, with its share and the running share.
fn render_costs_by_image(out: &mut String, report: &Report, p: &ProcessReport) {
    if p.costs_by_image.is_empty() {
        return;
    }
    let mut header: Vec<String> = vec!["image".into()];
    for e in &report.events {
        header.extend([format!("{e}{}", report.unit_label(e)), "%".into(), "cum%".into()]);
    }
    let h: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    let right: Vec<usize> = (1..h.len()).collect();
    let mut t = Table::new(&h, &right);
    let mut cum = vec![0.0f64; report.events.len()];
    for i in &p.costs_by_image {
        let mut row = vec![i.image.clone()];
        for (k, e) in report.events.iter().enumerate() {
            let pc = i.percent.get(e).copied().unwrap_or(0.0);
            cum[k] += pc;
            row.extend([
                i.costs.get(e).copied().unwrap_or(0).to_string(),
                format!("{pc:.2}"),
                format!("{:.2}", cum[k].min(100.0)),
            ]);
        }
        t.row(row);
    }
    out.push_str("\n  costs by image\n");
    out.push_str(&indent(&t.render()));
}

/// The addresses with the highest cost in the first event.
fn render_top_addresses(out: &mut String, report: &Report, p: &ProcessReport) {
    if p.top_addresses.is_empty() {
        return;
    }
    let mut header: Vec<&str> = vec!["address", "image"];
    header.extend(report.events.iter().map(|e| e.as_str()));
    let right: Vec<usize> = (2..header.len()).collect();
    let mut t = Table::new(&header, &right);
    for a in &p.top_addresses {
        let mut row = vec![a.address.clone(), a.image.clone()];
        row.extend(report.events.iter().map(|e| a.costs.get(e).copied().unwrap_or(0).to_string()));
        t.row(row);
    }
    out.push_str(&format!(
        "\n  hottest addresses by {}\n",
        report.events.first().map(|s| s.as_str()).unwrap_or("cost")
    ));
    out.push_str(&indent(&t.render()));
}

/// The functions of a path-tracing profile: their graphs, acyclic paths and coverage arrays.
fn render_path_functions(out: &mut String, p: &ProcessReport) {
    if p.path_functions.is_empty() {
        return;
    }
    let mut t = Table::new(
        &["function", "blocks", "edges", "back edges", "acyclic paths", "coverage arrays"],
        &[1, 2, 3, 4],
    );
    for f in &p.path_functions {
        let cov: Vec<String> =
            f.coverage.iter().map(|c| format!("{} {} ({} sites)", c.kind, c.array, c.sites)).collect();
        t.row(vec![
            f.name.clone(),
            f.blocks.to_string(),
            f.edges.to_string(),
            f.back_edges.to_string(),
            match (&f.paths, &f.error) {
                (Some(n), _) => n.to_string(),
                (None, Some(e)) => format!("- ({e})"),
                (None, None) => "-".to_string(),
            },
            if cov.is_empty() { "-".to_string() } else { cov.join(", ") },
        ]);
    }
    out.push_str("\n  functions (path tracing)\n");
    out.push_str(&indent(&t.render()));
}

/// The sample columns of the routine and loop tables: for each sampled event (all but `Ir`),
/// the samples, their share and the samples per 1,000 instructions; none where no routine has
/// samples.
struct SampleColumns<'r> {
    events: Vec<&'r String>,
    shown: bool,
}

impl<'r> SampleColumns<'r> {
    fn of(report: &'r Report, p: &ProcessReport) -> Self {
        SampleColumns {
            events: report.events.iter().filter(|e| *e != "Ir").collect(),
            shown: p.top_routines.iter().any(|r| !r.sampled.samples.is_empty()),
        }
    }

    /// The header `base` followed by the sample columns; numbers from column 3 on are
    /// right-aligned.
    fn header(&self, base: &[&str]) -> (Vec<String>, Vec<usize>) {
        let mut h: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        if self.shown {
            for e in &self.events {
                h.extend([e.to_string(), format!("{e} %"), format!("{e}/1k instr")]);
            }
        }
        let right = (3..h.len()).collect();
        (h, right)
    }

    /// Appends the sample cells of `s` to `row`.
    fn cells(&self, s: &Samples, row: &mut Vec<String>) {
        if !self.shown {
            return;
        }
        for e in &self.events {
            row.push(s.samples.get(*e).copied().unwrap_or(0).to_string());
            row.push(format!("{:.2}", s.samples_percent.get(*e).copied().unwrap_or(0.0)));
            row.push(match s.samples_per_1000_instructions.get(*e).copied().flatten() {
                Some(v) => format!("{v:.3}"),
                None => "-".into(),
            });
        }
    }
}

/// The hottest routines, by samples where there are any, else by instructions executed.
fn render_top_routines(out: &mut String, p: &ProcessReport, samples: &SampleColumns<'_>) {
    let rows = p.top_routines.iter().map(|r| {
        let cells = vec![
            r.name.clone(),
            r.image.clone(),
            r.entry.clone(),
            r.blocks.to_string(),
            r.instructions.to_string(),
            format!("{:.2}", r.percent),
        ];
        (cells, &r.sampled)
    });
    let columns = ["routine", "image", "entry", "blocks", "instructions", "%"];
    render_ranked(out, samples, "routines", &columns, &[], rows);
}

/// The hottest loops, by samples where there are any, else by instructions executed.
fn render_top_loops(out: &mut String, p: &ProcessReport, samples: &SampleColumns<'_>) {
    let rows = p.top_loops.iter().map(|l| {
        let cells = vec![
            l.head.to_string(),
            l.address.clone(),
            l.routine.clone(),
            l.depth.to_string(),
            l.blocks.to_string(),
            l.instructions.to_string(),
            format!("{:.2}", l.percent),
        ];
        (cells, &l.sampled)
    });
    let columns = ["loop head", "address", "routine", "depth", "blocks", "instructions", "%"];
    render_ranked(out, samples, "loops", &columns, &[0], rows);
}

/// A ranking of `what` (routines, loops) under its title, the sample columns after `columns`;
/// `also_right` names more columns aligned right. Nothing when there are no rows.
fn render_ranked<'r>(
    out: &mut String,
    samples: &SampleColumns<'_>,
    what: &str,
    columns: &[&str],
    also_right: &[usize],
    rows: impl ExactSizeIterator<Item = (Vec<String>, &'r Samples)>,
) {
    if rows.len() == 0 {
        return;
    }
    let (h, mut right) = samples.header(columns);
    right.extend_from_slice(also_right);
    let h: Vec<&str> = h.iter().map(|s| s.as_str()).collect();
    let mut t = Table::new(&h, &right);
    for (mut row, sampled) in rows {
        samples.cells(sampled, &mut row);
        t.row(row);
    }
    let by = if samples.shown { "samples" } else { "instructions executed" };
    out.push_str(&format!("\n  top {what} by {by}\n"));
    out.push_str(&indent(&t.render()));
}

/// What symbolization found for each image: its debug or symbol file and what it named.
fn render_symbols(out: &mut String, report: &Report) {
    if report.symbols.is_empty() {
        return;
    }
    out.push_str("\nsymbols:\n");
    for s in &report.symbols {
        out.push_str(&format!("  process {} image {}", s.pid, s.image));
        if let Some(id) = &s.build_id {
            out.push_str(&format!(" (build id {id})"));
        }
        out.push('\n');
        match (&s.debug_file, &s.symbol_file) {
            (Some(d), _) => out.push_str(&format!("    debug file: {d}\n")),
            (None, Some(f)) => out.push_str(&format!("    symbol table only: {f}\n")),
            (None, None) => out.push_str("    nothing found\n"),
        }
        if s.addresses > 0 {
            out.push_str(&format!(
                "    {} address(es): {} function(s), {} with a source line, {} with inlined frames \
                 ({} frames), {} left unnamed\n",
                s.addresses, s.functions, s.lines, s.inlined_addresses, s.inline_frames, s.unnamed
            ));
        }
        if let Some(n) = &s.note {
            out.push_str(&format!("    {n}\n"));
        }
    }
}

/// The top functions of a process's stacks: self and total per event, with their shares.
fn render_top_functions(out: &mut String, report: &Report, p: &ProcessReport) {
    if p.top_functions.is_empty() {
        return;
    }
    let mut header: Vec<String> = vec!["function".into()];
    for e in &report.events {
        let unit = report.unit_label(e);
        header.extend([format!("self {e}{unit}"), "%".into(), format!("total {e}{unit}"), "%".into()]);
    }
    let h: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    let right: Vec<usize> = (1..h.len()).collect();
    let mut t = Table::new(&h, &right);
    for f in &p.top_functions {
        let mut row = vec![f.name.replace(['\n', '\r'], " ")];
        for e in &report.events {
            let whole = p.stack_totals.get(e).copied().unwrap_or(0.0);
            let share = |v: f64| if whole != 0.0 { format!("{:.2}", v * 100.0 / whole) } else { "-".into() };
            let (own, total) =
                (f.self_cost.get(e).copied().unwrap_or(0.0), f.total.get(e).copied().unwrap_or(0.0));
            row.extend([number(own), share(own), number(total), share(total)]);
        }
        t.row(row);
    }
    out.push_str("\n  top functions of the stacks (self: stacks ending in it; total: stacks through it)\n");
    out.push_str(&indent(&t.render()));
}

/// A stack value as folded stacks write it: an integer when it is one.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}
