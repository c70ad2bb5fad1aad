//! What every format is to the rest of cfghub: [`Format`], a name, file extensions, a content
//! sniffer, `read` and/or `write` with the format's own options, and what its writer needs from
//! the model. [`crate::registry`] lists the formats and picks one for a file.

use std::any::{Any, TypeId};
use std::io::{BufRead, Write};
use std::sync::Arc;

use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{AddressKind, Profile};

/// Options of single formats. Each format defines its own options type in its folder (with
/// `Default` for what it does when nothing is said), the command line sets the ones it was
/// given, and the format takes its own with [`FormatOptions::get`]. Nothing here knows which
/// formats have options.
#[derive(Clone, Default)]
pub struct FormatOptions(Vec<(TypeId, Arc<dyn Any + Send + Sync>)>);

impl FormatOptions {
    /// Sets the options of type `T`, replacing earlier ones of that type.
    pub fn set<T: Any + Send + Sync>(&mut self, options: T) {
        let id = TypeId::of::<T>();
        self.0.retain(|(t, _)| *t != id);
        self.0.push((id, Arc::new(options)));
    }

    /// These options with those of type `T` set.
    pub fn with<T: Any + Send + Sync>(mut self, options: T) -> Self {
        self.set(options);
        self
    }

    /// The options of type `T`: as set, else `T`'s defaults.
    pub fn get<T: Any + Send + Sync + Clone + Default>(&self) -> T {
        let id = TypeId::of::<T>();
        self.0
            .iter()
            .find(|(t, _)| *t == id)
            .and_then(|(_, o)| o.downcast_ref::<T>())
            .cloned()
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for FormatOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FormatOptions({} set)", self.0.len())
    }
}

/// Options of single readers. What a reader is told about its input itself (its size, the file
/// it comes from) is in the [`Source`] it reads.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// What the profile is read for: the needs of the writer it goes to, or everything.
    pub needs: Needs,
    /// Options of single readers (DCPI's address step, DTrace's offsets, ...).
    pub formats: FormatOptions,
}

impl ReadOptions {
    /// These options with a reader's own options set.
    pub fn with<T: Any + Send + Sync>(mut self, options: T) -> Self {
        self.formats.set(options);
        self
    }
}

/// What every writer may be asked, and the options of single formats.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// The event to write, for formats with one value per record (folded stacks, DCPI, DOT
    /// heat, flame graphs).
    pub event: Option<String>,
    /// Options of single writers (DCFG's indentation, Callgrind's parts per thread, flame-graph
    /// settings, ...).
    pub formats: FormatOptions,
}

impl WriteOptions {
    /// These options with a writer's own options set.
    pub fn with<T: Any + Send + Sync>(mut self, options: T) -> Self {
        self.formats.set(options);
        self
    }
}

/// Reads a whole input into a profile, taking it as a stream or as bytes ([`Source`]). Rule
/// breaks that leave the data usable are pushed to the findings (as warnings, or as violations
/// that conversions refuse).
pub(crate) type ReadFn = fn(&mut Source<'_>, &ReadOptions, &mut Findings) -> Result<Profile>;

/// Writes a profile. What the format cannot express is named in the findings as a warning.
pub(crate) type WriteFn = fn(&Profile, &mut dyn Write, &WriteOptions, &mut Findings) -> Result<()>;

/// Writes a profile into a folder: `(profile, dir, target, options, findings)`, where `dir` is
/// the empty folder to fill and `target` the path it will be renamed to.
pub(crate) type WriteFolderFn =
    fn(&Profile, &std::path::Path, &std::path::Path, &WriteOptions, &mut Findings) -> Result<()>;

/// A format stored as a folder of files rather than as one file (Parquet tables): how to tell
/// one, and how to write one. Its reader is [`Format::reader`], given a [`Source`] whose
/// [`Source::folder`] is the folder.
#[derive(Clone, Copy)]
pub struct FolderFormat {
    /// Whether a folder holds this format (its marker file is there).
    pub holds: fn(&std::path::Path) -> bool,
    /// Writes a profile into a folder: `(profile, dir, target, options, findings)`.
    pub write: WriteFolderFn,
    /// Whether writing to the folder `target` adds to what it holds (a fleet of profiles)
    /// rather than replacing it.
    pub adds_to: fn(&std::path::Path, &WriteOptions) -> bool,
}

/// One file format: how to recognise it, read it into the model and write the model out.
/// Each format's folder declares one as `FORMAT`, filling what it has and leaving the rest to
/// [`Format::NONE`]; [`crate::registry::ALL`] lists them.
#[derive(Clone, Copy)]
pub struct Format {
    /// The name used with `--from`/`--to` (`dcfg`, `callgrind`, ...).
    pub name: &'static str,
    /// One line for `cfghub formats`.
    pub description: &'static str,
    /// File-name endings, without compression suffixes (`.dcfg.json`).
    pub extensions: &'static [&'static str],
    /// Whether a file name (its final component, compression suffix removed) looks like this
    /// format, when that takes more than [`Format::extensions`] (Callgrind's
    /// `callgrind.out.<pid>` prefix).
    pub file_name: Option<fn(&str) -> bool>,
    /// Whether the first bytes of the (decompressed) content are this format's. Only formats
    /// with a distinctive start have one; the others rely on the file name.
    pub sniffer: Option<fn(&[u8]) -> bool>,
    /// Reads a file of this format into a profile; `None` for a format that cannot be read.
    pub reader: Option<ReadFn>,
    /// Writes a profile as one file of this format; `None` for a format written as a folder
    /// ([`Format::folder`]) or not at all.
    pub writer: Option<WriteFn>,
    /// What to do instead, for a format that cannot be read or written by conversion.
    pub hint: Option<&'static str>,
    /// For a writer whose format places everything by address: what becomes of blocks the
    /// input gave no address (CSI metadata). [`Format::write`] names them in a warning.
    pub without_addresses: Option<&'static str>,
    /// What the code addresses of a profile read in this format are, for the symbolizer
    /// (`cfghub_analysis::symbolize`): runtime addresses unless the format says otherwise.
    pub addresses: AddressKind,
    /// Whether a profile read in this format is named from ELF/DWARF without being asked
    /// (`--symbols`): its producer leaves names to its viewer and records where the binaries
    /// are (samply's processed profiles).
    pub symbolize_by_default: bool,
    /// The rules of this format that can be checked on a profile it read, beyond what the
    /// reader reports on the way (`cfghub validate`). A format whose reader checks everything
    /// it can has none: another format's rules (a DCFG's flow conservation, say) are not its.
    pub validator: Option<fn(&Profile) -> Findings>,
    /// For a format stored as a folder: how to tell and write one.
    pub folder: Option<&'static FolderFormat>,
    /// What the writer needs from the model: a command that reads a profile only to write it
    /// in this format hands these to the reader ([`ReadOptions::needs`]) and prepares the model
    /// by them ([`Format::prepare_to_write`]).
    pub needs: Needs,
}

/// What a writer needs from the model, declared in its format's entry. A reader told the
/// output's needs ([`ReadOptions::needs`]) may leave out what no writer of them reads, and
/// must weigh samples as they say. The default is everything, weighed by period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// What of the model the writer reads.
    pub reads: WriterReads,
    /// The images: their functions, and where in them frames and costs are (code addresses).
    /// Formats that name frames alone (folded stacks, flame graphs) do without.
    pub images: bool,
    /// The source line of every code address (read from DWARF where the input has none).
    pub source_lines: bool,
    /// What one sample adds to a value.
    pub weight: Weight,
}

impl Needs {
    /// Everything the model can hold, samples weighed by their periods: what a writer of the
    /// whole model needs, and what a reader reads when no writer is named.
    pub const ALL: Needs =
        Needs { reads: WriterReads::Model, images: true, source_lines: true, weight: Weight::Period };
    /// Stacks whose frames are names alone, weighed by period (folded stacks, flame graphs).
    pub(crate) const NAMED_STACKS: Needs =
        Needs { reads: WriterReads::Stacks, images: false, source_lines: false, weight: Weight::Period };
    /// Stacks with where their frames' code is (pprof, speedscope, Firefox).
    pub(crate) const STACKS: Needs = Needs { reads: WriterReads::Stacks, ..Needs::ALL };
    /// Costs by code address, and not the edges of a process that has them, samples counted
    /// (DCPI, dcpicat: a DCPI file counts samples, its `period` says how many events each is).
    pub(crate) const COST_ROWS: Needs =
        Needs { reads: WriterReads::CostRows, weight: Weight::SampleCount, ..Needs::ALL };
    /// The whole model, samples counted rather than weighed: the profiles that feed optimizers
    /// (BOLT's no_lbr `.fdata`, LLVM sample profiles, llvm-profgen's input) count samples, as
    /// perf2bolt (`-nl`) and llvm-profgen do.
    pub(crate) const SAMPLE_COUNTS: Needs = Needs { weight: Weight::SampleCount, ..Needs::ALL };
}

impl Default for Needs {
    fn default() -> Self {
        Needs::ALL
    }
}

/// What one sample adds to the values a reader makes of samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Its period: nanoseconds of a clock event (`cpu-clock`), events of a counter.
    Period,
    /// One: values are sample counts, and events are named as `perf script` prints them
    /// (`cpu-clock:`).
    SampleCount,
}

/// What of the model a writer reads, for a caller that owns the model and needs it for nothing
/// but the writer ([`Format::prepare_to_write`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterReads {
    /// All of it.
    Model,
    /// Stacks alone, found by [`cfghub_analysis::stacks::stacks_to_write`]: estimated from the
    /// call graph where the model has blocks and no stacks.
    Stacks,
    /// The images (their cost rows) and not the edges of a process with cost rows: formats of
    /// samples by address.
    CostRows,
}

impl Format {
    /// A format that recognises and does nothing: the base every `FORMAT` fills in.
    pub const NONE: Format = Format {
        name: "",
        description: "",
        extensions: &[],
        file_name: None,
        sniffer: None,
        reader: None,
        writer: None,
        hint: None,
        without_addresses: None,
        addresses: AddressKind::Runtime,
        symbolize_by_default: false,
        validator: None,
        folder: None,
        needs: Needs::ALL,
    };

    /// The name used with `--from`/`--to`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One line describing the format, for `cfghub formats`.
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// File-name endings, without compression suffixes (`.dcfg.json`).
    pub fn extensions(&self) -> &'static [&'static str] {
        self.extensions
    }

    /// Whether a file name (its final component, compression suffix removed) looks like this
    /// format: one of its extensions ends it, or its own test says so.
    pub(crate) fn matches_file_name(&self, base_name: &str) -> bool {
        self.extensions.iter().any(|ext| base_name.ends_with(ext))
            || self.file_name.is_some_and(|f| f(base_name))
    }

    /// Whether the first bytes of the (decompressed) content are this format's.
    pub fn sniff(&self, head: &[u8]) -> bool {
        self.sniffer.is_some_and(|f| f(head))
    }

    /// What the code addresses of a profile read in this format are.
    pub fn address_kind(&self) -> AddressKind {
        self.addresses
    }

    /// Whether the format has a reader.
    pub fn can_read(&self) -> bool {
        self.reader.is_some()
    }

    /// Checks the rules of the format that the reader does not (see [`Format::validator`]).
    pub fn validate(&self, profile: &Profile) -> Findings {
        self.validator.map(|v| v(profile)).unwrap_or_default()
    }

    /// Whether the format can be written, as one file or as a folder.
    pub fn can_write(&self) -> bool {
        self.writer.is_some() || self.folder.is_some()
    }

    /// Whether the format is a folder of files rather than one file.
    pub fn is_folder(&self) -> bool {
        self.folder.is_some()
    }

    /// Reads a whole input, given as a stream, into a profile.
    pub fn read(
        &self,
        input: &mut dyn BufRead,
        options: &ReadOptions,
        findings: &mut Findings,
    ) -> Result<Profile> {
        self.read_source(&mut Source::new(input), options, findings)
    }

    /// Reads a whole input into a profile.
    pub fn read_source(
        &self,
        input: &mut Source<'_>,
        options: &ReadOptions,
        findings: &mut Findings,
    ) -> Result<Profile> {
        match self.reader {
            Some(read) => {
                let mut profile = read(input, options, findings)?;
                // Readers reserve ahead from what the input's size suggests; the model keeps
                // only what it holds.
                profile.shrink_to_fit();
                Ok(profile)
            }
            None => Err(self.unsupported("read")),
        }
    }

    /// Writes a profile.
    pub fn write(
        &self,
        profile: &Profile,
        out: &mut dyn Write,
        options: &WriteOptions,
        findings: &mut Findings,
    ) -> Result<()> {
        match self.writer {
            Some(write) => {
                self.warn_blocks_without_addresses(profile, findings);
                write(profile, out, options, findings)
            }
            None if self.folder.is_some() => {
                Err(Error::usage(format!("{} are written to a folder, not to a stream", self.name))
                    .with_hint("name an output folder, e.g. -o app.tables/"))
            }
            None => Err(self.unsupported("write")),
        }
    }

    /// For a writer whose format places everything by address: the warning that names the
    /// blocks the input gave no address ([`Format::without_addresses`]).
    fn warn_blocks_without_addresses(&self, profile: &Profile, findings: &mut Findings) {
        if let Some(consequence) = self.without_addresses {
            cfghub_analysis::names::warn_blocks_without_addresses(profile, findings, self.name, consequence);
        }
    }

    /// For a caller that owns the model and needs it for nothing but this writer: what the
    /// writer does not read goes, and what it would derive first is derived now in the model's
    /// place, so that the two are never in memory together ([`Needs::reads`]). For a
    /// writer of stacks estimated from the call graph
    /// ([`cfghub_analysis::stacks::estimate_in_place`]), the 21 MB `cc1plus` Callgrind profile
    /// to folded stacks peaks where reading it does, 79-82 MB instead of 105; for a writer of
    /// samples by address, the edges of a process with cost rows go (the same profile to
    /// dcpicat 91.5 -> 76.2 MB, to DCPI 108.3 -> 76.2). The warnings are those
    /// [`Format::write`] gives, in the same order, and the output is the same.
    pub fn prepare_to_write(&self, profile: &mut Profile, findings: &mut Findings) {
        match self.needs.reads {
            WriterReads::Model => {}
            WriterReads::Stacks if cfghub_analysis::stacks::needs_estimate(profile) => {
                // Said of the model, before the stacks take its place.
                self.warn_blocks_without_addresses(profile, findings);
                cfghub_analysis::stacks::estimate_in_place(profile, findings);
            }
            WriterReads::Stacks => {}
            WriterReads::CostRows => {
                // (A process without cost rows keeps its edges: the totals of what the writer
                // leaves out are its blocks' executions.)
                for process in &mut profile.processes {
                    if process.images.iter().any(|i| !i.costs.is_empty()) {
                        process.edges = Vec::new();
                    }
                }
            }
        }
    }

    /// The error for a format that cannot `what` ("read", "write"), with the format's hint.
    pub fn unsupported(&self, what: &str) -> Error {
        let e = Error::unsupported(format!("cfghub cannot {what} {} files", self.name));
        match self.hint {
            Some(hint) => e.with_hint(hint),
            None => e,
        }
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Format({})", self.name)
    }
}
