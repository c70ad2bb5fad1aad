//! Call stacks as a prefix tree: every distinct call path is one node `(parent, frame)`, shared
//! by every stack that starts with it, and every sample (a folded line, a pprof `Sample`, a perf
//! sample) refers to the node of its leaf, with its thread and one exact value per event.
//!
//! This is how the formats that hold many stacks store them (the Firefox Profiler's stack
//! table, perf's call chains, the tables' `stack_nodes`; pprof interns locations): a profile
//! whose stacks share prefixes takes memory for its distinct paths, not for the sum of their
//! depths, and a writer of a tree format maps node for node.
//!
//! Values are integers ([`StackValue`], wide enough for every unsigned 64-bit count and every
//! signed one, and for their sums). A source with fractional values (folded stacks from
//! averaging tools) is carried exactly as integers of a decimal scale per event:
//! `2.5` with one decimal is the integer 25 ([`Stacks::decimals`]). No value passes through
//! floating point from a reader to a writer.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::{FrameId, NO_INDEX};

/// One exact stack value: a count in units of `10^-decimals` of its event.
pub type StackValue = i128;

/// The node of a call path: the path of `parent` with `frame` called from its leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackNode {
    /// The caller's node, [`NO_INDEX`] for a root frame.
    pub parent: u32,
    /// The frame (index into [`super::Profile::frames`]).
    pub frame: FrameId,
}

/// One sample or stack value: the node of its leaf frame ([`NO_INDEX`] for a stack without
/// frames) and the thread it was taken on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The leaf's node, [`NO_INDEX`] for an empty stack.
    pub node: u32,
    /// The thread, [`NO_INDEX`] when unknown.
    thread: u32,
}

impl Sample {
    /// The thread the stack was sampled on, when known.
    pub fn thread(&self) -> Option<u32> {
        (self.thread != NO_INDEX).then_some(self.thread)
    }
}

/// One sample with its values, as [`Stacks::samples`] hands them out.
#[derive(Clone, Copy, Debug)]
pub struct SampleRef<'a> {
    /// The leaf's node, [`NO_INDEX`] for an empty stack.
    pub node: u32,
    /// The thread, when known.
    pub thread: Option<u32>,
    /// One value per event column ([`Stacks::width`] of them).
    pub values: &'a [StackValue],
    /// The sample's labels, in order of key (empty when it has none).
    pub labels: &'a [Label],
    /// The index of its label set in [`Stacks::label_sets`], [`NO_INDEX`] when it has none.
    pub label_set: u32,
}

/// What a label says: a text (pprof's `str`, a host name) or a number with its unit (pprof's
/// `num` and `num_unit`, such as `bytes`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabelValue {
    /// A text value.
    Text(Box<str>),
    /// A number, with its unit when the source names one.
    Number(i64, Option<Box<str>>),
}

impl std::fmt::Display for LabelValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelValue::Text(t) => f.write_str(t),
            LabelValue::Number(n, None) => write!(f, "{n}"),
            LabelValue::Number(n, Some(unit)) => write!(f, "{n} {unit}"),
        }
    }
}

/// A key and its value, attached to a sample: where it was taken (host, service, build), or
/// what it measured (pprof's `bytes` of an allocation). Samples that differ in their labels are
/// kept apart, as pprof keeps them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    /// The key (`service`, `host`).
    pub key: Box<str>,
    /// Its value.
    pub value: LabelValue,
}

impl Label {
    /// A text label.
    pub fn text(key: &str, value: &str) -> Label {
        Label { key: key.into(), value: LabelValue::Text(value.into()) }
    }
}

/// One stack written out as lists ([`Stacks::listed`]): its frames root first, its values and
/// its thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedStack {
    /// Frames, root first.
    pub frames: Vec<FrameId>,
    /// One value per column.
    pub values: Vec<StackValue>,
    /// The thread, when known.
    pub thread: Option<u32>,
}

/// A process's call stacks: the prefix tree of their paths and the samples on it, in input
/// order (equal stacks are not merged: a flame chart needs the order).
#[derive(Clone, Default)]
pub struct Stacks {
    nodes: Vec<StackNode>,
    /// Node indices by the hash of `(parent, frame)`.
    index: HashTable<u32>,
    samples: Vec<Sample>,
    /// `width` values per sample, sample after sample.
    values: Vec<StackValue>,
    width: usize,
    /// Decimal places per column; columns past its end have none.
    decimals: Vec<u8>,
    /// Each sample's label set ([`NO_INDEX`]: none), empty while no sample has one.
    sample_labels: Vec<u32>,
    /// The distinct label sets, each in order of key.
    label_sets: Vec<Box<[Label]>>,
    /// Label sets by content.
    label_index: std::collections::HashMap<Box<[Label]>, u32>,
}

impl std::fmt::Debug for Stacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stacks")
            .field("nodes", &self.nodes)
            .field("samples", &self.samples)
            .field("values", &self.values)
            .field("width", &self.width)
            .field("decimals", &self.decimals)
            .field("sample_labels", &self.sample_labels)
            .field("label_sets", &self.label_sets)
            .finish()
    }
}

/// Two stacks are equal when their samples are, in order: the same paths of frames, threads,
/// labels, values and decimal places, however their nodes and label sets are numbered.
impl PartialEq for Stacks {
    fn eq(&self, other: &Self) -> bool {
        // Without samples, the number of value columns says nothing.
        let width = self.width == other.width || (self.samples.is_empty() && other.samples.is_empty());
        let columns = 0..self.width.max(other.width);
        let same_path = |a: u32, b: u32| {
            let (mut a, mut b) = (a, b);
            loop {
                match (a == NO_INDEX, b == NO_INDEX) {
                    (true, true) => return true,
                    (false, false) => {
                        let (x, y) = (self.nodes[a as usize], other.nodes[b as usize]);
                        if x.frame != y.frame {
                            return false;
                        }
                        (a, b) = (x.parent, y.parent);
                    }
                    _ => return false,
                }
            }
        };
        width
            && self.values == other.values
            && self.decimals(columns.clone()) == other.decimals(columns)
            && self.samples.len() == other.samples.len()
            && self
                .samples
                .iter()
                .zip(&other.samples)
                .all(|(a, b)| a.thread == b.thread && same_path(a.node, b.node))
            && (0..self.samples.len()).all(|i| self.labels_at(i) == other.labels_at(i))
    }
}

fn hash(parent: u32, frame: FrameId) -> u64 {
    FxBuildHasher.hash_one((parent, frame))
}

/// Parses a non-negative decimal count (`12`, `2.567`, `3.`) into its digits as an integer and
/// its number of decimal places; `None` for anything else or a number beyond [`StackValue`].
pub fn parse_decimal(token: &[u8]) -> Option<(StackValue, u8)> {
    if token.is_empty() || token[0] == b'.' {
        return None;
    }
    let mut int: StackValue = 0;
    let mut decimals: Option<u8> = None;
    for &b in token {
        match b {
            b'0'..=b'9' => {
                int = int.checked_mul(10)?.checked_add(StackValue::from(b - b'0'))?;
                if let Some(d) = decimals.as_mut() {
                    *d = d.checked_add(1)?;
                }
            }
            b'.' if decimals.is_none() => decimals = Some(0),
            _ => return None,
        }
    }
    let decimals = decimals.unwrap_or(0);
    (decimals <= MAX_DECIMALS).then_some((int, decimals))
}

/// A number read as a JSON or binary `f64` (a Firefox sample weight) as its shortest decimal
/// text states it, exactly: `0.1` is 1 tenth, not the binary fraction nearest it. `None` for
/// an infinite or NaN number or one beyond [`StackValue`]; places past [`MAX_DECIMALS`] are
/// rounded off.
pub fn from_f64(v: f64) -> Option<(StackValue, u8)> {
    if !v.is_finite() || v.abs() >= 1e38 {
        return None;
    }
    if v.fract() == 0.0 {
        return Some((v as StackValue, 0));
    }
    let (digits, places) = parse_decimal(format!("{}", v.abs()).as_bytes())
        .or_else(|| parse_decimal(format!("{:.18}", v.abs()).as_bytes()))?;
    Some((if v < 0.0 { -digits } else { digits }, places))
}

/// The most decimal places a value is carried with (18: a billionth of a billionth).
pub const MAX_DECIMALS: u8 = 18;

/// `10^n` as a value.
pub fn power_of_ten(n: u8) -> StackValue {
    (10 as StackValue).pow(u32::from(n))
}

/// The shortest decimal text of `value / 10^decimals`: `25` with one decimal is `2.5`, `10`
/// with one is `1` (no trailing zeros, no point for whole numbers), appended to `out`.
pub fn decimal_text(value: StackValue, decimals: u8, out: &mut Vec<u8>) {
    // Digits from the end of a buffer wide enough for any value and its leading zeros.
    let mut buf = [b'0'; 64];
    let mut at = buf.len();
    let mut v = value.unsigned_abs();
    if v <= u128::from(u64::MAX) {
        let mut small = v as u64;
        loop {
            at -= 1;
            buf[at] = b'0' + (small % 10) as u8;
            small /= 10;
            if small == 0 {
                break;
            }
        }
    } else {
        loop {
            at -= 1;
            buf[at] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
    }
    if value < 0 {
        out.push(b'-');
    }
    let d = usize::from(decimals.min(MAX_DECIMALS));
    // At least one digit before the point: the buffer is zeros before the digits.
    let start = at.min(buf.len() - d - 1);
    let point = buf.len() - d;
    out.extend_from_slice(&buf[start..point]);
    let fraction = &buf[point..];
    let kept = fraction.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1);
    if kept > 0 {
        out.push(b'.');
        out.extend_from_slice(&fraction[..kept]);
    }
}

/// `value / 10^decimals` as the nearest `f64`, for presentation (widths of a drawing,
/// shares) and never for a value written on.
pub fn to_f64(value: StackValue, decimals: u8) -> f64 {
    if decimals == 0 {
        value as f64
    } else {
        // Parsing the exact decimal text rounds once, correctly.
        let mut text = Vec::new();
        decimal_text(value, decimals, &mut text);
        std::str::from_utf8(&text).ok().and_then(|t| t.parse().ok()).unwrap_or(f64::NAN)
    }
}

/// `value / 10^decimals` rounded to the nearest integer, halves away from zero (a cost
/// made of a fractional stack value).
pub fn rounded(value: StackValue, decimals: u8) -> StackValue {
    if decimals == 0 {
        return value;
    }
    let unit = power_of_ten(decimals);
    let (q, r) = (value / unit, value % unit);
    if r.abs() * 2 >= unit {
        q + value.signum()
    } else {
        q
    }
}

impl Stacks {
    /// No stacks, with `width` value columns.
    pub fn with_width(width: usize) -> Self {
        Stacks { width, ..Stacks::default() }
    }

    /// The number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The number of value columns of every sample.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The distinct call paths, parents before children.
    pub fn nodes(&self) -> &[StackNode] {
        &self.nodes
    }

    /// The node of `frame` called from the leaf of `parent` ([`NO_INDEX`] for a root frame),
    /// added when new.
    pub fn node(&mut self, parent: u32, frame: FrameId) -> u32 {
        if self.index.len() < self.nodes.len() {
            self.rebuild_index();
        }
        let h = hash(parent, frame);
        let nodes = &self.nodes;
        if let Some(&n) = self.index.find(h, |&n| nodes[n as usize] == StackNode { parent, frame }) {
            return n;
        }
        let n = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&n| n != NO_INDEX)
            .expect("more than 2^32 - 1 call paths");
        self.nodes.push(StackNode { parent, frame });
        let nodes = &self.nodes;
        self.index.insert_unique(h, n, |&m| {
            let node = nodes[m as usize];
            hash(node.parent, node.frame)
        });
        n
    }

    /// Adds the node of `frame` under `parent` without looking for it: for a reader that makes
    /// each path once (from sorted paths: those that share a prefix are neighbours), which must
    /// know the node is new. The lookup is made again when [`Stacks::node`] next needs it.
    pub fn push_node_unindexed(&mut self, parent: u32, frame: FrameId) -> u32 {
        debug_assert!(parent == NO_INDEX || (parent as usize) < self.nodes.len());
        let n = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&n| n != NO_INDEX)
            .expect("more than 2^32 - 1 call paths");
        self.nodes.push(StackNode { parent, frame });
        if !self.index.is_empty() {
            // Stale from now on: let it go, to be made again whole.
            self.index = HashTable::new();
        }
        n
    }

    /// The lookup of nodes by `(parent, frame)`, made again after [`Stacks::shrink_to_fit`]
    /// let it go.
    fn rebuild_index(&mut self) {
        let nodes = &self.nodes;
        let mut index = HashTable::with_capacity(nodes.len());
        for (n, node) in nodes.iter().enumerate() {
            index.insert_unique(hash(node.parent, node.frame), n as u32, |&m| {
                let node = nodes[m as usize];
                hash(node.parent, node.frame)
            });
        }
        self.index = index;
    }

    /// The node of a whole path, root first ([`NO_INDEX`] for an empty one), added when new.
    pub fn path_node(&mut self, frames: &[FrameId]) -> u32 {
        frames.iter().fold(NO_INDEX, |parent, &f| self.node(parent, f))
    }

    /// Adds a sample at `node` with its values (missing trailing values are 0; more values
    /// than the width widen every sample).
    pub fn push_sample(&mut self, node: u32, thread: Option<u32>, values: &[StackValue]) {
        if values.len() > self.width {
            self.widen(values.len());
        }
        self.samples.push(Sample { node, thread: thread.unwrap_or(NO_INDEX) });
        self.values.extend_from_slice(values);
        self.values.extend(std::iter::repeat_n(0, self.width - values.len()));
        if !self.sample_labels.is_empty() {
            self.sample_labels.push(NO_INDEX);
        }
    }

    /// Adds a sample at `node` with the label set `labels` ([`Stacks::label_set`]; [`NO_INDEX`]
    /// for none) and its values.
    pub fn push_labelled_sample(
        &mut self,
        node: u32,
        thread: Option<u32>,
        labels: u32,
        values: &[StackValue],
    ) {
        self.push_sample(node, thread, values);
        if labels != NO_INDEX {
            debug_assert!((labels as usize) < self.label_sets.len());
            if self.sample_labels.is_empty() {
                self.sample_labels.resize(self.samples.len(), NO_INDEX);
            }
            *self.sample_labels.last_mut().expect("a sample was pushed") = labels;
        }
    }

    /// The index of the label set holding `labels` (in any order; a key may repeat with other
    /// values), added when new; [`NO_INDEX`] for no labels.
    pub fn label_set(&mut self, mut labels: Vec<Label>) -> u32 {
        if labels.is_empty() {
            return NO_INDEX;
        }
        labels.sort();
        labels.dedup();
        let labels = labels.into_boxed_slice();
        if let Some(&i) = self.label_index.get(&labels) {
            return i;
        }
        let i =
            u32::try_from(self.label_sets.len()).ok().filter(|&i| i != NO_INDEX).expect("2^32 label sets");
        self.label_sets.push(labels.clone());
        self.label_index.insert(labels, i);
        i
    }

    /// Gives every sample the labels `f` makes of its own (`f(&[])` for a sample without
    /// any): `f` is called once per distinct label set.
    pub fn map_label_sets(&mut self, mut f: impl FnMut(&[Label]) -> Vec<Label>) {
        let old = std::mem::take(&mut self.label_sets);
        self.label_index.clear();
        let unlabelled = self.label_set(f(&[]));
        let new: Vec<u32> = old.iter().map(|set| self.label_set(f(set))).collect();
        if self.sample_labels.is_empty() {
            if unlabelled != NO_INDEX {
                self.sample_labels = vec![unlabelled; self.samples.len()];
            }
            return;
        }
        for l in &mut self.sample_labels {
            *l = if *l == NO_INDEX { unlabelled } else { new[*l as usize] };
        }
    }

    /// The distinct label sets, each in order of key.
    pub fn label_sets(&self) -> &[Box<[Label]>] {
        &self.label_sets
    }

    /// Whether some sample has labels.
    pub fn has_labels(&self) -> bool {
        self.sample_labels.iter().any(|&l| l != NO_INDEX)
    }

    /// Sample `i`'s label set ([`NO_INDEX`]: none).
    pub fn label_set_of(&self, i: usize) -> u32 {
        self.sample_labels.get(i).copied().unwrap_or(NO_INDEX)
    }

    /// Sample `i`'s labels.
    fn labels_at(&self, i: usize) -> &[Label] {
        match self.label_set_of(i) {
            NO_INDEX => &[],
            l => &self.label_sets[l as usize],
        }
    }

    /// Adds a stack given as its frames, root first.
    pub fn push(&mut self, frames: &[FrameId], thread: Option<u32>, values: &[StackValue]) {
        let node = self.path_node(frames);
        self.push_sample(node, thread, values);
    }

    /// Gives every sample `width` value columns (new ones 0).
    pub fn widen(&mut self, width: usize) {
        if width <= self.width {
            return;
        }
        let old = std::mem::take(&mut self.values);
        self.values.reserve(self.samples.len() * width);
        if self.width == 0 {
            self.values.resize(self.samples.len() * width, 0);
        } else {
            for row in old.chunks_exact(self.width) {
                self.values.extend_from_slice(row);
                self.values.extend(std::iter::repeat_n(0, width - self.width));
            }
        }
        self.width = width;
    }

    /// The samples in input order.
    pub fn samples(&self) -> impl ExactSizeIterator<Item = SampleRef<'_>> + '_ {
        (0..self.samples.len()).map(move |i| self.sample(i))
    }

    /// Sample `i`.
    pub fn sample(&self, i: usize) -> SampleRef<'_> {
        let s = self.samples[i];
        SampleRef {
            node: s.node,
            thread: s.thread(),
            values: &self.values[i * self.width..(i + 1) * self.width],
            labels: self.labels_at(i),
            label_set: self.label_set_of(i),
        }
    }

    /// Sample `i`'s values, to change them.
    pub fn values_mut(&mut self, i: usize) -> &mut [StackValue] {
        &mut self.values[i * self.width..(i + 1) * self.width]
    }

    /// The frames of `node`'s path, root first, into `out` (cleared first).
    pub fn path(&self, node: u32, out: &mut Vec<FrameId>) {
        out.clear();
        let mut n = node;
        while n != NO_INDEX {
            let StackNode { parent, frame } = self.nodes[n as usize];
            out.push(frame);
            n = parent;
        }
        out.reverse();
    }

    /// The frames of `node`'s path, root first.
    pub fn frames(&self, node: u32) -> Vec<FrameId> {
        let mut out = Vec::new();
        self.path(node, &mut out);
        out
    }

    /// Every sample as lists of frames and values, in order: for small profiles and tests
    /// (the lists take the sum of the stacks' depths).
    pub fn listed(&self) -> Vec<ListedStack> {
        self.samples()
            .map(|s| ListedStack { frames: self.frames(s.node), values: s.values.to_vec(), thread: s.thread })
            .collect()
    }

    /// Stacks of the listed ones, in order.
    pub fn from_listed(list: impl IntoIterator<Item = ListedStack>) -> Stacks {
        let mut stacks = Stacks::default();
        for s in list {
            stacks.push(&s.frames, s.thread, &s.values);
        }
        stacks
    }

    /// The nodes on the samples' paths, each once, in the order a walk of every sample's path
    /// root first meets them (sample by sample: a path's nodes no earlier sample went through,
    /// root first). Writers that number frames or nodes as the stacks show them use it.
    pub fn nodes_in_order_met(&self) -> Vec<u32> {
        let mut met = vec![false; self.nodes.len()];
        let mut order = Vec::new();
        let mut path = Vec::new();
        for s in &self.samples {
            path.clear();
            let mut n = s.node;
            while n != NO_INDEX && !met[n as usize] {
                met[n as usize] = true;
                path.push(n);
                n = self.nodes[n as usize].parent;
            }
            order.extend(path.iter().rev());
        }
        order
    }

    /// The leaf frame of `node` (`None` for an empty stack).
    pub fn leaf(&self, node: u32) -> Option<FrameId> {
        (node != NO_INDEX).then(|| self.nodes[node as usize].frame)
    }

    /// The number of frames on `node`'s path.
    pub fn depth(&self, node: u32) -> usize {
        let mut n = node;
        let mut depth = 0;
        while n != NO_INDEX {
            depth += 1;
            n = self.nodes[n as usize].parent;
        }
        depth
    }

    /// Whether some sample was taken on a known thread.
    pub fn any_thread(&self) -> bool {
        self.samples.iter().any(|s| s.thread != NO_INDEX)
    }

    /// The highest thread a sample was taken on.
    pub fn max_thread(&self) -> Option<u32> {
        self.samples.iter().filter_map(Sample::thread).max()
    }

    /// Decimal places of each of the `columns`.
    pub fn decimals(&self, columns: std::ops::Range<usize>) -> Vec<u8> {
        columns.map(|c| self.decimals.get(c).copied().unwrap_or(0)).collect()
    }

    /// Decimal places of column `column`: its values are in units of `10^-decimals`.
    pub fn decimals_of(&self, column: usize) -> u8 {
        self.decimals.get(column).copied().unwrap_or(0)
    }

    /// Whether some column has decimal places (fractional values).
    pub fn has_fractions(&self) -> bool {
        self.decimals.iter().any(|&d| d > 0)
    }

    /// Gives column `column` at least `decimals` places, scaling its values. `false` when a
    /// value would overflow (nothing changed then).
    pub fn set_decimals(&mut self, column: usize, decimals: u8) -> bool {
        let now = self.decimals_of(column);
        if decimals <= now {
            return true;
        }
        let factor = power_of_ten(decimals - now);
        if self.width > column {
            let ok =
                self.values.iter().skip(column).step_by(self.width).all(|v| v.checked_mul(factor).is_some());
            if !ok {
                return false;
            }
            for v in self.values.iter_mut().skip(column).step_by(self.width) {
                *v *= factor;
            }
        }
        if self.decimals.len() <= column {
            self.decimals.resize(column + 1, 0);
        }
        self.decimals[column] = decimals;
        true
    }

    /// The children of every node, grouped by parent: `children.of(n)` are the nodes called
    /// from `n`'s leaf, in the order they were made; `children.roots()` the root frames' nodes.
    pub fn children(&self) -> Children {
        let n = self.nodes.len();
        // Slot n is the roots'.
        let slot = |parent: u32| if parent == NO_INDEX { n } else { parent as usize };
        let mut start = vec![0u32; n + 2];
        for node in &self.nodes {
            start[slot(node.parent) + 1] += 1;
        }
        for i in 0..=n {
            start[i + 1] += start[i];
        }
        let mut next = start.clone();
        let mut list = vec![0u32; n];
        for (i, node) in self.nodes.iter().enumerate() {
            let at = &mut next[slot(node.parent)];
            list[*at as usize] = i as u32;
            *at += 1;
        }
        Children { start, list }
    }

    /// The values of every node per column, `width` a node (`node * width + column`): its
    /// self values (the samples whose leaf it is) and its inclusive values (the samples at it
    /// or below). Samples without frames are in neither.
    pub fn node_totals(&self) -> (Vec<StackValue>, Vec<StackValue>) {
        let w = self.width;
        let mut own = vec![0; self.nodes.len() * w];
        for s in self.samples() {
            if s.node != NO_INDEX {
                let at = s.node as usize * w;
                for (slot, v) in own[at..at + w].iter_mut().zip(s.values) {
                    *slot += v;
                }
            }
        }
        // A parent is made before its children: the nodes in reverse add up bottom-up.
        let mut inclusive = own.clone();
        for n in (0..self.nodes.len()).rev() {
            let parent = self.nodes[n].parent;
            if parent != NO_INDEX {
                let (p, c) = (parent as usize * w, n * w);
                for k in 0..w {
                    inclusive[p + k] += inclusive[c + k];
                }
            }
        }
        (own, inclusive)
    }

    /// Gives back room reserved beyond the contents, and the lookup of nodes (a reader's
    /// tool: about as large as the nodes, and made again if a node is added later).
    pub fn shrink_to_fit(&mut self) {
        self.nodes.shrink_to_fit();
        self.samples.shrink_to_fit();
        self.values.shrink_to_fit();
        self.sample_labels.shrink_to_fit();
        self.index = HashTable::new();
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> u64 {
        (self.nodes.capacity() * size_of::<StackNode>()
            + self.index.capacity() * (size_of::<u32>() + 1)
            + self.samples.capacity() * size_of::<Sample>()
            + self.values.capacity() * size_of::<StackValue>()
            + self.decimals.capacity()
            + self.sample_labels.capacity() * size_of::<u32>()
            + self.label_sets.iter().map(|l| l.len() * 2 * size_of::<Label>()).sum::<usize>()) as u64
    }
}

/// The children of each node of a [`Stacks`] tree ([`Stacks::children`]).
#[derive(Clone, Debug)]
pub struct Children {
    /// Where each parent's children start in `list` (the roots' last).
    start: Vec<u32>,
    list: Vec<u32>,
}

impl Children {
    /// The nodes whose parent is `node`.
    pub fn of(&self, node: u32) -> &[u32] {
        let i = node as usize;
        &self.list[self.start[i] as usize..self.start[i + 1] as usize]
    }

    /// The nodes of root frames.
    pub fn roots(&self) -> &[u32] {
        let i = self.start.len() - 2;
        &self.list[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_prefixes_are_one_node() {
        let mut s = Stacks::with_width(1);
        s.push(&[1, 2, 3], None, &[5]);
        s.push(&[1, 2, 4], Some(2), &[6]);
        s.push(&[1, 2], None, &[7]);
        s.push(&[], None, &[1]);
        assert_eq!(s.nodes().len(), 4);
        let paths: Vec<_> = s.samples().map(|x| (s.frames(x.node), x.thread, x.values.to_vec())).collect();
        assert_eq!(
            paths,
            vec![
                (vec![1, 2, 3], None, vec![5]),
                (vec![1, 2, 4], Some(2), vec![6]),
                (vec![1, 2], None, vec![7]),
                (vec![], None, vec![1]),
            ]
        );
        assert_eq!(s.depth(s.sample(1).node), 3);
        assert_eq!(s.nodes_in_order_met(), [0, 1, 2, 3]);
        let children = s.children();
        assert_eq!(children.roots(), &[0]);
        assert_eq!(children.of(1), &[2, 3]);
        let (own, inclusive) = s.node_totals();
        assert_eq!(own, [0, 7, 5, 6]);
        assert_eq!(inclusive, [18, 18, 5, 6]);
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(parse_decimal(b"0.1"), Some((1, 1)));
        assert_eq!(parse_decimal(b"3."), Some((3, 0)));
        assert_eq!(parse_decimal(b"18446744073709551615"), Some((u64::MAX as StackValue, 0)));
        assert_eq!(parse_decimal(b".5"), None);
        assert_eq!(parse_decimal(b"1e5"), None);
        let text = |v, d| {
            let mut out = Vec::new();
            decimal_text(v, d, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(text(25, 1), "2.5");
        assert_eq!(text(10, 1), "1");
        assert_eq!(text(5, 3), "0.005");
        assert_eq!(text(-25, 1), "-2.5");
        assert_eq!(text(i64::MAX as StackValue, 0), "9223372036854775807");
        assert_eq!(rounded(25, 1), 3);
        assert_eq!(rounded(24, 1), 2);
        assert_eq!(rounded(-25, 1), -3);
        // 0.1 ten times is 1.
        let mut s = Stacks::with_width(1);
        s.set_decimals(0, 1);
        for _ in 0..10 {
            s.push(&[0], None, &[1]);
        }
        let sum: StackValue = s.samples().map(|x| x.values[0]).sum();
        assert_eq!(text(sum, s.decimals_of(0)), "1");
    }

    #[test]
    fn finer_decimals_scale_what_is_there() {
        let mut s = Stacks::with_width(2);
        s.push(&[0], None, &[3, 4]);
        assert!(s.set_decimals(1, 2));
        assert_eq!(s.sample(0).values, &[3, 400]);
        let mut t = Stacks::with_width(2);
        t.push(&[0, 1], Some(1), &[5, 6]);
        t.set_decimals(0, 1);
        assert_eq!(t.sample(0).values, &[50, 6], "5.0 in tenths");
        assert!(!s.set_decimals(0, MAX_DECIMALS + 20), "past the value range: nothing changed");
        assert_eq!(s.sample(0).values, &[3, 400]);
    }
}
