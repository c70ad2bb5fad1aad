//! What every fuzz target does with the bytes libFuzzer hands it: read them with one of
//! cfghub's readers. A reader may refuse the input with an error (that is its job); it must not
//! panic, hang or allocate without bound. libFuzzer reports a panic as a crash, a slow input
//! past `-timeout`, and an allocation past `-malloc_limit_mb` (`scripts/fuzz.sh` sets both).

use cfghub::converters::dcfg_trace;
use cfghub::error::Findings;
use cfghub::registry::{self, ReadOptions};

/// Most edges a DCFG-trace target decodes: a trace that declares more is refused before
/// decoding, as `--max-edges` does on the command line.
pub const MAX_EDGES: u64 = 1 << 20;

/// Reader options: defaults, with the DCFG-trace edge limit lowered to [`MAX_EDGES`].
fn options() -> ReadOptions {
    ReadOptions::default().with(dcfg_trace::Options { max_edges: Some(MAX_EDGES), declared_only: false })
}

/// Reads `data` as format `name` (a name `cfghub formats` lists), discarding the result.
pub fn read(name: &str, data: &[u8]) {
    let format = registry::by_name(name).unwrap_or_else(|_| panic!("no format called {name}"));
    let mut input = data;
    let mut findings = Findings::default();
    let _ = format.read(&mut input, &options(), &mut findings);
}

/// Reads `data` through cfghub's input layer (gzip and bzip2 by magic bytes), then as `name`.
pub fn read_compressed(name: &str, data: &[u8]) {
    let raw: Box<dyn std::io::Read + Send> = Box::new(std::io::Cursor::new(data.to_vec()));
    let Ok(input) = cfghub::io::Input::from_reader("fuzz", raw, Some(data.len() as u64)) else { return };
    let format = registry::by_name(name).unwrap_or_else(|_| panic!("no format called {name}"));
    let mut findings = Findings::default();
    let _ = format.read(&mut input.reader(), &options(), &mut findings);
}

/// Decodes `data` as a DCFG-trace edge by edge, in order (what `cfghub trace edges` does),
/// refusing traces that declare more than [`MAX_EDGES`] edges.
pub fn trace_edges(data: &[u8]) {
    use cfghub::converters::dcfg_trace::decode::{stream_versioned, EachEdge};
    let job = EachEdge { f: |_pid: u64, _thread: u64, _id: u64| Ok(()), thread: None };
    let mut input = data;
    let _ = stream_versioned(&mut input, None, job, Some(MAX_EDGES));
}

/// Opens `data` as an ELF file with its DWARF, as `--symbols` does (the file is both the binary
/// and its debug file), and looks up its own symbols' and segments' addresses: symbol, source
/// position, line rows and inline chain. The symbolizer maps files, so the bytes go to a file of
/// this process's own first.
pub fn symbolize(data: &[u8]) {
    use cfghub::symbolize::elf::ElfFile;
    use cfghub::symbolize::{Found, Symbolizer};
    let path = std::env::temp_dir().join(format!("cfghub-fuzz-elf-{}", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Ok(elf) = ElfFile::open(&path) else { return };
    let mut addresses: Vec<u64> = elf.function_symbols().iter().take(32).map(|s| s.address).collect();
    let segments = elf.segments();
    addresses.extend(segments.iter().take(8).map(|s| s.address));
    drop(elf);
    let found = Found { binary: Some(path.clone()), debug: Some(path), ..Found::default() };
    let Ok(symbolizer) = Symbolizer::new(found) else { return };
    let lookup = symbolizer.lookup();
    for &a in &addresses {
        let _ = symbolizer.find_symbol(a);
        let _ = lookup.find_location(a);
        let _ = lookup.find_frames(a);
    }
    for s in segments.iter().take(8) {
        let _ = lookup.find_location_range(s.address, s.address.saturating_add(s.size.min(4096)));
    }
}
