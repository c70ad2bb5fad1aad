//! DCFG writer, in Pin's style: addresses and offsets as hex strings, sizes and counts as
//! integers, every table with its header row.
//!
//! The default layout puts one table row per line with no padding (small and still diffable);
//! `--pretty` indents like Pin's own output. Costs at addresses (e.g. merged DCPI samples) go
//! into the extension tables `CFGHUB_EVENTS` and `CFGHUB_COSTS`, which other DCFG readers
//! ignore as the spec asks of unknown tags. What DCFG cannot express is named in a warning.

use std::io::Write;

use super::read::{COSTS_TAG, EVENTS_TAG};
use super::Options;
use cfghub_analysis::plt::{ImageStubs, Stubs};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{
    Block, Edge, EdgeKind, Image, NodeRef, Process, Profile, Routine, SourceLine, Symbol,
};

/// Writes `profile` as DCFG JSON.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &Options,
    findings: &mut Findings,
) -> Result<()> {
    let mut w = JsonOut { out, pretty: options.pretty, buf: String::with_capacity(1 << 16) };
    write_dcfg(&mut w, profile, options, findings)?;
    w.flush()
}

/// The procedure linkage table's stubs each process's `Ir` counts under its calls and its
/// binaries explain ([`cfghub_analysis::plt`]), for a process with blocks.
fn skipped_stubs(profile: &Profile, options: &Options) -> Vec<Option<Stubs>> {
    let Some(ir) = profile.event_index("Ir") else { return Vec::new() };
    profile
        .processes
        .iter()
        .map(|p| {
            let blocks = p.images.iter().any(|i| !i.blocks.is_empty());
            blocks.then(|| cfghub_analysis::plt::skipped_stubs(profile, p, ir, &options.symbols)).flatten()
        })
        .collect()
}

/// Refuses a profile that states costs, functions or calls but not one address: its DCFG would
/// be empty (a line-level Callgrind profile, folded stacks). An empty profile writes as an empty
/// DCFG.
fn refuse_without_addresses(profile: &Profile) -> Result<()> {
    let images = || profile.processes.iter().flat_map(|p| &p.images);
    let addressed = images().any(|i| !i.blocks.is_empty() || i.costs.has_offsets());
    let content = images().any(|i| !i.costs.is_empty() || !i.symbols.is_empty())
        || profile.processes.iter().any(|p| !p.edges.is_empty() || !p.stacks.is_empty());
    if addressed || !content {
        return Ok(());
    }
    Err(Error::unsupported(
        "the profile has no instruction addresses (costs by function or source line only), \
         and a DCFG is made of basic blocks at addresses: nothing of it could be written",
    )
    .with_hint(
        "record the Callgrind profile with instruction addresses: valgrind --tool=callgrind \
         --dump-instr=yes --collect-jumps=yes PROGRAM (jumps give the edges between blocks)",
    ))
}

/// A small buffered JSON emitter: rows are formatted into a string and written in blocks.
struct JsonOut<'a> {
    out: &'a mut dyn Write,
    pretty: bool,
    buf: String,
}

impl JsonOut<'_> {
    fn s(&mut self, text: &str) -> Result<()> {
        self.buf.push_str(text);
        if self.buf.len() >= 1 << 16 {
            self.flush()?;
        }
        Ok(())
    }

    /// A line break plus indentation in pretty mode; a bare line break otherwise.
    fn nl(&mut self, indent: usize) -> Result<()> {
        self.buf.push('\n');
        if self.pretty {
            for _ in 0..indent {
                self.buf.push(' ');
            }
        }
        Ok(())
    }

    /// Separator after a comma or bracket: a space in pretty mode.
    fn sp(&mut self) {
        if self.pretty {
            self.buf.push(' ');
        }
    }

    fn int(&mut self, v: u64) {
        let mut b = itoa::Buffer::new();
        self.buf.push_str(b.format(v));
    }

    fn hex(&mut self, v: u64) {
        use std::fmt::Write as _;
        let _ = write!(self.buf, "\"{v:#x}\"");
    }

    fn string(&mut self, v: &str) {
        // serde_json escapes exactly as JSON requires.
        self.buf.push_str(&serde_json::to_string(v).expect("strings serialise"));
    }

    fn ints(&mut self, vs: impl IntoIterator<Item = u64>) {
        self.buf.push('[');
        self.sp();
        for (i, v) in vs.into_iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
                self.sp();
            }
            self.int(v);
        }
        self.sp();
        self.buf.push(']');
    }

    fn header(&mut self, names: &[&str]) {
        self.buf.push('[');
        self.sp();
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
                self.sp();
            }
            self.buf.push('"');
            self.buf.push_str(n);
            self.buf.push('"');
        }
        self.sp();
        self.buf.push(']');
    }

    fn key(&mut self, key: &str) {
        self.buf.push('"');
        self.buf.push_str(key);
        self.buf.push_str(if self.pretty { "\" : " } else { "\":" });
    }

    fn flush(&mut self) -> Result<()> {
        self.out.write_all(self.buf.as_bytes()).map_err(|e| Error::io("output", e))?;
        self.buf.clear();
        Ok(())
    }
}

/// Rows of a table: opens with the header, then each row on its own line.
fn table<F>(w: &mut JsonOut, indent: usize, header: &[&str], rows: usize, mut row: F) -> Result<()>
where
    F: FnMut(&mut JsonOut, usize) -> Result<()>,
{
    w.buf.push('[');
    w.sp();
    w.header(header);
    for i in 0..rows {
        w.buf.push(',');
        w.nl(indent + 2)?;
        w.buf.push('[');
        w.sp();
        row(w, i)?;
        w.sp();
        w.buf.push(']');
        if w.buf.len() >= 1 << 16 {
            w.flush()?;
        }
    }
    w.nl(indent)?;
    w.buf.push(']');
    Ok(())
}

/// A comma (with a space in pretty mode) between cells.
fn c(w: &mut JsonOut) {
    w.buf.push(',');
    w.sp();
}

fn write_dcfg(w: &mut JsonOut, profile: &Profile, options: &Options, findings: &mut Findings) -> Result<()> {
    refuse_without_addresses(profile)?;
    let stubs = skipped_stubs(profile, options);
    let (major, minor) = (1, 0);
    w.s("{")?;
    w.sp();
    w.key("MAJOR_VERSION");
    w.int(major);
    w.s(",")?;
    w.nl(2)?;
    w.key("MINOR_VERSION");
    w.int(minor);
    w.s(",")?;
    w.nl(2)?;
    w.key("FILE_NAMES");
    let files: Vec<(u32, &str)> = profile.files.iter().collect();
    table(w, 2, &["FILE_NAME_ID", "FILE_NAME"], files.len(), |w, i| {
        w.int(u64::from(files[i].0) + 1);
        c(w);
        w.string(files[i].1);
        Ok(())
    })?;
    w.s(",")?;
    w.nl(2)?;
    w.key("EDGE_TYPES");
    table(w, 2, &["EDGE_TYPE_ID", "EDGE_TYPE"], EdgeKind::ALL.len(), |w, i| {
        w.int(i as u64 + 1);
        c(w);
        w.string(EdgeKind::ALL[i].as_str());
        Ok(())
    })?;
    let specials = special_ids(profile, &stubs);
    w.s(",")?;
    w.nl(2)?;
    w.key("SPECIAL_NODES");
    let names = ["START", "END", "UNKNOWN"];
    table(w, 2, &["NODE_ID", "NODE_NAME"], 3, |w, i| {
        w.int(specials[i]);
        c(w);
        w.string(names[i]);
        Ok(())
    })?;
    let has_costs = profile.processes.iter().any(|p| p.images.iter().any(|i| !i.costs.is_empty()));
    if has_costs || !profile.events.is_empty() {
        w.s(",")?;
        w.nl(2)?;
        w.key(EVENTS_TAG);
        let events = &profile.events;
        table(w, 2, &["EVENT", "DESCRIPTION"], events.len(), |w, i| {
            w.string(&events[i].name);
            if let Some(d) = &events[i].description {
                c(w);
                w.string(d);
            }
            Ok(())
        })?;
    }
    w.s(",")?;
    w.nl(2)?;
    w.key("PROCESSES");
    let processes = &profile.processes;
    table(w, 2, &["PROCESS_ID", "PROCESS_DATA"], processes.len(), |w, i| {
        write_process(w, profile, &processes[i], stubs.get(i).and_then(Option::as_ref), &specials, findings)
    })?;
    w.nl(0)?;
    w.s("}\n")?;
    Ok(())
}

/// Ids for START, END and UNKNOWN: 1, 2, 3 unless blocks (the stubs' too) use them. Among `n`
/// blocks the three lie at or below `n + 3`, so only the ids up to there are marked.
fn special_ids(profile: &Profile, stubs: &[Option<Stubs>]) -> [u64; 3] {
    let stub_blocks = stubs.iter().flatten().flat_map(|s| &s.images).flat_map(|i| &i.blocks);
    let blocks = || {
        profile
            .processes
            .iter()
            .flat_map(|p| p.images.iter().flat_map(|i| &i.blocks))
            .chain(stub_blocks.clone())
    };
    let mut used = vec![false; blocks().count() + 4];
    for b in blocks() {
        if let Some(u) = usize::try_from(b.id).ok().and_then(|i| used.get_mut(i)) {
            *u = true;
        }
    }
    let mut free = (1..used.len()).filter(|&i| !used[i]).map(|i| i as u64);
    [(); 3].map(|()| free.next().unwrap_or_default())
}

fn write_process(
    w: &mut JsonOut,
    profile: &Profile,
    p: &Process,
    stubs: Option<&Stubs>,
    specials: &[u64; 3],
    findings: &mut Findings,
) -> Result<()> {
    let ind = 6;
    w.int(p.pid);
    c(w);
    w.nl(ind)?;
    w.s("{")?;
    w.sp();
    let threads = p.thread_count();
    if !p.thread_instr_counts.is_empty() {
        w.key("INSTR_COUNT_PER_THREAD");
        w.ints(p.thread_instr_counts.iter().copied());
        w.s(",")?;
        w.nl(ind + 2)?;
    }
    if let Some(total) = p.instr_count {
        w.key("INSTR_COUNT");
        w.int(total);
        w.s(",")?;
        w.nl(ind + 2)?;
    }
    w.key("IMAGES");
    // The process's instruction executions, as its `Ir` counts them and as its blocks hold
    // them, added up as the images are written.
    let mut instructions = Instructions { ir: profile.event_index("Ir"), ..Instructions::default() };
    table(w, ind + 2, &["IMAGE_ID", "LOAD_ADDR", "SIZE", "IMAGE_DATA"], p.images.len(), |w, i| {
        let view = ImageView { image: &p.images[i], stubs: stubs.and_then(|s| s.of_image(i as u32)) };
        write_image(w, profile, &view, &mut instructions, findings)
    })?;
    w.s(",")?;
    w.nl(ind + 2)?;
    w.key("EDGES");
    // Each image's stubs, looked up once rather than per edge.
    let stubs_of_image: Vec<Option<&ImageStubs>> =
        (0..p.images.len()).map(|i| stubs.and_then(|s| s.of_image(i as u32))).collect();
    let node_id = |n: NodeRef| -> Option<u64> {
        match n {
            NodeRef::Start => Some(specials[0]),
            NodeRef::End => Some(specials[1]),
            NodeRef::Unknown => Some(specials[2]),
            NodeRef::Block(b) => match stubs_of_image.get(b.image as usize).copied().flatten() {
                None => Some(p.block(b).id),
                Some(stubs) => Some(
                    ImageView { image: &p.images[b.image as usize], stubs: Some(stubs) }.block_id(b.block),
                ),
            },
            NodeRef::Symbol(_) => None,
        }
    };
    // The edges between nodes DCFG has (not functions), as (source, target, edge), made as
    // they are written rather than held in a list beside the model.
    let writable =
        || edges_with_stubs(p, stubs).filter_map(move |e| Some((node_id(e.source)?, node_id(e.target)?, e)));
    let count = writable().count();
    let mut edges = writable();
    let dropped = edges_with_stubs(p, stubs).count() - count;
    warn_left_out(p, dropped, instructions.unheld(), findings);
    let renumber = !edge_ids_usable(p);
    if renumber {
        findings.warn(
            None,
            format!("process {}: edge ids were missing or repeated; edges were numbered 1..n", p.pid),
        );
    }
    table(
        w,
        ind + 2,
        &["EDGE_ID", "SOURCE_NODE_ID", "TARGET_NODE_ID", "EDGE_TYPE_ID", "COUNT_PER_THREAD"],
        count,
        |w, k| {
            // `count` rows: one per writable edge.
            let Some((src, dst, e)) = edges.next() else { return Ok(()) };
            write_edge_row(w, if renumber { k as u64 + 1 } else { e.id }, src, dst, e, threads);
            Ok(())
        },
    )?;
    w.nl(ind)?;
    w.s("}")?;
    Ok(())
}

/// A process's instruction executions as its `Ir` event counts them (`ir`: that event, when
/// the profile has it) and as its blocks hold them (`NUM_INSTRS x COUNT`).
#[derive(Default)]
struct Instructions {
    ir: Option<usize>,
    counted: u64,
    held: u64,
}

impl Instructions {
    /// What `Ir` counts beyond what the blocks hold, and the `Ir` in all; `None` when the
    /// blocks hold it all. Valgrind charges the PLT stub a call goes through (`--skip-plt=yes`,
    /// its default) and a lazy binding's first pass to the calling instruction, so that
    /// instruction ran fewer times than its `Ir` says, and a DCFG, whose blocks run all their
    /// instructions equally often, has no block for the rest.
    fn unheld(&self) -> Option<(u64, u64)> {
        (self.ir.is_some() && self.held > 0 && self.held < self.counted)
            .then(|| (self.counted - self.held, self.counted))
    }
}

/// Warns of what process `p` holds that DCFG has no place for: the `dropped` edges between
/// functions rather than blocks; notes (`-v`) of what a DCFG cannot hold by its nature: the
/// `unheld` instruction executions of the profile's `Ir` no block holds
/// ([`Instructions::unheld`]; the cost table keeps them), calls' inclusive costs, call stacks.
fn warn_left_out(p: &Process, dropped: usize, unheld: Option<(u64, u64)>, findings: &mut Findings) {
    if dropped > 0 {
        findings.warn(
            None,
            format!("process {}: {dropped} edge(s) between functions rather than blocks cannot be written to DCFG", p.pid),
        );
    }
    if let Some((unheld, counted)) = unheld {
        findings.detail(
            None,
            format!(
                "process {}: the blocks hold {} of the {counted} instruction executions its Ir counts: Valgrind charges the other {unheld} to the calls that ran them (PLT stubs: with the binary, named by --symbols where the profile's path no longer finds it, they become blocks), which the cost table keeps",
                p.pid,
                counted - unheld
            ),
        );
    }
    if p.edges.iter().any(|e| !e.inclusive().is_empty()) {
        findings.detail(
            None,
            format!("process {}: inclusive costs of calls have no place in DCFG and were left out", p.pid),
        );
    }
    if !p.stacks.is_empty() {
        findings.detail(
            None,
            format!(
                "process {}: {} call stack(s) have no place in DCFG and were left out",
                p.pid,
                p.stacks.len()
            ),
        );
    }
}

/// The process's edges as written: those the stubs replace or drop ([`Stubs::replaced`]) as
/// they say, then the edges through the stubs.
fn edges_with_stubs<'a>(p: &'a Process, stubs: Option<&'a Stubs>) -> impl Iterator<Item = &'a Edge> + 'a {
    let replaced = stubs.map_or(&[][..], |s| &s.replaced[..]);
    let mut next = 0;
    let own = p.edges.iter().enumerate().filter_map(move |(k, e)| {
        while replaced.get(next).is_some_and(|r| r.0 < k) {
            next += 1;
        }
        match replaced.get(next) {
            Some((at, by)) if *at == k => by.as_ref(),
            _ => Some(e),
        }
    });
    own.chain(stubs.into_iter().flat_map(|s| &s.added))
}

/// An image as written: its own blocks, routines and symbols, then the stubs'.
struct ImageView<'a> {
    image: &'a Image,
    stubs: Option<&'a ImageStubs>,
}

impl<'a> ImageView<'a> {
    /// The id of block `index` (the stubs' count on from the image's own).
    fn block_id(&self, index: u32) -> u64 {
        let own = self.image.blocks.len();
        match (index as usize).checked_sub(own) {
            None => self.image.blocks[index as usize].id,
            Some(k) => self.stubs.map_or(0, |s| s.blocks[k].id),
        }
    }

    fn blocks(&self) -> impl Iterator<Item = &'a Block> + Clone + 'a {
        self.image.blocks.iter().chain(self.stubs.into_iter().flat_map(|s| &s.blocks))
    }

    fn routines(&self) -> Option<Vec<&'a Routine>> {
        let stubs: Vec<&Routine> = self.stubs.into_iter().flat_map(|s| &s.routines).collect();
        match &self.image.routines {
            Some(own) => Some(own.iter().chain(stubs).collect()),
            None => (!stubs.is_empty()).then_some(stubs),
        }
    }
}

/// Writes the row of the EDGES table for edge `e`, numbered `id`, from node `src` to node
/// `dst`, its counts listed for all `threads` of the process.
#[inline]
fn write_edge_row(w: &mut JsonOut, id: u64, src: u64, dst: u64, e: &cfghub_model::ir::Edge, threads: usize) {
    w.int(id);
    c(w);
    w.int(src);
    c(w);
    w.int(dst);
    c(w);
    let kind = EdgeKind::ALL.iter().position(|&k| k == e.kind).unwrap_or(0);
    w.int(kind as u64 + 1);
    c(w);
    // Every edge lists all threads, so the array lengths agree across the table.
    let mut counts = e.counts.clone();
    counts.resize(threads.max(e.counts.len()), 0);
    w.ints(counts);
}

/// Whether the edges' ids are all set and distinct: ids in increasing order (as readers
/// number them) are, and others are sorted to be checked.
fn edge_ids_usable(p: &Process) -> bool {
    let increasing = p.edges.windows(2).all(|pair| pair[0].id < pair[1].id);
    if increasing {
        return p.edges.first().is_none_or(|e| e.id != 0);
    }
    let mut ids: Vec<u64> = p.edges.iter().map(|e| e.id).collect();
    ids.sort_unstable();
    ids.first().is_none_or(|&id| id != 0) && ids.windows(2).all(|pair| pair[0] != pair[1])
}

/// Writes one image row: id, load address, size, then the object of its tables (file name,
/// symbols, source lines, blocks, routines, costs), each only where the image has some.
fn write_image(
    w: &mut JsonOut,
    profile: &Profile,
    view: &ImageView,
    instructions: &mut Instructions,
    findings: &mut Findings,
) -> Result<()> {
    let (ind, image) = (12, view.image);
    w.int(image.id);
    c(w);
    w.hex(image.load_addr);
    c(w);
    let size = image.size.unwrap_or_else(|| {
        view.blocks().map(|b| b.offset.saturating_add(u64::from(b.size))).max().unwrap_or(0)
    });
    w.int(size);
    c(w);
    w.nl(ind)?;
    w.s("{")?;
    w.sp();
    let mut first = true;
    let mut sep = |w: &mut JsonOut| -> Result<()> {
        if !first {
            w.s(",")?;
            w.nl(ind + 2)?;
        }
        first = false;
        Ok(())
    };
    if let Some(f) = image.file {
        sep(w)?;
        w.key("FILE_NAME_ID");
        w.int(u64::from(f) + 1);
    }
    // The stubs' symbols come after the image's own, so that the cost table's rows name
    // the same symbols.
    let stub_symbols = view.stubs.into_iter().flat_map(|s| &s.symbols);
    let symbols: Vec<_> = image.symbols.iter().filter(|s| s.offset.is_some()).chain(stub_symbols).collect();
    // Callgrind's names of recursion levels (`fib'2`) are names of the same code, which a
    // DCFG holds once, under its function's name.
    let (levels, unplaced) = image
        .symbols
        .iter()
        .filter(|s| s.offset.is_none())
        .partition::<Vec<_>, _>(|s| cfghub_analysis::names::recursion_base(&s.name).is_some());
    if !unplaced.is_empty() {
        findings.warn(
            None,
            format!(
                "image {}: {} symbol(s) without an address cannot be written to DCFG",
                profile.image_name(image),
                unplaced.len()
            ),
        );
    }
    if !levels.is_empty() {
        findings.detail(
            None,
            format!(
                "image {}: {} recursion level name(s) (such as {}) are the code of their function: not written",
                profile.image_name(image),
                levels.len(),
                levels[0].name
            ),
        );
    }
    if !symbols.is_empty() {
        sep(w)?;
        w.key("SYMBOLS");
        write_symbols(w, ind + 2, &symbols)?;
    }
    let lines: Vec<_> = image.source_lines.iter().filter(|l| l.file.is_some()).collect();
    if !lines.is_empty() {
        sep(w)?;
        w.key("SOURCE_DATA");
        write_source_data(w, ind + 2, &lines)?;
    }
    if view.blocks().next().is_some() {
        sep(w)?;
        w.key("BASIC_BLOCKS");
        write_blocks(w, ind + 2, view.blocks())?;
        let held = view.blocks().map(Block::executed_instrs);
        instructions.held = held.fold(instructions.held, u64::saturating_add);
    }
    if let Some(routines) = view.routines() {
        sep(w)?;
        w.key("ROUTINES");
        write_routines(w, ind + 2, view, &routines)?;
    }
    let addressed = image.costs.offsets().filter(Option::is_some).count();
    if addressed < image.costs.len() {
        findings.warn(
            None,
            format!(
                "image {}: {} cost(s) at a function or line but no address cannot be written to DCFG",
                profile.image_name(image),
                image.costs.len() - addressed
            ),
        );
    }
    if addressed > 0 {
        sep(w)?;
        w.key(COSTS_TAG);
        // The rows with an address, read in order as they are written: a list of them took
        // about 60 bytes a row (a profile of 2.5 million sampled addresses: 17x its size).
        let (mut rows, mut next) = (image.costs.cursor(), 0);
        let written = written_symbols(image);
        // A row's function is stated where it is not the function whose symbol covers its
        // address (what a reader takes a row without one for): code two functions share.
        let (covering, mut hint) = (cfghub_analysis::names::SymbolIndex::new(image), 0);
        // Without a function on any row (samples merged in), no `SYMBOL` column: a reader
        // would take its rows for the covering symbol's.
        let with_symbols = image.costs.has_symbols();
        let header: &[&str] =
            if with_symbols { &["ADDR_OFFSET", "VALUES", "SYMBOL"] } else { &["ADDR_OFFSET", "VALUES"] };
        table(w, ind + 2, header, addressed, |w, _| {
            let offset = loop {
                next += 1;
                if let Some(offset) = rows.offset(next - 1) {
                    break offset;
                }
            };
            w.hex(offset);
            c(w);
            let values = rows.values(next - 1);
            if let Some(v) = instructions.ir.and_then(|e| values.get(e)) {
                instructions.counted = instructions.counted.saturating_add(*v);
            }
            w.ints(values.iter().copied());
            let stated = rows
                .symbol(next - 1)
                .filter(|_| with_symbols)
                .and_then(|s| written.get(s as usize).copied().flatten());
            if let Some(s) = stated {
                let covered = covering.covering_from(offset, &mut hint);
                if covered.and_then(|c| written.get(c as usize).copied().flatten()) != Some(s) {
                    c(w);
                    w.int(u64::from(s));
                }
            }
            Ok(())
        })?;
    }
    w.sp();
    w.s("}")?;
    Ok(())
}

/// The row of the image's `SYMBOLS` table (the symbols with an address, in order) each of its
/// symbols is written as: a recursion level's name (`fib'2`, no address) is its function's.
fn written_symbols(image: &Image) -> Vec<Option<u32>> {
    let mut rows = Vec::with_capacity(image.symbols.len());
    let mut by_name = std::collections::HashMap::new();
    let mut next = 0u32;
    for s in &image.symbols {
        if s.offset.is_some() {
            by_name.entry(s.name.as_str()).or_insert(next);
            rows.push(Some(next));
            next += 1;
        } else {
            rows.push(None);
        }
    }
    for (row, s) in rows.iter_mut().zip(&image.symbols) {
        if row.is_none() {
            *row = cfghub_analysis::names::recursion_base(&s.name).and_then(|b| by_name.get(b).copied());
        }
    }
    rows
}

/// The `SYMBOLS` table: name, offset and (when known) size of the symbols with an address.
fn write_symbols(w: &mut JsonOut, ind: usize, symbols: &[&Symbol]) -> Result<()> {
    table(w, ind, &["NAME", "ADDR_OFFSET", "SIZE"], symbols.len(), |w, i| {
        let s = symbols[i];
        w.string(&s.name);
        c(w);
        w.hex(s.offset.unwrap_or(0));
        if let Some(size) = s.size {
            c(w);
            w.int(size);
        }
        Ok(())
    })
}

/// The `SOURCE_DATA` table: the address ranges of source lines (file ids count from 1).
fn write_source_data(w: &mut JsonOut, ind: usize, lines: &[&SourceLine]) -> Result<()> {
    table(w, ind, &["FILE_NAME_ID", "LINE_NUM", "ADDR_OFFSET", "SIZE", "NUM_INSTRS"], lines.len(), |w, i| {
        let l = lines[i];
        w.int(u64::from(l.file.unwrap_or(0)) + 1);
        c(w);
        w.int(u64::from(l.line));
        c(w);
        w.hex(l.offset);
        c(w);
        w.int(u64::from(l.size));
        c(w);
        w.int(u64::from(l.num_instrs));
        Ok(())
    })
}

/// The `BASIC_BLOCKS` table: id, offset, size, instructions, last instruction and (when
/// known) execution count of each block.
fn write_blocks<'a>(
    w: &mut JsonOut,
    ind: usize,
    blocks: impl Iterator<Item = &'a Block> + Clone,
) -> Result<()> {
    let mut rows = blocks.clone();
    table(
        w,
        ind,
        &["NODE_ID", "ADDR_OFFSET", "SIZE", "NUM_INSTRS", "LAST_INSTR_OFFSET", "COUNT"],
        blocks.count(),
        |w, _| {
            // `count` rows: one per block.
            let Some(b) = rows.next() else { return Ok(()) };
            w.int(b.id);
            c(w);
            w.hex(b.offset);
            c(w);
            w.int(u64::from(b.size));
            c(w);
            w.int(u64::from(b.num_instrs));
            c(w);
            w.int(u64::from(b.last_instr_offset));
            if let Some(count) = b.count {
                c(w);
                w.int(count);
            }
            Ok(())
        },
    )
}

/// The `ROUTINES` table: entry, exits, nodes (with their immediate dominators when the model
/// has them) and loops of each routine, by block id.
fn write_routines(w: &mut JsonOut, ind: usize, view: &ImageView, routines: &[&Routine]) -> Result<()> {
    let id = |b: u32| view.block_id(b);
    table(w, ind, &["ENTRY_NODE_ID", "EXIT_NODE_IDS", "NODES", "LOOPS"], routines.len(), |w, i| {
        let r = &routines[i];
        w.int(id(r.entry));
        c(w);
        w.ints(r.exits.iter().map(|&b| id(b)));
        c(w);
        let header: &[&str] = if r.idoms.len() == r.nodes.len() && !r.idoms.is_empty() {
            &["NODE_ID", "IDOM_NODE_ID"]
        } else {
            &["NODE_ID"]
        };
        inline_table(w, header, r.nodes.len(), |w, k| {
            w.int(id(r.nodes[k]));
            if header.len() == 2 {
                c(w);
                w.int(id(r.idoms[k]));
            }
        });
        if !r.loops.is_empty() {
            c(w);
            inline_table(
                w,
                &[
                    "LOOP_HEAD_NODE_ID",
                    "LOOP_BACK_EDGE_SOURCE_NODE_IDS",
                    "LOOP_NODE_IDS",
                    "PARENT_LOOP_HEAD_NODE_ID",
                ],
                r.loops.len(),
                |w, k| {
                    let l = &r.loops[k];
                    w.int(id(l.head));
                    c(w);
                    w.ints(l.back_edge_sources.iter().map(|&b| id(b)));
                    c(w);
                    w.ints(l.nodes.iter().map(|&b| id(b)));
                    if let Some(p) = l.parent {
                        c(w);
                        w.int(id(p));
                    }
                },
            );
        }
        Ok(())
    })
}

/// A nested table written on one line (routine nodes and loops, as Pin does).
fn inline_table<F: FnMut(&mut JsonOut, usize)>(w: &mut JsonOut, header: &[&str], rows: usize, mut row: F) {
    w.buf.push('[');
    w.sp();
    w.header(header);
    for i in 0..rows {
        c(w);
        w.buf.push('[');
        w.sp();
        row(w, i);
        w.sp();
        w.buf.push(']');
    }
    w.sp();
    w.buf.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::Edge;

    fn with_edge_ids(ids: &[u64]) -> Process {
        let edges = ids.iter().map(|&id| Edge { id, ..Edge::default() }).collect();
        Process { edges, ..Process::default() }
    }

    #[test]
    fn edge_ids_are_usable_when_set_and_distinct_in_any_order() {
        assert!(edge_ids_usable(&with_edge_ids(&[])));
        assert!(edge_ids_usable(&with_edge_ids(&[1, 2, 5])));
        assert!(edge_ids_usable(&with_edge_ids(&[5, 1, 2])));
        assert!(!edge_ids_usable(&with_edge_ids(&[0, 1, 2])));
        assert!(!edge_ids_usable(&with_edge_ids(&[2, 0, 1])));
        assert!(!edge_ids_usable(&with_edge_ids(&[3, 1, 3])));
    }

    #[test]
    fn special_nodes_take_the_smallest_ids_no_block_has() {
        let image = |ids: &[u64]| Image {
            blocks: ids.iter().map(|&id| Block { id, ..Block::default() }).collect(),
            ..Image::default()
        };
        let profile = |images: Vec<Image>| Profile {
            processes: vec![Process { images, ..Process::default() }],
            ..Profile::default()
        };
        assert_eq!(special_ids(&Profile::default(), &[]), [1, 2, 3]);
        assert_eq!(special_ids(&profile(vec![image(&[1, 2]), image(&[4, 1 << 40])]), &[]), [3, 5, 6]);
        assert_eq!(special_ids(&profile(vec![image(&[7, 8, 9])]), &[]), [1, 2, 3]);
        assert_eq!(special_ids(&profile(vec![image(&[3, 2, 1])]), &[]), [4, 5, 6]);
    }
}
