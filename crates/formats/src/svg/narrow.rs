//! Frames too narrow to draw, merged before inferno sees them.
//!
//! inferno leaves out every box narrower than `min_width` percent of the picture (0.01% by
//! default), but only after it has held every folded line, sorted them and made a box of every
//! frame of every line. A profile of flat costs without symbols is millions of stacks of one
//! frame each, none of them wide enough to draw: 2.3 GiB of memory to draw the root box alone
//! (25 million addresses). This module hands inferno far fewer lines that draw the same picture,
//! byte for byte:
//!
//! 1. **What may be wide** ([`PrefixSums`]). Every prefix of every stack (a node of the tree
//!    the stacks make) adds its samples to one of `2^k` sums, chosen by a hash of its frame
//!    names. A node whose sum is under inferno's least width is narrower than that for certain
//!    (the sum is its own total plus those of the nodes that share it): inferno would leave out
//!    all its boxes, and those of everything under it.
//! 2. **The wide tree** ([`WideTree`]): the other nodes whose ancestors are all such, each named
//!    by its parent and its frame's name.
//! 3. **The lines** ([`Grouping`]). A stack whose frames are all in the wide tree is handed on
//!    whole. Any other is cut after its first narrow frame and added to a group: the lines
//!    cut under the same wide parent, sorted between the same two wide siblings, whose sums
//!    are in the same bin ([`PrefixSums::into_bins`]: consecutive narrow sums whose total stays
//!    under the least width, so a group is narrower than that too, and every line of one node
//!    is in one group). A group is one line, named by its first member, with the samples of all.
//!
//! Why the picture is the same: inferno sorts the lines as text and makes a box of each run of
//! consecutive lines with the same frames down to the box's depth; the order of the boxes in
//! the file is the order in which their runs end. Every line of a wide node's run begins with
//! that node's text, so cutting a line after a frame under the node keeps it in the run; and
//! a cut line, like each line of its group, sorts where it did among the lines of the wide
//! siblings ([`WideTree::fence`]), so the runs of wide nodes keep their lines, their order,
//! their samples and where they end. Only boxes narrower than the least width change, and
//! inferno leaves those out.
//!
//! 25 million addresses of a 103 MB DCPI profile (`scripts/bench-flat-stacks.sh`, best of 3):
//! 2389 MiB and 11.3 s of CPU when inferno had every line, 229.5 MiB (where reading alone
//! peaks) and 5.9 s now. Profiles with named frames (Callgrind, perf.data, DCFG) draw the same
//! bytes in about the same time.

use std::hash::Hasher as _;

use rustc_hash::{FxHashMap, FxHasher};

use super::{push_frames, FoldedLines, LineUnits};
use cfghub_analysis::stacks::{Frame, WrittenStacks};
use cfghub_model::ir::EventId;

/// Folded lines of `event` (values times `scale`, rounded) that inferno draws exactly as it
/// draws every stack of `stacks`, given inferno's `min_width` (percent of the whole).
pub(crate) fn lines_to_draw(
    stacks: &WrittenStacks,
    event: EventId,
    units: LineUnits,
    min_width: f64,
) -> FoldedLines {
    let lines = Lines { stacks, event, units, decimals: stacks.decimals(event) };
    let census = lines.census();
    if census.time == 0 {
        // inferno draws nothing then, and says so.
        return super::folded_lines(stacks, &[event], units);
    }
    // inferno's own test: a box is left out when `(end - start) as f64 < minwidth_time`.
    let least = min_width / (100.0 / census.time as f64);
    // Enough sums that most hold far less than the least width: the nodes at least that wide
    // number at most 100 / min_width at each depth.
    let depth = census.prefixes.div_ceil(census.lines.max(1));
    let wanted = (16.0 * 100.0 / min_width.max(1e-6)) as u64 * depth;
    let Some(sums) = PrefixSums::of(&lines, wanted.min(census.prefixes)) else {
        return super::folded_lines(stacks, &[event], units);
    };
    let wide = WideTree::of(&lines, &sums, least);
    Grouping::new(&lines, &sums.into_bins(least), &wide).run()
}

/// The stacks and how their values become whole samples.
struct Lines<'a, 'p> {
    stacks: &'a WrittenStacks<'p>,
    event: EventId,
    units: LineUnits,
    /// The event's decimal places.
    decimals: u8,
}

impl Lines<'_, '_> {
    /// `f(frames, samples)` for every stack with frames.
    fn for_each(&self, mut f: impl FnMut(&[Frame], u64)) {
        let Ok(()) = self.stacks.try_for_each(|frames, values| -> Result<(), std::convert::Infallible> {
            if !frames.is_empty() {
                f(frames, self.units.whole(values.get(self.event).copied().unwrap_or(0), self.decimals));
            }
            Ok(())
        });
    }

    fn census(&self) -> Census {
        let mut census = Census { time: 0, lines: 0, prefixes: 0 };
        self.for_each(|frames, samples| {
            census.time = census.time.saturating_add(samples);
            census.lines += 1;
            census.prefixes += frames.len() as u64;
        });
        census
    }

    /// `f(depth, name, prefix hash)` for the frames of a stack, root first, while `f` says
    /// go on; `name` is the frame's name as written.
    fn walk(&self, frames: &[Frame], name: &mut Vec<u8>, mut f: impl FnMut(usize, &[u8], u64) -> bool) {
        let mut hash = 0u64;
        for (depth, &frame) in frames.iter().enumerate() {
            name.clear();
            self.stacks.push_name(frame, name);
            let mut hasher = FxHasher::default();
            hasher.write(name);
            hash = (hash.rotate_left(5) ^ hasher.finish()).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            if !f(depth, name, hash) {
                break;
            }
        }
    }
}

/// How many stacks with frames there are, their frames, and their samples (inferno's total
/// time).
struct Census {
    time: u64,
    lines: u64,
    prefixes: u64,
}

/// Whether inferno reads `name` as one frame wherever a line is cut: no `;` (inferno's frame
/// separator), no white space at either end (inferno trims lines), and no ` 123` at the end
/// (inferno would read it as the samples of a line ending there).
fn cuttable(name: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (name.first(), name.last()) else { return true };
    let white = |c: u8| matches!(c, b' ' | b'\t'..=b'\r');
    let white_end = if first.is_ascii() && last.is_ascii() {
        white(first) || white(last)
    } else {
        let Ok(name) = std::str::from_utf8(name) else { return false };
        name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace)
    };
    let count = name.iter().rev().take_while(|&&c| c.is_ascii_digit() || c == b'.').count();
    let ends_in_a_count = count > 0 && count < name.len() && name[name.len() - count - 1] == b' ';
    !white_end && !ends_in_a_count && memchr::memchr(b';', name).is_none()
}

/// Sums of the samples of the stacks' nodes, each node counted in the sum its prefix hash
/// picks (an upper bound of each node's own samples).
struct PrefixSums {
    sums: Vec<u64>,
    shift: u32,
}

impl PrefixSums {
    /// The sums of `lines`' nodes in about `wanted` sums (a power of two, 2^10 to 2^22: at
    /// most 32 MiB); `None` when a frame's name is not [`cuttable`].
    fn of(lines: &Lines, wanted: u64) -> Option<Self> {
        let count = wanted.next_power_of_two().clamp(1 << 10, 1 << 22);
        let mut sums = PrefixSums { sums: vec![0; count as usize], shift: 64 - count.trailing_zeros() };
        let (mut name, mut all_cuttable) = (Vec::new(), true);
        lines.for_each(|frames, samples| {
            lines.walk(frames, &mut name, |_, name, hash| {
                all_cuttable &= cuttable(name);
                let slot = sums.slot(hash);
                sums.sums[slot] = sums.sums[slot].saturating_add(samples);
                true
            })
        });
        all_cuttable.then_some(sums)
    }

    /// Which sum holds the node of prefix hash `hash`.
    fn slot(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Whether every node of prefix hash `hash` is narrower than `least` for certain.
    fn narrow(&self, hash: u64, least: f64) -> bool {
        (self.sums[self.slot(hash)] as f64) < least
    }

    /// The sums put in bins, in order, each bin of sums under `least` in all (the narrow nodes
    /// of a bin are narrower than that all together); sums that may hold a wide node in none.
    fn into_bins(self, least: f64) -> Bins {
        let mut bins = self.sums;
        let (mut bin, mut held) = (0, 0u64);
        for sum in &mut bins {
            if (*sum as f64) >= least {
                *sum = Bins::WIDE;
                continue;
            }
            if (held + *sum) as f64 >= least {
                bin += 1;
                held = 0;
            }
            held += *sum;
            *sum = bin;
        }
        Bins { bins, shift: self.shift }
    }
}

/// Per sum of [`PrefixSums`], its bin.
struct Bins {
    bins: Vec<u64>,
    shift: u32,
}

impl Bins {
    /// The bin of a sum that may hold a wide node.
    const WIDE: u64 = u64::MAX;

    /// The bin of the node of prefix hash `hash`, unless it may be wide.
    fn of(&self, hash: u64) -> Option<u64> {
        Some(self.bins[(hash >> self.shift) as usize]).filter(|&bin| bin != Bins::WIDE)
    }
}

/// The nodes not known to be narrow, whose ancestors are all such. Node 0 is the root (the
/// `all` box).
struct WideTree {
    /// Frame names of the wide nodes.
    names: FxHashMap<Box<[u8]>, u32>,
    /// (parent node, name) -> node.
    nodes: FxHashMap<(u32, u32), u32>,
    /// Per node: the names of its wide children followed by a space and by a `;`, sorted (see
    /// [`WideTree::fence`]).
    fences: Vec<Vec<Box<[u8]>>>,
}

impl WideTree {
    fn of(lines: &Lines, sums: &PrefixSums, least: f64) -> Self {
        let mut tree =
            WideTree { names: FxHashMap::default(), nodes: FxHashMap::default(), fences: vec![Vec::new()] };
        let mut name = Vec::new();
        lines.for_each(|frames, _| {
            let mut node = 0;
            lines.walk(frames, &mut name, |_, name, hash| {
                if sums.narrow(hash, least) {
                    return false;
                }
                node = tree.child_or_new(node, name);
                true
            })
        });
        tree.fences.iter_mut().for_each(|fences| fences.sort_unstable());
        tree
    }

    fn child_or_new(&mut self, parent: u32, name: &[u8]) -> u32 {
        let next_name = self.names.len() as u32;
        let id = *self.names.entry(name.into()).or_insert(next_name);
        let next_node = self.fences.len() as u32;
        let node = *self.nodes.entry((parent, id)).or_insert(next_node);
        if node == next_node {
            self.fences.push(Vec::new());
            for end in [b' ', b';'] {
                self.fences[parent as usize].push([name, &[end]].concat().into());
            }
        }
        node
    }

    /// The wide child of `parent` named `name`.
    fn child(&self, parent: u32, name: &[u8]) -> Option<u32> {
        let id = *self.names.get(name)?;
        self.nodes.get(&(parent, id)).copied()
    }

    /// Where the lines of `parent`'s narrow child `name` sort among those of its wide children:
    /// the number of fences before them. A line `…;NAME;…` sorts before every line whose text
    /// after `parent`'s frames begins with a fence `F` exactly when `NAME;` < `F`, and the line
    /// cut after `NAME` does exactly when `NAME ` < `F`. When a fence lies between the two (a
    /// wide sibling `NAME(int)`, `NAME.cold` or `NAME-1`), cutting would move the line: `None`.
    fn fence(&self, parent: u32, name: &[u8], key: &mut Vec<u8>) -> Option<u32> {
        let fences = &self.fences[parent as usize];
        let mut before = |end: u8| {
            key.clear();
            key.extend_from_slice(name);
            key.push(end);
            fences.partition_point(|fence| fence[..] < key[..])
        };
        let at = before(b' ');
        (at == before(b';')).then_some(at as u32)
    }
}

/// The third walk: lines handed on whole, and groups of lines cut after a narrow frame.
struct Grouping<'a, 'b, 'p> {
    lines: &'a Lines<'b, 'p>,
    bins: &'a Bins,
    wide: &'a WideTree,
    out: FoldedLines,
    /// (wide parent, fence, bin) -> index in `groups`.
    group_of: FxHashMap<(u32, u32, u64), usize>,
    /// Per group: its first member's text (a range of `texts`) and its samples.
    groups: Vec<(std::ops::Range<usize>, u64)>,
    texts: Vec<u8>,
}

impl<'a, 'b, 'p> Grouping<'a, 'b, 'p> {
    fn new(lines: &'a Lines<'b, 'p>, bins: &'a Bins, wide: &'a WideTree) -> Self {
        Grouping {
            lines,
            bins,
            wide,
            out: FoldedLines { text: Vec::new(), ends: Vec::new() },
            group_of: FxHashMap::default(),
            groups: Vec::new(),
            texts: Vec::new(),
        }
    }

    fn run(mut self) -> FoldedLines {
        let (mut name, mut key) = (Vec::new(), Vec::new());
        let lines = self.lines;
        lines.for_each(|frames, samples| {
            // The first narrow frame, its wide parent and its bin.
            let (mut parent, mut cut) = (0, None);
            lines.walk(frames, &mut name, |depth, name, hash| {
                if let Some(bin) = self.bins.of(hash) {
                    cut = Some((depth, bin));
                    return false;
                }
                // A node under wide ancestors whose sum may be wide is in the wide tree (were
                // it not, the line would be handed on whole).
                self.wide.child(parent, name).map(|node| parent = node).is_some()
            });
            let Some((depth, bin)) = cut else {
                return self.push_line(frames, samples);
            };
            let Some(fence) = self.wide.fence(parent, &name, &mut key) else {
                return self.push_line(frames, samples);
            };
            let frames = &frames[..=depth];
            let next = self.groups.len();
            let group = *self.group_of.entry((parent, fence, bin)).or_insert(next);
            if group == next {
                let start = self.texts.len();
                push_frames(lines.stacks, frames, &mut self.texts);
                self.groups.push((start..self.texts.len(), 0));
            }
            self.groups[group].1 = self.groups[group].1.saturating_add(samples);
        });
        for (text, samples) in std::mem::take(&mut self.groups) {
            self.out.text.extend_from_slice(&self.texts[text]);
            self.end_line(samples);
        }
        self.out
    }

    fn push_line(&mut self, frames: &[Frame], samples: u64) {
        push_frames(self.lines.stacks, frames, &mut self.out.text);
        self.end_line(samples);
    }

    fn end_line(&mut self, samples: u64) {
        let text = &mut self.out.text;
        text.push(b' ');
        text.extend_from_slice(itoa::Buffer::new().format(samples).as_bytes());
        self.out.ends.push(text.len());
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use super::*;
    use cfghub_model::ir::{Event, FrameId, Process, Profile, StackValue};

    /// Stacks of whole values.
    fn profile(stacks: &[(Vec<&str>, f64)]) -> Profile {
        let mut p = Profile { events: vec![Event::new("samples")], ..Profile::default() };
        let mut process = Process::default();
        for (frames, v) in stacks {
            let frames: Vec<FrameId> = frames.iter().map(|f| p.frames.intern(f)).collect();
            process.stacks.push(&frames, None, &[*v as StackValue]);
        }
        p.processes.push(process);
        p
    }

    /// inferno's picture of `lines`, boxes under `min_width` percent left out (or its error
    /// message, when there are no samples).
    fn draw(lines: &FoldedLines, min_width: f64) -> String {
        let mut opt = inferno::flamegraph::Options::default();
        opt.min_width = min_width;
        opt.hash = true;
        let mut svg = Vec::new();
        match inferno::flamegraph::from_lines(&mut opt, lines.iter(), &mut svg) {
            Ok(()) => String::from_utf8(svg).unwrap(),
            Err(e) => e.to_string(),
        }
    }

    /// The picture of every line and of the lines to draw, and how many lines each is.
    fn both(stacks: &[(Vec<&str>, f64)], min_width: f64) -> (String, String, usize, usize) {
        let profile = profile(stacks);
        let stacks = WrittenStacks::Model(Cow::Borrowed(&profile));
        let all = super::super::folded_lines(&stacks, &[0], LineUnits::default());
        let drawn = lines_to_draw(&stacks, 0, LineUnits::default(), min_width);
        (draw(&all, min_width), draw(&drawn, min_width), all.ends.len(), drawn.ends.len())
    }

    #[test]
    fn a_million_narrow_stacks_are_a_few_lines_and_the_same_picture() {
        let names: Vec<String> = (0..200_000).map(|i| format!("app+0x{:x}", 0x1000 + 4 * i)).collect();
        let mut stacks: Vec<(Vec<&str>, f64)> = names.iter().map(|n| (vec![n.as_str()], 1.0)).collect();
        stacks.push((vec!["main", "hot"], 50_000.0));
        stacks.push((vec!["main", "hot", "app+0x1000"], 3.0));
        let (all, drawn, all_lines, drawn_lines) = both(&stacks, 0.01);
        assert_eq!(all, drawn);
        assert!(all.contains("hot (50,003 samples"), "the wide frames are drawn");
        assert_eq!(all_lines, 200_002);
        // Each sum of the narrow addresses holds under 25 samples (0.01% of 250,003): about
        // 10,000 groups, the two wide lines whole.
        assert!(drawn_lines < 20_000, "{drawn_lines} lines");
    }

    #[test]
    fn names_that_sort_between_a_frame_and_its_children_keep_their_place() {
        // `a-x` sorts between `a 5` and `a;b`, so inferno draws two boxes of `a`; the narrow
        // `a.c` and `a!` must stay between them, `ab` after.
        let stacks = vec![
            (vec!["a"], 300.0),
            (vec!["a-x"], 1.0),
            (vec!["a.c"], 1.0),
            (vec!["a!"], 1.0),
            (vec!["a", "b"], 400.0),
            (vec!["ab"], 1.0),
            (vec!["a b"], 1.0),
            (vec!["a", "b", "c"], 1.0),
            (vec!["a", "b c"], 1.0),
        ];
        let (all, drawn, _, drawn_lines) = both(&stacks, 2.0);
        assert_eq!(all, drawn);
        assert!(drawn_lines < stacks.len(), "narrow neighbours are grouped");
    }

    #[test]
    fn names_inferno_would_read_otherwise_keep_every_line() {
        // On a line cut after it, a name ending in ` 7` would be read as a count, one ending
        // in white space would be trimmed, and one with a `;` is two frames to inferno.
        let ks: Vec<String> = (0..50).map(|i| format!("k{i}")).collect();
        let narrow = || ks.iter().map(|k| (vec!["main", "h", k.as_str()], 1.0));
        for name in ["f 7", "f 1.5", "f ", "f\t", "f\u{a0}", " f", "f;g"] {
            let stacks: Vec<_> = [(vec!["main", name, "g"], 1.0), (vec!["main"], 100_000.0)]
                .into_iter()
                .chain(narrow())
                .collect();
            let (all, drawn, all_lines, drawn_lines) = both(&stacks, 0.01);
            assert_eq!(all, drawn, "{name:?}");
            assert_eq!(all_lines, drawn_lines, "{name:?}");
        }
        // Without them, the 50 narrow lines (each under the least width of 10 samples) are a
        // few groups.
        let stacks: Vec<_> = std::iter::once((vec!["main"], 100_000.0)).chain(narrow()).collect();
        let (all, drawn, _, drawn_lines) = both(&stacks, 0.01);
        assert_eq!(all, drawn);
        assert!(drawn_lines <= 1 + 10, "{drawn_lines} lines");
    }

    const NAMES: &[&str] =
        &["a", "a-1", "a.b", "a b", "ab", "b", "b c", "f(int)", "f", "f(int, char)", "α", "a!"];

    fn stack() -> impl Strategy<Value = (Vec<&'static str>, f64)> {
        let value = prop_oneof![4 => 0u32..4, 1 => 50u32..2000].prop_map(f64::from);
        (prop::collection::vec(prop::sample::select(NAMES), 1..6), value)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn the_picture_is_the_same_byte_for_byte(
            stacks in prop::collection::vec(stack(), 1..120),
            min_width in prop_oneof![Just(0.01), Just(0.5), Just(3.0), Just(20.0)],
        ) {
            let (all, drawn, all_lines, drawn_lines) = both(&stacks, min_width);
            prop_assert!(drawn_lines <= all_lines);
            prop_assert_eq!(all, drawn);
        }
    }
}
