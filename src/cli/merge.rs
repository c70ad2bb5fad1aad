//! `cfghub merge GRAPH SAMPLES... -o OUT`: sampled addresses (DCPI) attributed to the basic
//! blocks of a control-flow graph (DCFG). The rules are in `cfghub_analysis::merge`.

use clap::Args;

use super::convert::{ReadArgs, WriteArgs};
use cfghub_analysis::combine::combine;
use cfghub_analysis::merge::{merge, MergeOptions, MergeReport, OUTSIDE_BLOCKS};
use cfghub_formats::convert::{load, save};
use cfghub_model::error::{Error, Findings, Result};

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The control-flow graph: a DCFG (or any profile with basic blocks).
    pub graph: String,
    /// Sample profiles with samples at instruction addresses: DCPI files or dcpicat dumps (one
    /// per event or per image), perf.data (`perf record`, call chains not needed), pprof.
    #[arg(required = true)]
    pub samples: Vec<String>,
    /// Output file, or - for standard output. Its name picks the format unless --to is given
    /// (callgrind.out.*, *.dcfg.json, *.dot, ...).
    #[arg(short, long)]
    pub output: String,
    /// Output format (see `cfghub formats`).
    #[arg(long)]
    pub to: Option<String>,
    /// Graph format; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// The graph image the samples belong to (full path or base name), when the sample
    /// profile names it differently or not at all.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Where the sampled text starts in the graph's address space (hex with 0x, or decimal);
    /// default: the graph image's load address.
    #[arg(long, value_name = "ADDRESS", value_parser = parse_address)]
    pub base: Option<u64>,
    #[command(flatten)]
    pub read: ReadArgs,
    /// How many unattributed addresses to list on standard error.
    #[arg(long, default_value_t = 20)]
    pub list: usize,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub symbols: super::symbols::SymbolArgs,
}

/// Parses `0x1f00` or `7936`.
pub fn parse_address(s: &str) -> std::result::Result<u64, String> {
    cfghub_model::json::parse_int(s)
        .ok_or_else(|| format!("expected an address (0xHEX or decimal), found {s:?}"))
}

pub fn run(args: MergeArgs, quiet: bool) -> Result<i32> {
    let mut inputs: Vec<&str> = vec![&args.graph];
    inputs.extend(args.samples.iter().map(|s| s.as_str()));
    inputs.extend(args.symbols.paths());
    cfghub_model::io::check_not_an_input(&args.output, &inputs)?;
    let options = args.read.options();
    let mut graph = load(&args.graph, args.from.as_deref(), &options)?;
    super::check_findings(&args.graph, &graph.findings, quiet)?;
    args.symbols.apply(&mut graph, &args.graph, quiet)?;
    if graph.profile.processes.iter().all(|p| p.images.iter().all(|i| i.blocks.is_empty())) {
        return Err(Error::usage(format!("{} has no basic blocks to attribute samples to", args.graph))
            .with_hint("the first input is the control-flow graph (a DCFG); the sample profiles follow"));
    }
    let mut profiles = Vec::new();
    for s in &args.samples {
        let mut loaded = load(s, None, &options)?;
        super::check_findings(s, &loaded.findings, quiet)?;
        args.symbols.apply(&mut loaded, s, quiet)?;
        profiles.push(loaded.profile);
    }
    let mut findings = Findings::default();
    let samples = combine(profiles, &mut findings)?;
    super::check_findings("merge", &findings, quiet)?;
    let merge_options = MergeOptions { image: args.image.clone(), base: args.base };
    let graph_images: Vec<String> = graph
        .profile
        .processes
        .iter()
        .flat_map(|p| p.images.iter().filter(|i| !i.blocks.is_empty()).map(|i| graph.profile.image_name(i)))
        .collect();
    let units: Vec<&str> = samples
        .events
        .iter()
        .map(|e| match cfghub_model::ir::event_unit(&samples.meta, &e.name) {
            Some("nanoseconds") => "ns",
            Some("bytes") => "bytes",
            _ => "sample(s)",
        })
        .collect();
    let (merged, report) = merge(graph.profile, &samples, &merge_options)?;
    nothing_attributed(&report, &graph_images, &args.graph, &args.samples)?;
    if !quiet {
        eprint!("{}", describe(&report, args.list, &units));
    }
    let findings = save(&merged, &args.output, args.to.as_deref(), &inputs, &args.write.options())?;
    super::check_findings(&args.output, &findings, quiet)?;
    Ok(0)
}

/// A merge that placed none of its samples in a block is an error (exit 2) that names the
/// images on both sides: the graph's and the samples', which is what failed to match.
fn nothing_attributed(
    report: &MergeReport,
    graph_images: &[String],
    graph: &str,
    samples: &[String],
) -> Result<()> {
    let sampled = report.unattributed_totals.iter().any(|&v| v > 0);
    if !sampled || report.attributed.iter().any(|&v| v > 0) {
        return Ok(());
    }
    let shown = |names: &mut dyn Iterator<Item = &str>| {
        let mut list: Vec<&str> = names.collect();
        list.dedup();
        let more = list.len().saturating_sub(5);
        list.truncate(5);
        format!("{}{}", list.join(", "), if more > 0 { format!(" and {more} more") } else { String::new() })
    };
    let sample_images = shown(&mut report.matches.iter().map(|m| m.0.as_str()));
    Err(Error::input(format!(
        "none of the samples of {} lies in a block of {graph}: the samples are of {sample_images}, the \
         graph's blocks of {}",
        samples.join(", "),
        shown(&mut graph_images.iter().map(String::as_str))
    ))
    .with_hint("the samples and the graph must come from the same binary; --image NAME picks the graph's image, --base ADDRESS its load address"))
}

/// The merge report as lines for standard error; `units` names what each event's values count.
pub fn describe(report: &MergeReport, list: usize, units: &[&str]) -> String {
    let mut out = String::new();
    for (sample, graph) in &report.matches {
        match graph {
            Some(g) => out.push_str(&format!("cfghub: merge: samples of {sample} -> graph image {g}\n")),
            None => out.push_str(&format!(
                "cfghub: merge: samples of {sample} match no graph image (name one with --image); \
                 kept as an image of their own under {OUTSIDE_BLOCKS}\n"
            )),
        }
    }
    for (e, name) in report.events.iter().enumerate() {
        out.push_str(&format!(
            "cfghub: merge: {}: {} {unit} attributed to blocks, {} {unit} in no block\n",
            name.strip_suffix(':').unwrap_or(name),
            report.attributed[e],
            report.unattributed_totals[e],
            unit = units.get(e).copied().unwrap_or("sample(s)")
        ));
    }
    if report.unattributed_addresses > 0 {
        out.push_str(&format!(
            "cfghub: merge: {} sampled address(es) lie in no block (kept, under {OUTSIDE_BLOCKS}):\n",
            report.unattributed_addresses
        ));
        for u in report.unattributed.iter().take(list) {
            let values: Vec<String> =
                report.events.iter().zip(&u.values).map(|(n, v)| format!("{n}={v}")).collect();
            out.push_str(&format!("  {:#x}  {}  {}\n", u.address, u.image, values.join(" ")));
        }
        if report.unattributed_addresses > list {
            out.push_str(&format!(
                "  ... and {} more (--list N shows more)\n",
                report.unattributed_addresses - list.min(report.unattributed_addresses)
            ));
        }
    }
    out
}
