//! The model as tables: each table is filled from the profile and written to its own Parquet
//! file, the tables in parallel.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::format::WriteOptions;
use cfghub_analysis::executions::{block_thread_counts, block_totals, executed_in};
use cfghub_analysis::names::{routine_name, SymbolIndex};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{
    decimal_text, power_of_ten, CoverageKind, Image, LabelValue, LineItem, NodeRef, Process, Profile,
    Routine, StackValue, NO_INDEX,
};

use super::columns::Table;
use super::layout::{partition_dir, Layout};
use super::*;

/// What several tables need, computed once.
struct Context<'a> {
    profile: &'a Profile,
    /// Where the tables go: files, or memory (`None`) as Arrow record batches.
    layout: Option<Layout>,
    id: Arc<str>,
    /// Routines of each image of each process: as stated, or derived when the image has none.
    routines: Vec<Vec<Cow<'a, [Routine]>>>,
    /// The profile-wide number of each image's first routine.
    first_routine: Vec<Vec<u32>>,
    /// The profile-wide number of each image's first loop.
    first_loop: Vec<Vec<u32>>,
    /// How the pages are compressed.
    compression: Compression,
    /// Each frame's id ([`super::ids::frame_id`]).
    frame_ids: Vec<i64>,
    /// Decimal places of each event's stack values in the tables: the most any process has.
    decimals: Vec<u8>,
}

impl Context<'_> {
    /// An empty table of the profile, written to the folder.
    fn table(&self, name: &'static str, specs: &'static [Spec]) -> Table {
        let Some(layout) = &self.layout else {
            #[cfg(feature = "arrow")]
            return Table::in_memory(name, specs, &self.id);
            #[cfg(not(feature = "arrow"))]
            unreachable!("tables are made in memory only with the arrow feature");
        };
        let path = layout.path(name);
        if let Some(parent) = path.parent().filter(|_| matches!(layout, Layout::Fleet { .. })) {
            // A failure shows when the table's file cannot be made.
            let _ = std::fs::create_dir_all(parent);
        }
        Table::new(name, specs, &self.id, path, self.compression)
    }
}

/// Writes the tables of `profile` into the folder `dir` (which exists and is empty), with
/// `profile_id` the id of every row: as one profile's folder, or, with `--partition-by` or
/// `--fleet`, as a fleet's folders, partitioned by the samples' labels.
pub fn write(
    profile: &Profile,
    dir: &Path,
    target: &Path,
    options: &WriteOptions,
    _findings: &mut Findings,
) -> Result<()> {
    let opts = options.formats.get::<Options>();
    let id: Arc<str> = Arc::from(opts.profile_id.clone().unwrap_or_else(|| profile_id_for(target)).as_str());
    let fleet = super::layout::is_fleet(target);
    if !opts.fleet && opts.partition_by.is_empty() && !fleet {
        return make_tables(profile, Some(Layout::Folder(dir.to_path_buf())), id, opts.compression, None)
            .map(drop);
    }
    // A profile added to a fleet goes under the partitions the fleet has, unless asked.
    let keys = if opts.partition_by.is_empty() && fleet {
        super::layout::partition_keys(target)
    } else {
        opts.partition_by.clone()
    };
    // The fleet's tree: the frames and call paths it lacks, in files of their own.
    let known = if fleet { super::tree::known_ids(target)? } else { Default::default() };
    super::tree::write_new(profile, dir, target, &id, &known, opts.compression)?;
    for (values, part) in cfghub_analysis::labels::partition(profile, &keys) {
        let partition: PathBuf =
            keys.iter().zip(&values).map(|(k, v)| partition_dir(k, v.as_deref())).collect();
        let layout = Layout::Fleet { root: dir.to_path_buf(), partition, file: id.to_string() };
        make_tables(&part, Some(layout), id.clone(), opts.compression, None)?;
    }
    Ok(())
}

/// The tables of `profile` as Arrow record batches, each row's `profile_id` `id`: what `write`
/// writes to one profile's folder, without the files; those `only` names, or all. A name that
/// is no table is a usage error listing them.
#[cfg(feature = "arrow")]
pub fn arrow_tables(
    profile: &Profile,
    id: &str,
    only: Option<&[&str]>,
) -> Result<Vec<super::arrow::Batches>> {
    if let Some(unknown) = only.into_iter().flatten().find(|n| !TABLES.iter().any(|(t, _)| t == *n)) {
        let all: Vec<&str> = TABLES.iter().map(|(t, _)| *t).collect();
        return Err(Error::usage(format!("no table is called `{unknown}`; the tables: {}", all.join(", "))));
    }
    let made = make_tables(profile, None, Arc::from(id), Compression::default(), only)?;
    Ok(made.into_iter().filter_map(|f| f.batches).collect())
}

/// Makes the tables of `profile` (those `only` names, or all): written where `layout` says,
/// or, without one, in memory.
fn make_tables(
    profile: &Profile,
    layout: Option<Layout>,
    id: Arc<str>,
    compression: Compression,
    only: Option<&[&str]>,
) -> Result<Vec<super::columns::Finished>> {
    let routines: Vec<Vec<Cow<'_, [Routine]>>> = profile
        .processes
        .par_iter()
        // The routines and loops `info` shows: the input's where it states them whole, else
        // derived (a Callgrind profile's routines come without dominators or loops).
        .map(cfghub_analysis::routines::all)
        .collect();
    let (mut first_routine, mut first_loop) = (Vec::new(), Vec::new());
    let (mut r, mut l) = (0u32, 0u32);
    for per_image in &routines {
        let (mut fr, mut fl) = (Vec::new(), Vec::new());
        for rs in per_image {
            fr.push(r);
            fl.push(l);
            r += rs.len() as u32;
            l += rs.iter().map(|x| x.loops.len() as u32).sum::<u32>();
        }
        first_routine.push(fr);
        first_loop.push(fl);
    }
    let frame_ids: Vec<i64> =
        (0..profile.frames.len() as u32).into_par_iter().map(|f| super::ids::frame_id(profile, f)).collect();
    let decimals: Vec<u8> = (0..profile.events.len())
        .map(|e| profile.processes.iter().map(|p| p.stacks.decimals_of(e)).max().unwrap_or(0))
        .collect();
    check_sample_values(profile, &decimals)?;
    let cx = Context {
        profile,
        layout,
        id,
        routines,
        first_routine,
        first_loop,
        compression,
        frame_ids,
        decimals,
    };
    type Fill = fn(&Context<'_>) -> Table;
    let in_fleet = matches!(cx.layout, Some(Layout::Fleet { .. }));
    let fills: &[(&str, Fill)] = &[
        ("profile", profile_table),
        ("headers", headers),
        ("events", events),
        ("files", files),
        ("processes", processes),
        ("threads", threads),
        ("images", images),
        ("symbols", symbols),
        ("source_lines", source_lines),
        ("blocks", blocks),
        ("block_counts", block_counts),
        ("edges", edges),
        ("edge_counts", edge_counts),
        ("edge_costs", edge_costs),
        ("routines", routines_table),
        ("routine_blocks", routine_blocks),
        ("loops", loops),
        ("loop_blocks", loop_blocks),
        ("costs", costs),
        ("block_lines", block_lines),
        ("coverage", coverage),
        ("samples", samples),
        ("sample_labels", sample_labels),
        ("inline_frames", inline_frames),
        ("call_contexts", call_contexts),
        ("call_context_costs", call_context_costs),
    ];
    // A fleet's frames and call paths are its shared tree, written apart (`super::tree`).
    let tree: &[(&str, Fill)] =
        if in_fleet { &[] } else { &[("frames", frames), ("stack_nodes", stack_nodes)] };
    let wanted = |(name, _): &&(&str, Fill)| only.is_none_or(|only| only.contains(name));
    fills.par_iter().chain(tree).filter(wanted).map(|(_, fill)| fill(&cx).finish()).collect()
}

fn profile_table(cx: &Context<'_>) -> Table {
    let mut t = cx.table("profile", PROFILE);
    let m = &cx.profile.meta;
    t.row()
        .int(m.format_version.map(|v| v.0))
        .int(m.format_version.map(|v| v.1))
        .s(m.creator.as_deref())
        .s(m.command.as_deref())
        .int(m.address_step);
    t
}

fn headers(cx: &Context<'_>) -> Table {
    let mut t = cx.table("headers", HEADERS);
    for (i, (k, v)) in cx.profile.meta.headers.iter().enumerate() {
        t.row().u(i as u64).s(Some(k)).s(Some(v));
    }
    t
}

fn events(cx: &Context<'_>) -> Table {
    let mut t = cx.table("events", EVENTS);
    for (i, e) in cx.profile.events.iter().enumerate() {
        let decimals = cx.decimals.get(i).copied().unwrap_or(0);
        t.row()
            .u(i as u64)
            .s(Some(&e.name))
            .s(e.description.as_deref())
            .int((decimals > 0).then_some(u64::from(decimals)));
    }
    t
}

fn files(cx: &Context<'_>) -> Table {
    let mut t = cx.table("files", FILES);
    for (i, name) in cx.profile.files.iter() {
        t.row().u(u64::from(i)).s(Some(name));
    }
    t
}

fn frames(cx: &Context<'_>) -> Table {
    let mut t = cx.table("frames", FRAMES);
    for (i, _) in cx.profile.frames.iter() {
        super::tree::frame_row(&mut t, cx.profile, i, cx.frame_ids[i as usize]);
    }
    t
}

fn processes(cx: &Context<'_>) -> Table {
    let mut t = cx.table("processes", PROCESSES);
    for (i, p) in cx.profile.processes.iter().enumerate() {
        t.row().u(i as u64).u(p.pid).int(p.instr_count).u(p.thread_instr_counts.len() as u64);
    }
    t
}

fn threads(cx: &Context<'_>) -> Table {
    let mut t = cx.table("threads", THREADS);
    for (i, p) in cx.profile.processes.iter().enumerate() {
        for (thread, &n) in p.thread_instr_counts.iter().enumerate() {
            t.row().u(i as u64).u(thread as u64).u(n);
        }
    }
    t
}

/// Every image with its process and image index.
fn each_image(profile: &Profile) -> impl Iterator<Item = (u64, u64, &Image)> {
    profile.processes.iter().enumerate().flat_map(|(p, process)| {
        process.images.iter().enumerate().map(move |(i, image)| (p as u64, i as u64, image))
    })
}

fn images(cx: &Context<'_>) -> Table {
    let mut t = cx.table("images", IMAGES);
    for (p, i, image) in each_image(cx.profile) {
        t.row()
            .u(p)
            .u(i)
            .u(image.id)
            .int(image.file.map(u64::from))
            .s(image.file.map(|f| cx.profile.files.get(f)))
            .u(image.load_addr)
            .int(image.size)
            .int(image.file_offset)
            .s(image.build_id.as_deref())
            .b(Some(image.no_addresses))
            .b(Some(image.routines.is_some()))
            .b(Some(!image.block_lines.is_empty()))
            .b(Some(image.leaf_samples))
            .u(super::ids::image_id(cx.profile, image) as u64);
    }
    t
}

fn symbols(cx: &Context<'_>) -> Table {
    let mut t = cx.table("symbols", SYMBOLS);
    for (p, i, image) in each_image(cx.profile) {
        for (s, sym) in image.symbols.iter().enumerate() {
            t.row()
                .u(p)
                .u(i)
                .u(s as u64)
                .s(Some(&sym.name))
                .int(sym.offset)
                .int(sym.offset.map(|o| image.load_addr.wrapping_add(o)))
                .int(sym.size)
                .int(sym.file.map(u64::from));
        }
    }
    t
}

fn source_lines(cx: &Context<'_>) -> Table {
    let mut t = cx.table("source_lines", SOURCE_LINES);
    for (p, i, image) in each_image(cx.profile) {
        for l in &image.source_lines {
            t.row()
                .u(p)
                .u(i)
                .int(l.file.map(u64::from))
                .s(l.file.map(|f| cx.profile.files.get(f)))
                .u(u64::from(l.line))
                .u(l.offset)
                .u(image.load_addr.wrapping_add(l.offset))
                .u(u64::from(l.size))
                .u(u64::from(l.num_instrs));
        }
    }
    t
}

/// The profile-wide routine of each block of an image (the first routine that holds it).
fn routine_of_blocks(cx: &Context<'_>, p: usize, i: usize, blocks: usize) -> Vec<Option<u32>> {
    let mut of = vec![None; blocks];
    for (r, routine) in cx.routines[p][i].iter().enumerate() {
        for &b in &routine.nodes {
            if let Some(slot) = of.get_mut(b as usize) {
                slot.get_or_insert(cx.first_routine[p][i] + r as u32);
            }
        }
    }
    of
}

fn blocks(cx: &Context<'_>) -> Table {
    let mut t = cx.table("blocks", BLOCKS);
    for (p, i, image) in each_image(cx.profile) {
        let routine = routine_of_blocks(cx, p as usize, i as usize, image.blocks.len());
        for (b, block) in image.blocks.iter().enumerate() {
            t.row()
                .u(p)
                .u(i)
                .u(b as u64)
                .u(block.id)
                .u(block.offset)
                .u(image.load_addr.wrapping_add(block.offset))
                .u(u64::from(block.size))
                .u(u64::from(block.num_instrs))
                .u(u64::from(block.last_instr_offset))
                .int(block.count)
                .int(routine[b].map(u64::from));
        }
    }
    t
}

fn block_counts(cx: &Context<'_>) -> Table {
    let mut t = cx.table("block_counts", BLOCK_COUNTS);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        if process.thread_count() == 0 {
            continue;
        }
        let counts = block_thread_counts(process);
        for (r, _) in process.blocks() {
            for (thread, &c) in counts.get(r).into_iter().flatten().enumerate() {
                if c != 0 {
                    t.row().u(p as u64).u(u64::from(r.image)).u(u64::from(r.block)).u(thread as u64).u(c);
                }
            }
        }
    }
    t
}

/// An edge end's kind, image, block, symbol and block node id.
type End = (&'static str, Option<u64>, Option<u64>, Option<u64>, Option<u64>);

fn end(process: &Process, node: NodeRef) -> End {
    match node {
        NodeRef::Start => ("start", None, None, None, None),
        NodeRef::End => ("end", None, None, None, None),
        NodeRef::Unknown => ("unknown", None, None, None, None),
        NodeRef::Block(r) => {
            let id = process
                .images
                .get(r.image as usize)
                .and_then(|i| i.blocks.get(r.block as usize))
                .map(|b| b.id);
            ("block", Some(u64::from(r.image)), Some(u64::from(r.block)), None, id)
        }
        NodeRef::Symbol(s) => ("symbol", Some(u64::from(s.image)), None, Some(u64::from(s.symbol)), None),
    }
}

fn edges(cx: &Context<'_>) -> Table {
    let mut t = cx.table("edges", EDGES);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        for (e, edge) in process.edges.iter().enumerate() {
            let (sk, si, sb, ss, sn) = end(process, edge.source);
            let (tk, ti, tb, ts, tn) = end(process, edge.target);
            let site = edge.site();
            let path = edge.path();
            t.row()
                .u(p as u64)
                .u(e as u64)
                .u(edge.id)
                .k(edge.kind.as_str())
                .k(sk)
                .int(si)
                .int(sb)
                .int(ss)
                .int(sn)
                .k(tk)
                .int(ti)
                .int(tb)
                .int(ts)
                .int(tn)
                .u(edge.total())
                .u(edge.counts.len() as u64)
                .b(Some(site.is_some()))
                .int(site.and_then(|s| s.source_offset()))
                .int(site.and_then(|s| s.source_line()).map(u64::from))
                .int(site.and_then(|s| s.target_offset()))
                .int(site.and_then(|s| s.target_line()).map(u64::from))
                .int(path.map(|x| x.increment as u64))
                .int(path.map(|x| x.weight as u64))
                .b(path.map(|x| x.back))
                .int((edge.mispredicts() > 0).then(|| edge.mispredicts()));
        }
    }
    t
}

fn edge_counts(cx: &Context<'_>) -> Table {
    let mut t = cx.table("edge_counts", EDGE_COUNTS);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        for (e, edge) in process.edges.iter().enumerate() {
            for (thread, &c) in edge.counts.iter().enumerate() {
                if c != 0 {
                    t.row().u(p as u64).u(e as u64).u(thread as u64).u(c);
                }
            }
        }
    }
    t
}

fn event_name(profile: &Profile, e: usize) -> Option<&str> {
    profile.events.get(e).map(|e| e.name.as_str())
}

fn edge_costs(cx: &Context<'_>) -> Table {
    let mut t = cx.table("edge_costs", EDGE_COSTS);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        for (e, edge) in process.edges.iter().enumerate() {
            for (k, &v) in edge.inclusive().iter().enumerate() {
                t.row().u(p as u64).u(e as u64).u(k as u64).s(event_name(cx.profile, k)).u(v);
            }
        }
    }
    t
}

/// Every call context of the profile ([`cfghub_model::ir::CallContext`]) with its process,
/// edge and position.
fn call_contexts_of(
    profile: &Profile,
) -> impl Iterator<Item = (usize, usize, usize, &cfghub_model::ir::CallContext)> {
    profile.processes.iter().enumerate().flat_map(|(p, process)| {
        process
            .edges
            .iter()
            .enumerate()
            .flat_map(move |(e, edge)| edge.contexts().iter().enumerate().map(move |(k, x)| (p, e, k, x)))
    })
}

/// Calls counted per function the input named at their ends: a row per context and thread,
/// every thread of the context (zeros too).
fn call_contexts(cx: &Context<'_>) -> Table {
    let mut t = cx.table("call_contexts", CALL_CONTEXTS);
    for (p, e, k, x) in call_contexts_of(cx.profile) {
        for (thread, &c) in x.counts.iter().enumerate() {
            let row = t.row().u(p as u64).u(e as u64).u(k as u64);
            row.u(u64::from(x.caller)).u(u64::from(x.callee)).u(thread as u64).u(c);
        }
    }
    t
}

fn call_context_costs(cx: &Context<'_>) -> Table {
    let mut t = cx.table("call_context_costs", CALL_CONTEXT_COSTS);
    for (p, e, k, x) in call_contexts_of(cx.profile) {
        for (position, &v) in x.inclusive.iter().enumerate() {
            let row = t.row().u(p as u64).u(e as u64).u(k as u64);
            row.u(position as u64).s(event_name(cx.profile, position)).u(v);
        }
    }
    t
}

fn routines_table(cx: &Context<'_>) -> Table {
    let mut t = cx.table("routines", ROUTINES);
    for (p, i, image) in each_image(cx.profile) {
        let index = SymbolIndex::new(image);
        let (pu, iu) = (p as usize, i as usize);
        for (r, routine) in cx.routines[pu][iu].iter().enumerate() {
            t.row()
                .u(u64::from(cx.first_routine[pu][iu]) + r as u64)
                .u(p)
                .u(i)
                .u(u64::from(routine.entry))
                .s(Some(&routine_name(cx.profile, image, &index, routine)))
                .int(routine.symbol.map(u64::from))
                .b(Some(image.routines.is_some()))
                .b(Some(routine.idoms.len() == routine.nodes.len()))
                .u(routine.nodes.len() as u64)
                .u(routine.loops.len() as u64)
                .u(executed_in(image, &routine.nodes));
        }
    }
    t
}

fn routine_blocks(cx: &Context<'_>) -> Table {
    let mut t = cx.table("routine_blocks", ROUTINE_BLOCKS);
    for (p, per_image) in cx.routines.iter().enumerate() {
        for (i, rs) in per_image.iter().enumerate() {
            for (r, routine) in rs.iter().enumerate() {
                let number = u64::from(cx.first_routine[p][i]) + r as u64;
                let exits: FxHashMap<u32, usize> =
                    routine.exits.iter().enumerate().rev().map(|(k, &b)| (b, k)).collect();
                for (k, &b) in routine.nodes.iter().enumerate() {
                    t.row()
                        .u(number)
                        .u(u64::from(b))
                        .b(Some(true))
                        .int(routine.idoms.get(k).map(|&d| u64::from(d)))
                        .int(exits.get(&b).map(|&x| x as u64));
                }
                // Exits a format listed without listing them as nodes.
                for (k, &b) in routine.exits.iter().enumerate() {
                    if !routine.nodes.contains(&b) {
                        t.row().u(number).u(u64::from(b)).b(Some(false)).int(None).u(k as u64);
                    }
                }
            }
        }
    }
    t
}

fn loops(cx: &Context<'_>) -> Table {
    let mut t = cx.table("loops", LOOPS);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        let per_image = &cx.routines[p];
        if per_image.iter().all(|rs| rs.iter().all(|r| r.loops.is_empty())) {
            continue;
        }
        // Back-edge traversals: the edges from a loop's back-edge sources to its head.
        let mut back: FxHashMap<(u32, u32, u32), u64> = FxHashMap::default();
        for (i, rs) in per_image.iter().enumerate() {
            for l in rs.iter().flat_map(|r| &r.loops) {
                for &s in &l.back_edge_sources {
                    back.insert((i as u32, s, l.head), 0);
                }
            }
        }
        for edge in &process.edges {
            if let (NodeRef::Block(s), NodeRef::Block(d)) = (edge.source, edge.target) {
                if s.image == d.image {
                    if let Some(n) = back.get_mut(&(s.image, s.block, d.block)) {
                        *n = n.saturating_add(edge.total());
                    }
                }
            }
        }
        let totals = block_totals(process);
        let mut number = cx.first_loop[p].first().copied().unwrap_or(0);
        for (i, rs) in per_image.iter().enumerate() {
            for (r, routine) in rs.iter().enumerate() {
                for (k, l) in routine.loops.iter().enumerate() {
                    let iterations = l
                        .back_edge_sources
                        .iter()
                        .map(|&s| back.get(&(i as u32, s, l.head)).copied().unwrap_or(0))
                        .fold(0u64, u64::saturating_add);
                    let head = cfghub_model::ir::BlockRef { image: i as u32, block: l.head };
                    let executed = totals.get(head).copied().unwrap_or(0);
                    t.row()
                        .u(u64::from(number))
                        .u(u64::from(cx.first_routine[p][i]) + r as u64)
                        .u(u64::from(l.head))
                        .int(l.parent.map(u64::from))
                        .u(cfghub_analysis::loops::depth(&routine.loops, k) as u64)
                        .u(l.nodes.len() as u64)
                        .u(iterations)
                        .u(executed.saturating_sub(iterations));
                    number += 1;
                }
            }
        }
    }
    t
}

fn loop_blocks(cx: &Context<'_>) -> Table {
    let mut t = cx.table("loop_blocks", LOOP_BLOCKS);
    for (p, per_image) in cx.routines.iter().enumerate() {
        let mut number = cx.first_loop[p].first().copied().unwrap_or(0);
        for rs in per_image {
            for l in rs.iter().flat_map(|r| &r.loops) {
                for &b in &l.nodes {
                    let position = l.back_edge_sources.iter().position(|&s| s == b);
                    t.row()
                        .u(u64::from(number))
                        .u(u64::from(b))
                        .b(Some(true))
                        .int(position.map(|x| x as u64));
                }
                for (k, &b) in l.back_edge_sources.iter().enumerate() {
                    if !l.nodes.contains(&b) {
                        t.row().u(u64::from(number)).u(u64::from(b)).b(Some(false)).u(k as u64);
                    }
                }
                number += 1;
            }
        }
    }
    t
}

fn costs(cx: &Context<'_>) -> Table {
    let mut t = cx.table("costs", COSTS);
    for (p, i, image) in each_image(cx.profile) {
        let table = &image.costs;
        let mut cursor = table.cursor();
        for row in 0..table.len() {
            let (symbol, offset, file, line) =
                (cursor.symbol(row), cursor.offset(row), cursor.file(row), cursor.line(row));
            let values = cursor.values(row);
            let address = offset.map(|o| image.load_addr.wrapping_add(o));
            let mut stated: Vec<(usize, u64)> =
                values.iter().enumerate().filter(|&(_, &v)| v != 0).map(|(e, &v)| (e, v)).collect();
            if stated.is_empty() {
                // A row with no value still says where: kept with a zero.
                stated.push((0, 0));
            }
            for (e, v) in stated {
                t.row()
                    .u(p)
                    .u(i)
                    .u(row as u64)
                    .int(symbol.map(u64::from))
                    .int(offset)
                    .int(address)
                    .int(file.map(u64::from))
                    .int(line.map(u64::from))
                    .s(event_name(cx.profile, e))
                    .u(v);
            }
        }
    }
    t
}

fn block_lines(cx: &Context<'_>) -> Table {
    let mut t = cx.table("block_lines", BLOCK_LINES);
    for (p, i, image) in each_image(cx.profile) {
        for (b, lines) in image.block_lines.iter().enumerate() {
            let local = lines.local_id;
            if lines.items.is_empty() {
                t.row().u(p).u(i).u(b as u64).int(local).int(None).int(None).b(None);
            }
            for (k, item) in lines.items.iter().enumerate() {
                let (line, end) = match *item {
                    LineItem::Line(l) => (Some(u64::from(l)), false),
                    LineItem::PathEnd => (None, true),
                };
                t.row().u(p).u(i).u(b as u64).int(local).u(k as u64).int(line).b(Some(end));
            }
        }
    }
    t
}

/// A coverage site's row: its position, slot, label, lines and callee (all null for an array
/// without sites).
type SiteRow<'a> = (Option<u64>, Option<u64>, Option<&'a str>, Option<String>, Option<&'a str>);

fn coverage(cx: &Context<'_>) -> Table {
    let mut t = cx.table("coverage", COVERAGE);
    for (p, i, image) in each_image(cx.profile) {
        for (c, cov) in image.coverage.iter().enumerate() {
            let kind = match cov.kind {
                CoverageKind::Function => "function",
                CoverageKind::Block => "block",
                CoverageKind::Call => "call",
            };
            let mut rows: Vec<SiteRow<'_>> = Vec::new();
            if cov.sites.is_empty() {
                rows.push((None, None, None, None, None));
            }
            for (k, site) in cov.sites.iter().enumerate() {
                let lines = site.lines.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
                rows.push((
                    Some(k as u64),
                    Some(site.index as u64),
                    Some(&site.label),
                    Some(lines),
                    site.callee.as_deref(),
                ));
            }
            for (site, slot, label, lines, callee) in rows {
                t.row()
                    .u(p)
                    .u(i)
                    .u(c as u64)
                    .k(kind)
                    .u(u64::from(cov.symbol))
                    .s(Some(&cov.array))
                    .int(site)
                    .int(slot)
                    .s(label)
                    .s(lines.as_deref())
                    .s(callee);
            }
        }
    }
    t
}

/// The prefix tree of each process's stacks: the nodes on sampled paths, each once, in the
/// order a walk of every sample's path root first meets them, with their ids.
fn stack_nodes(cx: &Context<'_>) -> Table {
    let mut t = cx.table("stack_nodes", STACK_NODES);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        let stacks = &process.stacks;
        let ids = super::ids::node_ids(stacks, &cx.frame_ids);
        let mut depth = vec![0u32; stacks.nodes().len()];
        for n in stacks.nodes_in_order_met() {
            let node = stacks.nodes()[n as usize];
            let parent = (node.parent != NO_INDEX).then_some(node.parent as usize);
            depth[n as usize] = parent.map_or(0, |p| depth[p] + 1);
            t.row()
                .u(p as u64)
                .u(ids[n as usize] as u64)
                .int(parent.map(|p| ids[p] as u64))
                .u(cx.frame_ids[node.frame as usize] as u64)
                .s(Some(cx.profile.frames.get(node.frame)))
                .u(u64::from(depth[n as usize]));
        }
    }
    t
}

/// Refuses stack values a signed 64-bit integer cannot hold in the event's scale, naming the
/// event: the tables keep every value exact.
fn check_sample_values(profile: &Profile, decimals: &[u8]) -> Result<()> {
    for process in &profile.processes {
        let stacks = &process.stacks;
        for s in stacks.samples() {
            for (e, &v) in s.values.iter().enumerate() {
                let scaled = v.checked_mul(power_of_ten(decimals[e] - stacks.decimals_of(e)));
                if scaled.and_then(|v| i64::try_from(v).ok()).is_none() {
                    let name = event_name(profile, e).unwrap_or("?");
                    let mut text = Vec::new();
                    decimal_text(v, stacks.decimals_of(e), &mut text);
                    return Err(Error::input(format!(
                        "tables: event {name}: a stack value of {} is beyond the signed 64-bit integers \
                         the samples table holds exactly",
                        String::from_utf8_lossy(&text)
                    ))
                    .with_hint(
                        "pprof and folded stacks hold it; split the profile or write it to one of those",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A row per sample and event: the sample's leaf node, thread and exact value (an integer in
/// units of `10^-decimals` of the event, the `events` table's `decimals`).
fn samples(cx: &Context<'_>) -> Table {
    let mut t = cx.table("samples", SAMPLES);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        let stacks = &process.stacks;
        let ids = super::ids::node_ids(stacks, &cx.frame_ids);
        let scale: Vec<StackValue> =
            (0..stacks.width()).map(|e| power_of_ten(cx.decimals[e] - stacks.decimals_of(e))).collect();
        for (s, stack) in stacks.samples().enumerate() {
            let thread = stack.thread.map(u64::from);
            let leaf = (stack.node != NO_INDEX).then(|| ids[stack.node as usize] as u64);
            if stack.values.is_empty() {
                t.row().u(p as u64).u(s as u64).int(leaf).int(thread).u(0).s(None).int(None);
            }
            for (k, &v) in stack.values.iter().enumerate() {
                let event = event_name(cx.profile, k);
                // Checked by `check_sample_values`.
                let v = (v * scale[k]) as i64;
                t.row()
                    .u(p as u64)
                    .u(s as u64)
                    .int(leaf)
                    .int(thread)
                    .u(k as u64)
                    .s(event)
                    .int(Some(v as u64));
            }
        }
    }
    t
}

/// A row per label of each labelled sample: text labels in `value`, numeric ones in `number`
/// (and as text in `value`) with their `unit`.
fn sample_labels(cx: &Context<'_>) -> Table {
    let mut t = cx.table("sample_labels", SAMPLE_LABELS);
    for (p, process) in cx.profile.processes.iter().enumerate() {
        for (s, stack) in process.stacks.samples().enumerate() {
            for label in stack.labels {
                let row = t.row().u(p as u64).u(s as u64).s(Some(&label.key));
                match &label.value {
                    LabelValue::Text(text) => {
                        row.s(Some(text)).int(None).s(None);
                    }
                    LabelValue::Number(n, unit) => {
                        row.s(Some(&n.to_string())).int(Some(*n as u64)).s(unit.as_deref());
                    }
                }
            }
        }
    }
    t
}

/// The functions inlined at each address of an image that has them, innermost first.
fn inline_frames(cx: &Context<'_>) -> Table {
    let mut t = cx.table("inline_frames", INLINE_FRAMES);
    for (p, i, image) in each_image(cx.profile) {
        for inlined in &image.inlined {
            for (k, frame) in inlined.frames.iter().enumerate() {
                t.row()
                    .u(p)
                    .u(i)
                    .u(inlined.offset)
                    .u(image.load_addr.wrapping_add(inlined.offset))
                    .u(k as u64)
                    .s(Some(image.inline_names.get(frame.name)))
                    .int(frame.file().map(u64::from))
                    .int(frame.line().map(u64::from));
            }
        }
    }
    t
}
