//! Tables back into the model.
//!
//! The numbers that tie rows together (a block's `process`, `image` and `block`, an edge's
//! ends, a routine's blocks) are identifiers, not positions: a table filtered in SQL keeps them
//! with gaps, and the model numbers what is left from 0 again. Rows of one image (blocks,
//! symbols) must come in ascending order of their number, as cfghub writes them and as
//! `COPY (select ... where ...)` keeps them. A reference to something no table holds (an edge to
//! a block filtered away) is an error that names the table, column and row.

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::format::ReadOptions;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{
    power_of_ten, Block, BlockLines, BlockRef, CallContext, CostTable, Counts, Coverage, CoverageKind,
    CoverageSite, EdgeDetails, EdgeKind, Event, FrameAddress, FrameId, FrameSource, Image, InlineFrame,
    Inlined, Label, LabelValue, LineItem, Loop, Meta, NodeRef, PathEdge, Process, Profile, Routine, Site,
    SourceLine, StackValue, Symbol, SymbolRef, MAX_DECIMALS, NO_INDEX,
};

use super::columns::{open_table, Col, ReadTable, TableReader, Texts};
use super::ids::two_frames;
use super::layout::{fleet_members, is_fleet, Layout};
use super::query::{make_path, read_stack_tables, unmade_path, SampleKeys};
use super::tree::SharedTree;
use super::*;

/// Reads the tables of the folder the source names: one profile's, a fleet's (every profile
/// in it summed, or the one `--profile` names), or the stack tables a query wrote.
pub fn read(source: &mut Source<'_>, options: &ReadOptions, _findings: &mut Findings) -> Result<Profile> {
    let Some(dir) = source.folder().map(Path::to_path_buf) else {
        return Err(Error::usage("tables are read from a folder, not from a file or a stream")
            .with_hint("name the folder that holds blocks.parquet and the other tables"));
    };
    let wanted = options.formats.get::<Select>().profile;
    let wanted = wanted.as_deref();
    if dir.join("profile.parquet").is_file() {
        let profile = read_one(&Layout::Folder(dir.clone()), wanted, None)?;
        return profile.ok_or_else(|| not_there(&dir, wanted));
    }
    if is_fleet(&dir) {
        return read_fleet(&dir, wanted);
    }
    if dir.join("samples.parquet").is_file() {
        return read_stack_tables(&[Layout::Folder(dir)], wanted, None);
    }
    read_folder(&dir)
}

/// The error for a profile id a folder does not hold.
fn not_there(_dir: &Path, wanted: Option<&str>) -> Error {
    Error::usage(format!("no profile {:?} in the folder", wanted.unwrap_or_default()))
        .with_hint("a fleet's profile ids name the files under its profile/ folder; leave --profile out to read them all")
}

/// Every profile of the fleet at `dir` (or the one `wanted` names), summed; each profile's
/// partitions add their labels to its samples.
fn read_fleet(dir: &Path, wanted: Option<&str>) -> Result<Profile> {
    let members = fleet_members(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    let members: Vec<&Layout> = members
        .iter()
        .filter(|m| wanted.is_none_or(|w| matches!(m, Layout::Fleet { file, .. } if file == w)))
        .collect();
    if members.is_empty() {
        return Err(match wanted {
            Some(_) => not_there(dir, wanted),
            None => Error::input(format!("{}: a fleet of tables without profiles", dir.display())),
        });
    }
    let shared = SharedTree::read(dir)?;
    if !dir.join("profile").is_dir() {
        let owned: Vec<Layout> = members.into_iter().cloned().collect();
        return read_stack_tables(&owned, None, Some(&shared));
    }
    // Members are read side by side in runs, each run summed, the runs' sums added in order
    // (integers add up the same in any grouping).
    let per_run = members.len().div_ceil(rayon::current_num_threads().max(1)).max(1);
    let sums: Vec<Result<Profile>> = members
        .par_chunks(per_run)
        .map(|run| {
            let mut sum = cfghub_analysis::sum::ProfileSum::new();
            for member in run {
                let mut profile = read_one(member, None, Some(&shared))?.expect("no profile id asked");
                cfghub_analysis::labels::apply(&mut profile, &member.labels());
                sum.add(profile).map_err(|e| e.in_file(member.path("profile").display().to_string()))?;
            }
            Ok(sum.finish())
        })
        .collect();
    let mut total = cfghub_analysis::sum::ProfileSum::new();
    for sum in sums {
        total.add(sum?)?;
    }
    Ok(total.finish())
}

/// Reads the tables in `dir`, one profile's.
pub fn read_folder(dir: &Path) -> Result<Profile> {
    Ok(read_one(&Layout::Folder(dir.to_path_buf()), None, None)?.expect("no profile id asked"))
}

/// Reads one profile's tables where `layout` says, its frames and call paths from `shared` (a
/// fleet's tree) when given, else from its own tables; `None` when `wanted` is not its id.
fn read_one(layout: &Layout, wanted: Option<&str>, shared: Option<&SharedTree>) -> Result<Option<Profile>> {
    let head = open_table(&layout.path("profile"), "profile", PROFILE, None)?.all()?;
    if head.rows != 1 {
        return Err(head.error(
            "profile_id",
            head.rows.min(1),
            format!("the profile table holds {} rows; cfghub reads one profile at a time", head.rows),
        )
        .with_hint("a query's result of many profiles reads as their stack tables alone: leave out the profile table"));
    }
    let id = head.texts("profile_id").get(0).unwrap_or_default().to_string();
    if wanted.is_some_and(|w| w != id) {
        return Ok(None);
    }
    // Every table is opened and its columns checked before any is read; the big ones are then
    // read a batch of rows at a time, straight into the model.
    let mut tables: HashMap<&str, TableReader> = TABLES[1..]
        .par_iter()
        .filter(|&&(name, _)| shared.is_none() || !["frames", "stack_nodes"].contains(&name))
        .filter(|&&(name, _)| !OPTIONAL_TABLES.contains(&name) || layout.path(name).exists())
        .map(|&(name, specs)| Ok((name, open_table(&layout.path(name), name_of(name), specs, Some(&id))?)))
        .collect::<Result<_>>()?;
    // A fleet's profile has no frames or call paths of its own: they are the fleet's tree.
    let frames = tables.remove("frames").map(|mut f| f.all()).transpose()?;
    let own_nodes = tables.remove("stack_nodes");
    let mut t = |name: &str| tables.remove(name).expect("every table is opened once");
    let mut profile = Profile { meta: meta(&head, &t("headers").all()?)?, ..Profile::default() };
    let (events, event_decimals) = events(&mut profile, &t("events").all()?)?;
    let frame_ids = strings(&mut profile, &t("files").all()?, frames.as_ref())?;
    let mut index = processes(&mut profile, &t("processes").all()?, &t("threads").all()?)?;
    images(&mut profile, &mut index, &t("images").all()?)?;
    symbols(&mut profile, &mut index, t("symbols"))?;
    source_lines(&mut profile, &index, t("source_lines"))?;
    blocks(&mut profile, &mut index, t("blocks"))?;
    let edge_ids = edges(&mut profile, &index, &events, [t("edges"), t("edge_counts"), t("edge_costs")])?;
    routines(&mut profile, &index, [t("routines"), t("routine_blocks"), t("loops"), t("loop_blocks")])?;
    costs(&mut profile, &index, &events, t("costs"))?;
    block_lines(&mut profile, &index, t("block_lines"))?;
    coverage(&mut profile, &index, &t("coverage").all()?)?;
    let tree = match (shared, own_nodes) {
        (Some(tree), _) => Tree::Shared { tree, frames: FxHashMap::default() },
        (None, nodes) => {
            Tree::own(&profile, &index, &frame_ids, nodes.expect("opened without a fleet's tree"))?
        }
    };
    let samples = t("samples");
    let labels =
        tables.remove("sample_labels").map(|l| sample_labels(&index, l)).transpose()?.unwrap_or_default();
    stacks(&mut profile, &index, &event_decimals, tree, (samples, labels))?;
    if let (Some(contexts), Some(costs)) =
        (tables.remove("call_contexts"), tables.remove("call_context_costs"))
    {
        call_contexts(&mut profile, &index, &edge_ids, contexts, costs)?;
    }
    if let Some(inlined) = tables.remove("inline_frames") {
        inline_frames(&mut profile, &index, inlined)?;
    }
    Ok(Some(profile))
}

/// The `'static` name of a table.
fn name_of(name: &str) -> &'static str {
    TABLES.iter().map(|t| t.0).find(|&n| n == name).unwrap_or("profile")
}

/// Identifiers in ascending order, and the position each has among them.
#[derive(Default)]
struct Ids(Vec<u64>);

impl Ids {
    /// Adds `id`, which must be above every one before; its position.
    fn push(&mut self, t: &ReadTable, column: &str, row: usize, id: u64) -> Result<u32> {
        if self.0.last().is_some_and(|&last| id <= last) {
            return Err(t.error(
                column,
                row,
                format!(
                    "{column} {id} comes after {}: rows must be in ascending order",
                    self.0[self.0.len() - 1]
                ),
            ));
        }
        self.0.push(id);
        Ok(self.0.len() as u32 - 1)
    }

    fn get(&self, id: u64) -> Option<u32> {
        // Unfiltered tables number from 0 without gaps.
        if self.0.get(id as usize) == Some(&id) {
            return Some(id as u32);
        }
        self.0.binary_search(&id).ok().map(|p| p as u32)
    }
}

/// How identifiers in the tables map to the model's positions.
#[derive(Default)]
struct Index {
    processes: Ids,
    /// Per process: its images.
    images: Vec<Ids>,
    /// Per process, per image: its symbols and its blocks.
    symbols: Vec<Vec<Ids>>,
    blocks: Vec<Vec<Ids>>,
}

impl Index {
    fn process(&self, t: &ReadTable, column: &str, row: usize) -> Result<usize> {
        self.process_of(t, column, row, t.int(column, row))
    }

    /// The process numbered `id` in `column` of `row`.
    #[inline]
    fn process_of(&self, t: &ReadTable, column: &str, row: usize, id: u64) -> Result<usize> {
        self.processes
            .get(id)
            .map(|p| p as usize)
            .ok_or_else(|| t.error(column, row, format!("no process {id} in the processes table")))
    }

    fn image(&self, t: &ReadTable, p: usize, column: &str, row: usize) -> Result<usize> {
        self.image_of(t, p, column, row, t.int(column, row))
    }

    /// The image numbered `id` of process `p`, in `column` of `row`.
    #[inline]
    fn image_of(&self, t: &ReadTable, p: usize, column: &str, row: usize, id: u64) -> Result<usize> {
        self.images[p]
            .get(id)
            .map(|i| i as usize)
            .ok_or_else(|| t.error(column, row, format!("no image {id} in the images table")))
    }

    fn block(&self, t: &ReadTable, p: usize, i: usize, column: &str, row: usize, id: u64) -> Result<u32> {
        self.blocks[p][i]
            .get(id)
            .ok_or_else(|| t.error(column, row, format!("no block {id} of image {i} in the blocks table")))
    }

    fn symbol(&self, t: &ReadTable, p: usize, i: usize, column: &str, row: usize, id: u64) -> Result<u32> {
        self.symbols[p][i]
            .get(id)
            .ok_or_else(|| t.error(column, row, format!("no symbol {id} of image {i} in the symbols table")))
    }
}

fn meta(head: &ReadTable, headers: &ReadTable) -> Result<Meta> {
    let version = match (head.ints("format_major").get(0), head.ints("format_minor").get(0)) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let mut rows: Vec<(u64, usize)> = (0..headers.rows).map(|r| (headers.int("position", r), r)).collect();
    rows.sort_unstable();
    let headers = rows
        .into_iter()
        .map(|(_, r)| {
            (
                headers.texts("key").get(r).map(str::to_owned).unwrap_or_default(),
                headers.texts("value").get(r).map(str::to_owned).unwrap_or_default(),
            )
        })
        .collect();
    Ok(Meta {
        format_version: version,
        creator: head.texts("creator").get(0).map(str::to_owned),
        command: head.texts("command").get(0).map(str::to_owned),
        headers,
        address_step: head.ints("address_step").get(0),
    })
}

/// The events, and the position of each by name.
/// The events, each with the decimal places of its stack values; the events by name.
fn events(profile: &mut Profile, t: &ReadTable) -> Result<(HashMap<String, usize>, Vec<u8>)> {
    let mut by_name = HashMap::new();
    let mut places = Vec::new();
    for r in 0..t.rows {
        if t.int("event", r) != r as u64 {
            return Err(t.error("event", r, "events are numbered 0, 1, 2, ... in row order"));
        }
        let name = t.texts("name").get(r).map(str::to_owned).unwrap_or_default();
        by_name.entry(name.clone()).or_insert(r);
        profile.events.push(Event { name, description: t.texts("description").get(r).map(str::to_owned) });
        let decimals = t.opt_u32("decimals", r)?.unwrap_or(0);
        if decimals > u32::from(MAX_DECIMALS) {
            return Err(t.error(
                "decimals",
                r,
                format!("{decimals} decimal places, past the {MAX_DECIMALS} a value may have"),
            ));
        }
        places.push(decimals as u8);
    }
    Ok((by_name, places))
}

/// The event named in `column` of row `r`: its position (`None` for a null name).
fn event_of(events: &HashMap<String, usize>, t: &ReadTable, column: &str, r: usize) -> Result<Option<usize>> {
    match t.texts(column).get(r) {
        None => Ok(None),
        Some(name) => events
            .get(name)
            .copied()
            .map(Some)
            .ok_or_else(|| t.error(column, r, format!("no event {name:?} in the events table"))),
    }
}

/// The value column of row `r` (`position`): one of the profile's `events`, the one its
/// `event` column names where it names one. Checked before any row of values is widened to
/// it: a position of 4x10^9 would otherwise make every sample 32 GB wide.
fn value_position(events: &[Event], t: &ReadTable, r: usize) -> Result<usize> {
    let position = t.int("position", r);
    let Some(event) = usize::try_from(position).ok().and_then(|p| events.get(p)) else {
        return Err(t.error(
            "position",
            r,
            format!("position {position}, but the events table holds {} event(s)", events.len()),
        ));
    };
    if let Some(name) = t.texts("event").get(r).filter(|&name| name != event.name) {
        return Err(t.error(
            "event",
            r,
            format!("event {name:?} at position {position}, where the events table has {:?}", event.name),
        ));
    }
    Ok(position as usize)
}

fn strings(profile: &mut Profile, files: &ReadTable, frames: Option<&ReadTable>) -> Result<FrameIds> {
    for r in 0..files.rows {
        let name = files.texts("name").get(r).unwrap_or_default();
        if files.int("file", r) != r as u64 || profile.files.intern(name) != r as u32 {
            return Err(files.error(
                "file",
                r,
                "files are numbered 0, 1, 2, ... in row order, each name once",
            ));
        }
    }
    let mut by_id: FrameIds = FxHashMap::default();
    let Some(frames) = frames else { return Ok(by_id) };
    for r in 0..frames.rows {
        let name = frames.texts("name").get(r).unwrap_or_default();
        let f = profile.frames.intern(name);
        match by_id.insert(frames.int("frame", r), f) {
            Some(before) if before != f => {
                let id = frames.int("frame", r) as i64;
                return Err(frames.error("frame", r, two_frames(id, profile.frames.get(before), name)));
            }
            _ => {}
        }
        // A name of several frames (sources that differ between profiles) keeps the first's.
        if frames.bools("source_known").get(r) == Some(true) && profile.frame_source(f).is_none() {
            profile
                .frame_sources
                .resize(profile.frame_sources.len().max(f as usize + 1), FrameSource::default());
            profile.frame_sources[f as usize] = FrameSource {
                file: file_ref(profile, frames, "file", r)?,
                line: frames.opt_u32("line", r)?,
                system_name: frames.texts("system_name").get(r).map(str::to_owned),
                address: frames.ints("address").get(r).map(|address| FrameAddress {
                    image: frames.ints("address_image").get(r).and_then(|i| u32::try_from(i).ok()),
                    address,
                }),
            };
        }
    }
    Ok(by_id)
}

/// The model's frame of each frame id of the `frames` table.
type FrameIds = FxHashMap<u64, FrameId>;

/// A file id that the files table holds.
fn file_ref(profile: &Profile, t: &ReadTable, column: &str, r: usize) -> Result<Option<u32>> {
    match t.ints(column).get(r) {
        Some(f) if f >= profile.files.len() as u64 => {
            Err(t.error(column, r, format!("no file {f} in the files table")))
        }
        f => Ok(f.map(|f| f as u32)),
    }
}

fn processes(profile: &mut Profile, processes: &ReadTable, threads: &ReadTable) -> Result<Index> {
    let mut index = Index::default();
    for r in 0..processes.rows {
        index.processes.push(processes, "process", r, processes.int("process", r))?;
        let n = processes.int("threads", r);
        if n > threads.rows as u64 {
            return Err(processes.error(
                "threads",
                r,
                format!("{n} threads, but the threads table has {} rows", threads.rows),
            ));
        }
        profile.processes.push(Process {
            pid: processes.int("pid", r),
            instr_count: processes.ints("instr_count").get(r),
            thread_instr_counts: vec![0; n as usize],
            ..Process::default()
        });
        index.images.push(Ids::default());
        index.symbols.push(Vec::new());
        index.blocks.push(Vec::new());
    }
    for r in 0..threads.rows {
        let p = index.process(threads, "process", r)?;
        let thread = threads.int("thread", r) as usize;
        let slot = profile.processes[p].thread_instr_counts.get_mut(thread).ok_or_else(|| {
            threads.error("thread", r, format!("thread {thread} of a process with fewer threads"))
        })?;
        *slot = threads.int("instr_count", r);
    }
    Ok(index)
}

fn images(profile: &mut Profile, index: &mut Index, t: &ReadTable) -> Result<()> {
    for r in 0..t.rows {
        let p = index.process(t, "process", r)?;
        index.images[p].push(t, "image", r, t.int("image", r))?;
        let file = file_ref(profile, t, "file", r)?;
        profile.processes[p].images.push(Image {
            id: t.int("image_id", r),
            file,
            load_addr: t.int("load_addr", r),
            size: t.ints("size").get(r),
            file_offset: t.ints("file_offset").get(r),
            build_id: t.texts("build_id").get(r).map(str::to_owned),
            no_addresses: t.bools("no_addresses").get(r) == Some(true),
            leaf_samples: t.bools("leaf_samples").get(r) == Some(true),
            routines: (t.bools("routines_stated").get(r) == Some(true)).then(Vec::new),
            // Marks an image with lines per block until the blocks are read.
            block_lines: if t.bools("lines_per_block").get(r) == Some(true) {
                vec![BlockLines::default()]
            } else {
                Vec::new()
            },
            ..Image::default()
        });
        index.symbols[p].push(Ids::default());
        index.blocks[p].push(Ids::default());
    }
    Ok(())
}

fn symbols(profile: &mut Profile, index: &mut Index, mut reader: TableReader) -> Result<()> {
    while let Some(t) = reader.next()? {
        let (names, offsets, sizes) = (t.texts("name"), t.ints("offset"), t.ints("size"));
        for r in t.range() {
            let p = index.process(&t, "process", r)?;
            let i = index.image(&t, p, "image", r)?;
            index.symbols[p][i].push(&t, "symbol", r, t.int("symbol", r))?;
            let file = file_ref(profile, &t, "file", r)?;
            profile.processes[p].images[i].symbols.push(Symbol {
                name: names.get(r).unwrap_or_default().to_owned(),
                offset: offsets.get(r),
                size: sizes.get(r),
                file,
            });
        }
    }
    Ok(())
}

fn source_lines(profile: &mut Profile, index: &Index, mut reader: TableReader) -> Result<()> {
    while let Some(t) = reader.next()? {
        let (process, image, offset) = (t.ints("process"), t.ints("image"), t.ints("offset"));
        let (files, line, size, instrs) = (t.ints("file"), t.ints("line"), t.ints("size"), t.ints("instrs"));
        let mut at = Place::default();
        let known_files = profile.files.len() as u64;
        for r in t.range() {
            let (p, i) = at.find(index, &t, r, process.at(r), image.at(r))?;
            let file = match files.get(r) {
                Some(f) if f >= known_files => {
                    return Err(t.error("file", r, format!("no file {f} in the files table")))
                }
                f => f.map(|f| f as u32),
            };
            // The reader checked that 32-bit columns fit.
            profile.processes[p].images[i].source_lines.push(SourceLine {
                file,
                line: line.at(r) as u32,
                offset: offset.at(r),
                size: size.at(r) as u32,
                num_instrs: instrs.at(r) as u32,
            });
        }
    }
    Ok(())
}

/// The process and image of the rows before, found again only when a row names others.
#[derive(Default)]
struct Place(Option<(u64, u64, usize, usize)>);

impl Place {
    /// The positions of process `pid` and image `iid`, named in the `process` and `image`
    /// columns of row `r`.
    #[inline]
    fn find(&mut self, index: &Index, t: &ReadTable, r: usize, pid: u64, iid: u64) -> Result<(usize, usize)> {
        match self.0 {
            Some((a, b, p, i)) if (a, b) == (pid, iid) => Ok((p, i)),
            _ => {
                let p = index.process_of(t, "process", r, pid)?;
                let i = index.image_of(t, p, "image", r, iid)?;
                self.0 = Some((pid, iid, p, i));
                Ok((p, i))
            }
        }
    }
}

fn blocks(profile: &mut Profile, index: &mut Index, mut reader: TableReader) -> Result<()> {
    let mut at = Place::default();
    while let Some(t) = reader.next()? {
        let (process, image, block) = (t.ints("process"), t.ints("image"), t.ints("block"));
        let (node, offset, count) = (t.ints("node"), t.ints("offset"), t.ints("count"));
        let (size, instrs, last) = (t.ints("size"), t.ints("instrs"), t.ints("last_instr_offset"));
        for r in t.range() {
            let (p, i) = at.find(index, &t, r, process.at(r), image.at(r))?;
            index.blocks[p][i].push(&t, "block", r, block.at(r))?;
            // The reader checked that 32-bit columns fit.
            profile.processes[p].images[i].blocks.push(Block {
                id: node.at(r),
                offset: offset.at(r),
                size: size.at(r) as u32,
                num_instrs: instrs.at(r) as u32,
                last_instr_offset: last.at(r) as u32,
                count: count.get(r),
            });
        }
    }
    Ok(())
}

/// What an edge end names, as its `*_kind` column spells it.
#[derive(Clone, Copy)]
enum EndKind {
    Block,
    Symbol,
    Start,
    End,
    Unknown,
}

impl EndKind {
    fn parse(word: &str) -> Option<EndKind> {
        Some(match word {
            "block" => EndKind::Block,
            "symbol" => EndKind::Symbol,
            "start" => EndKind::Start,
            "end" => EndKind::End,
            "unknown" => EndKind::Unknown,
            _ => return None,
        })
    }
}

/// The columns of one end of the edges in a batch: `source_*` or `target_*`.
struct EndColumns<'a> {
    /// The names of its kind, image, block and symbol columns.
    names: [&'static str; 4],
    kind: Texts<'a>,
    /// Each distinct kind of the batch parsed once.
    kinds: Vec<Option<EndKind>>,
    image: Col<'a, u64>,
    block: Col<'a, u64>,
    symbol: Col<'a, u64>,
}

impl<'a> EndColumns<'a> {
    fn new(t: &'a ReadTable, names: [&'static str; 4]) -> EndColumns<'a> {
        let kind = t.texts(names[0]);
        EndColumns {
            names,
            kind,
            kinds: kind.words().iter().map(|w| EndKind::parse(w)).collect(),
            image: t.ints(names[1]),
            block: t.ints(names[2]),
            symbol: t.ints(names[3]),
        }
    }

    /// The end of the edge in row `r` of process `p`.
    fn node(&self, index: &Index, t: &ReadTable, p: usize, r: usize) -> Result<NodeRef> {
        let [kind, image_column, block_column, symbol_column] = self.names;
        let kind_name = || self.kind.get(r).unwrap_or_default();
        let image = || -> Result<usize> {
            match self.image.get(r) {
                None => Err(t.error(image_column, r, format!("a {} end needs its image", kind_name()))),
                Some(id) => index.image_of(t, p, image_column, r, id),
            }
        };
        match self.kind.code(r).and_then(|c| self.kinds[c]) {
            Some(EndKind::Block) => {
                let i = image()?;
                let id = self
                    .block
                    .get(r)
                    .ok_or_else(|| t.error(block_column, r, "a block end needs its block"))?;
                Ok(NodeRef::Block(BlockRef {
                    image: i as u32,
                    block: index.block(t, p, i, block_column, r, id)?,
                }))
            }
            Some(EndKind::Symbol) => {
                let i = image()?;
                let id = self
                    .symbol
                    .get(r)
                    .ok_or_else(|| t.error(symbol_column, r, "a symbol end needs its symbol"))?;
                Ok(NodeRef::Symbol(SymbolRef {
                    image: i as u32,
                    symbol: index.symbol(t, p, i, symbol_column, r, id)?,
                }))
            }
            Some(EndKind::Start) => Ok(NodeRef::Start),
            Some(EndKind::End) => Ok(NodeRef::End),
            Some(EndKind::Unknown) => Ok(NodeRef::Unknown),
            None => Err(t.error(
                kind,
                r,
                format!("unknown end kind {:?} (block, symbol, start, end, unknown)", kind_name()),
            )),
        }
    }
}

fn edges(
    profile: &mut Profile,
    index: &Index,
    events: &HashMap<String, usize>,
    [mut edges, counts, costs]: [TableReader; 3],
) -> Result<Vec<Ids>> {
    // Per process: edge identifier -> position.
    let mut ids: Vec<Ids> = (0..profile.processes.len()).map(|_| Ids::default()).collect();
    let count_rows = counts.rows;
    // One process (the common case) holds every row: its list is made once, at its size. The
    // footer's row count is an untrusted claim: what it reserves is bounded by the file's
    // length, and a list that needs more grows as rows come.
    if let [process] = &mut profile.processes[..] {
        let rows = edges.rows.min(usize::try_from(edges.bytes).unwrap_or(usize::MAX));
        process.edges.reserve(rows);
    }
    while let Some(t) = edges.next()? {
        let source = EndColumns::new(&t, ["source_kind", "source_image", "source_block", "source_symbol"]);
        let target = EndColumns::new(&t, ["target_kind", "target_image", "target_block", "target_symbol"]);
        let (process, edge, edge_id, threads) =
            (t.ints("process"), t.ints("edge"), t.ints("edge_id"), t.ints("threads"));
        let (kinds, has_site, mispredicts) = (t.texts("kind"), t.bools("has_site"), t.ints("mispredicts"));
        let (increment, weight, back) =
            (t.ints("path_increment"), t.ints("path_weight"), t.bools("path_back"));
        // Each kind's name parsed once per batch.
        let parsed: Vec<Option<EdgeKind>> = kinds.words().iter().map(|w| w.parse().ok()).collect();
        for r in t.range() {
            let p = index.process_of(&t, "process", r, process.at(r))?;
            ids[p].push(&t, "edge", r, edge.at(r))?;
            let kind = kinds.code(r).and_then(|c| parsed[c]).ok_or_else(|| {
                let name = kinds.get(r).unwrap_or_default();
                t.error("kind", r, format!("unknown edge kind {name:?} (the DCFG edge types)"))
            })?;
            let threads = threads.at(r);
            if threads > count_rows.max(1) as u64 * 64 + 64 {
                return Err(t.error(
                    "threads",
                    r,
                    format!("{threads} threads is more than the counts could fill"),
                ));
            }
            let site = if has_site.get(r) == Some(true) { Some(stated_site(&t, r)?) } else { None };
            let mut details = EdgeDetails::boxed(Vec::new(), site);
            if let (Some(increment), Some(weight), Some(back)) =
                (increment.get(r), weight.get(r), back.get(r))
            {
                let path = PathEdge { increment: increment as i64, weight: weight as i64, back };
                match &mut details {
                    Some(d) => d.extra_mut().path = Some(path),
                    None => details = EdgeDetails::path(path),
                }
            }
            if let Some(mispredicts) = mispredicts.get(r).filter(|&m| m > 0) {
                match &mut details {
                    Some(d) => d.mispredicts = mispredicts,
                    None => details = EdgeDetails::mispredicted(mispredicts),
                }
            }
            let edge = cfghub_model::ir::Edge {
                id: edge_id.at(r),
                source: source.node(index, &t, p, r)?,
                target: target.node(index, &t, p, r)?,
                kind,
                counts: Counts::from_elem(0, threads as usize),
                details,
            };
            profile.processes[p].edges.push(edge);
        }
    }
    edge_counts(profile, index, &ids, counts)?;
    inclusive_costs(profile, index, events, &ids, costs)?;
    Ok(ids)
}

/// The calls' contexts ([`cfghub_model::ir::CallContext`]) from the call contexts table, a row
/// per context and thread in the order written, and their inclusive costs from the call
/// context costs table (`ids`: each process's edge identifiers).
fn call_contexts(
    profile: &mut Profile,
    index: &Index,
    ids: &[Ids],
    mut contexts: TableReader,
    mut costs: TableReader,
) -> Result<()> {
    while let Some(t) = contexts.next()? {
        for r in t.range() {
            let (p, e) = context_edge(index, ids, &t, r)?;
            let process = &mut profile.processes[p];
            let edge = &mut process.edges[e as usize];
            let (NodeRef::Block(from), NodeRef::Block(to)) = (edge.source, edge.target) else {
                return Err(t.error("edge", r, "contexts belong to calls between blocks"));
            };
            let symbol = |column: &str, image: u32| -> Result<u32> {
                let s = t.int(column, r);
                let n = process.images[image as usize].symbols.len();
                u32::try_from(s).ok().filter(|&s| (s as usize) < n).ok_or_else(|| {
                    t.error(column, r, format!("symbol {s}, but the block's image holds {n} symbol(s)"))
                })
            };
            let (caller, callee) = (symbol("caller_symbol", from.image)?, symbol("callee_symbol", to.image)?);
            let (k, thread) = (t.int("context", r), t.int("thread", r));
            let threads = edge.counts.len() as u64;
            let Some(details) = edge.details.as_mut() else {
                return Err(t.error("edge", r, "contexts belong to calls with details (a site or costs)"));
            };
            let list = &mut details.extra_mut().contexts;
            let fresh = k == list.len() as u64 && thread == 0;
            if fresh {
                list.push(CallContext { caller, callee, ..CallContext::default() });
            }
            let len = list.len() as u64;
            let x = match list.last_mut() {
                Some(x) if k + 1 == len && thread == x.counts.len() as u64 && thread < threads => x,
                _ => {
                    return Err(t.error(
                        "thread",
                        r,
                        format!(
                        "context {k}, thread {thread}: an edge's contexts are numbered 0, 1, ... and each \
                             lists its threads 0 to {} in row order",
                        threads.saturating_sub(1)
                    ),
                    ))
                }
            };
            if (x.caller, x.callee) != (caller, callee) {
                return Err(t.error(
                    "caller_symbol",
                    r,
                    format!("context {k} names other functions than its first row"),
                ));
            }
            x.counts.push(t.int("count", r));
        }
    }
    while let Some(t) = costs.next()? {
        for r in t.range() {
            let (p, e) = context_edge(index, ids, &t, r)?;
            let position = value_position(&profile.events, &t, r)?;
            let k = t.int("context", r);
            let edge = &mut profile.processes[p].edges[e as usize];
            let Some(x) = edge
                .details
                .as_mut()
                .and_then(|d| d.extra.as_mut())
                .and_then(|x| usize::try_from(k).ok().and_then(|k| x.contexts.get_mut(k)))
            else {
                return Err(t.error(
                    "context",
                    r,
                    format!("no context {k} of this edge in the call contexts table"),
                ));
            };
            if position != x.inclusive.len() {
                return Err(t.error("position", r, "a context's costs are numbered 0, 1, ... in row order"));
            }
            x.inclusive.push(t.int("inclusive", r));
        }
    }
    Ok(())
}

/// The process and edge row `r` of a call context table names.
fn context_edge(index: &Index, ids: &[Ids], t: &ReadTable, r: usize) -> Result<(usize, u32)> {
    let p = index.process(t, "process", r)?;
    let id = t.int("edge", r);
    let e = ids[p].get(id).ok_or_else(|| t.error("edge", r, format!("no edge {id} in the edges table")))?;
    Ok((p, e))
}

/// The call site that row `r` of the edges table states: the offsets and lines of both ends.
fn stated_site(t: &ReadTable, r: usize) -> Result<Site> {
    let offset = |c: &str| -> Result<Option<u64>> {
        match t.ints(c).get(r) {
            Some(o) if o > Site::MAX_OFFSET => Err(t.error(c, r, "offset out of range")),
            o => Ok(o),
        }
    };
    Ok(Site::new(
        offset("source_offset")?,
        t.opt_u32("source_line", r)?,
        offset("target_offset")?,
        t.opt_u32("target_line", r)?,
    ))
}

/// Sets the edges' counts per thread from the edge counts table (`ids`: each process's edge
/// identifiers).
fn edge_counts(profile: &mut Profile, index: &Index, ids: &[Ids], mut counts: TableReader) -> Result<()> {
    while let Some(t) = counts.next()? {
        let (process, edge, thread, count) =
            (t.ints("process"), t.ints("edge"), t.ints("thread"), t.ints("count"));
        for r in t.range() {
            let p = index.process_of(&t, "process", r, process.at(r))?;
            let id = edge.at(r);
            let e = ids[p]
                .get(id)
                .ok_or_else(|| t.error("edge", r, format!("no edge {id} in the edges table")))?;
            let thread = thread.at(r) as usize;
            let edge = &mut profile.processes[p].edges[e as usize];
            let slot = edge.counts.get_mut(thread).ok_or_else(|| {
                t.error("thread", r, format!("thread {thread} of an edge with fewer threads"))
            })?;
            *slot = count.at(r);
        }
    }
    Ok(())
}

/// Sets the calls' inclusive costs from the edge costs table (`ids`: each process's edge
/// identifiers; `events`: event name -> position).
fn inclusive_costs(
    profile: &mut Profile,
    index: &Index,
    events: &HashMap<String, usize>,
    ids: &[Ids],
    mut costs: TableReader,
) -> Result<()> {
    let mut inclusive: HashMap<(usize, u32), Vec<u64>> = HashMap::new();
    while let Some(t) = costs.next()? {
        for r in t.range() {
            let p = index.process(&t, "process", r)?;
            let id = t.int("edge", r);
            let e = ids[p]
                .get(id)
                .ok_or_else(|| t.error("edge", r, format!("no edge {id} in the edges table")))?;
            event_of(events, &t, "event", r)?;
            let position = value_position(&profile.events, &t, r)?;
            let values = inclusive.entry((p, e)).or_default();
            if values.len() <= position {
                values.resize(position + 1, 0);
            }
            values[position] = t.int("inclusive", r);
        }
    }
    for ((p, e), values) in inclusive {
        profile.processes[p].edges[e as usize].set_inclusive(values);
    }
    Ok(())
}

/// The routines of the images that state theirs (derived routines in the tables are left out:
/// they follow from the edges again), with their blocks and loops.
/// Where a stated routine is: process, image, position in the image, and whether it has
/// dominators.
type RoutinePlace = (usize, usize, usize, bool);

/// Where a loop is: process, image, routine position, loop position.
type LoopPlace = (usize, usize, usize, usize);

fn routines(
    profile: &mut Profile,
    index: &Index,
    [mut routines, mut blocks, loops, loop_blocks]: [TableReader; 4],
) -> Result<()> {
    // Routine identifier -> (process, image, position in the image, whether it has dominators),
    // for stated ones.
    let mut at: FxHashMap<u64, RoutinePlace> = FxHashMap::default();
    while let Some(t) = routines.next()? {
        let t = &t;
        for r in t.range() {
            if t.bools("stated").get(r) != Some(true) {
                continue;
            }
            let p = index.process(t, "process", r)?;
            let i = index.image(t, p, "image", r)?;
            let entry = index.block(t, p, i, "entry", r, t.int("entry", r))?;
            let symbol = match t.ints("symbol").get(r) {
                Some(s) => Some(index.symbol(t, p, i, "symbol", r, s)?),
                None => None,
            };
            let image = &mut profile.processes[p].images[i];
            let list = image.routines.get_or_insert_with(Vec::new);
            let dominators = t.bools("has_dominators").get(r) == Some(true);
            if at.insert(t.int("routine", r), (p, i, list.len(), dominators)).is_some() {
                return Err(t.error("routine", r, "the same routine twice"));
            }
            list.push(Routine { entry, symbol, ..Routine::default() });
        }
    }
    let mut exits: FxHashMap<u64, Vec<(u64, u32)>> = FxHashMap::default();
    // A routine's rows come together: its place is looked up once, and its blocks and
    // dominators gathered here, then moved into the model in one allocation each.
    let mut run: Option<(u64, Option<RoutinePlace>)> = None;
    let (mut nodes, mut doms): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let close = |profile: &mut Profile,
                 run: Option<(u64, Option<RoutinePlace>)>,
                 nodes: &mut Vec<u32>,
                 doms: &mut Vec<u32>| {
        if let Some((_, Some((p, i, k, _)))) = run {
            let routine = &mut profile.processes[p].images[i].routines.as_mut().expect("stated")[k];
            routine.nodes.extend_from_slice(nodes);
            routine.idoms.extend_from_slice(doms);
        }
        nodes.clear();
        doms.clear();
    };
    while let Some(blocks) = blocks.next()? {
        let blocks = &blocks;
        let (routine_ids, block_ids) = (blocks.ints("routine"), blocks.ints("block"));
        let (in_routine, idoms, exit_positions) =
            (blocks.bools("in_routine"), blocks.ints("idom"), blocks.ints("exit_position"));
        for r in blocks.range() {
            let id = routine_ids.at(r);
            if run.map(|(known, _)| known) != Some(id) {
                close(profile, run, &mut nodes, &mut doms);
                run = Some((id, at.get(&id).copied()));
            }
            let Some((p, i, _, dominators)) = run.and_then(|(_, place)| place) else { continue };
            let b = index.block(blocks, p, i, "block", r, block_ids.at(r))?;
            if in_routine.get(r) == Some(true) {
                nodes.push(b);
                if dominators {
                    match idoms.get(r) {
                        Some(d) => doms.push(index.block(blocks, p, i, "idom", r, d)?),
                        None => {
                            return Err(blocks.error(
                                "idom",
                                r,
                                "a routine with dominators needs each block's",
                            ))
                        }
                    }
                }
            }
            if let Some(x) = exit_positions.get(r) {
                exits.entry(id).or_default().push((x, b));
            }
        }
    }
    close(profile, run, &mut nodes, &mut doms);
    for (id, mut list) in exits {
        list.sort_unstable();
        let (p, i, k, _) = at[&id];
        profile.processes[p].images[i].routines.as_mut().expect("stated")[k].exits =
            list.into_iter().map(|x| x.1).collect();
    }
    loops_of(profile, index, &at, loops, loop_blocks)
}

fn loops_of(
    profile: &mut Profile,
    index: &Index,
    at: &FxHashMap<u64, RoutinePlace>,
    mut loops_reader: TableReader,
    mut blocks_reader: TableReader,
) -> Result<()> {
    // Loop identifier -> (process, image, routine position, loop position).
    let mut loops: FxHashMap<u64, LoopPlace> = FxHashMap::default();
    while let Some(t) = loops_reader.next()? {
        let t = &t;
        for r in t.range() {
            let Some(&(p, i, k, _)) = at.get(&t.int("routine", r)) else { continue };
            let head = index.block(t, p, i, "head", r, t.int("head", r))?;
            let parent = match t.ints("parent_head").get(r) {
                Some(h) => Some(index.block(t, p, i, "parent_head", r, h)?),
                None => None,
            };
            let routine = &mut profile.processes[p].images[i].routines.as_mut().expect("stated")[k];
            loops.insert(t.int("loop", r), (p, i, k, routine.loops.len()));
            routine.loops.push(Loop { head, parent, ..Loop::default() });
        }
    }
    let mut back: FxHashMap<u64, Vec<(u64, u32)>> = FxHashMap::default();
    // A loop's rows come together: its place is looked up once and its blocks gathered here.
    let mut run: Option<(u64, Option<LoopPlace>)> = None;
    let mut nodes: Vec<u32> = Vec::new();
    let close = |profile: &mut Profile, run: Option<(u64, Option<LoopPlace>)>, nodes: &mut Vec<u32>| {
        if let Some((_, Some((p, i, k, l)))) = run {
            let routine = &mut profile.processes[p].images[i].routines.as_mut().expect("stated")[k];
            routine.loops[l].nodes.extend_from_slice(nodes);
        }
        nodes.clear();
    };
    while let Some(blocks) = blocks_reader.next()? {
        let blocks = &blocks;
        let (loop_ids, block_ids) = (blocks.ints("loop"), blocks.ints("block"));
        let (in_loop, back_positions) = (blocks.bools("in_loop"), blocks.ints("back_edge_position"));
        for r in blocks.range() {
            let id = loop_ids.at(r);
            if run.map(|(known, _)| known) != Some(id) {
                close(profile, run, &mut nodes);
                run = Some((id, loops.get(&id).copied()));
            }
            let Some((p, i, _, _)) = run.and_then(|(_, place)| place) else { continue };
            let b = index.block(blocks, p, i, "block", r, block_ids.at(r))?;
            if in_loop.get(r) == Some(true) {
                nodes.push(b);
            }
            if let Some(x) = back_positions.get(r) {
                back.entry(id).or_default().push((x, b));
            }
        }
    }
    close(profile, run, &mut nodes);
    for (id, mut list) in back {
        list.sort_unstable();
        let (p, i, k, l) = loops[&id];
        profile.processes[p].images[i].routines.as_mut().expect("stated")[k].loops[l].back_edge_sources =
            list.into_iter().map(|x| x.1).collect();
    }
    Ok(())
}

fn costs(
    profile: &mut Profile,
    index: &Index,
    events: &HashMap<String, usize>,
    mut reader: TableReader,
) -> Result<()> {
    let width = profile.events.len().max(1);
    let mut values = vec![0u64; width];
    let mut open: Option<(u64, u64, u64, usize, usize)> = None;
    let mut fields = (None, None, None, None);
    let flush = |profile: &mut Profile,
                 open: &Option<(u64, u64, u64, usize, usize)>,
                 fields: (Option<u64>, Option<u32>, Option<u32>, Option<u32>),
                 values: &mut Vec<u64>| {
        if let Some((_, _, _, p, i)) = *open {
            let (offset, symbol, file, line) = fields;
            let table: &mut CostTable = &mut profile.processes[p].images[i].costs;
            table.push_parts(offset, symbol, file, line, values);
            values.iter_mut().for_each(|v| *v = 0);
        }
    };
    while let Some(t) = reader.next()? {
        let t = &t;
        for r in t.range() {
            let key = (t.int("process", r), t.int("image", r), t.int("row", r));
            let same = open.is_some_and(|(a, b, c, _, _)| (a, b, c) == key);
            if !same {
                flush(profile, &open, fields, &mut values);
                let p = index.process(t, "process", r)?;
                let i = index.image(t, p, "image", r)?;
                open = Some((key.0, key.1, key.2, p, i));
                let symbol = match t.ints("symbol").get(r) {
                    Some(s) => Some(index.symbol(t, p, i, "symbol", r, s)?),
                    None => None,
                };
                fields = (
                    t.ints("offset").get(r),
                    symbol,
                    file_ref(profile, t, "file", r)?,
                    t.opt_u32("line", r)?,
                );
            }
            if let Some(e) = event_of(events, t, "event", r)? {
                values[e] = values[e].saturating_add(t.int("value", r));
            }
        }
    }
    flush(profile, &open, fields, &mut values);
    // A profile without events keeps its rows without values.
    if profile.events.is_empty() {
        for image in profile.processes.iter_mut().flat_map(|p| &mut p.images) {
            if !image.costs.is_empty() {
                let mut bare = CostTable::new();
                for row in 0..image.costs.len() {
                    let c = image.costs.get(row);
                    bare.push_parts(c.offset, c.symbol, c.file, c.line, &[]);
                }
                image.costs = bare;
            }
        }
    }
    Ok(())
}

fn block_lines(profile: &mut Profile, index: &Index, mut reader: TableReader) -> Result<()> {
    for image in profile.processes.iter_mut().flat_map(|p| &mut p.images) {
        if !image.block_lines.is_empty() {
            image.block_lines = vec![BlockLines::default(); image.blocks.len()];
        }
    }
    while let Some(t) = reader.next()? {
        let t = &t;
        for r in t.range() {
            let p = index.process(t, "process", r)?;
            let i = index.image(t, p, "image", r)?;
            let b = index.block(t, p, i, "block", r, t.int("block", r))?;
            let image = &mut profile.processes[p].images[i];
            let Some(lines) = image.block_lines.get_mut(b as usize) else {
                return Err(t.error(
                    "image",
                    r,
                    "lines of a block whose image says it has no lines per block",
                ));
            };
            lines.local_id = t.ints("local_id").get(r);
            if t.ints("position").get(r).is_some() {
                lines.items.push(match (t.bools("path_end").get(r), t.opt_u32("line", r)?) {
                    (Some(true), _) => LineItem::PathEnd,
                    (_, Some(l)) => LineItem::Line(l),
                    _ => return Err(t.error("line", r, "an item is a line or a path end")),
                });
            }
        }
    }
    Ok(())
}

fn coverage(profile: &mut Profile, index: &Index, t: &ReadTable) -> Result<()> {
    let mut open: Option<(u64, u64, u64)> = None;
    for r in 0..t.rows {
        let key = (t.int("process", r), t.int("image", r), t.int("coverage", r));
        let p = index.process(t, "process", r)?;
        let i = index.image(t, p, "image", r)?;
        let image = &mut profile.processes[p].images[i];
        if open != Some(key) {
            let kind = match t.texts("kind").get(r).unwrap_or_default() {
                "function" => CoverageKind::Function,
                "block" => CoverageKind::Block,
                "call" => CoverageKind::Call,
                other => {
                    return Err(t.error(
                        "kind",
                        r,
                        format!("unknown coverage kind {other:?} (function, block, call)"),
                    ))
                }
            };
            let symbol = index.symbol(t, p, i, "symbol", r, t.int("symbol", r))?;
            let array = t.texts("array").get(r).map(str::to_owned).unwrap_or_default();
            image.coverage.push(Coverage { kind, symbol, array, sites: Vec::new() });
            open = Some(key);
        }
        if t.ints("site").get(r).is_some() {
            let lines = t.texts("lines").get(r).unwrap_or_default();
            let lines = lines
                .split_ascii_whitespace()
                .map(|l| {
                    l.parse::<u32>().map_err(|_| t.error("lines", r, format!("{l:?} is not a line number")))
                })
                .collect::<Result<Vec<u32>>>()?;
            let site = CoverageSite {
                index: t.ints("slot").get(r).unwrap_or_default() as i64,
                label: t.texts("label").get(r).map(str::to_owned).unwrap_or_default(),
                lines,
                callee: t.texts("callee").get(r).map(str::to_owned),
            };
            image.coverage.last_mut().expect("pushed above").sites.push(site);
        }
    }
    Ok(())
}

/// The labels of each sample, by (process, sample number), in the `sample_labels` table's order.
type SampleLabels = FxHashMap<(usize, u64), Vec<Label>>;

fn sample_labels(index: &Index, mut reader: TableReader) -> Result<SampleLabels> {
    let mut out = SampleLabels::default();
    while let Some(t) = reader.next()? {
        for r in t.range() {
            let p = index.process(&t, "process", r)?;
            let key = t.texts("key").get(r).unwrap_or_default();
            let value = match t.ints("number").get(r) {
                Some(n) => LabelValue::Number(n as i64, t.texts("unit").get(r).map(Into::into)),
                None => LabelValue::Text(t.texts("value").get(r).unwrap_or_default().into()),
            };
            out.entry((p, t.int("sample", r))).or_default().push(Label { key: key.into(), value });
        }
    }
    Ok(out)
}

/// The stacks: the `stack_nodes` tree of each process, and the `samples` on it with their
/// labels. Rows of one sample (`process`, `sample`) come together; samples of one node, thread
/// and labels are one sample of the model, their values added up (30,000 samples on one node
/// 30,000 frames deep are one stack to write, not 9x10^8 frames).
/// Where the call paths of a profile's samples are looked up: its own `stack_nodes` rows, per
/// process, or a fleet's shared tree (frames interned as they are first met).
enum Tree<'a> {
    Own(Vec<FxHashMap<u64, (Option<u64>, FrameId)>>),
    Shared { tree: &'a SharedTree, frames: FxHashMap<i64, FrameId> },
}

impl Tree<'_> {
    /// The tree of the `stack_nodes` table.
    fn own(
        profile: &Profile,
        index: &Index,
        frame_ids: &FrameIds,
        mut reader: TableReader,
    ) -> Result<Tree<'static>> {
        let mut tree: Vec<FxHashMap<u64, (Option<u64>, FrameId)>> =
            vec![FxHashMap::default(); profile.processes.len()];
        while let Some(nodes) = reader.next()? {
            let nodes = &nodes;
            for r in nodes.range() {
                let p = index.process(nodes, "process", r)?;
                let id = nodes.int("frame", r);
                let &frame = frame_ids.get(&id).ok_or_else(|| {
                    nodes.error("frame", r, format!("no frame {} in the frames table", id as i64))
                })?;
                tree[p].insert(nodes.int("node", r), (nodes.ints("parent").get(r), frame));
            }
        }
        Ok(Tree::Own(tree))
    }

    /// The number of call paths: a longer chain of parents is a cycle.
    fn len(&self) -> usize {
        match self {
            Tree::Own(t) => t.iter().map(|t| t.len()).sum(),
            Tree::Shared { tree, .. } => tree.len(),
        }
    }

    /// Node `n` of process `p`: its parent and frame.
    fn node(&mut self, profile: &mut Profile, p: usize, n: u64) -> Option<(Option<u64>, FrameId)> {
        match self {
            Tree::Own(t) => t[p].get(&n).copied(),
            Tree::Shared { tree, frames } => {
                let (parent, frame) = tree.node(n as i64)?;
                Some((parent.map(|p| p as u64), tree.frame(profile, frames, frame)?))
            }
        }
    }
}

/// The stacks: the call paths of each process (`tree`), and the `samples` on them with their
/// labels. Rows of one sample (`process`, `sample`) come together; samples of one node, thread
/// and labels are one sample of the model, their values added up (30,000 samples on one node
/// 30,000 frames deep are one stack to write, not 9x10^8 frames).
fn stacks(
    profile: &mut Profile,
    index: &Index,
    event_decimals: &[u8],
    mut tree: Tree<'_>,
    (mut samples_reader, mut labels): (TableReader, SampleLabels),
) -> Result<()> {
    let node_rows = tree.len();
    // Per process: node identifier -> the model's node, once made.
    let mut made: Vec<FxHashMap<u64, u32>> = vec![FxHashMap::default(); profile.processes.len()];
    let mut sample_of: Vec<SampleKeys> = vec![FxHashMap::default(); profile.processes.len()];
    let mut chain: Vec<(u64, FrameId)> = Vec::new();
    // The sample being read: (process id, sample id, process, model sample).
    let mut open: Option<(u64, u64, usize, usize)> = None;
    while let Some(samples) = samples_reader.next()? {
        let samples = &samples;
        for r in samples.range() {
            let key = (samples.int("process", r), samples.int("sample", r));
            if open.is_none_or(|(a, b, _, _)| (a, b) != key) {
                let p = index.process(samples, "process", r)?;
                let at =
                    unmade_path(samples, r, &made[p], node_rows, &mut chain, |n| tree.node(profile, p, n))?;
                let stacks = &mut profile.processes[p].stacks;
                let node = make_path(at, &chain, &mut made[p], stacks);
                let thread = samples.opt_u32("thread", r)?;
                let label_set = match labels.remove(&(p, key.1)) {
                    Some(list) => stacks.label_set(list),
                    None => NO_INDEX,
                };
                let sample = *sample_of[p].entry((node, thread, label_set)).or_insert_with(|| {
                    stacks.push_labelled_sample(node, thread, label_set, &[]);
                    stacks.len() - 1
                });
                open = Some((key.0, key.1, p, sample));
            }
            let (p, sample) = open.map_or((0, 0), |o| (o.2, o.3));
            if let Some(v) = samples.ints("value").get(r) {
                let position = value_position(&profile.events, samples, r)?;
                let decimals = event_decimals[position];
                let stacks = &mut profile.processes[p].stacks;
                stacks.widen(position + 1);
                if decimals > stacks.decimals_of(position) && !stacks.set_decimals(position, decimals) {
                    return Err(samples.error("value", r, "the values of the event no longer add up"));
                }
                let value =
                    StackValue::from(v as i64) * power_of_ten(stacks.decimals_of(position) - decimals);
                let sum = &mut stacks.values_mut(sample)[position];
                *sum = sum
                    .checked_add(value)
                    .ok_or_else(|| samples.error("value", r, "the values of one stack add up past 2^127"))?;
            }
        }
    }
    Ok(())
}

/// The functions inlined at addresses: rows of one address (process, image, offset) together,
/// innermost first; a name shared by many addresses is kept once, in its image's table.
fn inline_frames(profile: &mut Profile, index: &Index, mut reader: TableReader) -> Result<()> {
    let mut at = Place::default();
    // The address whose rows are being read, and its frames so far.
    let mut open: Option<(usize, usize, u64)> = None;
    let mut frames: Vec<InlineFrame> = Vec::new();
    let close = |profile: &mut Profile, open: Option<(usize, usize, u64)>, frames: &mut Vec<InlineFrame>| {
        if let Some((p, i, offset)) = open {
            let frames = std::sync::Arc::from(std::mem::take(frames));
            profile.processes[p].images[i].inlined.push(Inlined { offset, frames });
        }
    };
    while let Some(t) = reader.next()? {
        let (process, image, offset, position) =
            (t.ints("process"), t.ints("image"), t.ints("offset"), t.ints("position"));
        let name_column = t.texts("name");
        for r in t.range() {
            let (p, i) = at.find(index, &t, r, process.at(r), image.at(r))?;
            let offset = offset.at(r);
            let (file, line) = (file_ref(profile, &t, "file", r)?, t.opt_u32("line", r)?);
            if open != Some((p, i, offset)) {
                close(profile, open, &mut frames);
                let inlined = &profile.processes[p].images[i].inlined;
                if inlined.last().is_some_and(|last| last.offset >= offset) {
                    return Err(t.error(
                        "offset",
                        r,
                        "rows of an image must come in ascending order of their offset",
                    ));
                }
                open = Some((p, i, offset));
            }
            if position.at(r) != frames.len() as u64 {
                return Err(t.error(
                    "position",
                    r,
                    "an address's frames are numbered 0, 1, 2, ... in row order",
                ));
            }
            let name = name_column.get(r).unwrap_or_default();
            let name = profile.processes[p].images[i].inline_names.intern(name);
            frames.push(InlineFrame::new(name, file, line));
        }
    }
    close(profile, open, &mut frames);
    Ok(())
}
