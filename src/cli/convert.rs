//! `cfghub convert IN -o OUT`: read any supported format, write any other.

use clap::Args;

use cfghub_formats::convert::{load, save};
use cfghub_formats::format::{Needs, ReadOptions, WriteOptions};
use cfghub_formats::{callgrind, dcfg, dcfg_trace, dcpi, dtrace, speedscope, svg};
use cfghub_model::error::{Findings, Result};

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input file, or - for standard input.
    pub input: String,
    /// Output file, or - for standard output. Its name picks the format unless --to is given.
    #[arg(short, long)]
    pub output: String,
    /// Input format (see `cfghub formats`); detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// Output format (see `cfghub formats`); taken from the output name when absent.
    #[arg(long)]
    pub to: Option<String>,
    /// With a DCFG input: replay this DCFG-trace over it first (exact call stacks and
    /// inclusive costs, e.g. for folded stacks or Callgrind output).
    #[arg(long, conflicts_with = "trace_from")]
    pub trace: Option<String>,
    /// With a DCFG input: encode the edge ids in this file (as `cfghub trace edges` prints
    /// them) into a DCFG-trace written to the output.
    #[arg(long)]
    pub trace_from: Option<String>,
    /// Profiles of one binary (fdata, bolt-pa, llvm-sample, llvm-unsymbolized): the image
    /// written, by id, path or file base name (default: the binary --symbols names, else the
    /// main binary), added up over every process that loaded it.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// With --trace-from: a new chunk starts after this many instructions.
    #[arg(long, default_value_t = 1_000_000)]
    pub chunk_instrs: u64,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub symbols: super::symbols::SymbolArgs,
    #[command(flatten)]
    pub infer: super::symbols::InferArgs,
    #[command(flatten)]
    pub labels: LabelArgs,
}

/// Options shared by every command that reads a profile.
#[derive(Args, Debug, Default)]
pub struct ReadArgs {
    /// DCPI: bytes between consecutive sample slots (default 4, as on Alpha).
    #[arg(long, value_name = "BYTES")]
    pub address_step: Option<u64>,
    /// DTrace: keep the `+0xOFFSET` of every frame but the leaf (one flame per call site).
    #[arg(long)]
    pub include_offsets: bool,
    /// DCFG-trace: most edges a trace may declare before decoding stops with an error
    /// (default 5e9, about half a minute of decoding); raise it for longer traces.
    #[arg(long, value_name = "N")]
    pub max_edges: Option<u64>,
    /// Tables: read only the profile of this id from a folder of many (a fleet, or a query's
    /// result); all of them, summed, when absent.
    #[arg(long, value_name = "ID")]
    pub profile: Option<String>,
}

impl ReadArgs {
    pub fn options(&self) -> ReadOptions {
        ReadOptions::default()
            .with(dcpi::Options { address_step: self.address_step })
            .with(dtrace::Options { include_offsets: self.include_offsets })
            .with(dcfg_trace::Options { max_edges: self.max_edges, declared_only: false })
            .with(cfghub_formats::tables::Select { profile: self.profile.clone() })
    }
}

/// Options shared by every command that writes a profile.
#[derive(Args, Debug, Default)]
pub struct WriteArgs {
    /// Indented, human-readable output (DCFG JSON).
    #[arg(long)]
    pub pretty: bool,
    /// Callgrind: one part per thread instead of summing the threads.
    #[arg(long)]
    pub per_thread: bool,
    /// The event to write where a format holds one value per record (folded, DCPI, DOT heat).
    #[arg(long)]
    pub event: Option<String>,
    /// Title of a flame graph or of a speedscope file.
    #[arg(long)]
    pub title: Option<String>,
    /// Flame graph: merge stacks from the leaf.
    #[arg(long)]
    pub reverse: bool,
    /// Flame graph: icicle layout (root at the top).
    #[arg(long)]
    pub inverted: bool,
    /// Flame graph: keep stacks in input order (a flame chart).
    #[arg(long)]
    pub flamechart: bool,
    /// Flame graph: colour palette (hot, mem, io, red, green, blue, aqua, yellow, purple,
    /// orange, java, js, perl, python, rust, wakeup).
    #[arg(long, value_name = "PALETTE")]
    pub colors: Option<String>,
    /// Tables: how the Parquet pages are compressed: snappy (the default, as DuckDB writes),
    /// zstd, gzip, lz4 or none.
    #[arg(long, value_name = "CODEC", value_parser = clap::builder::PossibleValuesParser::new(cfghub_formats::tables::Compression::NAMES))]
    pub compression: Option<String>,
    /// Tables: add the profile to a fleet's folder (a folder per table, a file per profile),
    /// made when missing; writing to an existing fleet always adds.
    #[arg(long)]
    pub fleet: bool,
    /// Tables: partition the fleet's folders by these label keys, comma-separated
    /// (`service=web/day=2026-12-07/`); implies --fleet.
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    pub partition_by: Vec<String>,
    /// Tables: the id on every row and the name of the profile's files in a fleet (default: the
    /// input's file name up to its first dot in a fleet, else the output's name).
    #[arg(long, value_name = "ID")]
    pub profile_id: Option<String>,
}

impl WriteArgs {
    pub fn options(&self) -> WriteOptions {
        WriteOptions { event: self.event.clone(), ..WriteOptions::default() }
            .with(dcfg::Options { pretty: self.pretty, ..Default::default() })
            .with(callgrind::Options { per_thread: self.per_thread })
            .with(svg::Options {
                title: self.title.clone(),
                reverse: self.reverse,
                inverted: self.inverted,
                flamechart: self.flamechart,
                colors: self.colors.clone(),
            })
            .with(speedscope::Options { title: self.title.clone() })
            .with(cfghub_formats::tables::Options {
                compression: self
                    .compression
                    .as_deref()
                    .and_then(cfghub_formats::tables::Compression::named)
                    .unwrap_or_default(),
                profile_id: self.profile_id.clone(),
                fleet: self.fleet,
                partition_by: self.partition_by.clone(),
            })
    }
}

/// An input's file name up to its first dot (`hosts/web-17.pb.gz` -> `web-17`): the id of its
/// profile in a fleet.
pub fn input_stem(path: &str) -> String {
    let name = std::path::Path::new(path).file_name().and_then(|n| n.to_str()).unwrap_or(path);
    let stem = name.split('.').next().filter(|s| !s.is_empty()).unwrap_or(name);
    if stem == "-" {
        "stdin".to_string()
    } else {
        stem.to_string()
    }
}

pub fn run(args: ConvertArgs, quiet: bool) -> Result<i32> {
    let mut inputs = vec![args.input.as_str()];
    inputs.extend(args.symbols.paths());
    cfghub_model::io::check_not_an_input(&args.output, &inputs)?;
    if let Some(edges) = args.trace_from.as_deref() {
        return super::trace::encode_from(&args.input, edges, &args.output, args.chunk_instrs, quiet);
    }
    // What can be told without the input is told before reading it: the output's format and
    // its folder.
    let output = cfghub_formats::registry::detect_output(&args.output, args.to.as_deref())?;
    if !output.can_write() {
        return Err(output.unsupported("write"));
    }
    cfghub_model::io::check_output_place(&args.output)?;
    let labelling = args.labels.parsed()?;
    let output = Some(output);
    // The reader is told what the writer needs (a perf.data file converted to folded stacks
    // needs no images nor source lines), and `--symbols` needs the images it names.
    let mut needs = output.map_or(Needs::ALL, |f| f.needs);
    needs.images |= args.symbols.wanted() || args.infer.infer;
    let read = ReadOptions { needs, ..args.read.options() };
    let mut loaded = load(&args.input, args.from.as_deref(), &args.symbols.reader_options(read))?;
    super::check_findings(&args.input, &loaded.findings, quiet)?;
    args.symbols.apply(&mut loaded, &args.input, quiet)?;
    args.infer.apply(&args.symbols, &mut loaded, &args.input, quiet)?;
    labelling.apply(&mut loaded.profile, &args.input, quiet)?;
    if let Some(key) = args.labels.split_by.as_deref() {
        cfghub_analysis::labels::split_by(&mut loaded.profile, key);
    }
    if let Some(trace) = args.trace.as_deref() {
        super::trace::replay_into(&mut loaded.profile, trace, args.read.max_edges, quiet)?;
        inputs.push(trace);
    }
    // The model is needed for nothing but the writer: what the writer does not read may go,
    // and what it derives first take the model's place (`Format::prepare_to_write`).
    if let Some(format) = output {
        let mut preparing = Findings::default();
        format.prepare_to_write(&mut loaded.profile, &mut preparing);
        super::check_findings(&args.output, &preparing, quiet)?;
    }
    // Formats that describe one binary name it from --symbols.
    let binary = args.symbols.binary();
    let mut write_args = args.labels.write_options(args.write.options());
    let mut tables = write_args.formats.get::<cfghub_formats::tables::Options>();
    if tables.profile_id.is_none()
        && (tables.fleet
            || !tables.partition_by.is_empty()
            || cfghub_formats::tables::layout::is_fleet(std::path::Path::new(&args.output)))
    {
        tables.profile_id = Some(input_stem(&args.input));
        write_args = write_args.with(tables);
    }
    let write_options = write_args
        .with(cfghub_formats::llvm_sample::Options { binary: binary.clone(), image: args.image.clone() })
        .with(cfghub_formats::bolt::Options { binary, image: args.image.clone() })
        .with(dcfg::Options { pretty: args.write.pretty, symbols: args.symbols.options() });
    let findings = save(&loaded.profile, &args.output, args.to.as_deref(), &inputs, &write_options)?;
    super::check_findings(&args.output, &findings, quiet)?;
    Ok(0)
}

/// Sample labels given on the command line (`cfghub_analysis::labels`).
#[derive(Args, Debug, Default)]
pub struct LabelArgs {
    /// A label for every sample of the input(s), KEY=VALUE (repeatable): kept by pprof and
    /// tables (which, given labels, write or add to a fleet), the key of --split-by and of
    /// tables' --partition-by.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Labels from each input's path: PATTERN's {key} fields matched against the end of the
    /// path ('hosts/{host}/{service}.pb.gz').
    #[arg(long, value_name = "PATTERN")]
    pub label_from_path: Option<String>,
    /// Each value of this label in a process of its own, for formats that show several apart
    /// (Firefox, speedscope, perf script, tables).
    #[arg(long, value_name = "KEY")]
    pub split_by: Option<String>,
}

impl LabelArgs {
    /// `options` with tables written as a fleet when labels are given: labels say where a
    /// profile came from, which is what a fleet is made of.
    pub fn write_options(&self, options: WriteOptions) -> WriteOptions {
        let mut tables = options.formats.get::<cfghub_formats::tables::Options>();
        tables.fleet |= !self.labels.is_empty() || self.label_from_path.is_some();
        options.with(tables)
    }

    /// The labels and pattern, checked before any input is read.
    pub fn parsed(&self) -> Result<Labelling> {
        Ok(Labelling {
            labels: self.labels.iter().map(|l| cfghub_analysis::labels::parse(l)).collect::<Result<_>>()?,
            pattern: self
                .label_from_path
                .as_deref()
                .map(cfghub_analysis::labels::PathPattern::parse)
                .transpose()?,
        })
    }
}

/// What [`LabelArgs`] ask for each input.
pub struct Labelling {
    labels: Vec<cfghub_model::ir::Label>,
    pattern: Option<cfghub_analysis::labels::PathPattern>,
}

impl Labelling {
    /// Labels the samples of `profile`, read from `path`; a profile without samples to label
    /// is told on standard error.
    pub fn apply(&self, profile: &mut cfghub_model::ir::Profile, path: &str, quiet: bool) -> Result<()> {
        let mut labels = match &self.pattern {
            Some(p) => p.labels(path)?,
            None => Vec::new(),
        };
        labels.extend(self.labels.iter().cloned());
        if labels.is_empty() {
            return Ok(());
        }
        if cfghub_analysis::labels::apply(profile, &labels) == 0 {
            let mut findings = Findings::default();
            findings.warn(None, "labels go on samples of call stacks, and it has none: no label kept");
            super::check_findings(path, &findings, quiet)?;
        }
        Ok(())
    }
}
