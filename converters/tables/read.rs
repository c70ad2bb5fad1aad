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

use crate::error::{Error, Findings, Result};
use crate::io::Source;
use crate::ir::{
    Block, BlockLines, BlockRef, CostTable, Counts, Coverage, CoverageKind, CoverageSite, EdgeDetails,
    EdgeKind, Event, FrameAddress, FrameSource, Image, LineItem, Loop, Meta, NodeRef, PathEdge, Process,
    Profile, Routine, Site, SourceLine, Stack, Symbol, SymbolRef,
};
use crate::registry::ReadOptions;

use super::columns::{read_table, ReadTable};
use super::*;

/// Reads the tables of the folder the source names.
pub fn read(source: &mut Source<'_>, _options: &ReadOptions, _findings: &mut Findings) -> Result<Profile> {
    let Some(dir) = source.folder().map(Path::to_path_buf) else {
        return Err(Error::usage("tables are read from a folder, not from a file or a stream")
            .with_hint("name the folder that holds blocks.parquet and the other tables"));
    };
    read_folder(&dir)
}

/// Reads the tables in `dir`.
pub fn read_folder(dir: &Path) -> Result<Profile> {
    let head = read_table(dir, "profile", PROFILE, None)?;
    if head.rows != 1 {
        return Err(head.error(
            "profile_id",
            head.rows.min(1),
            format!("the profile table holds {} rows; cfghub reads one profile at a time", head.rows),
        ));
    }
    let id = head.texts("profile_id")[0].clone().unwrap_or_default();
    let tables: Vec<ReadTable> = TABLES[1..]
        .par_iter()
        .map(|&(name, specs)| read_table(dir, name_of(name), specs, Some(&id)))
        .collect::<Result<_>>()?;
    let t = |name: &str| tables.iter().find(|t| t.name == name).expect("every table is read");
    let mut profile = Profile { meta: meta(&head, t("headers"))?, ..Profile::default() };
    let events = events(&mut profile, t("events"))?;
    strings(&mut profile, t("files"), t("frames"))?;
    let mut index = processes(&mut profile, t("processes"), t("threads"))?;
    images(&mut profile, &mut index, t("images"))?;
    symbols(&mut profile, &mut index, t("symbols"))?;
    source_lines(&mut profile, &index, t("source_lines"))?;
    blocks(&mut profile, &mut index, t("blocks"))?;
    edges(&mut profile, &index, &events, [t("edges"), t("edge_counts"), t("edge_costs")])?;
    routines(&mut profile, &index, [t("routines"), t("routine_blocks"), t("loops"), t("loop_blocks")])?;
    costs(&mut profile, &index, &events, t("costs"))?;
    block_lines(&mut profile, &index, t("block_lines"))?;
    coverage(&mut profile, &index, t("coverage"))?;
    stacks(&mut profile, &index, &events, t("stack_nodes"), t("stack_samples"))?;
    Ok(profile)
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
        let id = t.int(column, row);
        self.processes
            .get(id)
            .map(|p| p as usize)
            .ok_or_else(|| t.error(column, row, format!("no process {id} in the processes table")))
    }

    fn image(&self, t: &ReadTable, p: usize, column: &str, row: usize) -> Result<usize> {
        let id = t.int(column, row);
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
    let version = match (head.ints("format_major")[0], head.ints("format_minor")[0]) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let mut rows: Vec<(u64, usize)> = (0..headers.rows).map(|r| (headers.int("position", r), r)).collect();
    rows.sort_unstable();
    let headers = rows
        .into_iter()
        .map(|(_, r)| {
            (
                headers.texts("key")[r].clone().unwrap_or_default(),
                headers.texts("value")[r].clone().unwrap_or_default(),
            )
        })
        .collect();
    Ok(Meta {
        format_version: version,
        creator: head.texts("creator")[0].clone(),
        command: head.texts("command")[0].clone(),
        headers,
        address_step: head.ints("address_step")[0],
    })
}

/// The events, and the position of each by name.
fn events(profile: &mut Profile, t: &ReadTable) -> Result<HashMap<String, usize>> {
    let mut by_name = HashMap::new();
    for r in 0..t.rows {
        if t.int("event", r) != r as u64 {
            return Err(t.error("event", r, "events are numbered 0, 1, 2, ... in row order"));
        }
        let name = t.texts("name")[r].clone().unwrap_or_default();
        by_name.entry(name.clone()).or_insert(r);
        profile.events.push(Event { name, description: t.texts("description")[r].clone() });
    }
    Ok(by_name)
}

/// The event named in `column` of row `r`: its position (`None` for a null name).
fn event_of(events: &HashMap<String, usize>, t: &ReadTable, column: &str, r: usize) -> Result<Option<usize>> {
    match &t.texts(column)[r] {
        None => Ok(None),
        Some(name) => events
            .get(name)
            .copied()
            .map(Some)
            .ok_or_else(|| t.error(column, r, format!("no event {name:?} in the events table"))),
    }
}

fn strings(profile: &mut Profile, files: &ReadTable, frames: &ReadTable) -> Result<()> {
    for r in 0..files.rows {
        let name = files.texts("name")[r].as_deref().unwrap_or_default();
        if files.int("file", r) != r as u64 || profile.files.intern(name) != r as u32 {
            return Err(files.error(
                "file",
                r,
                "files are numbered 0, 1, 2, ... in row order, each name once",
            ));
        }
    }
    for r in 0..frames.rows {
        let name = frames.texts("name")[r].as_deref().unwrap_or_default();
        if frames.int("frame", r) != r as u64 || profile.frames.intern(name) != r as u32 {
            return Err(frames.error(
                "frame",
                r,
                "frames are numbered 0, 1, 2, ... in row order, each name once",
            ));
        }
        if frames.bools("source_known")[r] == Some(true) {
            profile.frame_sources.resize(r + 1, FrameSource::default());
            profile.frame_sources[r] = FrameSource {
                file: file_ref(profile, frames, "file", r)?,
                line: frames.opt_u32("line", r)?,
                system_name: frames.texts("system_name")[r].clone(),
                address: frames.ints("address")[r].map(|address| FrameAddress {
                    image: frames.ints("address_image")[r].and_then(|i| u32::try_from(i).ok()),
                    address,
                }),
            };
        }
    }
    Ok(())
}

/// A file id that the files table holds.
fn file_ref(profile: &Profile, t: &ReadTable, column: &str, r: usize) -> Result<Option<u32>> {
    match t.ints(column)[r] {
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
            instr_count: processes.ints("instr_count")[r],
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
            size: t.ints("size")[r],
            file_offset: t.ints("file_offset")[r],
            build_id: t.texts("build_id")[r].clone(),
            no_addresses: t.bools("no_addresses")[r] == Some(true),
            leaf_samples: t.bools("leaf_samples")[r] == Some(true),
            routines: (t.bools("routines_stated")[r] == Some(true)).then(Vec::new),
            // Marks an image with lines per block until the blocks are read.
            block_lines: if t.bools("lines_per_block")[r] == Some(true) {
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

fn symbols(profile: &mut Profile, index: &mut Index, t: &ReadTable) -> Result<()> {
    for r in 0..t.rows {
        let p = index.process(t, "process", r)?;
        let i = index.image(t, p, "image", r)?;
        index.symbols[p][i].push(t, "symbol", r, t.int("symbol", r))?;
        let file = file_ref(profile, t, "file", r)?;
        profile.processes[p].images[i].symbols.push(Symbol {
            name: t.texts("name")[r].clone().unwrap_or_default(),
            offset: t.ints("offset")[r],
            size: t.ints("size")[r],
            file,
        });
    }
    Ok(())
}

fn source_lines(profile: &mut Profile, index: &Index, t: &ReadTable) -> Result<()> {
    for r in 0..t.rows {
        let p = index.process(t, "process", r)?;
        let i = index.image(t, p, "image", r)?;
        let file = file_ref(profile, t, "file", r)?;
        profile.processes[p].images[i].source_lines.push(SourceLine {
            file,
            line: t.u32("line", r)?,
            offset: t.int("offset", r),
            size: t.u32("size", r)?,
            num_instrs: t.u32("instrs", r)?,
        });
    }
    Ok(())
}

fn blocks(profile: &mut Profile, index: &mut Index, t: &ReadTable) -> Result<()> {
    let (process, image, block) = (t.ints("process"), t.ints("image"), t.ints("block"));
    let (node, offset, count) = (t.ints("node"), t.ints("offset"), t.ints("count"));
    let mut at: Option<(u64, u64, usize, usize)> = None;
    for r in 0..t.rows {
        let (pid, iid) = (process[r].unwrap_or_default(), image[r].unwrap_or_default());
        let (p, i) = match at {
            Some((a, b, p, i)) if (a, b) == (pid, iid) => (p, i),
            _ => {
                let p = index.process(t, "process", r)?;
                let i = index.image(t, p, "image", r)?;
                at = Some((pid, iid, p, i));
                (p, i)
            }
        };
        index.blocks[p][i].push(t, "block", r, block[r].unwrap_or_default())?;
        profile.processes[p].images[i].blocks.push(Block {
            id: node[r].unwrap_or_default(),
            offset: offset[r].unwrap_or_default(),
            size: t.u32("size", r)?,
            num_instrs: t.u32("instrs", r)?,
            last_instr_offset: t.u32("last_instr_offset", r)?,
            count: count[r],
        });
    }
    Ok(())
}

/// One end of the edge in row `r`: `side` is `source` or `target`.
fn node(index: &Index, t: &ReadTable, p: usize, side: &str, r: usize) -> Result<NodeRef> {
    let kind = format!("{side}_kind");
    let column = |c: &str| format!("{side}_{c}");
    let image = |c: &str| -> Result<usize> {
        let name = column(c);
        match t.ints(&name)[r] {
            None => Err(t.error(
                &name,
                r,
                format!("a {} end needs its image", t.texts(&kind)[r].as_deref().unwrap_or("")),
            )),
            Some(_) => index.image(t, p, &name, r),
        }
    };
    match t.texts(&kind)[r].as_deref().unwrap_or_default() {
        "start" => Ok(NodeRef::Start),
        "end" => Ok(NodeRef::End),
        "unknown" => Ok(NodeRef::Unknown),
        "block" => {
            let i = image("image")?;
            let name = column("block");
            let id = t.ints(&name)[r].ok_or_else(|| t.error(&name, r, "a block end needs its block"))?;
            Ok(NodeRef::Block(BlockRef { image: i as u32, block: index.block(t, p, i, &name, r, id)? }))
        }
        "symbol" => {
            let i = image("image")?;
            let name = column("symbol");
            let id = t.ints(&name)[r].ok_or_else(|| t.error(&name, r, "a symbol end needs its symbol"))?;
            Ok(NodeRef::Symbol(SymbolRef { image: i as u32, symbol: index.symbol(t, p, i, &name, r, id)? }))
        }
        other => {
            Err(t.error(&kind, r, format!("unknown end kind {other:?} (block, symbol, start, end, unknown)")))
        }
    }
}

fn edges(
    profile: &mut Profile,
    index: &Index,
    events: &HashMap<String, usize>,
    [t, counts, costs]: [&ReadTable; 3],
) -> Result<()> {
    // Per process: edge identifier -> position.
    let mut ids: Vec<Ids> = (0..profile.processes.len()).map(|_| Ids::default()).collect();
    for r in 0..t.rows {
        let p = index.process(t, "process", r)?;
        ids[p].push(t, "edge", r, t.int("edge", r))?;
        let kind_name = t.texts("kind")[r].as_deref().unwrap_or_default();
        let kind: EdgeKind = kind_name.parse().map_err(|_| {
            t.error("kind", r, format!("unknown edge kind {kind_name:?} (the DCFG edge types)"))
        })?;
        let threads = t.int("threads", r);
        if threads > counts.rows.max(1) as u64 * 64 + 64 {
            return Err(t.error(
                "threads",
                r,
                format!("{threads} threads is more than the counts could fill"),
            ));
        }
        let site = if t.bools("has_site")[r] == Some(true) {
            let offset = |c: &str| -> Result<Option<u64>> {
                match t.ints(c)[r] {
                    Some(o) if o > Site::MAX_OFFSET => Err(t.error(c, r, "offset out of range")),
                    o => Ok(o),
                }
            };
            Some(Site::new(
                offset("source_offset")?,
                t.opt_u32("source_line", r)?,
                offset("target_offset")?,
                t.opt_u32("target_line", r)?,
            ))
        } else {
            None
        };
        let mut details = EdgeDetails::boxed(Vec::new(), site);
        if let (Some(increment), Some(weight), Some(back)) =
            (t.ints("path_increment")[r], t.ints("path_weight")[r], t.bools("path_back")[r])
        {
            let path = PathEdge { increment: increment as i64, weight: weight as i64, back };
            match &mut details {
                Some(d) => d.path = Some(Box::new(path)),
                None => details = EdgeDetails::path(path),
            }
        }
        if let Some(mispredicts) = t.ints("mispredicts")[r].filter(|&m| m > 0) {
            match &mut details {
                Some(d) => d.mispredicts = mispredicts,
                None => details = EdgeDetails::mispredicted(mispredicts),
            }
        }
        let edge = crate::ir::Edge {
            id: t.int("edge_id", r),
            source: node(index, t, p, "source", r)?,
            target: node(index, t, p, "target", r)?,
            kind,
            counts: Counts::from_elem(0, threads as usize),
            details,
        };
        profile.processes[p].edges.push(edge);
    }
    for r in 0..counts.rows {
        let p = index.process(counts, "process", r)?;
        let id = counts.int("edge", r);
        let e = ids[p]
            .get(id)
            .ok_or_else(|| counts.error("edge", r, format!("no edge {id} in the edges table")))?;
        let thread = counts.int("thread", r) as usize;
        let edge = &mut profile.processes[p].edges[e as usize];
        let slot = edge.counts.get_mut(thread).ok_or_else(|| {
            counts.error("thread", r, format!("thread {thread} of an edge with fewer threads"))
        })?;
        *slot = counts.int("count", r);
    }
    let mut inclusive: HashMap<(usize, u32), Vec<u64>> = HashMap::new();
    for r in 0..costs.rows {
        let p = index.process(costs, "process", r)?;
        let id = costs.int("edge", r);
        let e = ids[p]
            .get(id)
            .ok_or_else(|| costs.error("edge", r, format!("no edge {id} in the edges table")))?;
        event_of(events, costs, "event", r)?;
        let position = costs.int("position", r) as usize;
        if position > costs.rows {
            return Err(costs.error("position", r, "position past the rows of the table"));
        }
        let values = inclusive.entry((p, e)).or_default();
        if values.len() <= position {
            values.resize(position + 1, 0);
        }
        values[position] = costs.int("inclusive", r);
    }
    for ((p, e), values) in inclusive {
        profile.processes[p].edges[e as usize].set_inclusive(values);
    }
    Ok(())
}

/// The routines of the images that state theirs (derived routines in the tables are left out:
/// they follow from the edges again), with their blocks and loops.
fn routines(
    profile: &mut Profile,
    index: &Index,
    [t, blocks, loops, loop_blocks]: [&ReadTable; 4],
) -> Result<()> {
    // Routine identifier -> (process, image, position in the image, whether it has dominators),
    // for stated ones.
    let mut at: HashMap<u64, (usize, usize, usize, bool)> = HashMap::new();
    for r in 0..t.rows {
        if t.bools("stated")[r] != Some(true) {
            continue;
        }
        let p = index.process(t, "process", r)?;
        let i = index.image(t, p, "image", r)?;
        let entry = index.block(t, p, i, "entry", r, t.int("entry", r))?;
        let symbol = match t.ints("symbol")[r] {
            Some(s) => Some(index.symbol(t, p, i, "symbol", r, s)?),
            None => None,
        };
        let image = &mut profile.processes[p].images[i];
        let list = image.routines.get_or_insert_with(Vec::new);
        let dominators = t.bools("has_dominators")[r] == Some(true);
        if at.insert(t.int("routine", r), (p, i, list.len(), dominators)).is_some() {
            return Err(t.error("routine", r, "the same routine twice"));
        }
        list.push(Routine { entry, symbol, ..Routine::default() });
    }
    let mut exits: HashMap<u64, Vec<(u64, u32)>> = HashMap::new();
    for r in 0..blocks.rows {
        let id = blocks.int("routine", r);
        let Some(&(p, i, k, dominators)) = at.get(&id) else { continue };
        let b = index.block(blocks, p, i, "block", r, blocks.int("block", r))?;
        let routine = &mut profile.processes[p].images[i].routines.as_mut().expect("stated")[k];
        if blocks.bools("in_routine")[r] == Some(true) {
            routine.nodes.push(b);
            if dominators {
                match blocks.ints("idom")[r] {
                    Some(d) => routine.idoms.push(index.block(blocks, p, i, "idom", r, d)?),
                    None => {
                        return Err(blocks.error("idom", r, "a routine with dominators needs each block's"))
                    }
                }
            }
        }
        if let Some(x) = blocks.ints("exit_position")[r] {
            exits.entry(id).or_default().push((x, b));
        }
    }
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
    at: &HashMap<u64, (usize, usize, usize, bool)>,
    t: &ReadTable,
    blocks: &ReadTable,
) -> Result<()> {
    // Loop identifier -> (process, image, routine position, loop position).
    let mut loops: HashMap<u64, (usize, usize, usize, usize)> = HashMap::new();
    for r in 0..t.rows {
        let Some(&(p, i, k, _)) = at.get(&t.int("routine", r)) else { continue };
        let head = index.block(t, p, i, "head", r, t.int("head", r))?;
        let parent = match t.ints("parent_head")[r] {
            Some(h) => Some(index.block(t, p, i, "parent_head", r, h)?),
            None => None,
        };
        let routine = &mut profile.processes[p].images[i].routines.as_mut().expect("stated")[k];
        loops.insert(t.int("loop", r), (p, i, k, routine.loops.len()));
        routine.loops.push(Loop { head, parent, ..Loop::default() });
    }
    let mut back: HashMap<u64, Vec<(u64, u32)>> = HashMap::new();
    for r in 0..blocks.rows {
        let id = blocks.int("loop", r);
        let Some(&(p, i, k, l)) = loops.get(&id) else { continue };
        let b = index.block(blocks, p, i, "block", r, blocks.int("block", r))?;
        let lp = &mut profile.processes[p].images[i].routines.as_mut().expect("stated")[k].loops[l];
        if blocks.bools("in_loop")[r] == Some(true) {
            lp.nodes.push(b);
        }
        if let Some(x) = blocks.ints("back_edge_position")[r] {
            back.entry(id).or_default().push((x, b));
        }
    }
    for (id, mut list) in back {
        list.sort_unstable();
        let (p, i, k, l) = loops[&id];
        profile.processes[p].images[i].routines.as_mut().expect("stated")[k].loops[l].back_edge_sources =
            list.into_iter().map(|x| x.1).collect();
    }
    Ok(())
}

fn costs(profile: &mut Profile, index: &Index, events: &HashMap<String, usize>, t: &ReadTable) -> Result<()> {
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
    for r in 0..t.rows {
        let key = (t.int("process", r), t.int("image", r), t.int("row", r));
        let same = open.is_some_and(|(a, b, c, _, _)| (a, b, c) == key);
        if !same {
            flush(profile, &open, fields, &mut values);
            let p = index.process(t, "process", r)?;
            let i = index.image(t, p, "image", r)?;
            open = Some((key.0, key.1, key.2, p, i));
            let symbol = match t.ints("symbol")[r] {
                Some(s) => Some(index.symbol(t, p, i, "symbol", r, s)?),
                None => None,
            };
            fields = (t.ints("offset")[r], symbol, file_ref(profile, t, "file", r)?, t.opt_u32("line", r)?);
        }
        if let Some(e) = event_of(events, t, "event", r)? {
            values[e] = values[e].saturating_add(t.int("value", r));
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

fn block_lines(profile: &mut Profile, index: &Index, t: &ReadTable) -> Result<()> {
    for image in profile.processes.iter_mut().flat_map(|p| &mut p.images) {
        if !image.block_lines.is_empty() {
            image.block_lines = vec![BlockLines::default(); image.blocks.len()];
        }
    }
    for r in 0..t.rows {
        let p = index.process(t, "process", r)?;
        let i = index.image(t, p, "image", r)?;
        let b = index.block(t, p, i, "block", r, t.int("block", r))?;
        let image = &mut profile.processes[p].images[i];
        let Some(lines) = image.block_lines.get_mut(b as usize) else {
            return Err(t.error("image", r, "lines of a block whose image says it has no lines per block"));
        };
        lines.local_id = t.ints("local_id")[r];
        if t.ints("position")[r].is_some() {
            lines.items.push(match (t.bools("path_end")[r], t.opt_u32("line", r)?) {
                (Some(true), _) => LineItem::PathEnd,
                (_, Some(l)) => LineItem::Line(l),
                _ => return Err(t.error("line", r, "an item is a line or a path end")),
            });
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
            let kind = match t.texts("kind")[r].as_deref().unwrap_or_default() {
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
            let array = t.texts("array")[r].clone().unwrap_or_default();
            image.coverage.push(Coverage { kind, symbol, array, sites: Vec::new() });
            open = Some(key);
        }
        if t.ints("site")[r].is_some() {
            let lines = t.texts("lines")[r].as_deref().unwrap_or_default();
            let lines = lines
                .split_ascii_whitespace()
                .map(|l| {
                    l.parse::<u32>().map_err(|_| t.error("lines", r, format!("{l:?} is not a line number")))
                })
                .collect::<Result<Vec<u32>>>()?;
            let site = CoverageSite {
                index: t.ints("slot")[r].unwrap_or_default() as i64,
                label: t.texts("label")[r].clone().unwrap_or_default(),
                lines,
                callee: t.texts("callee")[r].clone(),
            };
            image.coverage.last_mut().expect("pushed above").sites.push(site);
        }
    }
    Ok(())
}

fn stacks(
    profile: &mut Profile,
    index: &Index,
    events: &HashMap<String, usize>,
    nodes: &ReadTable,
    samples: &ReadTable,
) -> Result<()> {
    // Per process: node identifier -> (parent identifier, frame).
    let mut tree: Vec<HashMap<u64, (Option<u64>, u32)>> = vec![HashMap::new(); profile.processes.len()];
    for r in 0..nodes.rows {
        let p = index.process(nodes, "process", r)?;
        let frame = nodes.u32("frame", r)?;
        if frame as usize >= profile.frames.len() {
            return Err(nodes.error("frame", r, format!("no frame {frame} in the frames table")));
        }
        tree[p].insert(nodes.int("node", r), (nodes.ints("parent")[r], frame));
    }
    let mut open: Option<(u64, u64, usize)> = None;
    for r in 0..samples.rows {
        let key = (samples.int("process", r), samples.int("stack", r));
        if open.is_none_or(|(a, b, _)| (a, b) != key) {
            let p = index.process(samples, "process", r)?;
            let mut frames = Vec::new();
            let mut at = samples.ints("node")[r];
            while let Some(n) = at {
                let &(parent, frame) = tree[p].get(&n).ok_or_else(|| {
                    samples.error("node", r, format!("no node {n} in the stack_nodes table"))
                })?;
                if frames.len() > nodes.rows {
                    return Err(samples.error("node", r, "the stack's nodes form a cycle"));
                }
                frames.push(frame);
                at = parent;
            }
            frames.reverse();
            profile.processes[p].stacks.push(Stack {
                frames,
                values: Vec::new(),
                thread: samples.opt_u32("thread", r)?,
            });
            open = Some((key.0, key.1, p));
        }
        let p = open.map_or(0, |o| o.2);
        if let Some(v) = samples.floats("value")[r] {
            event_of(events, samples, "event", r)?;
            let stack = profile.processes[p].stacks.last_mut().expect("pushed above");
            let position = samples.int("position", r) as usize;
            if position > samples.rows {
                return Err(samples.error("position", r, "position past the rows of the table"));
            }
            if stack.values.len() <= position {
                stack.values.resize(position + 1, 0.0);
            }
            stack.values[position] = v;
        }
    }
    Ok(())
}
