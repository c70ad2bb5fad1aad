//! `cfghub overlap A B`: how close two profiles of one program are, on the binary's basic
//! blocks (`cfghub_analysis::overlap`): function, block and edge overlap as LLVM defines them,
//! and how many blocks conserve flow; per hot function and in total, as text or `--json`.
//!
//! Two LLVM sample profiles, or any two profiles with `--sample`, are compared as
//! `llvm-profdata overlap --sample` compares them (`cfghub_analysis::sample_profile::overlap`):
//! a side that is not a sample profile is first made into the one the llvm-sample writer
//! would write for it.

use clap::Args;

use super::table::Table;
use cfghub_analysis::overlap::{overlap, Overlap, Side};
use cfghub_analysis::sample_profile::{self as sample, Filter, Refusal, SampleProfile};
use cfghub_formats::convert::{load_input, Loaded};
use cfghub_formats::format::{Format, ReadOptions, WriteOptions};
use cfghub_formats::registry::detect_input;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::{write_error, write_output, Input};

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
    /// Compare as `llvm-profdata overlap --sample` does, each profile taken as the LLVM
    /// sample profile `cfghub convert --to llvm-sample` writes for it (the default when both
    /// are sample profiles).
    #[arg(long)]
    pub sample: bool,
    /// With sample profiles: the image written for a profile of several (its id, path or file
    /// base name), as `convert --image` takes it.
    #[arg(long)]
    pub image: Option<String>,
    /// With sample profiles: list the functions whose largest line count in the second
    /// profile reaches this (llvm-profdata's --value-cutoff; default every function).
    #[arg(long, value_name = "COUNT")]
    pub value_cutoff: Option<u64>,
    /// With sample profiles: list the functions of both whose similarity is below this, in
    /// millionths (llvm-profdata's --similarity-cutoff).
    #[arg(long, value_name = "MILLIONTHS", default_value_t = 0)]
    pub similarity_cutoff: u64,
    /// With sample profiles: list the functions of both whose name contains this.
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
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
    let opened = |name: &str| -> Result<(Input, &'static Format)> {
        let input = Input::open(name)?;
        let format = detect_input(&input, None)?;
        Ok((input, format))
    };
    let (first, second) = (opened(&args.first)?, opened(&args.second)?);
    let sample = |f: &Format| std::ptr::eq(f, &cfghub_formats::llvm_sample::FORMAT);
    if args.sample || (sample(first.1) && sample(second.1)) {
        return run_sample(&args, [first, second], &inputs, quiet);
    }
    let read = |(input, _): (Input, &'static Format), name: &str| -> Result<Loaded> {
        let mut loaded = load_input(input, None, &args.symbols.reader_options(ReadOptions::default()))?;
        super::check_findings(name, &loaded.findings, quiet)?;
        args.infer.apply(&args.symbols, &mut loaded, name, quiet)?;
        Ok(loaded)
    };
    // The two profiles are read at once: each read is one core's work for the most part.
    let (first, second) = rayon::join(|| read(first, &args.first), || read(second, &args.second));
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

/// `overlap` of two profiles as LLVM sample profiles.
fn run_sample(
    args: &OverlapArgs,
    sides: [(Input, &'static Format); 2],
    inputs: &[&str],
    quiet: bool,
) -> Result<i32> {
    let [(a, fa), (b, fb)] = sides;
    let read = |input: Input, format: &'static Format, name: &str| -> Result<SampleProfile> {
        if std::ptr::eq(format, &cfghub_formats::llvm_sample::FORMAT) {
            return cfghub_formats::llvm_sample::read::parse(input.source().bytes()?)
                .map_err(|e| e.in_file(name));
        }
        let reading = args.symbols.reader_options(ReadOptions::default());
        let mut loaded = load_input(input, None, &reading)?;
        super::check_findings(name, &loaded.findings, quiet)?;
        args.symbols.apply(&mut loaded, name, quiet)?;
        args.infer.apply(&args.symbols, &mut loaded, name, quiet)?;
        let options = WriteOptions { event: args.event.clone(), ..WriteOptions::default() }.with(
            cfghub_formats::llvm_sample::Options { binary: args.symbols.binary(), image: args.image.clone() },
        );
        let mut findings = Findings::default();
        let profile =
            cfghub_formats::llvm_sample::write::sample_profile(&loaded.profile, &options, &mut findings)
                .map_err(|e| e.in_file(name))?;
        super::check_findings(name, &findings, quiet)?;
        Ok(profile)
    };
    let (base, test) = rayon::join(|| read(a, fa, &args.first), || read(b, fb, &args.second));
    let (base, test) = (base?, test?);
    let filter = Filter {
        value_cutoff: args.value_cutoff.unwrap_or(u64::MAX),
        similarity_cutoff: args.similarity_cutoff as f64 / 1_000_000.0,
        name: args.function.clone(),
    };
    let o = sample::overlap(&base, &test, &filter).map_err(|r| match r {
        Refusal::ProbeBased => Error::usage("cannot compare a probe-based profile with one that is not"),
        Refusal::ContextSensitive => {
            Error::usage("cannot compare a context-sensitive profile with one that is not")
        }
        Refusal::NoSamples(i) => Error::input("its sample counts add up to 0: there is nothing to compare")
            .in_file(if i == 0 { &args.first } else { &args.second }),
    })?;
    let text = if args.json {
        #[derive(serde::Serialize)]
        struct Named<'a> {
            base: &'a str,
            test: &'a str,
            #[serde(flatten)]
            overlap: &'a sample::Overlap,
        }
        let named = Named { base: &args.first, test: &args.second, overlap: &o };
        let mut t = serde_json::to_string_pretty(&named).map_err(|e| Error::input(e.to_string()))?;
        t.push('\n');
        t
    } else {
        render_sample(&o, &args.first, &args.second)
    };
    write_output(&args.output, inputs, |out| {
        out.write_all(text.as_bytes()).map_err(write_error(&args.output))
    })?;
    Ok(0)
}

/// The overlap of two sample profiles as `llvm-profdata overlap --sample` prints it.
fn render_sample(o: &sample::Overlap, base: &str, test: &str) -> String {
    use std::fmt::Write as _;
    let pct = |f: f64| format!("{:.3}%", f * 100.0);
    let mut t = String::new();
    let _ = writeln!(t, "Profile overlap information for base_profile: {base} and test_profile: {test}");
    let _ = writeln!(t, "Program level:");
    let _ = writeln!(t, "  Whole program profile similarity: {}", pct(o.similarity));
    let _ = writeln!(t, "  Whole program sample overlap: {}", pct(o.sample_overlap));
    let _ = writeln!(t, "    percentage of samples unique in base profile: {}", pct(o.base_unique));
    let _ = writeln!(t, "    percentage of samples unique in test profile: {}", pct(o.test_unique));
    let _ = writeln!(t, "    total samples in base profile: {}", o.base_samples);
    let _ = writeln!(t, "    total samples in test profile: {}", o.test_samples);
    let _ = writeln!(t, "  Function overlap: {}", pct(o.function_overlap));
    let _ = writeln!(t, "    overlap functions: {}", o.functions.overlap_count);
    let _ = writeln!(t, "    functions unique in base profile: {}", o.functions.base_unique_count);
    let _ = writeln!(t, "    functions unique in test profile: {}", o.functions.test_unique_count);
    for (what, fraction, s) in [
        ("function", o.hot_function_overlap, &o.hot_functions),
        ("block", o.hot_block_overlap, &o.hot_blocks),
    ] {
        let _ = writeln!(t, "  Hot-{what} overlap: {}", pct(fraction));
        let _ = writeln!(t, "    overlap hot {what}s: {}", s.overlap_count);
        let _ = writeln!(t, "    hot {what}s unique in base profile: {}", s.base_unique_count);
        let _ = writeln!(t, "    hot {what}s unique in test profile: {}", s.test_unique_count);
    }
    if o.details.is_empty() {
        return t;
    }
    // llvm-profdata's columns: each field starts at its column, at least one space after the last.
    let row = |t: &mut String, fields: [String; 9]| {
        const COLUMNS: [usize; 8] = [15, 30, 43, 53, 67, 81, 96, 111];
        let mut line = String::new();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                let pad = COLUMNS[i - 1].saturating_sub(line.chars().count()).max(1);
                line.extend(std::iter::repeat_n(' ', pad));
            }
            line.push_str(f);
        }
        let _ = writeln!(t, "{line}");
    };
    let _ = writeln!(t, "Function-level details:");
    let heading = [
        "Base weight",
        "Test weight",
        "Similarity",
        "Overlap",
        "Base unique",
        "Test unique",
        "Base samples",
        "Test samples",
        "Function name",
    ];
    row(&mut t, heading.map(String::from));
    let pct2 = |f: f64| format!("{:.2}%", f * 100.0);
    for f in &o.details {
        row(
            &mut t,
            [
                pct2(f.base_weight),
                pct2(f.test_weight),
                pct2(f.similarity),
                pct2(f.overlap),
                pct2(f.base_unique),
                pct2(f.test_unique),
                f.base_samples.to_string(),
                f.test_samples.to_string(),
                f.name.clone(),
            ],
        );
    }
    t
}
