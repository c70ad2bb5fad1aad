//! The command-line interface: one file per subcommand, each a `run` function over parsed
//! arguments. `main` only calls [`main`] here.

mod convert;
mod csi;
mod diff;
mod dot;
pub mod embed;
mod formats;
mod info;
mod manual;
mod merge;
mod overlap;
mod symbols;
mod synth;
mod table;
mod trace;
mod validate;

use clap::{Parser, Subcommand};

use cfghub_model::error::{Error, ErrorKind, Findings, Severity};

/// cfghub converts control-flow profiles between the tools that make and show them:
/// Intel DCFG and DCFG-trace (Pin, PinPlay, SDE), Callgrind/KCachegrind, DCPI, CSI path
/// tracing (csi-cc), perf.data and `perf script`, pprof, the Firefox Profiler and speedscope,
/// folded stacks and flame graphs, DTrace, BOLT (fdata, pre-aggregated) and LLVM sample
/// profiles (AutoFDO), Parquet tables, Graphviz DOT and GraphML (`cfghub formats` lists them).
///
/// Formats are recognised by content, then by file name; `--from`/`--to` override both.
/// Inputs may be gzip or bzip2 compressed; outputs named *.gz or *.bz2 are compressed.
#[derive(Parser, Debug)]
#[command(name = "cfghub", version, about, long_about = None, after_help = EXAMPLES)]
pub struct Cli {
    /// No progress bar and no warnings on standard error.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Threads to work on (default: one per core): bzip2 decoding, parsing, symbolization and
    /// trace decoding share them.
    #[arg(short = 'j', long, global = true, value_name = "N")]
    pub jobs: Option<usize>,

    /// Also say what the output cannot hold by its nature and how results were made (notes).
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    pub verbose: bool,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

const EXAMPLES: &str = "\
Examples:
  cfghub info app.dcfg.json.bz2                     summary of a profile
  cfghub validate app.dcfg.json.bz2                 check every rule of the format
  cfghub convert app.dcfg.json.bz2 -o callgrind.out.app   then: kcachegrind callgrind.out.app
  cfghub merge app.dcfg.json.bz2 cycles.dcpi -o merged.dcfg.json   DCPI samples per block
  cfghub dot app.dcfg.json.bz2 --routine main -o main.svg   one routine's control flow
  cfghub csi paths prog --function main             CSI path numbers of main and their blocks
  cfghub formats                                    what can be read and written
  cfghub completions bash                           tab completion for a shell; cfghub man: the manual";

/// The commands of the tool, one file each in this folder.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the formats cfghub reads and writes.
    Formats,
    /// Summarise a profile: processes, threads, images, edges, hottest routines and loops.
    Info(info::InfoArgs),
    /// Check a profile against every rule of its format; exit 1 when a rule is broken.
    Validate(validate::ValidateArgs),
    /// Convert a profile from one format to another.
    Convert(convert::ConvertArgs),
    /// Decode, check and replay DCFG-traces: edges, stats, timeline, generate.
    Trace(trace::TraceArgs),
    /// Compare two profiles: a differential flame graph for stacks, a routine table otherwise.
    Diff(diff::DiffArgs),
    /// How close two profiles of one program are: function, block and edge overlap on the
    /// binary's basic blocks, and flow conservation.
    Overlap(overlap::OverlapArgs),
    /// Sum any number of profiles exactly (a fleet's, a day's), or attribute samples (DCPI,
    /// perf.data, pprof) to a DCFG's basic blocks: samples per block, routine and loop.
    Merge(merge::MergeArgs),
    /// Decode CSI path numbers and crash states (Ball-Larus paths of any routine).
    Csi(csi::CsiArgs),
    /// Draw a routine, a loop, the call graph or the whole program with Graphviz.
    Dot(dot::DotArgs),
    /// Generate a synthetic, self-consistent DCFG of any size (for tests and benchmarks).
    Synth(synth::SynthArgs),
    /// Print a shell completion script: `cfghub completions bash > .../completions/cfghub`.
    Completions(manual::CompletionsArgs),
    /// Print the manual page (roff): `cfghub man | man -l -`, `cfghub man convert`.
    Man(manual::ManArgs),
}

/// Runs the command line in `std::env::args`, printing errors; returns the exit status:
/// 0 ok, 1 findings (validate), 2 bad input or usage.
pub fn main() -> i32 {
    // A closed pipe (`cfghub ... | head`) ends the process quietly, as it ends any Unix tool;
    // the shell sees that it did not finish (status 141).
    #[cfg(unix)]
    // SAFETY: restores the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Ctrl-C and other stops leave no temporary behind; before any thread starts.
    cfghub_model::interrupt::install();
    cfghub_model::mem::map_large_allocations_apart();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => 2,
            };
        }
    };
    if let Some(n) = cli.jobs {
        let n = n.max(1);
        cfghub_model::io::set_threads(n);
        if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(n).build_global() {
            report_error(&Error::usage(format!("cannot start {n} threads: {e}")));
            return 2;
        }
    }
    let result = run(cli);
    // A run stopped by a signal ends by it, not by what the stop made of its work.
    cfghub_model::interrupt::wait_if_stopping();
    match result {
        Ok(code) => code,
        Err(e) => {
            report_error(&e);
            2
        }
    }
}

/// Runs a parsed command line; the exit status, or the error `main` prints.
fn run(cli: Cli) -> Result<i32, Error> {
    cfghub_model::io::set_progress(!cli.quiet);
    VERBOSE.store(cli.verbose, std::sync::atomic::Ordering::Relaxed);
    let quiet = cli.quiet;
    match cli.command {
        Command::Formats => formats::run(),
        Command::Info(args) => info::run(args, quiet),
        Command::Validate(args) => validate::run(args),
        Command::Convert(args) => convert::run(args, quiet),
        Command::Trace(args) => trace::run(args, quiet),
        Command::Diff(args) => diff::run(args, quiet),
        Command::Overlap(args) => overlap::run(args, quiet),
        Command::Merge(args) => merge::run(args, quiet),
        Command::Csi(args) => csi::run(args, quiet),
        Command::Dot(args) => dot::run(args, quiet),
        Command::Synth(args) => synth::run(args, quiet),
        Command::Completions(args) => manual::completions(args),
        Command::Man(args) => manual::man(args),
    }
}

/// Writes `text` on standard output; a failed write (a full disk, a closed pipe when the
/// pipe signal is ignored) is an error naming standard output, never a panic.
pub(crate) fn print_out(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| Error::io("standard output", e))
}

fn report_error(e: &Error) {
    let word = match e.kind {
        ErrorKind::Usage => "usage error",
        _ => "error",
    };
    eprintln!("cfghub: {word}: {e}");
}

/// Whether `-v` asked for notes as well as warnings (set once, before any command runs).
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a finding is printed: notes only under `-v`.
pub(crate) fn shown(finding: &cfghub_model::error::Finding) -> bool {
    finding.severity != Severity::Detail || VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Prints a reader's or writer's warnings (and, with `-v`, its notes), and refuses input with
/// rule violations: conversions never carry broken references into another format.
pub(crate) fn check_findings(name: &str, findings: &Findings, quiet: bool) -> Result<(), Error> {
    if !quiet {
        for f in findings.items.iter().filter(|f| f.severity != Severity::Violation && shown(f)) {
            eprintln!("cfghub: {name}: {f}");
        }
    }
    let violations: Vec<_> = findings.violations().collect();
    if let Some(first) = violations.first() {
        for v in violations.iter().take(10) {
            eprintln!("cfghub: {name}: {v}");
        }
        let more = if violations.len() > 10 {
            format!(" ({} more not shown)", violations.len() - 10)
        } else {
            String::new()
        };
        let mut err = Error::input(format!(
            "{} rule violation(s){more}, the first: {}",
            violations.len(),
            first.message
        ))
        .in_file(name)
        .with_hint(format!("`cfghub validate {name}` lists every problem"));
        err.place = first.place.clone();
        return Err(err);
    }
    Ok(())
}
