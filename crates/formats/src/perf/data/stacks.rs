//! The samples' call chains as stacks, folded as the `perf script` reader folds the text
//! `perf script` prints, so that the two forms of one recording give the same stacks.
//!
//! That reader hands each sample to inferno's collapse (`comm pid/tid time: period event:`,
//! then one `\tADDRESS FUNCTION (FILE)` line per frame, leaf first), which names the root
//! `comm-pid/tid` (spaces in the command made `_`), tidies each frame's name (argument lists
//! cut, `[file]` for a frame in no function, `_[k]` for the kernel, Java's `a->b` inlining
//! split into `a;b_[i]`, some frames left out), and adds up the samples of equal names.
//! A frame's names depend on its own line alone (and, for Java's tidying, on whether the
//! root starts with `java`), and a root on its thread and event alone. So each distinct
//! thread and each distinct frame goes through that same collapse once, in one text per
//! event for the threads and one for all frames; the stacks are then put together from
//! those names by id, added up where their names are equal, and ordered as the collapse
//! orders its output (by the text of the stack).

use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use super::names::Names;
use super::records::{Recording, NO_IMAGE, NO_KERNEL_IMAGE};
use super::stack_set::{StackLog, StackSet};
use cfghub_model::error::Result;
use cfghub_model::ir::{Profile, StackValue};

/// Adds the stacks of every event to `profile` (whose events are already set).
/// `columns` gives each event's column in the profile (`None`: left out).
/// `chains` are the recording's stacks (see [`Recording::stacks`]), dropped once read.
pub(crate) fn add_stacks(
    profile: &mut Profile,
    rec: &Recording,
    chains: StackLog,
    names: &Names,
    columns: &[Option<usize>],
) -> Result<()> {
    if chains.is_empty() {
        return Ok(());
    }
    let width = profile.events.len();
    let mut texts = Texts::default();
    // The stacks of event `e`: the thread (index into rec.threads), then the frames.
    let of_event = |e: usize| {
        chains.iter().filter(move |(key, _)| key[0] as usize == e).map(|(key, period)| (&key[1..], period))
    };
    let mut roots = Vec::with_capacity(rec.events.len());
    for (e, (event, column)) in rec.events.iter().zip(columns).enumerate() {
        let wanted = column.is_some();
        roots.push(if wanted {
            thread_roots(rec, of_event(e), &event.name, &mut texts)?
        } else {
            Vec::new()
        });
    }
    let kinds = roots.iter().flatten().flatten().map(|r| r.java);
    let (mut plain, mut java) = (false, false);
    for is_java in kinds {
        *(if is_java { &mut java } else { &mut plain }) = true;
    }
    let mut frame_names = [
        plain.then(|| name_frames(rec, names, false, &mut texts)).transpose()?,
        java.then(|| name_frames(rec, names, true, &mut texts)).transpose()?,
    ];
    let unknown = texts.intern("[unknown]");
    let order = texts.order();
    // Each root's and frame's names as ranks, once each rather than once per sample: every
    // segment as inside a stack, the last one of each stack made its rank at the end below.
    for root in roots.iter_mut().flatten().flatten() {
        order.rank_inner(&mut root.segments);
    }
    for frames in frame_names.iter_mut().flatten() {
        order.rank_inner(&mut frames.ids);
    }
    // The stacks go straight into one process per pid, their root frames (`comm-pid/tid`) the
    // command alone, as the `perf script` reader puts the collapse's.
    let mut placing = super::super::ByProcess::new(texts.names.len(), width, 0);
    let mut values = vec![0; width];
    let mut any = false;
    for (e, (roots, column)) in roots.iter().zip(columns).enumerate() {
        let Some(column) = *column else { continue };
        let merged = named_stacks(&chains, e, roots, &frame_names, &order, unknown);
        let sorted = merged.sorted();
        let mut segments = Vec::new();
        for i in sorted {
            segments.clear();
            segments.extend_from_slice(merged.key(i as usize));
            let total = merged.total(i as usize).period;
            order.unrank(&mut segments);
            texts.trim_ends(&mut segments);
            values.fill(0);
            values[column] = StackValue::from(total);
            placing.add(&segments, |s| texts.names[s as usize].as_str(), &values);
            any = true;
        }
    }
    drop(chains);
    if !any {
        return Ok(());
    }
    placing.finish(profile);
    Ok(())
}

/// The stacks of event `e`, named (by the ranks of their segments: see [`Order`]) and
/// added up.
fn named_stacks(
    chains: &StackLog,
    e: usize,
    roots: &[Option<Root>],
    frame_names: &[Option<FrameNames>; 2],
    order: &Order,
    unknown: u32,
) -> StackSet {
    let mut merged = StackSet::default();
    let mut named = Vec::new();
    for (key, period) in chains.iter().filter(|(key, _)| key[0] as usize == e) {
        let Some(root) = &roots[key[1] as usize] else { continue };
        let Some(frames) = &frame_names[usize::from(root.java)] else { continue };
        named.clear();
        named.extend_from_slice(&root.segments);
        for &frame in key[2..].iter().rev() {
            named.extend_from_slice(frames.of(frame));
        }
        if named.len() == root.segments.len() {
            // A sample without frames, as the `perf script` reader keeps one.
            named.push(order.inner[unknown as usize]);
        }
        order.rank_end(&mut named);
        merged.add(&named, period);
    }
    merged
}

/// The texts of stacks' segments (roots' and frames' names), each once, by id.
#[derive(Default)]
struct Texts {
    names: Vec<String>,
    index: FxHashMap<String, u32>,
}

impl Texts {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), id);
        id
    }

    /// The stack as the folded reader reads the collapse's line: white space trimmed from
    /// the start of the line and from the end of the stack (before its count).
    fn trim_ends(&mut self, segments: &mut [u32]) {
        let is_space = |c: char| matches!(c, ' ' | '\t' | '\r' | '\n' | '\x0b' | '\x0c');
        if let Some(first) = segments.first_mut() {
            let name = &self.names[*first as usize];
            if name.starts_with(is_space) {
                let trimmed = name.trim_start_matches(is_space).to_string();
                *first = self.intern(&trimmed);
            }
        }
        if let Some(last) = segments.last_mut() {
            let name = &self.names[*last as usize];
            if name.ends_with(is_space) {
                let trimmed = name.trim_end_matches(is_space).to_string();
                *last = self.intern(&trimmed);
            }
        }
    }

    /// The ranks that order stacks as the collapse orders its lines (by the text of the
    /// stack, its segments joined by `;`).
    fn order(&self) -> Order {
        // Each segment as it is inside a stack's text (followed by `;`) and at its end.
        let mut all: Vec<(u32, bool)> =
            (0..self.names.len() as u32).flat_map(|s| [(s, false), (s, true)]).collect();
        let text = |&(s, last): &(u32, bool)| {
            let name = self.names[s as usize].as_bytes().iter().copied();
            name.chain((!last).then_some(b';'))
        };
        all.sort_unstable_by(|a, b| text(a).cmp(text(b)));
        let mut order = Order {
            inner: vec![0; self.names.len()],
            last: vec![0; self.names.len()],
            segment: Vec::with_capacity(all.len()),
        };
        for (rank, &(s, last)) in all.iter().enumerate() {
            (if last { &mut order.last } else { &mut order.inner })[s as usize] = rank as u32;
            order.segment.push(s);
        }
        order
    }
}

/// Ranks of segments such that comparing two stacks' ranks, element by element, compares
/// their texts. A segment holds no `;`, so two texts first differ inside the first segment
/// where they differ, or right after it: at the `;` that follows a segment inside a text, or
/// at the end of the text, which sorts before any byte. So each segment has two ranks, among
/// all segments followed by `;` and all segments that end a text: `inner` for every segment
/// of a stack but its last, `last` for that one.
struct Order {
    inner: Vec<u32>,
    last: Vec<u32>,
    /// The segment of each rank.
    segment: Vec<u32>,
}

impl Order {
    /// A stack's segments (ids) made ranks.
    #[cfg(test)]
    fn rank(&self, stack: &mut [u32]) {
        self.rank_inner(stack);
        self.rank_end(stack);
    }

    /// Segments (ids) made their ranks inside a stack (each followed by `;`).
    fn rank_inner(&self, segments: &mut [u32]) {
        for s in segments {
            *s = self.inner[*s as usize];
        }
    }

    /// A stack of ranks inside a stack ([`Order::rank_inner`]): its last segment's made its
    /// rank at the end of a stack.
    fn rank_end(&self, stack: &mut [u32]) {
        if let Some(last) = stack.last_mut() {
            *last = self.last[self.segment[*last as usize] as usize];
        }
    }

    /// A stack's ranks made segments (ids) again.
    fn unrank(&self, stack: &mut [u32]) {
        for r in stack {
            *r = self.segment[*r as usize];
        }
    }
}

/// A thread's root as the collapse names it for one event: its `;`-separated segments.
struct Root {
    segments: Vec<u32>,
    /// Whether it starts with `java` (the collapse then tidies frames as Java's).
    java: bool,
}

/// The roots of the threads that `stacks` name (by index into `rec.threads`; `None`: the
/// collapse keeps no stack of that thread's samples), through one collapse of one sample
/// per thread, each with one frame that carries the thread's index.
fn thread_roots<'a>(
    rec: &Recording,
    stacks: impl Iterator<Item = (&'a [u32], u64)>,
    event: &str,
    texts: &mut Texts,
) -> Result<Vec<Option<Root>>> {
    let mut used = vec![false; rec.threads.len()];
    for (key, _) in stacks {
        used[key[0] as usize] = true;
    }
    let mut text = String::new();
    for (i, t) in rec.threads.iter().enumerate().filter(|(i, _)| used[*i]) {
        let comm = &rec.comms[t.comm as usize];
        let _ = write!(text, "{comm} {}/{} 0.0: 1 {event}:\n\t0 t{i} (m)\n\n", t.pid, t.tid);
    }
    let mut roots: Vec<Option<Root>> = (0..rec.threads.len()).map(|_| None).collect();
    for line in collapsed_lines(&text)? {
        let Some((root, marker)) = line.rsplit_once(';') else { continue };
        let Some(i) = marker.strip_prefix('t').and_then(|i| i.parse::<usize>().ok()) else { continue };
        if let Some(slot) = roots.get_mut(i) {
            let segments = root.split(';').map(|s| texts.intern(s)).collect();
            *slot = Some(Root { segments, java: root.starts_with("java") });
        }
    }
    Ok(roots)
}

/// The names each frame of a recording gets, root side first.
struct FrameNames {
    /// Frame `f`'s names are `ids[at[f]..at[f + 1]]`.
    at: Vec<u32>,
    ids: Vec<u32>,
}

impl FrameNames {
    fn of(&self, frame: u32) -> &[u32] {
        let f = frame as usize;
        &self.ids[self.at[f] as usize..self.at[f + 1] as usize]
    }
}

/// The names of every frame of the recording, as the collapse names a frame line of a
/// sample of a Java thread (`java`) or of any other. A frame line's names depend on its
/// function and file alone (its address only where the collapse is asked to show addresses),
/// so each distinct pair goes through one collapse of one sample each, on a thread that
/// carries the pair's index.
fn name_frames(rec: &Recording, names: &Names, java: bool, texts: &mut Texts) -> Result<FrameNames> {
    let comm = if java { "java" } else { "x" };
    let mut text = String::new();
    // Pairs by their file and function (ids: images of one file share its module name), so
    // that a frame costs no look-up of its text; equal texts of two pairs name alike. A frame
    // unwound from a user stack has the lines of its inline chain, as `perf script` prints
    // it: the pair's third part tells chains apart.
    let mut pairs: FxHashMap<(u32, u32, u32), u32> = FxHashMap::default();
    let mut chains: FxHashMap<&super::names::InlineChain, u32> = FxHashMap::default();
    let mut pair_of_frame = Vec::with_capacity(rec.frames.len());
    for (frame, &(image, _)) in rec.frames.iter().enumerate() {
        let file = match image {
            NO_IMAGE | NO_KERNEL_IMAGE => None,
            i => names.file_of(i as usize),
        };
        // None for a frame in no image or no function.
        let function = names.frame_function(rec, frame);
        let chain = names.inline_chain(frame);
        let chain_id = chain.map_or(u32::MAX, |c| {
            let next = chains.len() as u32;
            *chains.entry(c).or_insert(next)
        });
        let key = (file.map_or(u32::MAX, |f| f as u32), function.map_or(u32::MAX, |(f, _)| f), chain_id);
        let next = pairs.len() as u32;
        let pair = *pairs.entry(key).or_insert_with(|| {
            let function = function.map_or("[unknown]", |(_, name)| name);
            let file = match image {
                NO_IMAGE | NO_KERNEL_IMAGE => "[unknown]".into(),
                i => {
                    let key = &rec.images[i as usize];
                    module_name(&key.path, key.kernel)
                }
            };
            let _ = writeln!(text, "{comm} 1/{next} 0.0: 1 e:");
            match chain {
                Some(chain) => {
                    for (name, inlined) in chain {
                        let module = if *inlined { "inlined" } else { &file };
                        let _ = writeln!(text, "\t0 {name} ({module})");
                    }
                }
                None => {
                    let _ = writeln!(text, "\t0 {function} ({file})");
                }
            }
            text.push('\n');
            next
        });
        pair_of_frame.push(pair);
    }
    let mut of_pair: Vec<Vec<u32>> = vec![Vec::new(); pairs.len()];
    for line in collapsed_lines(&text)? {
        let Some((root, rest)) = line.split_once(';') else { continue };
        let Some(i) = root.rsplit_once('/').and_then(|(_, i)| i.parse::<usize>().ok()) else { continue };
        if let Some(slot) = of_pair.get_mut(i) {
            *slot = rest.split(';').map(|s| texts.intern(s)).collect();
        }
    }
    let mut at = Vec::with_capacity(pair_of_frame.len() + 1);
    let mut ids = Vec::new();
    at.push(0);
    for pair in pair_of_frame {
        ids.extend_from_slice(&of_pair[pair as usize]);
        at.push(ids.len() as u32);
    }
    Ok(FrameNames { at, ids })
}

/// The stacks of the collapse of `perf script`-style text, each without its count.
fn collapsed_lines(text: &str) -> Result<Vec<String>> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let folded = super::super::collapse(text.as_bytes())?;
    Ok(String::from_utf8_lossy(&folded)
        .lines()
        .filter_map(|l| l.rsplit_once(' ').map(|(stack, _)| stack.to_string()))
        .collect())
}

/// The file name `perf script` shows: the path, or `[name]` for a kernel module.
fn module_name(path: &str, kernel: bool) -> std::borrow::Cow<'_, str> {
    if kernel && !path.starts_with('[') {
        let file = path.rsplit('/').next().unwrap_or(path);
        let stem = file.split(".ko").next().unwrap_or(file);
        return format!("[{stem}]").into();
    }
    path.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stacks ordered by their segments' ranks are ordered as their texts, where a segment
    /// is a prefix of another and the next byte sorts before or after `;` or the end.
    #[test]
    fn ranks_order_stacks_as_their_texts() {
        let words = ["a", "a.part", "a b", "ab", "b", "a0", "", "java", "a;"];
        let mut texts = Texts::default();
        for w in words.iter().filter(|w| !w.contains(';')) {
            texts.intern(w);
        }
        let n = texts.names.len() as u32;
        // Every stack of one to three segments.
        let mut stacks: Vec<Vec<u32>> = Vec::new();
        for a in 0..n {
            stacks.push(vec![a]);
            for b in 0..n {
                stacks.push(vec![a, b]);
                for c in 0..n {
                    stacks.push(vec![a, b, c]);
                }
            }
        }
        let text =
            |s: &[u32]| s.iter().map(|&i| texts.names[i as usize].as_str()).collect::<Vec<_>>().join(";");
        let mut by_text = stacks.clone();
        by_text.sort_by_key(|s| text(s));
        let order = texts.order();
        let mut by_rank: Vec<Vec<u32>> = stacks
            .into_iter()
            .map(|mut s| {
                order.rank(&mut s);
                s
            })
            .collect();
        by_rank.sort();
        let by_rank: Vec<Vec<u32>> = by_rank
            .into_iter()
            .map(|mut s| {
                order.unrank(&mut s);
                s
            })
            .collect();
        let texts_by_rank: Vec<String> = by_rank.iter().map(|s| text(s)).collect();
        let texts_by_text: Vec<String> = by_text.iter().map(|s| text(s)).collect();
        assert_eq!(texts_by_rank, texts_by_text);
    }

    #[test]
    fn the_ends_of_a_stack_are_trimmed_as_the_folded_reader_trims_its_line() {
        let mut texts = Texts::default();
        let (root, middle, leaf) =
            (texts.intern(" x-1/2"), texts.intern("[unknown] "), texts.intern("[unknown] "));
        let mut stack = vec![root, middle, leaf];
        texts.trim_ends(&mut stack);
        let names: Vec<&str> = stack.iter().map(|&s| texts.names[s as usize].as_str()).collect();
        assert_eq!(names, ["x-1/2", "[unknown] ", "[unknown]"]);
    }
}
