//! `cfghub merge PROFILE... -o OUT`: any number of profiles summed exactly
//! (`cfghub_analysis::sum`), read one at a time; or, when the first input is a control-flow
//! graph (a DCFG, with basic blocks) and the second has none, sampled addresses (DCPI, perf,
//! pprof) attributed to the graph's blocks (`cfghub_analysis::merge`).

use clap::Args;

use super::convert::{ReadArgs, WriteArgs};
use cfghub_analysis::combine::combine;
use cfghub_analysis::merge::{merge, MergeOptions, MergeReport, OUTSIDE_BLOCKS};
use cfghub_analysis::sum::ProfileSum;
use cfghub_formats::convert::{load, save};
use cfghub_model::error::{Error, Findings, Result};

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The profiles, in any readable formats, summed: events matched by name and unit,
    /// processes by program, images by build id or path, stacks by path. When the first is a
    /// control-flow graph (a DCFG, or any profile with basic blocks) and the second has no
    /// blocks, the rest are sample profiles (DCPI, perf.data, pprof) whose sampled addresses
    /// are attributed to the graph's blocks.
    #[arg(required_unless_present = "inputs_from")]
    pub inputs: Vec<String>,
    /// More inputs: the paths listed in FILE, one per line (- reads them from standard input),
    /// after those on the command line.
    #[arg(long, value_name = "FILE")]
    pub inputs_from: Option<String>,
    /// Output file, or - for standard output. Its name picks the format unless --to is given
    /// (callgrind.out.*, *.dcfg.json, *.dot, ...).
    #[arg(short, long)]
    pub output: String,
    /// Output format (see `cfghub formats`).
    #[arg(long)]
    pub to: Option<String>,
    /// Input format, for every input; detected from content and name when absent.
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
    #[command(flatten)]
    pub labels: super::convert::LabelArgs,
}

/// Parses `0x1f00` or `7936`.
pub fn parse_address(s: &str) -> std::result::Result<u64, String> {
    cfghub_model::json::parse_int(s)
        .ok_or_else(|| format!("expected an address (0xHEX or decimal), found {s:?}"))
}

pub fn run(mut args: MergeArgs, quiet: bool) -> Result<i32> {
    // Before any input is read (and any thread of the pool started).
    cfghub_model::mem::reuse_allocations_across_inputs();
    if let Some(list) = args.inputs_from.as_deref() {
        args.inputs.extend(listed_inputs(list)?);
    }
    if args.inputs.is_empty() {
        return Err(Error::usage("no inputs to merge")
            .with_hint("name the profiles, or list them with --inputs-from FILE"));
    }
    let mut inputs: Vec<&str> = args.inputs.iter().map(String::as_str).collect();
    inputs.extend(args.symbols.paths());
    cfghub_model::io::check_not_an_input(&args.output, &inputs)?;
    let options = args.read.options();
    let labelling = args.labels.parsed()?;
    let read = |path: &str| -> Result<cfghub_formats::convert::Loaded> {
        let mut loaded = load(path, args.from.as_deref(), &options)?;
        super::check_findings(path, &loaded.findings, quiet)?;
        args.symbols.apply(&mut loaded, path, quiet)?;
        labelling.apply(&mut loaded.profile, path, quiet)?;
        Ok(loaded)
    };
    let has_blocks = |p: &cfghub_model::ir::Profile| {
        p.processes.iter().any(|p| p.images.iter().any(|i| !i.blocks.is_empty()))
    };
    let first = read(&args.inputs[0])?;
    let second = args.inputs.get(1).map(|s| read(s)).transpose()?;
    match second {
        Some(second) if has_blocks(&first.profile) && !has_blocks(&second.profile) => {
            attribute(&args, first, second, read, &inputs, quiet)
        }
        second => {
            let mut sum = sum_all(&args.inputs, first.profile, second.map(|s| s.profile), &read)?;
            if let Some(key) = args.labels.split_by.as_deref() {
                cfghub_analysis::labels::split_by(&mut sum, key);
            }
            let options = args.labels.write_options(args.write.options());
            let findings = save(&sum, &args.output, args.to.as_deref(), &inputs, &options)?;
            super::check_findings(&args.output, &findings, quiet)?;
            Ok(0)
        }
    }
}

/// The sum of the profiles at `paths`, the first two (`first`, `second`) already read. The
/// rest are split into as many runs of neighbours as there are threads, each run read and
/// summed apart, and the runs' sums added in input order: integers add up the same in any
/// grouping, and things first met keep their order, so the sum is the one of reading the
/// inputs one by one.
fn sum_all(
    paths: &[String],
    first: cfghub_model::ir::Profile,
    second: Option<cfghub_model::ir::Profile>,
    read: &(dyn Fn(&str) -> Result<cfghub_formats::convert::Loaded> + Sync),
) -> Result<cfghub_model::ir::Profile> {
    use rayon::prelude::*;
    let rest = paths.get(2..).unwrap_or_default();
    let per_thread = rest.len().div_ceil(rayon::current_num_threads().max(1)).max(1);
    let runs: Vec<Result<cfghub_model::ir::Profile>> = rest
        .par_chunks(per_thread)
        .map(|run| {
            let mut sum = ProfileSum::new();
            for path in run {
                sum.add(read(path)?.profile).map_err(|e| e.in_file(path))?;
            }
            Ok(sum.finish())
        })
        .collect();
    let mut total = ProfileSum::new();
    total.add(first).map_err(|e| e.in_file(&paths[0]))?;
    if let Some(second) = second {
        total.add(second).map_err(|e| e.in_file(&paths[1]))?;
    }
    for (run, sum) in rest.chunks(per_thread).zip(runs) {
        let named = format!("{} to {}", run[0], run[run.len() - 1]);
        total.add(sum?).map_err(|e| e.in_file(named))?;
    }
    Ok(total.finish())
}

/// The paths `list` names, one per line (blank lines left out); `-` reads standard input.
fn listed_inputs(list: &str) -> Result<Vec<String>> {
    let text = if list == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| Error::io("standard input", e))?
    } else {
        std::fs::read_to_string(list).map_err(|e| Error::io(list, e))?
    };
    Ok(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect())
}

/// Sampled addresses attributed to the blocks of `graph` (the first input): the rest of the
/// inputs, the `first_samples` among them, are combined into one sample profile.
fn attribute(
    args: &MergeArgs,
    graph: cfghub_formats::convert::Loaded,
    first_samples: cfghub_formats::convert::Loaded,
    read: impl Fn(&str) -> Result<cfghub_formats::convert::Loaded>,
    inputs: &[&str],
    quiet: bool,
) -> Result<i32> {
    let sample_paths = &args.inputs[1..];
    let mut profiles = vec![first_samples.profile];
    for s in &sample_paths[1..] {
        profiles.push(read(s)?.profile);
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
    nothing_attributed(&report, &graph_images, &args.inputs[0], sample_paths)?;
    if !quiet {
        eprint!("{}", describe(&report, args.list, &units));
    }
    let findings = save(&merged, &args.output, args.to.as_deref(), inputs, &args.write.options())?;
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
