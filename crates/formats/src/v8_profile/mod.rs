//! V8's sampled CPU profile, the part two formats share: a `.cpuprofile` file is one, and a
//! Chrome trace carries one in its `Profile` and `ProfileChunk` events
//! (`v8/include/v8-profiler.h`, the DevTools protocol's `Profiler.Profile`).
//!
//! ```text
//! {"nodes": [{"id": 1, "callFrame": {"functionName": "(root)", "scriptId": "0", "url": "",
//!                                     "lineNumber": -1, "columnNumber": -1},
//!             "hitCount": 0, "children": [2, 3]},
//!            {"id": 2, "callFrame": {"functionName": "fib", "url": "file:///app.js",
//!                                     "lineNumber": 17, "columnNumber": 12},
//!             "hitCount": 5, "parent": 1, "positionTicks": [{"line": 19, "ticks": 5}]}, ...],
//!  "startTime": 17060377393, "endTime": 17060686867,
//!  "samples": [2, 2, 3, ...], "timeDeltas": [2406, 1160, 1086, ...]}
//! ```
//!
//! Nodes form the call tree: a node is a call path, its `callFrame` the function it ends in,
//! and its caller is its `parent` (Chrome's traces), or the node whose `children` list it
//! (Node's and DevTools' files); V8's root node is called `(root)`, and `(program)`,
//! `(idle)` and `(garbage collector)` stand for time outside JavaScript. `lineNumber` and
//! `columnNumber` are 0-based, -1 when unknown; an empty `functionName` is an anonymous
//! function, which V8's tools show as `(anonymous)`. `samples` names the leaf node of each
//! sample, in time order; `timeDeltas` gives each sample's time in microseconds after the one
//! before it (the first after `startTime`). A file without samples counts them per node in
//! `hitCount`.
//!
//! Here: the tree's nodes gathered (`NodeTree`) and made model stack nodes, the frames of
//! call frames (`frame_of`), the time each sample weighs (`sample_times`) and the columns
//! its count and time go to (`Columns`); for the writers, which events become counts and
//! times (`Weighing`) and the model's stacks as such a tree with its samples and deltas
//! (`Written`). Neither format's module imports the other: this is what they share.

use std::collections::HashMap;

use serde::Deserialize;

use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{power_of_ten, rounded, EventId, FrameId, FrameSource, Profile, Stacks, NO_INDEX};

/// The name V8's tools show for a function whose `functionName` is empty.
pub(crate) const ANONYMOUS: &str = "(anonymous)";

/// The name of V8's root node, the caller of every call path.
pub(crate) const ROOT: &str = "(root)";

/// Where a call frame's function is, as V8 states it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallFrame {
    #[serde(default)]
    pub function_name: String,
    #[serde(default)]
    pub url: Option<String>,
    /// 0-based, -1 when unknown.
    #[serde(default)]
    pub line_number: Option<i64>,
}

/// One node of the call tree as the file states it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Node {
    pub id: u64,
    #[serde(default)]
    pub call_frame: CallFrame,
    #[serde(default)]
    pub hit_count: Option<u64>,
    #[serde(default)]
    pub children: Option<Vec<u64>>,
    #[serde(default)]
    pub parent: Option<u64>,
}

/// The model frame of a call frame: its function's name (`(anonymous)` for an empty one),
/// with the script's URL and the 1-based line of the function for a new frame. Frames are
/// named functions, as everywhere in the model: two functions of one name are one frame,
/// placed where the first of them is.
pub(crate) fn frame_of(profile: &mut Profile, call: &CallFrame) -> FrameId {
    let name = if call.function_name.is_empty() { ANONYMOUS } else { &call.function_name };
    let frame = profile.frames.intern(name);
    if frame as usize == profile.frame_sources.len() {
        let file = call.url.as_deref().filter(|u| !u.is_empty()).map(|u| profile.files.intern(u));
        let line = call.line_number.and_then(|l| u32::try_from(l).ok()).and_then(|l| l.checked_add(1));
        profile.frame_sources.push(FrameSource { file, line, ..FrameSource::default() });
    }
    frame
}

/// The nodes of one profile, in the order the file gives them (a trace gives them chunk by
/// chunk), with where each is stated for errors.
#[derive(Default)]
pub(crate) struct NodeTree {
    nodes: Vec<Node>,
    /// Where each node is (`nodes[3]`, `traceEvents[12].args.data.cpuProfile.nodes[0]`).
    places: Vec<String>,
    index: HashMap<u64, usize>,
}

impl NodeTree {
    /// Adds a node stated at `place`; a second node of one id is an error.
    pub(crate) fn add(&mut self, node: Node, place: String) -> Result<()> {
        if let Some(&first) = self.index.get(&node.id) {
            return Err(Error::input(format!("node id {} again: {} has it", node.id, self.places[first]))
                .at_path(format!("{place}.id")));
        }
        self.index.insert(node.id, self.nodes.len());
        self.nodes.push(node);
        self.places.push(place);
        Ok(())
    }

    /// The node of id `id`.
    pub(crate) fn find(&self, id: u64) -> Option<usize> {
        self.index.get(&id).copied()
    }

    /// The nodes, in order.
    pub(crate) fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The model stack node of every node, made in `stacks` with frames of `profile`: each
    /// node's caller is its `parent`, or the node whose `children` list it. A node with two
    /// callers and callers that go round in a cycle are errors, placed at the node. A caller
    /// or callee of an id no node has is left out, as speedscope leaves it (a trace cut after
    /// its profile started names callers it does not hold): the node is called from the root;
    /// `findings` says how many in one line.
    pub(crate) fn model_nodes(
        &self,
        profile: &mut Profile,
        p: usize,
        findings: &mut Findings,
    ) -> Result<Vec<u32>> {
        let mut unknown = 0usize;
        let n = self.nodes.len();
        let mut caller: Vec<Option<usize>> = vec![None; n];
        let mut set = |child: usize, parent: usize, place: &dyn Fn() -> String| -> Result<()> {
            match caller[child] {
                Some(other) if other != parent => Err(Error::input(format!(
                    "node {} has two callers: nodes {} and {}",
                    self.nodes[child].id, self.nodes[other].id, self.nodes[parent].id
                ))
                .at_path(place())),
                _ => {
                    caller[child] = Some(parent);
                    Ok(())
                }
            }
        };
        for (i, node) in self.nodes.iter().enumerate() {
            if let Some(parent) = node.parent {
                let place = || format!("{}.parent", self.places[i]);
                match self.find(parent) {
                    Some(j) => set(i, j, &place)?,
                    None => unknown += 1,
                }
            }
            for (k, &child) in node.children.iter().flatten().enumerate() {
                let place = || format!("{}.children[{k}]", self.places[i]);
                match self.find(child) {
                    Some(j) => set(j, i, &place)?,
                    None => unknown += 1,
                }
            }
        }
        let mut frames: Vec<FrameId> = Vec::with_capacity(n);
        for node in &self.nodes {
            frames.push(frame_of(profile, &node.call_frame));
        }
        let stacks = &mut profile.processes[p].stacks;
        let mut made = vec![NO_INDEX; n];
        let mut chain: Vec<usize> = Vec::new();
        for start in 0..n {
            chain.clear();
            let mut at = Some(start);
            while let Some(i) = at {
                if made[i] != NO_INDEX {
                    break;
                }
                if chain.len() >= n {
                    return Err(Error::input(format!(
                        "the callers of node {} go round in a cycle",
                        self.nodes[start].id
                    ))
                    .at_path(self.places[start].clone()));
                }
                chain.push(i);
                at = caller[i];
            }
            let mut node = at.map_or(NO_INDEX, |i| made[i]);
            for &i in chain.iter().rev() {
                node = stacks.node(node, frames[i]);
                made[i] = node;
            }
        }
        if unknown > 0 {
            findings.warn(
                None,
                format!("{unknown} caller or callee id(s) no node has left out: those nodes are called from the root"),
            );
        }
        Ok(made)
    }
}

/// Says in one line how many samples (`None` among `leaves`) are at ids no node has.
pub(crate) fn warn_unknown_samples(leaves: &[Option<u32>], findings: &mut Findings) {
    let unknown = leaves.iter().filter(|l| l.is_none()).count();
    if unknown > 0 {
        findings.warn(None, format!("{unknown} sample(s) at node ids no node has left out"));
    }
}

/// The time each sample weighs, in microseconds, from its `timeDeltas`: the time from it to
/// the next sample, as Chrome DevTools and the Firefox Profiler (whose samples last until the
/// next) and speedscope (which weighs a sample by the time to the next) count it; the last
/// sample lasts until `end` (a `.cpuprofile`'s `endTime`), or no time where there is none.
/// Samples whose times go back (Chrome writes some) are put in time order first, as DevTools
/// does; `order` is the samples in that order.
pub(crate) struct SampleTimes {
    /// The samples' indices, in time order.
    pub order: Vec<usize>,
    /// Each sample's weight in microseconds, in [`SampleTimes::order`].
    pub weights: Vec<i128>,
    /// How many samples came before a sample of an earlier time.
    pub reordered: usize,
}

/// The [`SampleTimes`] of samples at `start + deltas[0]`, `+ deltas[1]`, ...; `Err` with the
/// index of the first delta whose time leaves 64 bits.
pub(crate) fn sample_times(
    start: i64,
    deltas: &[i64],
    end: Option<i64>,
) -> std::result::Result<SampleTimes, usize> {
    let mut times: Vec<i64> = Vec::with_capacity(deltas.len());
    let mut t = start;
    for (i, &d) in deltas.iter().enumerate() {
        t = t.checked_add(d).ok_or(i)?;
        times.push(t);
    }
    let mut order: Vec<usize> = (0..times.len()).collect();
    let reordered = times.windows(2).filter(|w| w[1] < w[0]).count();
    if reordered > 0 {
        order.sort_by_key(|&i| times[i]);
    }
    let weights = order
        .iter()
        .enumerate()
        .map(|(k, &i)| match order.get(k + 1) {
            Some(&next) => i128::from(times[next]) - i128::from(times[i]),
            None => end.map_or(0, |e| (i128::from(e) - i128::from(times[i])).max(0)),
        })
        .collect();
    Ok(SampleTimes { order, weights, reordered })
}

/// The model's stacks as a V8 call tree with samples in time order, for the writers: every
/// sample's path is a node (paths shared), under one root node `(root)` (the stacks' own
/// when all of them start at a frame of that name, as those read from V8 do), and each
/// sample lasts the time it is given until the next.
pub(crate) struct Written<'p> {
    profile: &'p Profile,
    /// The call paths written, as model stack nodes.
    tree: Stacks,
    /// Each sample's node in `tree`.
    pub samples: Vec<u32>,
    /// Each sample's time until the next, in microseconds.
    pub lasts: Vec<u64>,
    root_frame: Option<FrameId>,
}

impl<'p> Written<'p> {
    /// Nothing written yet. The stacks' own root is the tree's when every call path of every
    /// process starts at a frame called `(root)`.
    pub(crate) fn new(profile: &'p Profile) -> Self {
        let root = profile.frames.lookup(ROOT);
        let mut roots =
            profile.processes.iter().flat_map(|p| p.stacks.nodes()).filter(|n| n.parent == NO_INDEX);
        let root_frame = root.filter(|&r| roots.all(|n| n.frame == r));
        Written { profile, tree: Stacks::default(), samples: Vec::new(), lasts: Vec::new(), root_frame }
    }

    /// Adds `count` samples of the path `frames` (root first, not empty), lasting `time`
    /// microseconds together: each lasts `time / count`, the last of them the rest.
    pub(crate) fn push(&mut self, frames: &[FrameId], count: u64, time: u64) {
        let node = self.tree.path_node(frames);
        let each = time / count.max(1);
        for k in 0..count {
            self.samples.push(node);
            self.lasts.push(if k + 1 == count { time - each * (count - 1) } else { each });
        }
    }

    /// The V8 node id of a tree node: the added root is 1 and the tree's nodes follow; with
    /// the stacks' own root, the tree's nodes are numbered from 1.
    pub(crate) fn id(&self, node: u32) -> u64 {
        u64::from(node) + if self.root_frame.is_some() { 1 } else { 2 }
    }

    /// Appends the nodes as a JSON array's elements. `parents` writes each node's `parent`
    /// (as Chrome's traces do), else its `children` (as Node's files do); `hitCount` is the
    /// samples at the node.
    pub(crate) fn push_nodes(&self, buf: &mut Vec<u8>, parents: bool) {
        let nodes = self.tree.nodes();
        let mut hits = vec![0u64; nodes.len()];
        for &s in &self.samples {
            hits[s as usize] += 1;
        }
        let children = self.tree.children();
        let added_root = self.root_frame.is_none();
        if added_root {
            buf.extend_from_slice(b"{\"id\":1,\"callFrame\":");
            push_call_frame(buf, ROOT, None, None);
            buf.extend_from_slice(b",\"hitCount\":0");
            if !parents {
                buf.extend_from_slice(b",\"children\":[");
                self.push_ids(buf, children.roots());
                buf.push(b']');
            }
            buf.push(b'}');
        }
        for (n, node) in nodes.iter().enumerate() {
            if added_root || n > 0 {
                buf.push(b',');
            }
            let f = node.frame;
            let source = self.profile.frame_source(f);
            let file = source.and_then(|s| s.file).map(|file| self.profile.file_name(file));
            let line = source.and_then(|s| s.line);
            buf.extend_from_slice(b"{\"id\":");
            buf.extend_from_slice(itoa::Buffer::new().format(self.id(n as u32)).as_bytes());
            buf.extend_from_slice(b",\"callFrame\":");
            push_call_frame(buf, self.profile.frames.get(f), file, line);
            buf.extend_from_slice(b",\"hitCount\":");
            buf.extend_from_slice(itoa::Buffer::new().format(hits[n]).as_bytes());
            let parent = match node.parent {
                NO_INDEX if added_root => Some(1),
                NO_INDEX => None,
                p => Some(self.id(p)),
            };
            if parents {
                if let Some(p) = parent {
                    buf.extend_from_slice(b",\"parent\":");
                    buf.extend_from_slice(itoa::Buffer::new().format(p).as_bytes());
                }
            } else if !children.of(n as u32).is_empty() {
                buf.extend_from_slice(b",\"children\":[");
                self.push_ids(buf, children.of(n as u32));
                buf.push(b']');
            }
            buf.push(b'}');
        }
    }

    fn push_ids(&self, buf: &mut Vec<u8>, nodes: &[u32]) {
        let mut int = itoa::Buffer::new();
        for (k, &n) in nodes.iter().enumerate() {
            if k > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(int.format(self.id(n)).as_bytes());
        }
    }

    /// Appends the samples' node ids, comma-separated.
    pub(crate) fn push_samples(&self, buf: &mut Vec<u8>) {
        self.push_ids(buf, &self.samples);
    }

    /// Appends the time deltas, comma-separated: the first sample one interval
    /// ([`SAMPLE_INTERVAL_US`]) after the start, as V8 takes its first, each other the time
    /// the one before it lasts. (The Firefox Profiler leaves out a sample less than half a
    /// millisecond after the one before, or after the start for the first.)
    pub(crate) fn push_deltas(&self, buf: &mut Vec<u8>) {
        let mut int = itoa::Buffer::new();
        for k in 0..self.samples.len() {
            if k > 0 {
                buf.push(b',');
            }
            let delta = if k == 0 { SAMPLE_INTERVAL_US } else { self.lasts[k - 1] };
            buf.extend_from_slice(int.format(delta).as_bytes());
        }
    }

    /// The end of the last sample, for a profile that starts at 0: the first sample's
    /// delta, and every sample's time.
    pub(crate) fn end_time(&self) -> u64 {
        self.lasts.iter().fold(SAMPLE_INTERVAL_US, |a, &l| a.saturating_add(l))
    }
}

/// Units of time an event may be counted in, with the microseconds in one.
const TIME_UNITS: &[(&str, Scale)] = &[
    ("nanoseconds", Scale::Divide(1000)),
    ("microseconds", Scale::Multiply(1)),
    ("milliseconds", Scale::Multiply(1000)),
    ("seconds", Scale::Multiply(1_000_000)),
];

/// How an event's values become microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scale {
    Multiply(i128),
    Divide(i128),
}

/// The scale of an event counted in `unit` ([`TIME_UNITS`]); other units count one
/// microsecond a unit.
fn scale_of(unit: Option<&str>) -> (Scale, bool) {
    match TIME_UNITS.iter().find(|(u, _)| Some(*u) == unit) {
        Some(&(_, scale)) => (scale, true),
        None => (Scale::Multiply(1), false),
    }
}

/// Most samples a writer makes of sample counts (a count of 5 is 5 samples): past it, the
/// output would be gigabytes.
pub(crate) const MAX_WRITTEN_SAMPLES: u64 = 50_000_000;

/// The time a sample lasts where the profile states none: 1 ms, the interval of
/// `node --cpu-prof` and of Chrome's profiler by default.
pub(crate) const SAMPLE_INTERVAL_US: u64 = 1000;

/// The model's events a V8 profile written by cfghub carries, under its `cfghub` key, which
/// V8's tools ignore: reading the file back, cfghub names its columns and units as they were
/// (`{"count": "samples", "time": "cpu", "unit": "nanoseconds"}`); a column named `null` was
/// not in the model (a time made of 1 ms per sample, a count of 1 per sample).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub(crate) struct WrittenEvents {
    #[serde(default)]
    pub count: Option<String>,
    #[serde(default)]
    pub time: Option<String>,
    #[serde(default)]
    pub unit: Option<String>,
}

/// The value columns a reader makes of V8 samples: a count and a time, named as a file
/// written by cfghub says ([`WrittenEvents`]), else `samples` and `time` (microseconds).
pub(crate) struct Columns {
    /// The count column's name.
    pub count: Option<String>,
    /// The time column's name and unit, and how its microseconds become the unit.
    time: Option<(String, Option<String>, Scale)>,
}

impl Columns {
    /// The columns of a V8 file: as cfghub wrote them, else `samples` and, when the file has
    /// times, `time`.
    pub(crate) fn of(written: Option<&WrittenEvents>, timed: bool) -> Columns {
        match written {
            Some(w) => Columns {
                count: w.count.clone(),
                time: w.time.clone().map(|t| (t, w.unit.clone(), scale_of(w.unit.as_deref()).0)),
            },
            None => Columns {
                count: Some("samples".into()),
                time: timed.then(|| ("time".into(), Some("microseconds".into()), Scale::Multiply(1))),
            },
        }
    }

    /// Adds the columns to the profile's events (with the time's unit), in the order
    /// count, time; returns their indices.
    pub(crate) fn add_to(&self, profile: &mut Profile) -> (Option<usize>, Option<usize>) {
        let mut add = |name: &str| match profile.event_index(name) {
            Some(e) => e,
            None => {
                profile.events.push(cfghub_model::ir::Event::new(name));
                profile.events.len() - 1
            }
        };
        let count = self.count.as_deref().map(&mut add);
        let time = self.time.as_ref().map(|(name, _, _)| add(name));
        if let Some((name, Some(unit), _)) = &self.time {
            let header = (cfghub_model::ir::EVENT_UNIT_KEY.to_string(), format!("{name} {unit}"));
            if !profile.meta.headers.contains(&header) {
                profile.meta.headers.push(header);
            }
        }
        (count, time)
    }

    /// The decimal places of the time column: a millisecond's or second's fraction of a
    /// microsecond.
    pub(crate) fn time_decimals(&self) -> u8 {
        match self.time.as_ref().map(|t| t.2) {
            Some(Scale::Multiply(1000)) => 3,
            Some(Scale::Multiply(1_000_000)) => 6,
            _ => 0,
        }
    }

    /// A sample's time column value of `micros` microseconds (in units of the column's
    /// decimal places).
    pub(crate) fn time_value(&self, micros: i128) -> i128 {
        match self.time.as_ref().map(|t| t.2) {
            Some(Scale::Divide(d)) => micros.saturating_mul(d),
            _ => micros,
        }
    }
}

/// What the writers make of the model's samples: the events that become sample counts and
/// times, chosen once, and what of them was written.
pub(crate) struct Weighing {
    /// The event whose values are sample counts (a sample of 3 is written 3 times).
    count: Option<EventId>,
    /// The event whose values are the samples' times, with its scale to microseconds and
    /// whether its unit is one of time.
    time: Option<(EventId, Scale, bool)>,
    format: &'static str,
    rounded: usize,
    dropped: usize,
    empty: usize,
    spaced: bool,
    kept_count: i128,
    kept_micros: i128,
    /// The events asked for: those the warning counts as left out when not written.
    chosen: Vec<String>,
}

impl Weighing {
    /// Chooses among `events` (those to write: every event, or the one `--event` names) the
    /// count, the event called `samples`, and the time: the first event counted in a unit of
    /// time, else the first other than the count, its units written as microseconds.
    pub(crate) fn new(profile: &Profile, events: &[EventId], format: &'static str) -> Self {
        let unit = |e: EventId| cfghub_model::ir::event_unit(&profile.meta, &profile.events[e].name);
        let count = events.iter().copied().find(|&e| profile.events[e].name == "samples");
        let time = events
            .iter()
            .copied()
            .filter(|&e| Some(e) != count)
            .find(|&e| scale_of(unit(e)).1)
            .or_else(|| events.iter().copied().find(|&e| Some(e) != count))
            .map(|e| {
                let (scale, of_time) = scale_of(unit(e));
                (e, scale, of_time)
            });
        Weighing {
            count,
            time,
            format,
            rounded: 0,
            dropped: 0,
            empty: 0,
            spaced: false,
            kept_count: 0,
            kept_micros: 0,
            chosen: events.iter().map(|&e| profile.events[e].name.clone()).collect(),
        }
    }

    /// The `cfghub` key's value ([`WrittenEvents`]), as JSON.
    pub(crate) fn push_written_events(&self, profile: &Profile, buf: &mut Vec<u8>) {
        let name = |e: EventId| profile.events[e].name.as_str();
        let push = |buf: &mut Vec<u8>, v: Option<&str>| match v {
            Some(text) => json_string(buf, text),
            None => buf.extend_from_slice(b"null"),
        };
        buf.extend_from_slice(b"{\"count\":");
        push(buf, self.count.map(name));
        buf.extend_from_slice(b",\"time\":");
        push(buf, self.time.map(|t| name(t.0)));
        buf.extend_from_slice(b",\"unit\":");
        push(buf, self.time.and_then(|t| cfghub_model::ir::event_unit(&profile.meta, name(t.0))));
        buf.push(b'}');
    }

    /// The samples of `stacks` (all of them, or those of one thread) added to `written`, in
    /// order: a sample of count `c` as `c` samples lasting its time together. Refused when
    /// the counts add up past [`MAX_WRITTEN_SAMPLES`].
    pub(crate) fn add(
        &mut self,
        stacks: &Stacks,
        thread: Option<Option<u32>>,
        written: &mut Written<'_>,
    ) -> Result<()> {
        let mut path: Vec<FrameId> = Vec::new();
        for s in stacks.samples() {
            if thread.is_some_and(|t| t != s.thread) {
                continue;
            }
            let count = match self.count {
                Some(e) => rounded(s.values.get(e).copied().unwrap_or(0), stacks.decimals_of(e)),
                None => 1,
            };
            let time = match self.time {
                Some((e, scale, _)) => {
                    // Microseconds are `numerator / denominator`: the value, its decimal
                    // places and its unit's scale.
                    let v = s.values.get(e).copied().unwrap_or(0);
                    let places = power_of_ten(stacks.decimals_of(e));
                    let (numerator, denominator) = match scale {
                        Scale::Multiply(m) => (v.checked_mul(m), places),
                        Scale::Divide(d) => (Some(v), places * d),
                    };
                    numerator.map(|n| {
                        self.rounded += usize::from(n % denominator != 0);
                        let (q, r) = (n / denominator, n % denominator);
                        if r.abs() * 2 >= denominator {
                            q + n.signum()
                        } else {
                            q
                        }
                    })
                }
                None => {
                    self.spaced = true;
                    count.checked_mul(i128::from(SAMPLE_INTERVAL_US))
                }
            };
            let (Ok(count), Some(Ok(micros))) = (u64::try_from(count), time.map(u64::try_from)) else {
                self.dropped += 1;
                continue;
            };
            if count == 0 {
                self.dropped += usize::from(micros > 0);
                continue;
            }
            if s.node == NO_INDEX {
                self.empty += 1;
                continue;
            }
            if (written.samples.len() as u64).saturating_add(count) > MAX_WRITTEN_SAMPLES {
                return Err(Error::unsupported(format!(
                    "{}: the sample counts add up past {MAX_WRITTEN_SAMPLES} samples, one written each",
                    self.format
                ))
                .with_hint(
                    "write another event with --event, or a format of weighed stacks (pprof, speedscope)",
                ));
            }
            stacks.path(s.node, &mut path);
            written.push(&path, count, micros);
            self.kept_count += i128::from(count);
            self.kept_micros += i128::from(micros);
        }
        Ok(())
    }

    /// The warning of how much of each event is left out and why (one line), and the notes
    /// of what the times written are where the model has none of time.
    pub(crate) fn warn(&self, profile: &Profile, findings: &mut Findings) {
        let format = self.format;
        let name = |e: EventId| profile.events[e].name.as_str();
        // What the format cannot hold by its nature (a time for every sample) is a note.
        if self.spaced {
            findings.detail(
                None,
                format!("{format}: no event of time: each sample written lasts {SAMPLE_INTERVAL_US} µs"),
            );
        }
        if let Some((e, _, false)) = self.time {
            findings.detail(
                None,
                format!("{format}: {} written as microseconds (V8 weighs samples by time)", name(e)),
            );
        }
        let mut kept: Vec<(&str, f64)> = Vec::new();
        if let Some(e) = self.count {
            kept.push((name(e), self.kept_count as f64));
        }
        if let Some((e, scale, _)) = self.time {
            let micros = self.kept_micros as f64;
            kept.push((
                name(e),
                match scale {
                    Scale::Multiply(m) => micros / m as f64,
                    Scale::Divide(d) => micros * d as f64,
                },
            ));
        }
        let mut why = String::from("a V8 profile's samples have a count and a time");
        for (n, what) in [
            (self.rounded, "time(s) rounded to whole microseconds"),
            (self.dropped, "sample(s) of no count, or of a count or time below 0 or past 2^64"),
            (self.empty, "sample(s) without frames"),
        ] {
            if n > 0 {
                why.push_str(&format!("; {n} {what}"));
            }
        }
        let source: Vec<(String, f64)> = cfghub_analysis::totals::event_totals(profile)
            .into_iter()
            .filter(|(event, _)| self.chosen.contains(event))
            .collect();
        let kept: Vec<(String, f64)> = kept.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
        cfghub_analysis::totals::warn_left_out(findings, format, &source, &kept, &why);
    }
}

/// A `callFrame` object: V8's script id 0 (none), the URL or empty, the 0-based line or -1.
fn push_call_frame(buf: &mut Vec<u8>, name: &str, file: Option<&str>, line: Option<u32>) {
    buf.extend_from_slice(b"{\"functionName\":");
    json_string(buf, name);
    buf.extend_from_slice(b",\"scriptId\":\"0\",\"url\":");
    json_string(buf, file.unwrap_or(""));
    buf.extend_from_slice(b",\"lineNumber\":");
    let line = line.map_or(-1, |l| i64::from(l) - 1);
    buf.extend_from_slice(itoa::Buffer::new().format(line).as_bytes());
    buf.extend_from_slice(b",\"columnNumber\":-1}");
}

/// Appends `s` as a JSON string.
pub(crate) fn json_string(buf: &mut Vec<u8>, s: &str) {
    // serde_json escapes exactly as JSON wants; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_lasts_until_the_next_and_the_last_until_the_end() {
        let t = sample_times(100, &[5, 10, 20], Some(200)).unwrap();
        assert_eq!(t.order, vec![0, 1, 2]);
        assert_eq!(t.weights, vec![10, 20, 65]);
        assert_eq!(t.reordered, 0);
        assert_eq!(sample_times(100, &[5, 10], None).unwrap().weights, vec![10, 0]);
    }

    #[test]
    fn samples_out_of_time_order_are_sorted() {
        let t = sample_times(0, &[10, -4, 8], Some(20)).unwrap();
        assert_eq!(t.order, vec![1, 0, 2]);
        assert_eq!(t.weights, vec![4, 4, 6]);
        assert_eq!(t.reordered, 1);
    }

    #[test]
    fn times_past_64_bits_are_refused_at_their_delta() {
        assert_eq!(sample_times(i64::MAX - 1, &[1, 1], None).err(), Some(1));
    }

    fn node(id: u64, name: &str, parent: Option<u64>, children: Option<Vec<u64>>) -> Node {
        Node {
            id,
            call_frame: CallFrame { function_name: name.into(), ..CallFrame::default() },
            hit_count: None,
            children,
            parent,
        }
    }

    fn tree(nodes: Vec<Node>) -> NodeTree {
        let mut t = NodeTree::default();
        for (i, n) in nodes.into_iter().enumerate() {
            t.add(n, format!("nodes[{i}]")).unwrap();
        }
        t
    }

    fn paths(t: &NodeTree) -> Result<Vec<String>> {
        let mut profile = Profile { processes: vec![Default::default()], ..Profile::default() };
        let made = t.model_nodes(&mut profile, 0, &mut Findings::default())?;
        let stacks = &profile.processes[0].stacks;
        Ok(made
            .iter()
            .map(|&n| {
                stacks
                    .frames(n)
                    .iter()
                    .map(|&f| profile.frames.get(f).to_string())
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .collect())
    }

    #[test]
    fn callers_from_parents_or_children_in_any_order() {
        let by_children = tree(vec![
            node(3, "", None, None),
            node(1, "(root)", None, Some(vec![2])),
            node(2, "main", None, Some(vec![3])),
        ]);
        assert_eq!(paths(&by_children).unwrap(), ["(root);main;(anonymous)", "(root)", "(root);main"]);
        let by_parents = tree(vec![node(1, "(root)", None, None), node(2, "main", Some(1), None)]);
        assert_eq!(paths(&by_parents).unwrap(), ["(root)", "(root);main"]);
    }

    #[test]
    fn unknown_callers_are_the_root_and_two_callers_and_cycles_are_placed_errors() {
        // A trace cut after its profile started names callers it does not hold.
        let unknown = tree(vec![node(1, "a", Some(9), None), node(2, "b", None, Some(vec![7]))]);
        assert_eq!(paths(&unknown).unwrap(), ["a", "b"]);
        let two = tree(vec![
            node(1, "a", None, Some(vec![3])),
            node(2, "b", None, Some(vec![3])),
            node(3, "c", None, None),
        ]);
        let e = paths(&two).unwrap_err().to_string();
        assert!(e.contains("two callers") && e.contains("nodes[1].children[0]"), "{e}");
        let cycle = tree(vec![node(1, "a", Some(2), None), node(2, "b", Some(1), None)]);
        let e = paths(&cycle).unwrap_err().to_string();
        assert!(e.contains("cycle") && e.contains("nodes[0]"), "{e}");
        let mut again = NodeTree::default();
        again.add(node(1, "a", None, None), "nodes[0]".into()).unwrap();
        let e = again.add(node(1, "b", None, None), "nodes[1]".into()).unwrap_err().to_string();
        assert!(e.contains("nodes[1].id") && e.contains("nodes[0]"), "{e}");
    }
}
