//! `cfghub overlap A B`: how close two profiles of one program are, on the binary's basic
//! blocks (`cfghub_analysis::overlap`): function, block and edge overlap as LLVM defines them,
//! and how many blocks conserve flow; per hot function and in total, as text or `--json`.

use clap::Args;

use super::table::Table;
use cfghub_analysis::overlap::{overlap, Overlap, Side};
use cfghub_formats::convert::{load, Loaded};
use cfghub_formats::format::ReadOptions;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::{write_error, write_output};

#[derive(Args, Debug)]
pub struct OverlapArgs {
    /// The first profile: the reference whose hot functions are compared (the truth, when
    /// one profile is exact).
    pub first: String,
    /// The second profile.
    pub second: String,
    /// Output file, or - (the default) for standard output.
    #[arg(short, long, default_value = "-")]
    pub output: String,
    /// Compare block by block the functions holding this fraction of the first profile's
    /// executed instructions.
    #[arg(long, default_value_t = 0.9, value_name = "FRACTION")]
    pub hot: f64,
    /// The event whose samples weigh a profile without blocks (default: the first).
    #[arg(long)]
    pub event: Option<String>,
    /// Machine-readable output: one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub symbols: super::symbols::SymbolArgs,
    #[command(flatten)]
    pub infer: super::symbols::InferArgs,
}

pub fn run(args: OverlapArgs, quiet: bool) -> Result<i32> {
    if !(0.0..=1.0).contains(&args.hot) || args.hot == 0.0 {
        return Err(Error::usage(format!("--hot {} is not a fraction above 0 and at most 1", args.hot)));
    }
    let mut inputs = vec![args.first.as_str(), args.second.as_str()];
    inputs.extend(args.symbols.paths());
    cfghub_model::io::check_not_an_input(&args.output, &inputs)?;
    let read = |name: &str| -> Result<Loaded> {
        let mut loaded = load(name, None, &args.symbols.reader_options(ReadOptions::default()))?;
        super::check_findings(name, &loaded.findings, quiet)?;
        args.infer.apply(&args.symbols, &mut loaded, name, quiet)?;
        Ok(loaded)
    };
    // The two profiles are read at once: each read is one core's work for the most part.
    let (first, second) = rayon::join(|| read(&args.first), || read(&args.second));
    let (first, second) = (first?, second?);
    let event = |l: &Loaded, name: &str| -> Result<usize> {
        let event = match &args.event {
            None => 0,
            Some(e) => l.profile.event_index(e).ok_or_else(|| {
                Error::usage(format!("{name} has no event {e:?}")).with_hint(format!(
                    "its events: {}",
                    l.profile.events.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", ")
                ))
            })?,
        };
        Ok(event)
    };
    let mut findings = Findings::default();
    let result = overlap(
        &side(&first, event(&first, &args.first)?),
        &side(&second, event(&second, &args.second)?),
        &args.symbols.options(),
        args.hot,
        &mut findings,
    )?;
    super::check_findings(&args.second, &findings, quiet)?;
    let text = if args.json {
        let mut t = serde_json::to_string_pretty(&result).map_err(|e| Error::input(e.to_string()))?;
        t.push('\n');
        t
    } else {
        render(&result, &args.first, &args.second)
    };
    write_output(&args.output, &inputs, |out| {
        out.write_all(text.as_bytes()).map_err(write_error(&args.output))
    })?;
    Ok(0)
}

fn render(o: &Overlap, first: &str, second: &str) -> String {
    let balanced = |b: Option<[u64; 2]>| b.map_or("-".to_string(), |[k, n]| format!("{k} of {n}"));
    let discontinuity = |d: Option<f64>| d.map_or("-".to_string(), |d| format!("{:.2}%", d * 100.0));
    let h = &o.hot_blocks;
    let mut out = format!(
        "first:  {first}\nsecond: {second}\n\nfunction overlap  {:.4}\nblock overlap     {:.4}  (the {} function(s) holding {:.1}% of the first's executed instructions)\nedge overlap      {}\nhot-block overlap {:.4}  ({} hot in both, {} in the first only, {} in the second only)\nblocks conserving flow: first {}, second {}\nCFG discontinuity (95th percentile): first {}, second {}\n\n",
        o.functions,
        o.blocks,
        o.per_function.len(),
        o.hot_fraction * 100.0,
        o.edges.map_or("-  (a profile without edges)".to_string(), |e| format!("{e:.4}")),
        h.overlap,
        h.common,
        h.unique[0],
        h.unique[1],
        balanced(o.balanced[0]),
        balanced(o.balanced[1]),
        discontinuity(o.discontinuity[0]),
        discontinuity(o.discontinuity[1]),
    );
    let mut table = Table::new(
        &[
            "function",
            "binary",
            "blocks",
            "first %",
            "second %",
            "block overlap",
            "edge overlap",
            "balanced first",
            "balanced second",
            "discontinuity first",
            "discontinuity second",
        ],
        &[2, 3, 4, 5, 6, 7, 8, 9, 10],
    );
    for f in &o.per_function {
        table.row(vec![
            shortened(&f.name),
            f.binary.clone(),
            f.blocks.to_string(),
            format!("{:.2}", f.share[0] * 100.0),
            format!("{:.2}", f.share[1] * 100.0),
            format!("{:.4}", f.block_overlap),
            f.edge_overlap.map_or("-".to_string(), |e| format!("{e:.4}")),
            balanced(f.balanced[0]),
            balanced(f.balanced[1]),
            discontinuity(f.discontinuity[0]),
            discontinuity(f.discontinuity[1]),
        ]);
    }
    out.push_str(&table.render());
    out
}

fn side(l: &Loaded, event: usize) -> Side<'_> {
    Side { profile: &l.profile, kind: l.format.address_kind(), event }
}

/// A function's name as a table row shows it: C++ names of templates run to hundreds of
/// characters, and a table as wide as the longest is unreadable (`--json` has them whole).
fn shortened(name: &str) -> String {
    const WIDEST: usize = 60;
    if name.chars().count() <= WIDEST {
        return name.to_string();
    }
    let mut short: String = name.chars().take(WIDEST - 1).collect();
    short.push('…');
    short
}
