//! The formats cfghub speaks, and how one is chosen for a file.
//!
//! Every format implements [`Format`]: a name, file extensions, a content sniffer, and `read`
//! and/or `write`. The registry picks a format from the content first, the file name second;
//! `--from`/`--to` on the command line always win.

use std::any::{Any, TypeId};
use std::io::{BufRead, Write};
use std::sync::Arc;

use crate::error::{Error, Findings, Result};
use crate::io::{strip_compression_suffix, Input};
use crate::ir::Profile;

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

/// What a reader is told about its input, and the options of single formats.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Bytes the input will hold, when known (an uncompressed file's size): readers that keep
    /// the whole input reserve it at once. Only a hint; [`crate::convert::load`] sets it.
    pub size_hint: Option<u64>,
    /// The input's path when it is an uncompressed regular file ([`crate::convert::load`] sets
    /// it): a reader may map the file to read parts of it side by side instead of reading the
    /// stream, which holds the same bytes.
    pub file: Option<std::path::PathBuf>,
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
