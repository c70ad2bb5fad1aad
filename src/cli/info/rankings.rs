//! The rankings `cfghub info` prints: routines and loops by samples or by instructions
//! executed, images by cost, and the hottest addresses of images without blocks.
//!
//! Ranks are facts about a profile, computed here once; the command only formats them.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use cfghub_analysis::{executions, merge, names};
use cfghub_model::ir::{to_f64, Process, Profile, Routine, StackValue};

/// The sampled events of a profile: every event but `Ir` (which counts instructions, as block
/// counts do).
pub fn sampled_events(profile: &Profile) -> Vec<usize> {
    (0..profile.events.len()).filter(|&e| profile.events[e].name != "Ir").collect()
}

/// A routine or a loop, with what it is ranked by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranked {
    /// Index of the image in the process.
    pub image: usize,
    /// Index of the routine among the image's routines.
    pub routine: usize,
    /// For a loop: its index among the routine's loops.
    pub r#loop: Option<usize>,
    /// The routine's name ([`names::routine_name`]).
    pub name: String,
    /// Instructions executed in its blocks.
    pub instructions: u64,
    /// Per sampled event ([`sampled_events`], in order): the samples at its blocks' addresses.
    /// Empty when the profile has no sampled event.
    pub samples: Vec<u64>,
}

impl Ranked {
    /// What ranks first: the samples of the first sampled event (0 without one).
    fn rank(&self) -> u64 {
        self.samples.first().copied().unwrap_or(0)
    }
}

/// The `top` routines and the `top` loops of a process (`routines`: every image's, as
/// [`cfghub_analysis::routines::all`] gives them), hottest first: by the first sampled event when the
/// profile has one, then by instructions executed, then by name (routines) or by the display
/// id of the head block (loops).
pub fn routines_and_loops(
    profile: &Profile,
    process: &Process,
    routines: &[Cow<'_, [Routine]>],
    top: usize,
) -> (Vec<Ranked>, Vec<Ranked>) {
    let events = profile.events.len();
    let sampled = sampled_events(profile);
    let mut ranked_routines = Vec::new();
    let mut ranked_loops = Vec::new();
    for (i, image) in process.images.iter().enumerate() {
        let Some(rs) = routines.get(i) else { continue };
        if rs.is_empty() {
            continue;
        }
        let per_block =
            (!sampled.is_empty() && !image.blocks.is_empty()).then(|| merge::block_costs(image, events).0);
        let samples_of = |nodes: &[u32]| -> Vec<u64> {
            let Some(blocks) = &per_block else { return Vec::new() };
            sampled.iter().map(|&e| nodes.iter().map(|&b| blocks[b as usize][e]).sum()).collect()
        };
        let index = names::SymbolIndex::new(image);
        for (r, routine) in rs.iter().enumerate() {
            let name = names::routine_name(profile, image, &index, routine);
            ranked_routines.push(Ranked {
                image: i,
                routine: r,
                r#loop: None,
                name: name.clone(),
                instructions: executions::executed_in(image, &routine.nodes),
                samples: samples_of(&routine.nodes),
            });
            for (k, l) in routine.loops.iter().enumerate() {
                ranked_loops.push(Ranked {
                    image: i,
                    routine: r,
                    r#loop: Some(k),
                    name: name.clone(),
                    instructions: executions::executed_in(image, &l.nodes),
                    samples: samples_of(&l.nodes),
                });
            }
        }
    }
    ranked_routines.sort_by(|a, b| {
        b.rank().cmp(&a.rank()).then(b.instructions.cmp(&a.instructions)).then_with(|| a.name.cmp(&b.name))
    });
    ranked_routines.truncate(top);
    let head = |x: &Ranked| {
        let image = &process.images[x.image];
        let l = x.r#loop.map_or(0, |k| routines[x.image][x.routine].loops[k].head);
        image.display_id(l)
    };
    ranked_loops.sort_by(|a, b| {
        b.rank().cmp(&a.rank()).then(b.instructions.cmp(&a.instructions)).then_with(|| head(a).cmp(&head(b)))
    });
    ranked_loops.truncate(top);
    (ranked_routines, ranked_loops)
}

/// The images of a process that have costs, by their first event's total (largest first),
/// then by base name: `dcpiprof -i`'s order.
pub fn images_by_cost(profile: &Profile, process: &Process) -> Vec<usize> {
    let mut images: Vec<(Option<u64>, String, usize)> = process
        .images
        .iter()
        .enumerate()
        .filter(|(_, image)| !image.costs.is_empty())
        .map(|(i, image)| {
            let first = (!profile.events.is_empty()).then(|| image.costs.total(0));
            (first, names::image_base_name(profile, image), i)
        })
        .collect();
    // Stable, as the images come.
    images.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    images.into_iter().map(|(_, _, i)| i).collect()
}

/// A hot address: its cost row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotAddress {
    pub image: usize,
    /// The row of the image's cost table.
    pub row: usize,
    /// The runtime address (load address + offset).
    pub address: u64,
}

/// The `top` cost rows of images without blocks, by their first event's value (largest
/// first, then lower address, image and row first); rows without an offset or without any
/// cost are left out. The `top` largest are kept while scanning, so a profile of millions of
/// addresses costs little.
pub fn hottest_addresses(process: &Process, events: usize, top: usize) -> Vec<HotAddress> {
    // (first event's value, address (lower first), image, row)
    type Hot = (u64, Reverse<u64>, usize, usize);
    let mut hottest: BinaryHeap<Reverse<Hot>> = BinaryHeap::new();
    if events == 0 || top == 0 {
        return Vec::new();
    }
    for (i, image) in process.images.iter().enumerate() {
        if !image.blocks.is_empty() {
            continue;
        }
        // Nothing here fails: the walk's error type has no value.
        let Ok(()) = image.costs.try_for_each_row_values(|k, offset, row| {
            let Some(offset) = offset else { return Ok::<(), std::convert::Infallible>(()) };
            if row.iter().all(|&v| v == 0) {
                return Ok(());
            }
            let address = image.load_addr.wrapping_add(offset);
            let hot = Reverse((row[0], Reverse(address), i, k));
            if hottest.len() < top {
                hottest.push(hot);
            } else if let Some(mut coldest) = hottest.peek_mut() {
                // Full: only an address hotter than the coldest kept one gets in (no tie:
                // `(i, k)` is unique), replacing it in place.
                if hot < *coldest {
                    *coldest = hot;
                }
            }
            Ok(())
        });
    }
    let mut hottest: Vec<Hot> = hottest.into_iter().map(|r| r.0).collect();
    hottest.sort_unstable_by(|a, b| b.cmp(a));
    hottest.into_iter().map(|(_, Reverse(address), image, row)| HotAddress { image, row, address }).collect()
}

/// A function (stack frame) of a process's stacks with its costs, per event: `self_cost` of
/// the stacks it ends, `total` of the stacks it is on (each stack once however often the
/// frame repeats on it), as `go tool pprof -top` gives them (flat and cum).
#[derive(Clone, Debug, PartialEq)]
pub struct StackFunction {
    pub frame: cfghub_model::ir::FrameId,
    pub self_cost: Vec<f64>,
    pub total: Vec<f64>,
}

/// The totals of a process's stacks per event, and its `top` functions ranked by the self cost
/// of event `by` (then by total, then by name), hottest first.
///
/// The sums are exact ([`cfghub_analysis::stacks::frame_totals`], one walk of the prefix tree)
/// and shown as numbers of the event's unit.
pub fn stack_functions(
    profile: &Profile,
    process: &Process,
    by: usize,
    top: usize,
) -> (Vec<f64>, Vec<StackFunction>) {
    let events = profile.events.len();
    let frames = profile.frames.len();
    let stacks = &process.stacks;
    let sums = cfghub_analysis::stacks::frame_totals(stacks, frames);
    let w = stacks.width();
    let decimals = stacks.decimals(0..events);
    // Per event, missing columns 0.
    let shown = |values: &[StackValue]| -> Vec<f64> {
        (0..events).map(|e| values.get(e).map_or(0.0, |&v| to_f64(v, decimals[e]))).collect()
    };
    let exact = |values: &[StackValue], e: usize| values.get(e).copied().unwrap_or(0);
    let mut functions: Vec<(StackFunction, StackValue, StackValue)> = (0..frames)
        .filter(|&f| sums.seen[f])
        .map(|f| {
            let (own, total) = (&sums.self_cost[f * w..(f + 1) * w], &sums.total[f * w..(f + 1) * w]);
            let function = StackFunction {
                frame: f as cfghub_model::ir::FrameId,
                self_cost: shown(own),
                total: shown(total),
            };
            (function, exact(own, by), exact(total, by))
        })
        .collect();
    functions.sort_by(|(a, a_own, a_total), (b, b_own, b_total)| {
        b_own
            .cmp(a_own)
            .then(b_total.cmp(a_total))
            .then_with(|| profile.frames.get(a.frame).cmp(profile.frames.get(b.frame)))
    });
    functions.truncate(top);
    (shown(&sums.totals), functions.into_iter().map(|f| f.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, CostTable, Event, Image, Loop, Symbol};

    fn event(name: &str) -> Event {
        Event { name: name.into(), ..Event::default() }
    }

    /// An image of four blocks at 0x10, 0x20, 0x30, 0x40 (counts given), with routines
    /// `a` (blocks 0-1, a loop on block 1) and `b` (blocks 2-3, a loop on block 3).
    fn image(counts: [u64; 4]) -> Image {
        let blocks = (0..4)
            .map(|k| Block {
                id: k as u64 + 1,
                offset: 0x10 * (k as u64 + 1),
                size: 4,
                num_instrs: 2,
                count: Some(counts[k]),
                ..Block::default()
            })
            .collect();
        let symbol = |name: &str, offset| Symbol {
            name: name.into(),
            offset: Some(offset),
            size: Some(0x20),
            file: None,
        };
        let looping = |b| Loop { head: b, nodes: vec![b], back_edge_sources: vec![b], ..Loop::default() };
        let routine =
            |entry, loops| Routine { entry, nodes: vec![entry, entry + 1], loops, ..Routine::default() };
        Image {
            blocks,
            symbols: vec![symbol("a", 0x10), symbol("b", 0x30)],
            routines: Some(vec![routine(0, vec![looping(1)]), routine(2, vec![looping(3)])]),
            ..Image::default()
        }
    }

    /// The routines the images state, with their loops.
    fn given(process: &Process) -> Vec<Cow<'_, [Routine]>> {
        process.images.iter().map(|i| Cow::Borrowed(i.routines.as_deref().unwrap_or(&[]))).collect()
    }

    fn names(r: &[Ranked]) -> Vec<(&str, u64, Vec<u64>)> {
        r.iter().map(|x| (x.name.as_str(), x.instructions, x.samples.clone())).collect()
    }

    #[test]
    fn routines_and_loops_rank_by_instructions_then_name() {
        let profile = Profile { events: vec![event("Ir")], ..Profile::default() };
        let process = Process { images: vec![image([1, 5, 3, 3])], ..Process::default() };
        let rs = given(&process);
        let (routines, loops) = routines_and_loops(&profile, &process, &rs, 10);
        assert_eq!(names(&routines), [("a", 12, vec![]), ("b", 12, vec![])]);
        // Loops tie too: the lower head id first.
        assert_eq!(names(&loops), [("a", 10, vec![]), ("b", 6, vec![])]);
        assert_eq!(loops[0].r#loop, Some(0));
        let (top, _) = routines_and_loops(&profile, &process, &rs, 1);
        assert_eq!(names(&top), [("a", 12, vec![])]);
    }

    #[test]
    fn samples_rank_before_instructions() {
        let profile = Profile { events: vec![event("Ir"), event("cycles")], ..Profile::default() };
        let mut img = image([9, 9, 1, 1]);
        let mut costs = CostTable::new();
        // 7 samples in b's loop block, 2 in a's entry.
        costs.push_parts(Some(0x40), None, None, None, &[0, 7]);
        costs.push_parts(Some(0x12), None, None, None, &[0, 2]);
        img.costs = costs;
        let process = Process { images: vec![img], ..Process::default() };
        let rs = given(&process);
        let (routines, loops) = routines_and_loops(&profile, &process, &rs, 10);
        assert_eq!(names(&routines), [("b", 4, vec![7]), ("a", 36, vec![2])]);
        assert_eq!(names(&loops), [("b", 2, vec![7]), ("a", 18, vec![0])]);
    }

    #[test]
    fn images_rank_by_their_first_event_then_name() {
        let profile = Profile { events: vec![event("cycles")], ..Profile::default() };
        let with = |n: u64| {
            let mut costs = CostTable::new();
            costs.push_parts(Some(0), None, None, None, &[n]);
            Image { costs, ..Image::default() }
        };
        let process =
            Process { images: vec![with(1), Image::default(), with(5), with(1)], ..Process::default() };
        // Unnamed images are `image<ID>`, all id 0 here: the tie keeps their order.
        assert_eq!(images_by_cost(&profile, &process), [2, 0, 3]);
    }

    #[test]
    fn hottest_addresses_keep_the_top_by_value_then_lower_address() {
        let mut costs = CostTable::new();
        for (offset, v) in [(0x10, 3), (0x20, 9), (0x30, 3), (0x40, 0), (0x50, 1)] {
            costs.push_parts(Some(offset), None, None, None, &[v]);
        }
        costs.push_parts(None, None, None, None, &[100]);
        let image = Image { load_addr: 0x1000, costs, ..Image::default() };
        let process = Process { images: vec![image], ..Process::default() };
        let hot: Vec<(u64, usize)> =
            hottest_addresses(&process, 1, 3).iter().map(|h| (h.address, h.row)).collect();
        assert_eq!(hot, [(0x1020, 1), (0x1010, 0), (0x1030, 2)]);
        assert!(hottest_addresses(&process, 1, 0).is_empty());
        // Images with blocks rank by their blocks instead.
        let mut with_blocks = process.clone();
        with_blocks.images[0].blocks.push(Block::default());
        assert!(hottest_addresses(&with_blocks, 1, 3).is_empty());
    }
}
