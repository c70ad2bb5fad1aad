//! Opening inputs and writing outputs.
//!
//! Inputs: a path or `-` for standard input; plain, gzip or bzip2, told apart by their magic
//! bytes (Pin and SDE write bzip2). Decompression runs beside the parsing on the calling
//! thread: gzip on one thread of its own, bzip2 block by block on every core (the `bzip2-parallel` crate of this workspace).
//! The first bytes of the decompressed stream are kept aside so the registry can sniff the
//! format without consuming anything.
//!
//! Outputs: written to a temporary file beside the target and renamed over it only when the
//! whole output succeeded, so a failed run leaves nothing behind; an output that names one of the
//! inputs is refused. A name ending in `.gz` or `.bz2` is compressed accordingly.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

pub mod sections;

/// How many decompressed bytes are kept aside for format sniffing.
pub(crate) const HEAD_LEN: usize = 64 * 1024;
const CHUNK_LEN: usize = 1 << 20;
const BUF_LEN: usize = 256 * 1024;

static PROGRESS: AtomicBool = AtomicBool::new(true);

/// Turns the progress bar on standard error on or off (`-q` turns it off). It is only ever
/// drawn when standard error is a terminal and reading takes over a second.
pub fn set_progress(enabled: bool) {
    PROGRESS.store(enabled, Ordering::Relaxed);
}

/// Whether progress may be drawn (not turned off with `-q`).
pub fn progress_enabled() -> bool {
    PROGRESS.load(Ordering::Relaxed)
}

/// A compression wrapper, told by magic bytes when reading and by file name when writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed: the bytes are the content.
    None,
    /// gzip (magic bytes `1f 8b`; name ending in `.gz`).
    Gzip,
    /// bzip2 (magic bytes `BZh1` to `BZh9`; name ending in `.bz2`), as Pin and SDE write.
    Bzip2,
}

impl Compression {
    /// The compression whose magic bytes start `head`.
    pub(crate) fn from_magic(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }

    /// The compression a file name asks for by its last extension.
    pub(crate) fn from_name(name: &str) -> Compression {
        if name.ends_with(".gz") {
            Compression::Gzip
        } else if name.ends_with(".bz2") {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }

    /// The file-name extension of this compression, with its dot (`.gz`, `.bz2`); empty for none.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Bzip2 => ".bz2",
        }
    }
}

/// Whether an uncompressed `name` is one that producers give raw files: protocol-buffer
/// profiles named `*.pb.gz` (py-spy and .NET's tools write them raw; `go tool pprof` reads
/// them either way).
fn raw_under_gz_name(name: &str, compression: Compression) -> bool {
    compression == Compression::None && name.ends_with(".pb.gz")
}

/// The file name without a `.gz`/`.bz2` suffix: what format detection by extension looks at.
pub fn strip_compression_suffix(name: &str) -> &str {
    name.strip_suffix(".gz").or_else(|| name.strip_suffix(".bz2")).unwrap_or(name)
}

/// An opened input: its name, its first decompressed bytes and a reader over all of them.
pub struct Input {
    /// The path as given, or `-` for standard input.
    pub name: String,
    /// Up to [`HEAD_LEN`] first bytes of the decompressed content (also returned by `reader`).
    pub head: Vec<u8>,
    /// The compression found by the input's magic bytes, undone before `head` and the reader.
    pub compression: Compression,
    /// The file's size in bytes, when it is a file.
    pub size: Option<u64>,
    /// The folder, when the input is one (a format stored as a folder of files): then the
    /// content is empty and the format's reader reads the folder's files.
    pub folder: Option<PathBuf>,
    rest: Box<dyn BufRead + Send>,
}

impl Input {
    /// Opens `path` (`-` is standard input) and starts decompressing it if need be.
    pub fn open(path: &str) -> Result<Input> {
        let (raw, size): (Box<dyn Read + Send>, Option<u64>) = if path == "-" {
            (Box::new(io::stdin()), None)
        } else {
            if Path::new(path).is_dir() {
                return Ok(Input {
                    name: path.to_string(),
                    head: Vec::new(),
                    compression: Compression::None,
                    size: None,
                    folder: Some(PathBuf::from(path)),
                    rest: Box::new(io::empty()),
                });
            }
            let file = File::open(path).map_err(|e| Error::io(path, e))?;
            let size = file.metadata().ok().map(|m| m.len());
            (Box::new(file), size)
        };
        Self::from_reader(path, raw, size)
    }

    /// Wraps any byte source; `size` (when known) feeds the progress bar.
    pub fn from_reader(name: &str, raw: Box<dyn Read + Send>, size: Option<u64>) -> Result<Input> {
        let raw = Progress::wrap(raw, size, name);
        let mut raw = BufReader::with_capacity(BUF_LEN, raw);
        let magic = raw.fill_buf().map_err(|e| Error::io(name, e))?;
        let compression = Compression::from_magic(magic);
        let named = Compression::from_name(name);
        if named != Compression::None && named != compression && !raw_under_gz_name(name, compression) {
            let what = if magic.is_empty() { "an empty file".to_string() } else { describe_magic(magic) };
            return Err(Error::input(format!(
                "the name ends in {} but the content is not {} data (it starts with {what})",
                named.suffix(),
                if named == Compression::Gzip { "gzip" } else { "bzip2" }
            ))
            .in_file(name)
            .with_hint("rename the file to match its content, or recompress it"));
        }
        let mut stream: Box<dyn BufRead + Send> = match compression {
            Compression::None => Box::new(raw),
            Compression::Gzip => pipelined(flate2::bufread::MultiGzDecoder::new(raw)),
            Compression::Bzip2 => bzip2_parallel::decoder(Box::new(raw), decompression_threads()),
        };
        let mut head = Vec::with_capacity(HEAD_LEN);
        (&mut stream).take(HEAD_LEN as u64).read_to_end(&mut head).map_err(|e| Error::io(name, e))?;
        Ok(Input { name: name.to_string(), head, compression, size, folder: None, rest: stream })
    }

    /// A reader over the whole decompressed content, the sniffed head included.
    pub fn reader(self) -> Box<dyn BufRead + Send> {
        Box::new(BufReader::with_capacity(BUF_LEN, Cursor::new(self.head).chain(self.rest)))
    }
}

impl Input {
    /// What a reader reads: this input's whole content (the sniffed head included), which
    /// [`Source::bytes`] maps when it is an uncompressed file.
    pub fn source(self) -> Source<'static> {
        let file = (self.name != "-" && self.size.is_some() && self.compression == Compression::None)
            .then(|| PathBuf::from(&self.name));
        let size = self.size.filter(|_| self.compression == Compression::None);
        let folder = self.folder.clone();
        Source { file, size, folder, ..Source::new(self.reader()) }
    }
}

/// What a reader reads: one input's whole content, as a stream or as bytes.
///
/// `cfghub_formats::convert::load` makes one for each input it opens, and
/// `cfghub_formats::registry::Format::read` one over any `BufRead`, so that every reader gets its
/// input the same way and none decides by itself how the bytes reach it. A reader takes the
/// content as its format wants it:
/// - [`Source::stream`]: front to back (line readers, JSON), in constant memory;
/// - [`Source::bytes`]: all of it at once, for formats read out of order or in parts. An
///   uncompressed regular file is mapped (the page cache's own pages, no copy); anything else
///   (a pipe, a compressed file, bytes in memory) is read from the stream once, into a buffer
///   reserved at the input's size when that is known.
///
/// Text formats first call [`Source::limit_lines`], so that a stream never holds a line past
/// [`MAX_LINE`].
pub struct Source<'a> {
    stream: Box<dyn BufRead + 'a>,
    /// The uncompressed regular file that holds the same bytes as `stream`, if any.
    file: Option<PathBuf>,
    /// The content's size, when known.
    size: Option<u64>,
    /// The folder the input is, for a format stored as a folder of files.
    folder: Option<PathBuf>,
    whole: Option<Whole>,
}

/// The whole content, once [`Source::bytes`] asked for it.
enum Whole {
    Mapped(crate::mem::MappedFile),
    Read(Vec<u8>),
}

impl<'a> Source<'a> {
    /// A stream of which nothing else is known (bytes in memory, a reader a test made).
    pub fn new(stream: impl BufRead + 'a) -> Source<'a> {
        Source { stream: Box::new(stream), file: None, size: None, folder: None, whole: None }
    }

    /// The folder the input is, when it is one (a format stored as a folder of files).
    pub fn folder(&self) -> Option<&Path> {
        self.folder.as_deref()
    }

    /// Bytes the content holds, when known (an uncompressed file's size): a reader that keeps
    /// the whole input may reserve it at once. Only a hint.
    pub fn size_hint(&self) -> Option<u64> {
        self.size
    }

    /// The uncompressed regular file the content comes from, if it does.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Whether [`Source::bytes`] maps a file (rather than reading the stream into memory).
    pub fn is_file(&self) -> bool {
        self.file.is_some()
    }

    /// The content as a stream, from its first byte. Not to be mixed with [`Source::bytes`].
    pub fn stream(&mut self) -> &mut dyn BufRead {
        &mut self.stream
    }

    /// Puts the stream under a [`LineLimit`] of [`MAX_LINE`]: a line-based reader of a stream
    /// (a decompressed one above all) then fails at a line too long instead of holding it.
    pub fn limit_lines(&mut self) -> &mut Self {
        let stream = std::mem::replace(&mut self.stream, Box::new(io::empty()));
        self.stream = Box::new(LineLimit::new(stream, MAX_LINE));
        self
    }

    /// The whole content: the file mapped when there is one that can be, else the stream read
    /// to its end. An error names no file, so that the caller's name for the input is used.
    pub fn bytes(&mut self) -> Result<&[u8]> {
        let whole = match self.whole.take() {
            Some(whole) => whole,
            // A file that cannot be mapped (a FIFO, an empty file) is read as the stream it is.
            None => match self.file.as_deref().and_then(|p| crate::mem::MappedFile::open(p).ok()) {
                Some(mapped) => Whole::Mapped(mapped),
                None => Whole::Read(read_whole(&mut self.stream, self.size)?),
            },
        };
        Ok(match self.whole.insert(whole) {
            Whole::Mapped(m) => m,
            Whole::Read(v) => v,
        })
    }
}

impl Source<'_> {
    /// The whole content, as [`Source::bytes`] gives it, with a handle that hands the pages
    /// of a mapped file back to the system as a reader goes past them (it does nothing for
    /// content read into memory).
    pub fn bytes_releasable(&mut self) -> Result<(&[u8], crate::mem::PageReleaser<'_>)> {
        self.bytes()?;
        Ok(match &self.whole {
            Some(Whole::Mapped(m)) => (m, m.releaser()),
            Some(Whole::Read(v)) => (v, crate::mem::PageReleaser::none()),
            None => (&[], crate::mem::PageReleaser::none()),
        })
    }

    /// Lets go of the whole content [`Source::bytes`] gave (a mapped file's pages leave the
    /// process), for a reader that is done with the bytes and has more work to do.
    pub fn release(&mut self) {
        self.whole = None;
    }
}

/// Most of an input that [`read_whole`] reserves at once from a size hint (a hint is only that).
const MOST_RESERVED: u64 = 1 << 32;

/// A whole stream in memory, reserved at once when its size is known; a
/// failure names no file, so that the caller's file name is used.
pub fn read_whole(input: &mut dyn BufRead, size_hint: Option<u64>) -> Result<Vec<u8>> {
    let reserve = size_hint.unwrap_or(0).min(MOST_RESERVED) as usize;
    // One byte more, so that reading to the end does not grow (and copy) a full buffer.
    let mut data = Vec::with_capacity(reserve.saturating_add(1));
    input.read_to_end(&mut data).map_err(|e| {
        let mut err = Error::io(String::new(), e);
        err.file = None;
        err
    })?;
    Ok(data)
}

/// Threads the command may use (`cfghub -j N`); 0 is one per core.
static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Limits the threads commands use (bzip2 decoding among them) to `n` (`cfghub -j N`).
pub fn set_threads(n: usize) {
    THREADS.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// One bzip2 decoding thread per core, or as many as `-j` allows.
fn decompression_threads() -> usize {
    match THREADS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    }
}

fn describe_magic(magic: &[u8]) -> String {
    let shown: Vec<String> = magic.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let text: String =
        magic.iter().take(4).map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect();
    format!("bytes {} \"{text}\"", shown.join(" "))
}

/// Runs a decompressor on its own thread, handing decompressed chunks over a bounded channel.
fn pipelined<D: Read + Send + 'static>(mut decoder: D) -> Box<dyn BufRead + Send> {
    let (tx, rx) = mpsc::sync_channel::<io::Result<Vec<u8>>>(4);
    std::thread::spawn(move || {
        let mut produced = 0u64;
        loop {
            let mut chunk = vec![0u8; CHUNK_LEN];
            let mut filled = 0;
            while filled < CHUNK_LEN {
                match decoder.read(&mut chunk[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // Say where: the decompressed bytes that came out before the damage.
                        let at = produced + filled as u64;
                        let e = io::Error::new(e.kind(), format!("{e} at decompressed byte {at}"));
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            produced += filled as u64;
            chunk.truncate(filled);
            let done = filled == 0;
            if tx.send(Ok(chunk)).is_err() || done {
                return;
            }
        }
    });
    Box::new(ChannelReader { rx, chunk: Vec::new(), pos: 0, done: false })
}

struct ChannelReader {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    pos: usize,
    done: bool,
}

/// `Read::read` for a reader whose buffer is its `BufRead` side: copies what `fill_buf`
/// offers.
pub(crate) fn read_buffered(reader: &mut impl BufRead, buf: &mut [u8]) -> io::Result<usize> {
    let avail = reader.fill_buf()?;
    let n = avail.len().min(buf.len());
    buf[..n].copy_from_slice(&avail[..n]);
    reader.consume(n);
    Ok(n)
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, buf)
    }
}

impl BufRead for ChannelReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.chunk.len() && !self.done {
            match self.rx.recv() {
                Ok(Ok(chunk)) if chunk.is_empty() => self.done = true,
                Ok(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("decompression failed: {e}"),
                    ));
                }
                Err(_) => self.done = true,
            }
        }
        Ok(&self.chunk[self.pos.min(self.chunk.len())..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt;
    }
}

/// A spinner naming the step a command is at (`synth: generating the profile`), drawn on
/// standard error once the command has worked a second, on a terminal only (and not with
/// `-q`), with the time it has taken; cleared when dropped.
pub struct Working {
    shared: Option<std::sync::Arc<(std::sync::Mutex<String>, std::sync::atomic::AtomicBool)>>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl Working {
    /// Starts the clock, at the step `what`.
    pub fn start(what: impl Into<String>) -> Working {
        use std::io::IsTerminal;
        if !(progress_enabled() && io::stderr().is_terminal()) {
            return Working { shared: None, watcher: None };
        }
        let shared = std::sync::Arc::new((std::sync::Mutex::new(what.into()), AtomicBool::new(false)));
        let seen = shared.clone();
        let watcher = std::thread::spawn(move || {
            let began = Instant::now();
            let bar = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
            let style = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
            bar.set_style(style);
            let mut shown = false;
            while !seen.1.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if let Ok(what) = seen.0.lock() {
                    bar.set_message(what.clone());
                }
                bar.tick();
                if !shown && began.elapsed() > Duration::from_secs(1) {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    shown = true;
                }
            }
            bar.finish_and_clear();
        });
        Working { shared: Some(shared), watcher: Some(watcher) }
    }

    /// Names the step the command is at now.
    pub fn at(&self, what: impl Into<String>) {
        if let Some(Ok(mut now)) = self.shared.as_ref().map(|s| s.0.lock()) {
            *now = what.into();
        }
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            shared.1.store(true, Ordering::Relaxed);
        }
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}

/// Counts bytes read from the raw input and draws a progress bar once reading has taken
/// more than a second, on a terminal only.
struct Progress<R> {
    inner: R,
    bar: Option<indicatif::ProgressBar>,
    started: Instant,
    shown: bool,
}

impl<R: Read + Send + 'static> Progress<R> {
    fn wrap(inner: R, size: Option<u64>, name: &str) -> Box<dyn Read + Send> {
        use std::io::IsTerminal;
        let wanted = PROGRESS.load(Ordering::Relaxed) && io::stderr().is_terminal();
        let bar = match (wanted, size) {
            (true, Some(size)) => {
                let bar = indicatif::ProgressBar::with_draw_target(
                    Some(size),
                    indicatif::ProgressDrawTarget::hidden(),
                );
                let style = indicatif::ProgressStyle::with_template(
                    "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> ");
                bar.set_style(style);
                bar.set_message(
                    Path::new(name).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                );
                Some(bar)
            }
            _ => None,
        };
        Box::new(Progress { inner, bar, started: Instant::now(), shown: false })
    }
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(bar) = &self.bar {
            bar.inc(n as u64);
            if !self.shown && self.started.elapsed() > Duration::from_secs(1) {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                self.shown = true;
            }
            if n == 0 {
                bar.finish_and_clear();
            }
        }
        Ok(n)
    }
}

impl<R> Drop for Progress<R> {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Longest line a text reader accepts: a stack of a million frames is some 10 MiB.
pub const MAX_LINE: usize = 64 << 20;

/// A `BufRead` that fails, instead of handing on, a line longer than `max` bytes: line-based
/// readers wrap their input in it so that a line never grows without bound in memory (1 GB of
/// zeros compresses to 1 MB of gzip and holds no newline). The error names the byte offset at
/// which the long line starts.
pub struct LineLimit<R> {
    inner: R,
    max: usize,
    /// Bytes consumed since the last newline, and the offset of the first of them.
    run: usize,
    line_start: u64,
    consumed: u64,
}

impl<R: BufRead> LineLimit<R> {
    /// Wraps `inner`, failing on any line longer than `max` bytes (usually [`MAX_LINE`]).
    pub fn new(inner: R, max: usize) -> Self {
        LineLimit { inner, max, run: 0, line_start: 0, consumed: 0 }
    }

    fn too_long(&self) -> io::Error {
        Error::input(format!(
            "a line longer than {} MiB starts here; this is not a text profile, or a damaged one",
            self.max >> 20
        ))
        .at_byte(self.line_start)
        .into_io()
    }
}

impl<R: BufRead> Read for LineLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LineLimit<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let (run, max) = (self.run, self.max);
        let buf = self.inner.fill_buf()?;
        let until_newline = memchr::memchr(b'\n', buf).unwrap_or(buf.len());
        if run + until_newline > max {
            return Err(self.too_long());
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if let Ok(buf) = self.inner.fill_buf() {
            let amt = amt.min(buf.len());
            match memchr::memrchr(b'\n', &buf[..amt]) {
                Some(i) => {
                    self.run = amt - i - 1;
                    self.line_start = self.consumed + i as u64 + 1;
                }
                None => self.run += amt,
            }
        }
        self.consumed += amt as u64;
        self.inner.consume(amt);
    }
}

/// The files a run has read beyond the paths on its command line (the tables of a folder,
/// the ELF files `--symbols` found by name or build id), by device and inode, with the path
/// each was read at: no output may replace one of them.
static FILES_READ: std::sync::Mutex<Vec<(u64, u64, PathBuf)>> = std::sync::Mutex::new(Vec::new());

/// Notes that the file `path` (whose metadata `meta` is) was read: an output that names it is
/// refused as one that names an input.
pub fn note_read(path: &Path, meta: &std::fs::Metadata) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mut read = FILES_READ.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !read.iter().any(|(dev, ino, _)| (*dev, *ino) == (meta.dev(), meta.ino())) {
            read.push((meta.dev(), meta.ino(), path.to_path_buf()));
        }
    }
    #[cfg(not(unix))]
    let _ = (path, meta);
}

/// The path a noted file (see [`note_read`]) that `path` names was read at, if any.
#[cfg(unix)]
fn read_as(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let read = FILES_READ.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    read.iter().find(|(dev, ino, _)| (*dev, *ino) == (meta.dev(), meta.ino())).map(|r| r.2.clone())
}

/// The path a noted file (see [`note_read`]) that `path` names was read at, if any.
#[cfg(not(unix))]
fn read_as(_path: &Path) -> Option<PathBuf> {
    None
}

/// The noted files (see [`note_read`]) inside the folder `dir`.
fn read_inside(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    let read = FILES_READ.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    read.iter().map(|r| &r.2).find(|p| p.canonicalize().is_ok_and(|p| p.starts_with(&dir))).cloned()
}

/// Refuses an output path that is one of the inputs (by path or by file identity), or a file
/// the run has read on the way (see [`note_read`]).
pub fn check_not_an_input(output: &str, inputs: &[&str]) -> Result<()> {
    if output == "-" {
        return Ok(());
    }
    let out = Path::new(output);
    for &input in inputs {
        if input == "-" {
            continue;
        }
        let same = input == output || same_file(Path::new(input), out);
        if same {
            return Err(Error::usage(format!("the output {output} is also an input"))
                .with_hint("choose another output name; cfghub never overwrites its inputs"));
        }
    }
    if let Some(read) = read_as(out) {
        return Err(Error::usage(format!(
            "the output {output} is also an input: {} was read to make it",
            read.display()
        ))
        .with_hint("choose another output name; cfghub never overwrites its inputs"));
    }
    Ok(())
}

/// Refuses an output whose folder does not exist, naming that folder (checked before any
/// input is read, so the mistake is told at once, and never in terms of the temporary file
/// the output is written through).
pub fn check_output_place(output: &str) -> Result<()> {
    if output == "-" {
        return Ok(());
    }
    let path = Path::new(output);
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    let target = resolve_symlinks(path).unwrap_or_else(|_| path.to_path_buf());
    let folder = parent_dir(&target);
    if folder.is_dir() {
        return Ok(());
    }
    Err(Error::usage(format!("the folder {} of the output {output} does not exist", folder.display()))
        .with_hint("create it first (mkdir -p), or name an output in an existing folder"))
}

/// Whether two paths name one file: by device and inode (which a symbolic link and a hard
/// link share with their target), else by canonical path.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(a), Ok(b)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return a.dev() == b.dev() && a.ino() == b.ino();
        }
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Writes an output atomically: `write` fills a temporary file beside `path` (compressed when
/// the name ends in `.gz` or `.bz2`), which replaces `path` only when `write` succeeded.
/// `-` writes to standard output.
pub fn write_output<F>(path: &str, inputs: &[&str], write: F) -> Result<()>
where
    F: FnOnce(&mut dyn Write) -> Result<()>,
{
    check_not_an_input(path, inputs)?;
    check_output_place(path)?;
    let write = |out: &mut dyn Write| write(out).map_err(name_output(path));
    if path == "-" {
        let stdout = io::stdout();
        let mut out = io::BufWriter::with_capacity(BUF_LEN, stdout.lock());
        write(&mut out)?;
        return flush_stdout(out.flush());
    }
    let target = resolve_symlinks(Path::new(path)).map_err(|e| Error::io(path, e))?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => {
            return Err(
                Error::usage(format!("the output {path} is a folder")).with_hint("name a file to write")
            )
        }
        // A device (/dev/null, a terminal) or a FIFO: written in place, as a shell redirection
        // would; only regular files are replaced by a renamed temporary file.
        Ok(m) if !m.is_file() => {
            let file =
                std::fs::OpenOptions::new().write(true).open(&target).map_err(|e| Error::io(path, e))?;
            return write_compressed(path, io::BufWriter::with_capacity(BUF_LEN, file), write);
        }
        _ => {}
    }
    let dir = parent_dir(&target);
    let (temp, _interrupted) = crate::interrupt::create_registered(
        || tempfile::Builder::new().prefix(".cfghub-").suffix(".partial").tempfile_in(&dir),
        |t| t.path().to_path_buf(),
    )
    .map_err(|e| Error::io(path, e))?;
    let file = temp.as_file().try_clone().map_err(|e| Error::io(path, e))?;
    write_compressed(path, io::BufWriter::with_capacity(BUF_LEN, file), write)?;
    set_output_permissions(temp.as_file(), &target);
    // What was read while writing counts too (a writer may read the binary it writes for).
    check_not_an_input(path, &[])?;
    temp.persist(&target).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Writers that do not know their output's path name it `output` (or `<format> output`) in
/// an error: the caller's path (or standard output) replaces that.
fn name_output(path: &str) -> impl Fn(Error) -> Error + '_ {
    move |mut e| {
        if e.file.as_deref().is_some_and(|f| f == "output" || f.ends_with(" output")) {
            e.file = Some(if path == "-" { "standard output".to_string() } else { path.to_string() });
        }
        e
    }
}

/// Writes an output that is a folder atomically: `write` fills an empty temporary folder beside
/// `path`, which is renamed to `path` only when `write` succeeded; a failure removes it and
/// leaves `path` as it was. An existing `path` is replaced only when it is a folder that holds
/// nothing but what `replaceable` accepts (an earlier output of the same format); never when it
/// is, or holds, one of `inputs`.
pub fn write_output_folder<F>(
    path: &str,
    inputs: &[&str],
    replaceable: fn(&Path) -> bool,
    write: F,
) -> Result<()>
where
    F: FnOnce(&Path, &Path) -> Result<()>,
{
    let (target, existing) = folder_target(path, inputs, "app.tables/")?;
    if existing {
        let empty = std::fs::read_dir(&target).map_err(|e| Error::io(path, e))?.next().is_none();
        if !empty && !replaceable(&target) {
            return Err(Error::usage(format!("the output folder {path} holds files cfghub did not write"))
                .with_hint("name a new folder, or remove this one first"));
        }
    }
    let dir = parent_dir(&target);
    let (temp, _interrupted) = partial_folder(&dir, path)?;
    write(temp.path(), &target)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o755));
    }
    // The old folder moves aside (into an empty temporary folder it replaces), the new one takes
    // its name, then the old one goes.
    let old = if existing {
        let (old, moved) = crate::interrupt::create_moved_aside(
            || tempfile::Builder::new().prefix(".cfghub-").suffix(".old").tempdir_in(&dir),
            |t| t.path().to_path_buf(),
            &target,
        )
        .map_err(|e| Error::io(path, e))?;
        std::fs::rename(&target, old.path()).map_err(|e| Error::io(path, e))?;
        Some((old, moved))
    } else {
        None
    };
    let written = temp.keep();
    if let Err(e) = std::fs::rename(&written, &target) {
        let _ = std::fs::remove_dir_all(&written);
        if let Some((old, _)) = &old {
            let _ = std::fs::rename(old.path(), &target);
        }
        return Err(Error::io(path, e));
    }
    drop(old);
    Ok(())
}

/// An empty temporary folder in `dir` for the output `path` to be written into, removed when
/// the run is stopped by a signal.
fn partial_folder(dir: &Path, path: &str) -> Result<(tempfile::TempDir, crate::interrupt::Registered)> {
    crate::interrupt::create_registered(
        || tempfile::Builder::new().prefix(".cfghub-").suffix(".partial").tempdir_in(dir),
        |t| t.path().to_path_buf(),
    )
    .map_err(|e| Error::io(path, e))
}

/// The folder an output `path` names (links resolved), and whether it exists: refused when
/// it is standard output, an input, in no writable place, a file, or a folder that holds one of
/// `inputs` or a file read so far (`example` names a folder in the hints).
fn folder_target(path: &str, inputs: &[&str], example: &str) -> Result<(PathBuf, bool)> {
    if path == "-" {
        return Err(Error::usage("this format is a folder of files and cannot go to standard output")
            .with_hint(format!("name an output folder, e.g. -o {example}")));
    }
    check_not_an_input(path, inputs)?;
    check_output_place(path)?;
    let target = resolve_symlinks(Path::new(path)).map_err(|e| Error::io(path, e))?;
    match std::fs::metadata(&target) {
        Ok(m) if !m.is_dir() => Err(Error::usage(format!("the output {path} exists and is not a folder"))
            .with_hint(format!("name a new folder, e.g. {example}"))),
        Ok(_) => {
            let canonical = target.canonicalize().map_err(|e| Error::io(path, e))?;
            let inside =
                inputs.iter().any(|i| Path::new(i).canonicalize().is_ok_and(|i| i.starts_with(&canonical)))
                    || read_inside(&canonical).is_some();
            if inside {
                return Err(Error::usage(format!("the output folder {path} holds one of the inputs"))
                    .with_hint("choose another output name; cfghub never overwrites its inputs"));
            }
            Ok((target, true))
        }
        Err(_) => Ok((target, false)),
    }
}

/// Adds files to the folder `path` (made when missing): `write` fills an empty temporary
/// folder beside it, and only when it succeeded does each file written move into `path` at the
/// same place, replacing a file there. A file named as a new one in the same top folder
/// elsewhere goes (a profile of a fleet written again under other partitions). Refused when
/// `path` is, or holds, one of `inputs`.
pub fn add_to_output_folder<F>(path: &str, inputs: &[&str], write: F) -> Result<()>
where
    F: FnOnce(&Path, &Path) -> Result<()>,
{
    let (target, _) = folder_target(path, inputs, "fleet.tables/")?;
    let dir = parent_dir(&target);
    let (temp, _interrupted) = partial_folder(&dir, path)?;
    write(temp.path(), &target)?;
    let mut written = Vec::new();
    files_under(temp.path(), temp.path(), &mut written).map_err(|e| Error::io(path, e))?;
    std::fs::create_dir_all(&target).map_err(|e| Error::io(path, e))?;
    // Files of the same name in the same top folder, elsewhere: an earlier write of the same
    // member under other partitions.
    let mut stale = Vec::new();
    for top in written.iter().filter_map(|r| r.components().next()).collect::<std::collections::BTreeSet<_>>()
    {
        let top = target.join(top);
        if top.is_dir() {
            files_under(&target, &top, &mut stale).map_err(|e| Error::io(path, e))?;
        }
    }
    // The new files first, each in one rename: a failure leaves the old member whole beside
    // what moved.
    for rel in &written {
        let to = target.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(path, e))?;
        }
        std::fs::rename(temp.path().join(rel), &to).map_err(|e| Error::io(path, e))?;
    }
    for old in &stale {
        let same_member = written
            .iter()
            .any(|w| w.components().next() == old.components().next() && w.file_name() == old.file_name());
        if same_member && !written.contains(old) {
            std::fs::remove_file(target.join(old)).map_err(|e| Error::io(path, e))?;
        }
    }
    Ok(())
}

/// The files under `dir`, as paths relative to `base`, appended to `out`.
fn files_under(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            files_under(base, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(base) {
            out.push(rel.to_path_buf());
        }
    }
    Ok(())
}

/// Runs `write` into `out`, compressed as `path`'s name asks, and flushes everything.
fn write_compressed<W: Write, F>(path: &str, out: W, write: F) -> Result<()>
where
    F: FnOnce(&mut dyn Write) -> Result<()>,
{
    match Compression::from_name(path) {
        Compression::None => {
            let mut w = out;
            write(&mut w)?;
            w.flush().map_err(|e| Error::io(path, e))
        }
        Compression::Gzip => {
            let mut w = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            write(&mut w)?;
            w.finish().and_then(|mut b| b.flush()).map_err(|e| Error::io(path, e))
        }
        Compression::Bzip2 => {
            let mut w = bzip2::write::BzEncoder::new(out, bzip2::Compression::best());
            write(&mut w)?;
            w.finish().and_then(|mut b| b.flush()).map_err(|e| Error::io(path, e))
        }
    }
}

/// The path a chain of symbolic links ends at (which need not exist yet): an output named by a
/// link is written to the link's target and the link stays.
fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The folder an output is made in (its temporary file or folder sits beside it): the path's
/// parent, or `.` for a bare name.
fn parent_dir(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Temporary files are private (0600); an output gets the permissions of the file it replaces,
/// or the usual 0644 when it is new.
fn set_output_permissions(file: &File, target: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(target).map(|m| m.permissions().mode()).unwrap_or(0o644);
        let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = (file, target);
}

fn flush_stdout(r: io::Result<()>) -> Result<()> {
    r.map_err(|e| Error::io("standard output", e))
}

/// Converts an `io::Error` raised while writing into our error, naming the output.
pub fn write_error(path: &str) -> impl Fn(io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_bytes(name: &str, bytes: Vec<u8>) -> Result<Input> {
        Input::from_reader(name, Box::new(Cursor::new(bytes)), None)
    }

    fn read_all(input: Input) -> Vec<u8> {
        let mut v = Vec::new();
        input.reader().read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn plain_gzip_and_bzip2_are_told_apart_by_magic() {
        let text = b"{ \"MAJOR_VERSION\" : 1 }".repeat(10_000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        bz.write_all(&text).unwrap();
        for (bytes, expected) in [
            (text.clone(), Compression::None),
            (gz.finish().unwrap(), Compression::Gzip),
            (bz.finish().unwrap(), Compression::Bzip2),
        ] {
            let input = open_bytes("x", bytes).unwrap();
            assert_eq!(input.compression, expected);
            assert_eq!(input.head.len(), HEAD_LEN);
            assert_eq!(read_all(input), text);
        }
    }

    #[test]
    fn a_source_gives_the_same_bytes_mapped_read_or_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let text: Vec<u8> = (0..200_000u32).flat_map(|i| format!("{i} line\n").into_bytes()).collect();
        let path = dir.path().join("plain.txt");
        std::fs::write(&path, &text).unwrap();
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, b"").unwrap();

        let mut file = Input::open(path.to_str().unwrap()).unwrap().source();
        assert_eq!(file.file(), Some(path.as_path()));
        assert_eq!(file.size_hint(), Some(text.len() as u64));
        assert_eq!(file.bytes().unwrap(), &text[..]);

        let mut streamed = Vec::new();
        Input::open(path.to_str().unwrap()).unwrap().source().stream().read_to_end(&mut streamed).unwrap();
        assert_eq!(streamed, text);

        // An empty file cannot be mapped: it is read as the stream it is.
        let mut nothing = Input::open(empty.to_str().unwrap()).unwrap().source();
        assert!(nothing.is_file());
        assert_eq!(nothing.bytes().unwrap(), b"");

        // Compressed content is no file's bytes: read from the stream.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let gz_path = dir.path().join("plain.txt.gz");
        std::fs::write(&gz_path, gz.finish().unwrap()).unwrap();
        let mut unpacked = Input::open(gz_path.to_str().unwrap()).unwrap().source();
        assert!(!unpacked.is_file());
        assert_eq!(unpacked.size_hint(), None);
        assert_eq!(unpacked.bytes().unwrap(), &text[..]);

        let mut memory = Source::new(&text[..]);
        assert_eq!((memory.file(), memory.size_hint()), (None, None));
        assert_eq!(memory.bytes().unwrap(), &text[..]);
    }

    #[test]
    fn a_limited_source_refuses_a_line_too_long_for_the_limit() {
        let long = vec![b'x'; MAX_LINE + 10];
        let err = Source::new(&long[..]).limit_lines().bytes().map(|_| ()).unwrap_err();
        assert!(err.to_string().contains("longer than 64 MiB"), "{err}");
        assert_eq!(Source::new(&long[..]).bytes().unwrap().len(), long.len());
    }

    #[test]
    fn a_bz2_name_over_other_content_is_refused() {
        let err = open_bytes("app.dcfg.json.bz2", b"{ }".to_vec()).err().unwrap();
        assert!(err.to_string().contains("not bzip2"), "{err}");
    }

    #[test]
    fn corrupt_bzip2_is_an_error_not_a_panic() {
        let mut bytes = b"BZh91AY&SY".to_vec();
        bytes.extend(std::iter::repeat_n(0x55, 1000));
        let result = open_bytes("x.bz2", bytes).and_then(|input| {
            let mut v = Vec::new();
            input.reader().read_to_end(&mut v).map_err(|e| Error::io("x.bz2", e))
        });
        assert!(result.is_err());
    }

    #[test]
    fn failed_writes_leave_nothing_and_inputs_are_never_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.txt");
        let out_s = out.to_str().unwrap();
        let r = write_output(out_s, &[], |w| {
            w.write_all(b"partial").unwrap();
            Err(Error::input("boom"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_output(out_s, &[], |w| w.write_all(b"ok").map_err(write_error(out_s))).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"ok");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644, "outputs are readable like any file the user writes");
        }
        let err = write_output(out_s, &[out_s], |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("also an input"));
        assert_eq!(std::fs::read(&out).unwrap(), b"ok");
    }
}
