//! The formats cfghub speaks, and how one is chosen for a file.
//!
//! Every format implements [`Format`]: a name, file extensions, a content sniffer, and `read`
//! and/or `write`. The registry picks a format from the content first, the file name second;
//! `--from`/`--to` on the command line always win.

use std::io::{BufRead, Write};

use crate::error::{Error, Findings, Result};
use crate::io::{strip_compression_suffix, Input};
use crate::ir::Profile;

/// Options a reader may use; each reader takes what it needs and ignores the rest.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Bytes of code per DCPI sample slot (4 on Alpha); `None` uses the format's default.
    pub dcpi_address_step: Option<u64>,
    /// DTrace: keep `+0xOFFSET` on every frame but the leaf instead of merging by function.
    pub include_offsets: bool,
    /// Bytes the input will hold, when known (an uncompressed file's size): readers that keep
    /// the whole input reserve it at once. Only a hint; [`crate::convert::load`] sets it.
    pub size_hint: Option<u64>,
    /// The input's path when it is an uncompressed regular file ([`crate::convert::load`] sets
    /// it): a reader may map the file to read parts of it side by side instead of reading the
    /// stream, which holds the same bytes.
    pub file: Option<std::path::PathBuf>,
    /// DCFG-trace: most edges the trace may declare before decoding stops with an error
    /// (`--max-edges`); `None` is the decoder's default.
    pub max_edges: Option<u64>,
    /// DCFG-trace: read only what the chunks declare (threads, instruction counts), decoding
    /// no edge: the process's edges stay empty (`cfghub info`).
    pub trace_declared_only: bool,
}

/// Options a writer may use; each writer takes what it needs and ignores the rest.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Indented, human-readable output where the format allows it (DCFG JSON).
    pub pretty: bool,
    /// One part per thread instead of summing threads (Callgrind).
    pub per_thread: bool,
    /// The event to write, for formats with one value per record (folded stacks, DCPI, DOT heat).
    pub event: Option<String>,
    /// Title of a picture (flame graphs).
    pub title: Option<String>,
    /// Flame graphs: merge stacks leaf first.
    pub reverse: bool,
    /// Flame graphs: icicle layout, root at the top.
    pub inverted: bool,
    /// Flame graphs: keep stacks in input order (time on the x axis).
    pub flamechart: bool,
    /// Flame graphs: colour palette (inferno's names: hot, mem, io, java, rust, ...).
    pub colors: Option<String>,
}

/// One file format: how to recognise it, read it into the model and write the model out.
pub trait Format: Sync {
    /// The name used with `--from`/`--to` (`dcfg`, `callgrind`, ...).
    fn name(&self) -> &'static str;

    /// One line for `cfghub formats`.
    fn description(&self) -> &'static str;

    /// File-name endings, without compression suffixes (`.dcfg.json`).
    fn extensions(&self) -> &'static [&'static str];

    /// Whether a file name (its final component, compression suffix removed) looks like this
    /// format. The default matches [`Format::extensions`].
    fn matches_file_name(&self, base_name: &str) -> bool {
        self.extensions().iter().any(|ext| base_name.ends_with(ext))
    }

    /// Whether the first bytes of the (decompressed) content are this format's. Only formats
    /// with a distinctive start claim content; the others rely on the file name.
    fn sniff(&self, _head: &[u8]) -> bool {
        false
    }

    fn can_read(&self) -> bool;
    fn can_write(&self) -> bool;

    /// Reads a whole input into a profile. Rule breaks that leave the data usable are pushed
    /// to `findings` (as warnings, or as violations that conversions refuse).
    fn read(
        &self,
        _input: &mut dyn BufRead,
        _options: &ReadOptions,
        _findings: &mut Findings,
    ) -> Result<Profile> {
        Err(Error::unsupported(format!("cfghub cannot read {} files", self.name())))
    }

    /// Writes a profile. What the format cannot express is named in `findings` as a warning.
    fn write(
        &self,
        _profile: &Profile,
        _out: &mut dyn Write,
        _options: &WriteOptions,
        _findings: &mut Findings,
    ) -> Result<()> {
        Err(Error::unsupported(format!("cfghub cannot write {} files", self.name())))
    }
}

/// Every format, in the order content sniffing tries them.
pub fn formats() -> &'static [&'static dyn Format] {
    crate::converters::ALL
}

/// The format called `name`.
pub fn by_name(name: &str) -> Result<&'static dyn Format> {
    formats().iter().copied().find(|f| f.name() == name).ok_or_else(|| {
        let names: Vec<&str> = formats().iter().map(|f| f.name()).collect();
        Error::usage(format!("unknown format '{name}'"))
            .with_hint(format!("known formats: {}", names.join(", ")))
    })
}

/// The format of an opened input: `forced` when given, else by content, else by file name.
pub fn detect_input(input: &Input, forced: Option<&str>) -> Result<&'static dyn Format> {
    if let Some(name) = forced {
        return by_name(name);
    }
    if let Some(f) = formats().iter().copied().find(|f| f.can_read() && f.sniff(&input.head)) {
        return Ok(f);
    }
    if let Some(f) = by_file_name(&input.name).filter(|f| f.can_read()) {
        return Ok(f);
    }
    Err(Error::usage("cannot tell the format of this input from its content or its name")
        .in_file(&input.name)
        .with_hint("name it with --from FORMAT (see `cfghub formats`)"))
}

/// The format an output file name asks for: `forced` when given, else by file name.
pub fn detect_output(path: &str, forced: Option<&str>) -> Result<&'static dyn Format> {
    if let Some(name) = forced {
        return by_name(name);
    }
    by_file_name(path).filter(|f| f.can_write()).ok_or_else(|| {
        Error::usage(format!("cannot tell the output format from the name {path}"))
            .with_hint("name it with --to FORMAT (see `cfghub formats`), or use a known extension")
    })
}

/// The format whose extensions match a path's file name (compression suffix ignored).
pub fn by_file_name(path: &str) -> Option<&'static dyn Format> {
    let base = std::path::Path::new(path).file_name()?.to_str()?;
    let base = strip_compression_suffix(base);
    formats().iter().copied().find(|f| f.matches_file_name(base))
}
