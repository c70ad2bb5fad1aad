//! cfghub inside another program (the Python module): commands run from an argument list
//! without what `main` does to the process (signal handlers, the global thread pool, exit
//! codes), and a profile read once, as `info` and `convert` read it, then summarised, turned
//! into tables or written as often as asked.
//!
//! Warnings go where the command line's go (standard error, `cfghub: FILE: ...`) unless
//! `quiet`; errors are returned, never printed.

use clap::Parser;

use cfghub_formats::convert::{load_input, save, Loaded};
use cfghub_formats::format::WriteOptions;
use cfghub_model::error::{Error, Result};
use cfghub_model::io::Input;

use super::convert::{LabelArgs, ReadArgs, WriteArgs};
use super::symbols::{InferArgs, SymbolArgs};
use super::Cli;

/// Runs the command line `args` (without the program's name: `["convert", "a.pb.gz", "-o",
/// "a.folded"]`) as `cfghub` runs it; its exit status (1: `validate` found violations), or
/// the error the command line would print. `--jobs` runs it on a thread pool of its own.
pub fn run(args: &[String]) -> Result<i32> {
    let argv = std::iter::once("cfghub".to_string()).chain(args.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(usage)?;
    match cli.jobs {
        Some(n) => {
            cfghub_model::io::set_threads(n.max(1));
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .map_err(|e| Error::usage(format!("cannot start {n} threads: {e}")))?;
            pool.install(|| super::run(cli))
        }
        None => super::run(cli),
    }
}

/// The usage error of a command line that does not parse: clap's first line as the message,
/// its tip as the hint (help and version texts whole, as the message).
fn usage(e: clap::Error) -> Error {
    let text = e.render().to_string();
    if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) {
        return Error::usage(text.trim_end().to_string());
    }
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default().trim_start_matches("error: ").to_string();
    let error = Error::usage(first);
    match lines.find_map(|l| l.strip_prefix("tip: ")) {
        Some(tip) => error.with_hint(tip.to_string()),
        None => error,
    }
}

/// What reading takes besides the input, as `cfghub info` and `cfghub convert` take it:
/// `--from`, the readers' options, `--symbols`, `--infer` and the labels.
#[derive(Parser, Debug)]
#[command(name = "read", no_binary_name = true)]
struct ReadCommand {
    /// Input file, or the name the bytes read are known by (its suffix may tell the format).
    input: String,
    /// Input format; detected from content and name when absent.
    #[arg(long)]
    from: Option<String>,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    infer: InferArgs,
    #[command(flatten)]
    labels: LabelArgs,
}

/// A profile read, with what summarising it needs.
pub struct Profile {
    /// The input's name (its path, or the name given with bytes).
    pub name: String,
    /// The profile, its format and the reader's findings.
    pub loaded: Loaded,
    /// What `--symbols` found for each image.
    pub symbols: Vec<cfghub_analysis::symbolize::ImageReport>,
    /// The input's size in bytes when it was an uncompressed file or bytes.
    pub input_bytes: Option<u64>,
}

/// Reads the profile `args` name (a [`ReadCommand`] line), from its file, or from `content`
/// when given (bytes in memory and their size, named by the input), as `cfghub convert` reads
/// it.
pub fn read(
    args: &[String],
    content: Option<(Box<dyn std::io::Read + Send>, u64)>,
    quiet: bool,
) -> Result<Profile> {
    let args = ReadCommand::try_parse_from(args).map_err(usage)?;
    let labelling = args.labels.parsed()?;
    let options = args.symbols.reader_options(args.read.options());
    let (input, input_bytes) = match content {
        Some((content, size)) => {
            let input = Input::from_reader(&args.input, content, Some(size))?;
            let size = (input.compression == cfghub_model::io::Compression::None).then_some(size);
            (input, size)
        }
        None => {
            let input = Input::open(&args.input)?;
            let size = input.size.filter(|_| input.compression == cfghub_model::io::Compression::None);
            (input, size)
        }
    };
    let mut loaded = load_input(input, args.from.as_deref(), &options)?;
    super::check_findings(&args.input, &loaded.findings, quiet)?;
    let symbols = args.symbols.apply(&mut loaded, &args.input, quiet)?;
    args.infer.apply(&args.symbols, &mut loaded, &args.input, quiet)?;
    labelling.apply(&mut loaded.profile, &args.input, quiet)?;
    if let Some(key) = args.labels.split_by.as_deref() {
        cfghub_analysis::labels::split_by(&mut loaded.profile, key);
    }
    Ok(Profile { name: args.input, loaded, symbols, input_bytes })
}

/// What `cfghub info --json` prints of `profile`, with `top` routines and loops.
pub fn info_json(profile: &Profile, top: usize) -> Result<String> {
    let mut report = super::info::build(&profile.name, profile.loaded.format, &profile.loaded.profile, top);
    report.symbols = profile.symbols.clone();
    report.memory = super::info::MemoryReport::of(&profile.loaded.profile, profile.input_bytes);
    serde_json::to_string(&report).map_err(|e| Error::input(e.to_string()))
}

/// What writing takes besides the output, as `cfghub convert` takes it: `--to` and the
/// writers' options.
#[derive(Parser, Debug)]
#[command(name = "write", no_binary_name = true)]
struct WriteCommand {
    /// Output file. Its name picks the format unless --to is given.
    output: String,
    /// Output format; taken from the output name when absent.
    #[arg(long)]
    to: Option<String>,
    #[command(flatten)]
    write: WriteArgs,
}

/// Writes `profile` as the [`WriteCommand`] line `args` asks, atomically, as `cfghub convert`
/// writes it (never over the file it was read from).
pub fn write(profile: &Profile, args: &[String], quiet: bool) -> Result<()> {
    let args = WriteCommand::try_parse_from(args).map_err(usage)?;
    let mut options: WriteOptions = args.write.options();
    let mut tables = options.formats.get::<cfghub_formats::tables::Options>();
    if tables.profile_id.is_none()
        && (tables.fleet
            || !tables.partition_by.is_empty()
            || cfghub_formats::tables::layout::is_fleet(std::path::Path::new(&args.output)))
    {
        tables.profile_id = Some(super::convert::input_stem(&profile.name));
        options = options.with(tables);
    }
    let options =
        options.with(cfghub_formats::dcfg::Options { pretty: args.write.pretty, ..Default::default() });
    let findings =
        save(&profile.loaded.profile, &args.output, args.to.as_deref(), &[&profile.name], &options)?;
    super::check_findings(&args.output, &findings, quiet)
}

/// The tables of `profile` (those `only` names, or all) in memory as Arrow record batches,
/// every row's `profile_id` `id` (default: the input's name up to its first dot, as a fleet
/// names it).
#[cfg(feature = "arrow")]
pub fn tables(
    profile: &Profile,
    id: Option<&str>,
    only: Option<&[&str]>,
) -> Result<Vec<cfghub_formats::tables::arrow::Batches>> {
    let id = id.map_or_else(|| super::convert::input_stem(&profile.name), str::to_string);
    cfghub_formats::tables::arrow_tables(&profile.loaded.profile, &id, only)
}
