//! What every fuzz target does with the bytes libFuzzer hands it: read them with one of
//! cfghub's readers. A reader may refuse the input with an error (that is its job); it must not
//! panic, hang or allocate without bound. libFuzzer reports a panic as a crash, a slow input
//! past `-timeout`, and an allocation past `-malloc_limit_mb` (`scripts/fuzz.sh` sets both).

use cfghub::error::Findings;
use cfghub::format::ReadOptions;
use cfghub::formats::dcfg_trace;
use cfghub::registry;

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

/// Decompresses `data` with cfghub's parallel bzip2 decoder on one and on two workers; where it
/// decodes, libbz2 must decode it to the same bytes (the two workers as well).
pub fn bzip2(data: &[u8]) {
    use std::io::Read;
    let decode = |workers| {
        let raw = Box::new(std::io::Cursor::new(data.to_vec()));
        let mut out = Vec::new();
        bzip2_parallel::decoder(raw, workers).read_to_end(&mut out).map(|_| out)
    };
    let Ok(one) = decode(1) else { return };
    let mut reference = Vec::new();
    bzip2::read::MultiBzDecoder::new(data)
        .read_to_end(&mut reference)
        .expect("libbz2 refuses what we decode");
    assert!(one == reference, "decoded differently from libbz2");
    assert!(decode(2).ok() == Some(one), "two workers decode differently from one");
}

/// Decodes `data` as a DCFG-trace edge by edge, in order (what `cfghub trace edges` does),
/// refusing traces that declare more than [`MAX_EDGES`] edges.
pub fn trace_edges(data: &[u8]) {
    use cfghub::formats::dcfg_trace::decode::{stream_versioned, EachEdge};
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

/// Wraps `data` as the `.debug_PT` section of a minimal 64-bit little-endian ELF object file
/// (compressed with zlib, `SHF_COMPRESSED`, when the first byte is odd) and reads the file
/// with the CSI reader: the object-file path, section inflation included, on any section text.
pub fn read_csi_elf(data: &[u8]) {
    let Some((&flags, text)) = data.split_first() else { return };
    read("csi", &csi_object(text, flags & 1 == 1));
}

/// A relocatable ELF64 (little-endian, x86-64) with one section `.debug_PT` holding `text`.
pub fn csi_object(text: &[u8], compress: bool) -> Vec<u8> {
    const SHF_COMPRESSED: u64 = 0x800;
    let (content, flags) = if compress {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        let _ = z.write_all(text);
        let packed = z.finish().unwrap_or_default();
        // Elf64_Chdr: ch_type 1 (zlib), reserved, ch_size, ch_addralign.
        let mut c = Vec::with_capacity(24 + packed.len());
        c.extend_from_slice(&1u32.to_le_bytes());
        c.extend_from_slice(&0u32.to_le_bytes());
        c.extend_from_slice(&(text.len() as u64).to_le_bytes());
        c.extend_from_slice(&1u64.to_le_bytes());
        c.extend_from_slice(&packed);
        (c, SHF_COMPRESSED)
    } else {
        (text.to_vec(), 0)
    };
    let shstrtab = b"\0.debug_PT\0.shstrtab\0";
    let content_at = 64u64;
    let names_at = content_at + content.len() as u64;
    let headers_at = (names_at + shstrtab.len() as u64).next_multiple_of(8);
    let mut f = Vec::new();
    f.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    f.extend_from_slice(&1u16.to_le_bytes()); // ET_REL
    f.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&0u64.to_le_bytes()); // entry
    f.extend_from_slice(&0u64.to_le_bytes()); // phoff
    f.extend_from_slice(&headers_at.to_le_bytes()); // shoff
    f.extend_from_slice(&0u32.to_le_bytes());
    for v in [64u16, 0, 0, 64, 3, 2] {
        f.extend_from_slice(&v.to_le_bytes()); // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    }
    f.extend_from_slice(&content);
    f.extend_from_slice(shstrtab);
    f.resize(headers_at as usize, 0);
    let section = |f: &mut Vec<u8>, name: u32, ty: u32, flags: u64, offset: u64, size: u64, align: u64| {
        f.extend_from_slice(&name.to_le_bytes());
        f.extend_from_slice(&ty.to_le_bytes());
        for v in [flags, 0, offset, size] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&align.to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
    };
    section(&mut f, 0, 0, 0, 0, 0, 0);
    section(&mut f, 1, 1, flags, content_at, content.len() as u64, 1);
    section(&mut f, 11, 3, 0, names_at, shstrtab.len() as u64, 1);
    f
}

/// Symbolizes addresses the input chooses in an ELF file the input holds: the first byte is
/// the number of addresses (at most 32), then 8 bytes each (little-endian), then the file.
/// Each is looked up as a stated address and as the start of a range of line rows.
pub fn symbolize_at(data: &[u8]) {
    use cfghub::symbolize::{Found, Symbolizer};
    let Some((&count, rest)) = data.split_first() else { return };
    let count = (count as usize % 33).min(rest.len() / 8);
    let (raw, elf) = rest.split_at(count * 8);
    let addresses: Vec<u64> =
        raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    let path = std::env::temp_dir().join(format!("cfghub-fuzz-at-{}", std::process::id()));
    if std::fs::write(&path, elf).is_err() {
        return;
    }
    let found = Found { binary: Some(path.clone()), debug: Some(path), ..Found::default() };
    let Ok(symbolizer) = Symbolizer::new(found) else { return };
    let lookup = symbolizer.lookup();
    for &a in &addresses {
        let _ = symbolizer.find_symbol(a);
        let _ = lookup.find_location(a);
        let _ = lookup.find_frames(a);
        let _ = lookup.find_location_range(a, a.saturating_add(256));
    }
}

/// The tables folder every `tables` input starts from: fixtures/tables/hello-world.tables,
/// built into the target (a valid folder, so that a damaged member is read with all the
/// others in place and the reader gets past the tables it opens first).
const BASE_TABLES: &[(&str, &[u8])] = &[
    ("profile", include_bytes!("../../fixtures/tables/hello-world.tables/profile.parquet")),
    ("headers", include_bytes!("../../fixtures/tables/hello-world.tables/headers.parquet")),
    ("events", include_bytes!("../../fixtures/tables/hello-world.tables/events.parquet")),
    ("files", include_bytes!("../../fixtures/tables/hello-world.tables/files.parquet")),
    ("frames", include_bytes!("../../fixtures/tables/hello-world.tables/frames.parquet")),
    ("processes", include_bytes!("../../fixtures/tables/hello-world.tables/processes.parquet")),
    ("threads", include_bytes!("../../fixtures/tables/hello-world.tables/threads.parquet")),
    ("images", include_bytes!("../../fixtures/tables/hello-world.tables/images.parquet")),
    ("symbols", include_bytes!("../../fixtures/tables/hello-world.tables/symbols.parquet")),
    ("source_lines", include_bytes!("../../fixtures/tables/hello-world.tables/source_lines.parquet")),
    ("blocks", include_bytes!("../../fixtures/tables/hello-world.tables/blocks.parquet")),
    ("block_counts", include_bytes!("../../fixtures/tables/hello-world.tables/block_counts.parquet")),
    ("edges", include_bytes!("../../fixtures/tables/hello-world.tables/edges.parquet")),
    ("edge_counts", include_bytes!("../../fixtures/tables/hello-world.tables/edge_counts.parquet")),
    ("edge_costs", include_bytes!("../../fixtures/tables/hello-world.tables/edge_costs.parquet")),
    ("routines", include_bytes!("../../fixtures/tables/hello-world.tables/routines.parquet")),
    ("routine_blocks", include_bytes!("../../fixtures/tables/hello-world.tables/routine_blocks.parquet")),
    ("loops", include_bytes!("../../fixtures/tables/hello-world.tables/loops.parquet")),
    ("loop_blocks", include_bytes!("../../fixtures/tables/hello-world.tables/loop_blocks.parquet")),
    ("costs", include_bytes!("../../fixtures/tables/hello-world.tables/costs.parquet")),
    ("block_lines", include_bytes!("../../fixtures/tables/hello-world.tables/block_lines.parquet")),
    ("coverage", include_bytes!("../../fixtures/tables/hello-world.tables/coverage.parquet")),
    ("stack_nodes", include_bytes!("../../fixtures/tables/hello-world.tables/stack_nodes.parquet")),
    ("samples", include_bytes!("../../fixtures/tables/hello-world.tables/samples.parquet")),
    ("sample_labels", include_bytes!("../../fixtures/tables/hello-world.tables/sample_labels.parquet")),
    ("inline_frames", include_bytes!("../../fixtures/tables/hello-world.tables/inline_frames.parquet")),
    ("call_contexts", include_bytes!("../../fixtures/tables/hello-world.tables/call_contexts.parquet")),
    ("call_context_costs", include_bytes!("../../fixtures/tables/hello-world.tables/call_context_costs.parquet")),
];

/// Reads `data` as a folder of Parquet tables, through the command line's path (a folder
/// input, the `tables` format). `data` is a series of members, each a header line
/// `NAME SIZE\n` (a table's name, as in `NAME.parquet`, and the member's size in bytes, decimal)
/// followed by that many bytes, the file `NAME.parquet`; a size past the end (or none) takes the
/// rest, and a member of size 0 leaves its table out. Tables no member names are those of
/// [`BASE_TABLES`]; names that are no table are ignored. The folder is this process's own, and
/// only the files that changed since the last input are written again.
pub fn read_tables(data: &[u8]) {
    use std::sync::Mutex;
    // What the folder holds now, per table of BASE_TABLES: None before the first input.
    static WRITTEN: Mutex<Option<Vec<Option<Vec<u8>>>>> = Mutex::new(None);

    let mut wanted: Vec<Option<&[u8]>> = BASE_TABLES.iter().map(|&(_, bytes)| Some(bytes)).collect();
    let mut rest = data;
    while !rest.is_empty() {
        let Some(end) = rest.iter().position(|&b| b == b'\n') else { break };
        let header = String::from_utf8_lossy(&rest[..end]);
        rest = &rest[end + 1..];
        let mut words = header.split(' ');
        let name = words.next().unwrap_or_default();
        let size = words.next().and_then(|s| s.parse::<usize>().ok()).unwrap_or(usize::MAX).min(rest.len());
        let (member, after) = rest.split_at(size);
        rest = after;
        if let Some(t) = BASE_TABLES.iter().position(|&(n, _)| n == name) {
            wanted[t] = (size > 0).then_some(member);
        }
    }

    let dir = std::env::temp_dir().join(format!("cfghub-fuzz-{}.tables", std::process::id()));
    let mut state = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    let written = state.get_or_insert_with(|| {
        let names: Vec<&str> = cfghub::formats::tables::TABLES.iter().map(|t| t.0).collect();
        assert!(
            names == BASE_TABLES.iter().map(|t| t.0).collect::<Vec<_>>(),
            "BASE_TABLES must list the tables of formats::tables::TABLES, in order"
        );
        let _ = std::fs::remove_dir_all(&dir);
        vec![None; BASE_TABLES.len()]
    });
    let _ = std::fs::create_dir_all(&dir);
    for (t, want) in wanted.iter().enumerate() {
        if written[t].as_deref() == *want {
            continue;
        }
        let path = dir.join(format!("{}.parquet", BASE_TABLES[t].0));
        let done = match want {
            Some(bytes) => std::fs::write(&path, bytes),
            None => std::fs::remove_file(&path),
        };
        if done.is_err() {
            // Start again from an empty folder next time.
            *state = None;
            return;
        }
        written[t] = want.map(<[u8]>::to_vec);
    }
    drop(state);
    let Ok(input) = cfghub::io::Input::open(&dir.to_string_lossy()) else { return };
    let format = registry::by_name("tables").unwrap_or_else(|_| panic!("no format called tables"));
    let mut findings = Findings::default();
    let _ = format.read_source(&mut input.source(), &options(), &mut findings);
}
