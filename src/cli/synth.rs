//! `cfghub synth`: a synthetic, self-consistent DCFG of any size, for testing tools and
//! benchmarking them.

use clap::Args;

use cfghub_analysis::synth::{generate, SynthSpec};
use cfghub_formats::convert::save;
use cfghub_formats::format::WriteOptions;
use cfghub_model::error::Result;

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Output file (any writable format; .dcfg.json, .dcfg.json.bz2, callgrind.out.x, ...).
    #[arg(short, long)]
    pub output: String,
    /// Output format; taken from the output name when absent.
    #[arg(long)]
    pub to: Option<String>,
    /// Random seed: the same seed gives the same profile.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Images (binaries and shared libraries).
    #[arg(long, default_value_t = 2)]
    pub images: usize,
    /// Routines per image.
    #[arg(long, default_value_t = 8)]
    pub routines: usize,
    /// Average basic blocks per routine.
    #[arg(long, default_value_t = 12)]
    pub blocks: usize,
    /// Threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Edges each thread traverses before returning to the end.
    #[arg(long, default_value_t = 10_000)]
    pub steps: u64,
    /// Indented output (DCFG).
    #[arg(long)]
    pub pretty: bool,
}

pub fn run(args: SynthArgs, quiet: bool) -> Result<i32> {
    let spec = SynthSpec {
        seed: args.seed,
        images: args.images,
        routines_per_image: args.routines,
        blocks_per_routine: args.blocks,
        threads: args.threads,
        steps_per_thread: args.steps,
        ..SynthSpec::default()
    };
    let working = cfghub_model::io::Working::start(format!(
        "synth: generating {} image(s) of {} routine(s) of {} block(s)",
        spec.images, spec.routines_per_image, spec.blocks_per_routine
    ));
    let synth = generate(&spec);
    working.at(format!("synth: writing {}", args.output));
    let options = WriteOptions::default()
        .with(cfghub_formats::dcfg::Options { pretty: args.pretty, ..Default::default() });
    let findings = save(&synth.profile, &args.output, args.to.as_deref(), &[], &options)?;
    drop(working);
    super::check_findings(&args.output, &findings, quiet)?;
    Ok(0)
}
