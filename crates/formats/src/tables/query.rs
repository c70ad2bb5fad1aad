//! The stack tables alone, as a query over many profiles writes them: `frames`, `stack_nodes`
//! and `samples` (with `sample_labels` and `events` when present), rows of any number of
//! profiles, columns the query dropped read as nulls. Frames and call paths are keyed by ids
//! derived from their content ([`super::ids`]), the same in every profile, so rows of many
//! profiles make one tree; samples of one path, thread and labels add up.
//!
//! ```sql
//! COPY (SELECT node, event, sum(value)::BIGINT AS value
//!       FROM 'fleet.tables/samples/**/*.parquet' GROUP BY ALL) TO 'top.tables/samples.parquet';
//! ```

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{
    power_of_ten, Event, FrameId, Label, LabelValue, Process, Profile, StackValue, Stacks, MAX_DECIMALS,
    NO_INDEX,
};

use super::columns::{open_table, ReadTable, TableReader};
use super::layout::Layout;
use super::schema::Kind::{Text, I64, U32};
use super::schema::{opt, req, Spec};
use super::tree::SharedTree;

const ANY_PID: Spec = opt("profile_id", Text).may_be_absent();
const FRAMES: &[Spec] = &[ANY_PID, req("frame", I64), req("name", Text)];
const NODES: &[Spec] = &[
    ANY_PID,
    opt("process", U32).may_be_absent(),
    req("node", I64),
    opt("parent", I64).may_be_absent(),
    req("frame", I64),
];
const SAMPLES: &[Spec] = &[
    ANY_PID,
    opt("process", U32).may_be_absent(),
    opt("sample", U32).may_be_absent(),
    opt("node", I64),
    opt("thread", U32).may_be_absent(),
    opt("event", Text).may_be_absent(),
    opt("value", I64),
];
const LABELS: &[Spec] = &[
    ANY_PID,
    opt("process", U32).may_be_absent(),
    req("sample", U32),
    req("key", Text),
    opt("value", Text),
    opt("number", I64).may_be_absent(),
    opt("unit", Text).may_be_absent(),
];
const EVENTS: &[Spec] = &[ANY_PID, req("name", Text), opt("decimals", U32).may_be_absent()];

/// The event of samples whose rows name none.
const UNNAMED_EVENT: &str = "samples";

/// Whether row `r`'s profile is the one asked for.
fn selected(t: &super::columns::ReadTable, r: usize, wanted: Option<&str>) -> bool {
    wanted.is_none_or(|w| t.texts("profile_id").get(r) == Some(w))
}

fn open(layout: &Layout, name: &'static str, specs: &'static [Spec]) -> Result<Option<TableReader>> {
    let path = layout.path(name);
    if !path.exists() {
        return Ok(None);
    }
    open_table(&path, name, specs, None).map(Some)
}

fn required(layout: &Layout, name: &'static str, specs: &'static [Spec]) -> Result<TableReader> {
    open_table(&layout.path(name), name, specs, None)
}

/// The model's sample of each (node, thread, label set) of a process.
pub(super) type SampleKeys = FxHashMap<(u32, Option<u32>, u32), usize>;

/// What the tables of several members build up.
#[derive(Default)]
struct Tree {
    profile: Profile,
    /// Frame ids -> the model's frames.
    frames: FxHashMap<u64, FrameId>,
    /// Per process: node id -> (parent id, frame), then node id -> the model's node.
    nodes: Vec<FxHashMap<u64, (Option<u64>, FrameId)>>,
    made: Vec<FxHashMap<u64, u32>>,
    /// Per process: (node, thread, label set) -> its sample.
    samples: Vec<SampleKeys>,
    /// The tables' process numbers -> the model's processes, in order of first appearance.
    process_ids: FxHashMap<u64, usize>,
    /// A fleet's frame ids -> the model's frames, as met.
    shared_frames: FxHashMap<i64, FrameId>,
    /// Events by name, and their decimal places.
    events: HashMap<String, usize>,
    decimals: Vec<u8>,
}

impl Tree {
    /// The model's process of the tables' process number `id`, made when first met (numbers
    /// are not trusted as sizes: a row may say process 4,000,000,000).
    fn process(&mut self, id: u64) -> usize {
        let next = self.process_ids.len();
        let p = *self.process_ids.entry(id).or_insert(next);
        if p == self.profile.processes.len() {
            self.profile.processes.push(Process { stacks: Stacks::default(), ..Process::default() });
            self.nodes.push(FxHashMap::default());
            self.made.push(FxHashMap::default());
            self.samples.push(FxHashMap::default());
        }
        p
    }

    fn event(&mut self, name: &str, decimals: u8) -> usize {
        if let Some(&e) = self.events.get(name) {
            self.decimals[e] = self.decimals[e].max(decimals);
            return e;
        }
        self.profile.events.push(Event { name: name.to_string(), description: None });
        self.decimals.push(decimals);
        self.events.insert(name.to_string(), self.events.len());
        self.events.len() - 1
    }
}

/// The call path `leaf` of row `r` of `t` (the `node` column; `None` for a stack without
/// frames), walked from the leaf up to the first path the model has (`made`), the unmade ones
/// into `chain`, leaf first; `node` gives a path's parent and frame. That first made path (`None`:
/// none, the chain starts at a root) is returned. A path no table holds, or parents that lead
/// back to a path (longer than the `bound` paths there are), is an error at the row.
pub(super) fn unmade_path(
    t: &ReadTable,
    r: usize,
    made: &FxHashMap<u64, u32>,
    bound: usize,
    chain: &mut Vec<(u64, FrameId)>,
    mut node: impl FnMut(u64) -> Option<(Option<u64>, FrameId)>,
) -> Result<Option<u64>> {
    chain.clear();
    let mut at = t.ints("node").get(r);
    while let Some(n) = at {
        if made.contains_key(&n) {
            break;
        }
        let (parent, frame) = node(n)
            .ok_or_else(|| t.error("node", r, format!("no node {} in the stack_nodes table", n as i64)))?;
        if chain.len() > bound {
            return Err(t.error("node", r, "the stack's nodes form a cycle"));
        }
        chain.push((n, frame));
        at = parent;
    }
    Ok(at)
}

/// Makes the paths of `chain` ([`unmade_path`]) below the made path `at`, root first, noting
/// each in `made`; the model node of the leaf.
pub(super) fn make_path(
    at: Option<u64>,
    chain: &[(u64, FrameId)],
    made: &mut FxHashMap<u64, u32>,
    stacks: &mut Stacks,
) -> u32 {
    let mut node = at.map_or(NO_INDEX, |n| made[&n]);
    for &(n, frame) in chain.iter().rev() {
        node = stacks.node(node, frame);
        made.insert(n, node);
    }
    node
}

/// Reads the stack tables of every member of `members`, rows of the profile `wanted` (all when
/// `None`); each member's partition labels go on its samples.
pub fn read_stack_tables(
    members: &[Layout],
    wanted: Option<&str>,
    shared: Option<&SharedTree>,
) -> Result<Profile> {
    let mut tree = Tree::default();
    let mut found = false;
    for member in members {
        found |= read_member(&mut tree, member, wanted, shared)?;
    }
    if !found && wanted.is_some() {
        return Err(Error::usage(format!(
            "no rows of profile {:?} in the samples table",
            wanted.unwrap_or_default()
        ))
        .with_hint("leave --profile out to read every profile"));
    }
    if tree.profile.processes.is_empty() {
        tree.process(0);
    }
    for process in &mut tree.profile.processes {
        process.stacks.widen(tree.profile.events.len());
    }
    Ok(tree.profile)
}

/// Adds a member's rows, its call paths from `shared` (a fleet's tree) when given, else from
/// its own tables; whether it had rows of the profile asked for.
fn read_member(
    tree: &mut Tree,
    member: &Layout,
    wanted: Option<&str>,
    shared: Option<&SharedTree>,
) -> Result<bool> {
    // Events named first keep their order; their decimal places scale the values.
    if let Some(mut events) = open(member, "events", EVENTS)? {
        let t = events.all()?;
        for r in t.range().filter(|&r| selected(&t, r, wanted)) {
            let decimals = t.ints("decimals").get(r).unwrap_or(0);
            if decimals > u64::from(MAX_DECIMALS) {
                return Err(t.error(
                    "decimals",
                    r,
                    format!("{decimals} decimal places, past {MAX_DECIMALS}"),
                ));
            }
            tree.event(t.texts("name").get(r).unwrap_or_default(), decimals as u8);
        }
    }
    let mut frames = match shared {
        None => Some(required(member, "frames", FRAMES)?),
        Some(_) => None,
    };
    while let Some(t) = frames.as_mut().map(TableReader::next).transpose()?.flatten() {
        for r in t.range() {
            let name = t.texts("name").get(r).unwrap_or_default();
            let f = tree.profile.frames.intern(name);
            let id = t.int("frame", r);
            if let Some(&before) = tree.frames.get(&id) {
                if before != f {
                    let first = tree.profile.frames.get(before);
                    return Err(t.error("frame", r, super::ids::two_frames(id as i64, first, name)));
                }
            }
            tree.frames.insert(id, f);
        }
    }
    let mut nodes = match shared {
        None => Some(required(member, "stack_nodes", NODES)?),
        Some(_) => None,
    };
    while let Some(t) = nodes.as_mut().map(TableReader::next).transpose()?.flatten() {
        for r in t.range() {
            let p = tree.process(t.ints("process").get(r).unwrap_or(0));
            let id = t.int("frame", r);
            let &frame = tree
                .frames
                .get(&id)
                .ok_or_else(|| t.error("frame", r, format!("no frame {} in the frames table", id as i64)))?;
            tree.nodes[p].insert(t.int("node", r), (t.ints("parent").get(r), frame));
        }
    }
    // Labels by (profile, process, sample).
    let mut labels: HashMap<(String, u64, u64), Vec<Label>> = HashMap::new();
    if let Some(mut table) = open(member, "sample_labels", LABELS)? {
        while let Some(t) = table.next()? {
            for r in t.range().filter(|&r| selected(&t, r, wanted)) {
                let key = t.texts("key").get(r).unwrap_or_default();
                let value = match t.ints("number").get(r) {
                    Some(n) => LabelValue::Number(n as i64, t.texts("unit").get(r).map(Into::into)),
                    None => LabelValue::Text(t.texts("value").get(r).unwrap_or_default().into()),
                };
                let at = (
                    t.texts("profile_id").get(r).unwrap_or_default().to_string(),
                    t.ints("process").get(r).unwrap_or(0),
                    t.int("sample", r),
                );
                labels.entry(at).or_default().push(Label { key: key.into(), value });
            }
        }
    }
    let partition = member.labels();
    let node_rows: usize = shared.map_or_else(|| tree.nodes.iter().map(|n| n.len()).sum(), SharedTree::len);
    let mut chain: Vec<(u64, FrameId)> = Vec::new();
    let mut found = false;
    let mut samples = required(member, "samples", SAMPLES)?;
    while let Some(t) = samples.next()? {
        for r in t.range().filter(|&r| selected(&t, r, wanted)) {
            found = true;
            let process = t.ints("process").get(r).unwrap_or(0);
            let p = tree.process(process);
            let (nodes, profile, frames) = (&tree.nodes, &mut tree.profile, &mut tree.shared_frames);
            let at = unmade_path(&t, r, &tree.made[p], node_rows, &mut chain, |n| match shared {
                None => nodes[p].get(&n).copied(),
                Some(s) => s.node(n as i64).and_then(|(parent, frame)| {
                    Some((parent.map(|p| p as u64), s.frame(profile, frames, frame)?))
                }),
            })?;
            let node = make_path(at, &chain, &mut tree.made[p], &mut tree.profile.processes[p].stacks);
            let thread = t.ints("thread").get(r).and_then(|v| u32::try_from(v).ok());
            let mut set: Vec<Label> = match t.ints("sample").get(r) {
                Some(s) => {
                    let at = (t.texts("profile_id").get(r).unwrap_or_default().to_string(), process, s);
                    labels.get(&at).cloned().unwrap_or_default()
                }
                None => Vec::new(),
            };
            set.retain(|l| !partition.iter().any(|q| q.key == l.key));
            set.extend(partition.iter().cloned());
            let event = tree.event(t.texts("event").get(r).unwrap_or(UNNAMED_EVENT), 0);
            let decimals = tree.decimals[event];
            let stacks = &mut tree.profile.processes[p].stacks;
            let label_set = stacks.label_set(set);
            let sample = *tree.samples[p].entry((node, thread, label_set)).or_insert_with(|| {
                stacks.push_labelled_sample(node, thread, label_set, &[]);
                stacks.len() - 1
            });
            let Some(v) = t.ints("value").get(r) else { continue };
            stacks.widen(event + 1);
            if decimals > stacks.decimals_of(event) && !stacks.set_decimals(event, decimals) {
                return Err(t.error("value", r, "the values of the event no longer add up"));
            }
            let value = StackValue::from(v as i64) * power_of_ten(stacks.decimals_of(event) - decimals);
            let sum = &mut stacks.values_mut(sample)[event];
            *sum = sum
                .checked_add(value)
                .ok_or_else(|| t.error("value", r, "the values of one stack add up past 2^127"))?;
        }
    }
    Ok(found)
}
