//! A fleet's shared tree: the `frames` and `stack_nodes` of every profile of a fleet, each
//! frame and call path once. Their ids come from their content ([`super::ids`]), so a profile
//! added to a fleet writes only the frames and paths the fleet lacks, in files of their own
//! (`frames/<profile>.parquet`, unpartitioned; `<profile>.1.parquet` and on when that name is
//! taken), and no later write changes or removes them. A fleet of a thousand profiles of one
//! service holds its tree once, not a thousand times (random 64-bit ids do not compress).

use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap, FxHashSet};

use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{FrameAddress, FrameId, FrameSource, Profile, NO_INDEX};

use super::columns::{open_table, Table};
use super::schema::Kind::{Text, I64, U32, U64};
use super::schema::{opt, req, Spec};
use super::{Compression, FRAMES, STACK_NODES};

const ANY_PID: Spec = opt("profile_id", Text).may_be_absent();
const FRAME_IDS: &[Spec] = &[ANY_PID, req("frame", I64)];
const NODE_IDS: &[Spec] = &[ANY_PID, req("node", I64)];
const FRAME_ROWS: &[Spec] = &[
    ANY_PID,
    req("frame", I64),
    req("name", Text),
    opt("line", U32).may_be_absent(),
    opt("system_name", Text).may_be_absent(),
    opt("address", U64).may_be_absent(),
    opt("path", Text).may_be_absent(),
];
const NODE_ROWS: &[Spec] =
    &[ANY_PID, req("node", I64), opt("parent", I64).may_be_absent(), req("frame", I64)];

/// The Parquet files of table `table` of the fleet at `root`.
fn files(root: &Path, table: &str) -> Result<Vec<PathBuf>> {
    super::layout::table_files(root, table).map_err(|e| Error::io(root.join(table).display().to_string(), e))
}

/// The frames and call paths a fleet holds, by id.
#[derive(Default)]
pub struct Known {
    frames: FxHashSet<i64>,
    nodes: FxHashSet<i64>,
}

/// The ids of the frames and call paths of the fleet at `root` (none when it is no fleet yet).
pub fn known_ids(root: &Path) -> Result<Known> {
    let mut known = Known::default();
    for (table, specs, column) in [("frames", FRAME_IDS, "frame"), ("stack_nodes", NODE_IDS, "node")] {
        for path in files(root, table)? {
            let name = if table == "frames" { "frames" } else { "stack_nodes" };
            let mut reader = open_table(&path, name, specs, None)?;
            while let Some(t) = reader.next()? {
                let set = if table == "frames" { &mut known.frames } else { &mut known.nodes };
                set.extend(t.range().map(|r| t.int(column, r) as i64));
            }
        }
    }
    Ok(known)
}

/// A file name for table `table` of the fleet `target` not taken yet: `<id>.parquet`, else
/// `<id>.<k>.parquet`.
fn free_name(target: &Path, table: &str, id: &str) -> PathBuf {
    let dir = target.join(table);
    (0..)
        .map(|k| if k == 0 { format!("{id}.parquet") } else { format!("{id}.{k}.parquet") })
        .map(PathBuf::from)
        .find(|name| !dir.join(name).exists())
        .expect("a free name")
}

/// Writes into `dir` (the temporary folder that becomes the fleet `target`) the frames and call
/// paths of `profile` that `known` lacks; nothing when it lacks none.
pub fn write_new(
    profile: &Profile,
    dir: &Path,
    target: &Path,
    id: &std::sync::Arc<str>,
    known: &Known,
    compression: Compression,
) -> Result<()> {
    let frame_ids: Vec<i64> =
        (0..profile.frames.len() as u32).map(|f| super::ids::frame_id(profile, f)).collect();
    let new_frames: Vec<u32> = (0..profile.frames.len() as u32)
        .filter(|&f| !known.frames.contains(&frame_ids[f as usize]))
        .collect();
    if !new_frames.is_empty() {
        let path = dir.join("frames").join(free_name(target, "frames", id));
        std::fs::create_dir_all(path.parent().expect("a folder"))
            .map_err(|e| Error::io(path.display().to_string(), e))?;
        let mut t = Table::new("frames", FRAMES, id, path, compression);
        for f in new_frames {
            frame_row(&mut t, profile, f, frame_ids[f as usize]);
        }
        t.finish()?;
    }
    let mut written: FxHashSet<i64> = FxHashSet::default();
    let mut t: Option<Table> = None;
    for (p, process) in profile.processes.iter().enumerate() {
        let stacks = &process.stacks;
        let ids = super::ids::node_ids(stacks, &frame_ids);
        let mut depth = vec![0u32; stacks.nodes().len()];
        for n in stacks.nodes_in_order_met() {
            let node = stacks.nodes()[n as usize];
            let parent = (node.parent != NO_INDEX).then_some(node.parent as usize);
            depth[n as usize] = parent.map_or(0, |p| depth[p] + 1);
            let id_n = ids[n as usize];
            if known.nodes.contains(&id_n) || !written.insert(id_n) {
                continue;
            }
            let table = t.get_or_insert_with(|| {
                let path = dir.join("stack_nodes").join(free_name(target, "stack_nodes", id));
                let _ = std::fs::create_dir_all(path.parent().expect("a folder"));
                Table::new("stack_nodes", STACK_NODES, id, path, compression)
            });
            table
                .row()
                .u(p as u64)
                .u(id_n as u64)
                .int(parent.map(|p| ids[p] as u64))
                .u(frame_ids[node.frame as usize] as u64)
                .s(Some(profile.frames.get(node.frame)))
                .u(u64::from(depth[n as usize]));
        }
    }
    if let Some(t) = t {
        t.finish()?;
    }
    Ok(())
}

/// The `frames` row of frame `i` of `profile`, of id `id`.
pub(super) fn frame_row(t: &mut Table, profile: &Profile, i: u32, id: i64) {
    let source = profile.frame_source(i);
    t.row()
        .u(id as u64)
        .s(Some(profile.frames.get(i)))
        .b(Some(source.is_some()))
        .int(source.and_then(|s| s.file).map(u64::from))
        .int(source.and_then(|s| s.line).map(u64::from))
        .s(source.and_then(|s| s.system_name.as_deref()))
        .int(source.and_then(|s| s.address).map(|a| a.address))
        .int(source.and_then(|s| s.address).and_then(|a| a.image).map(u64::from))
        .s(source.and_then(|s| s.file).map(|f| profile.files.get(f)));
}

/// A frame of the shared tree.
struct FrameRow {
    name: Box<str>,
    line: Option<u32>,
    system_name: Option<Box<str>>,
    address: Option<u64>,
    path: Option<Box<str>>,
}

/// The shared tree of a fleet, read once for all its profiles.
#[derive(Default)]
pub struct SharedTree {
    frames: FxHashMap<i64, FrameRow>,
    nodes: FxHashMap<i64, (Option<i64>, i64)>,
}

impl SharedTree {
    /// Reads every tree file of the fleet at `root`.
    pub fn read(root: &Path) -> Result<SharedTree> {
        let mut tree = SharedTree::default();
        for path in files(root, "frames")? {
            let mut reader = open_table(&path, "frames", FRAME_ROWS, None)?;
            while let Some(t) = reader.next()? {
                for r in t.range() {
                    let row = FrameRow {
                        name: t.texts("name").get(r).unwrap_or_default().into(),
                        line: t.ints("line").get(r).and_then(|l| u32::try_from(l).ok()),
                        system_name: t.texts("system_name").get(r).map(Into::into),
                        address: t.ints("address").get(r),
                        path: t.texts("path").get(r).map(Into::into),
                    };
                    let id = t.int("frame", r) as i64;
                    if let Some(before) = tree.frames.get(&id) {
                        if before.name != row.name {
                            return Err(t.error(
                                "frame",
                                r,
                                super::ids::two_frames(id, &before.name, &row.name),
                            ));
                        }
                        continue;
                    }
                    tree.frames.insert(id, row);
                }
            }
        }
        for path in files(root, "stack_nodes")? {
            let mut reader = open_table(&path, "stack_nodes", NODE_ROWS, None)?;
            while let Some(t) = reader.next()? {
                for r in t.range() {
                    let frame = t.int("frame", r) as i64;
                    if !tree.frames.contains_key(&frame) {
                        return Err(t.error("frame", r, format!("no frame {frame} in the fleet's frames")));
                    }
                    tree.nodes
                        .insert(t.int("node", r) as i64, (t.ints("parent").get(r).map(|p| p as i64), frame));
                }
            }
        }
        Ok(tree)
    }

    /// The number of call paths.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Node `id`'s parent and frame ids.
    pub fn node(&self, id: i64) -> Option<(Option<i64>, i64)> {
        self.nodes.get(&id).copied()
    }

    /// Frame `id` in `profile`: interned (with its source) when first asked for.
    pub fn frame(
        &self,
        profile: &mut Profile,
        local: &mut FxHashMap<i64, FrameId>,
        id: i64,
    ) -> Option<FrameId> {
        if let Some(&f) = local.get(&id) {
            return Some(f);
        }
        let row = self.frames.get(&id)?;
        let f = profile.frames.intern(&row.name);
        let has_source =
            row.line.is_some() || row.system_name.is_some() || row.address.is_some() || row.path.is_some();
        if has_source && profile.frame_source(f).is_none() {
            let file = row.path.as_deref().map(|p| profile.files.intern(p));
            profile
                .frame_sources
                .resize(profile.frame_sources.len().max(f as usize + 1), FrameSource::default());
            profile.frame_sources[f as usize] = FrameSource {
                file,
                line: row.line,
                system_name: row.system_name.as_deref().map(str::to_owned),
                address: row.address.map(|address| FrameAddress { image: None, address }),
            };
        }
        local.insert(id, f);
        Some(f)
    }
}
