//! Merging sampled addresses (DCPI) with a control-flow graph's basic blocks (DCFG): what
//! DCPI's `dcpicalc` estimated, measured: samples per executed instruction, per block, routine
//! and loop.
//!
//! Rules:
//! - Each sample image is matched to a graph image by path, else by file base name, or to the
//!   one named with [`MergeOptions::image`].
//! - Addresses are relocated: the sample image's text start sits at the graph image's load
//!   address, or at [`MergeOptions::base`] when given (an address in the graph's space).
//! - A sample belongs to the block that contains its address; where blocks overlap (a jump into
//!   the middle of a block makes a second block sharing its tail), to the one that starts last.
//!   It keeps the source file and line of its address (the graph's source lines).
//! - Samples in no block stay in the model and its totals, at their address under the function
//!   [`OUTSIDE_BLOCKS`] of their image (for a sample image no graph image matches, an image of
//!   its own is added); they are also listed in [`MergeReport::unattributed`].
//! - A merge in which no sample image matches a graph image is refused, naming both sides'
//!   images.
//! - The result is the graph with every sample event added to [`Profile::events`] and the
//!   samples as costs at instruction offsets in [`Image::costs`](cfghub_model::ir::Image), one cost per
//!   address. Instructions executed stay where the model keeps them: `num_instrs x count` of
//!   each block, from which every writer derives `Ir` (so `Ir` is never counted twice).

use std::collections::HashMap;

use super::combine::sum_equal_offsets;
use super::source::SourceIndex;
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{CostTable, FileId, Image, Profile, Symbol, Values};

/// The function under which samples that fall in no executed block are kept.
pub const OUTSIDE_BLOCKS: &str = "[samples in no executed block]";

/// Where samples go.
#[derive(Clone, Debug, Default)]
pub struct MergeOptions {
    /// The graph image (path or base name) the samples belong to; needed when names differ.
    pub image: Option<String>,
    /// The address, in the graph's address space, of the sample image's text start.
    pub base: Option<u64>,
}

/// A sampled address no block contains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unattributed {
    /// The sample image's name.
    pub image: String,
    /// The sampled address as the profile gives it (text start + offset).
    pub address: u64,
    /// Samples per sample event.
    pub values: Vec<u64>,
}

/// What happened to the samples.
#[derive(Clone, Debug, Default)]
pub struct MergeReport {
    /// The sample events, in the order of the values below.
    pub events: Vec<String>,
    /// Each sample image and the graph image it was matched to (`None`: no match).
    pub matches: Vec<(String, Option<String>)>,
    /// Samples attributed to blocks, per event.
    pub attributed: Vec<u64>,
    /// Samples in no block, per event.
    pub unattributed_totals: Vec<u64>,
    /// Distinct addresses in no block.
    pub unattributed_addresses: usize,
    /// The first [`MergeReport::LISTED`] of those addresses, ascending per image.
    pub unattributed: Vec<Unattributed>,
}

impl MergeReport {
    /// How many unattributed addresses are listed individually.
    pub(crate) const LISTED: usize = 10_000;
}

/// The blocks of one image as disjoint address ranges, each owned by one block: where blocks
/// overlap, the block that starts last owns the overlap.
#[derive(Clone, Debug, Default)]
pub struct BlockIndex {
    starts: Vec<u64>,
    ends: Vec<u64>,
    blocks: Vec<u32>,
}

impl BlockIndex {
    /// The index of `image`'s blocks; blocks of size 0 own no range.
    pub fn new(image: &Image) -> Self {
        let mut order: Vec<u32> =
            (0..image.blocks.len() as u32).filter(|&b| image.blocks[b as usize].size > 0).collect();
        let span = |b: u32| {
            let block = &image.blocks[b as usize];
            (block.offset, block.offset.saturating_add(u64::from(block.size)))
        };
        // By start; for equal starts the longer first, so the shorter ends up innermost.
        order.sort_by(|&a, &b| {
            let (sa, ea) = span(a);
            let (sb, eb) = span(b);
            sa.cmp(&sb).then(eb.cmp(&ea)).then(a.cmp(&b))
        });
        let mut index = BlockIndex::default();
        let mut stack: Vec<(u64, u32)> = Vec::new();
        let mut cursor = 0u64;
        let emit = |index: &mut BlockIndex, stack: &mut Vec<(u64, u32)>, cursor: &mut u64, until: u64| {
            while *cursor < until {
                let Some(&(end, block)) = stack.last() else { break };
                if end <= *cursor {
                    stack.pop();
                    continue;
                }
                let seg_end = end.min(until);
                index.starts.push(*cursor);
                index.ends.push(seg_end);
                index.blocks.push(block);
                *cursor = seg_end;
            }
            *cursor = (*cursor).max(until);
        };
        for b in order {
            let (start, end) = span(b);
            emit(&mut index, &mut stack, &mut cursor, start);
            stack.push((end, b));
        }
        emit(&mut index, &mut stack, &mut cursor, u64::MAX);
        index
    }

    /// The block owning `offset`.
    pub fn find(&self, offset: u64) -> Option<u32> {
        let i = self.starts.partition_point(|&s| s <= offset).checked_sub(1)?;
        (offset < self.ends[i]).then(|| self.blocks[i])
    }

    /// Like [`BlockIndex::find`], starting from the range `hint` (the previous answer's range)
    /// and walking forward: linear over ascending offsets.
    fn find_from(&self, offset: u64, hint: &mut usize) -> Option<u32> {
        let mut i = *hint;
        if i >= self.starts.len() || self.starts[i] > offset {
            i = self.starts.partition_point(|&s| s <= offset).checked_sub(1)?;
        } else {
            let mut steps = 0;
            while i + 1 < self.starts.len() && self.starts[i + 1] <= offset {
                i += 1;
                steps += 1;
                if steps == 16 {
                    i = self.starts.partition_point(|&s| s <= offset) - 1;
                    break;
                }
            }
        }
        *hint = i;
        (offset < self.ends[i]).then(|| self.blocks[i])
    }
}

/// The costs of an image summed per block (by the address rules of [`BlockIndex`]), each
/// vector `events` long, and the costs at addresses no block contains.
pub fn block_costs(image: &Image, events: usize) -> (Vec<Vec<u64>>, Vec<u64>) {
    let index = BlockIndex::new(image);
    let mut per_block = vec![Vec::new(); image.blocks.len()];
    let mut outside = vec![0u64; events];
    let mut hint = 0;
    for row in 0..image.costs.len() {
        let slot = match image.costs.offset(row).and_then(|o| index.find_from(o, &mut hint)) {
            Some(b) => {
                let v = &mut per_block[b as usize];
                if v.is_empty() {
                    *v = vec![0u64; events];
                }
                v
            }
            None => &mut outside,
        };
        for (e, s) in slot.iter_mut().enumerate() {
            *s = s.saturating_add(image.costs.value(row, e));
        }
    }
    for v in &mut per_block {
        if v.is_empty() {
            *v = vec![0; events];
        }
    }
    (per_block, outside)
}

/// The costs of one graph image being built, in ascending order as samples usually arrive;
/// samples out of order fall back to a sort at the end.
#[derive(Default)]
struct Sink {
    costs: CostTable,
    sorted: bool,
    last_offset: u64,
}

impl Sink {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        offset: u64,
        symbol: Option<u32>,
        file: Option<FileId>,
        line: Option<u32>,
        values: &[u64],
        expected: usize,
    ) {
        if self.costs.is_empty() {
            self.costs.widen(values.len());
            self.costs.reserve(expected);
            self.sorted = true;
        } else {
            let last = self.costs.len() - 1;
            if self.last_offset == offset && self.costs.symbol(last) == symbol {
                self.costs.add_to_last(values);
                return;
            }
            if self.last_offset > offset {
                self.sorted = false;
            }
        }
        self.last_offset = offset;
        self.costs.push_parts(Some(offset), symbol, file, line, values);
    }

    fn finish(mut self, events: usize) -> CostTable {
        if !self.sorted {
            sum_equal_offsets(&mut self.costs, events);
        }
        self.costs
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Merges the samples of `samples` into the graph `graph` (see the module documentation).
pub fn merge(
    mut graph: Profile,
    samples: &Profile,
    options: &MergeOptions,
) -> Result<(Profile, MergeReport)> {
    let event_map = add_sample_events(&mut graph, samples)?;
    let events = graph.events.len();
    let mut report = MergeReport {
        events: samples.events.iter().map(|e| e.name.clone()).collect(),
        attributed: vec![0; samples.events.len()],
        unattributed_totals: vec![0; samples.events.len()],
        ..MergeReport::default()
    };
    let sample_images: Vec<&Image> = samples.processes.iter().flat_map(|p| &p.images).collect();
    let targets = match_images(&graph, samples, &sample_images, options)?;
    let mut placement = Placement {
        events,
        event_map,
        sinks: graph
            .processes
            .iter()
            .map(|p| (0..p.images.len()).map(|_| Sink::default()).collect())
            .collect(),
        sources: HashMap::new(),
        outside: HashMap::new(),
        unmatched: Vec::new(),
    };
    let mut indexes: HashMap<(usize, usize), BlockIndex> = HashMap::new();
    for (image, &target) in sample_images.iter().zip(&targets) {
        let name = samples.image_name(image);
        report
            .matches
            .push((name.clone(), target.map(|(p, i)| graph.image_name(&graph.processes[p].images[i]))));
        let index = target.map(|t| {
            &*indexes.entry(t).or_insert_with(|| BlockIndex::new(&graph.processes[t.0].images[t.1]))
        });
        placement.place_image(&mut graph, samples, image, &name, target, index, options, &mut report);
    }
    placement.finish(&mut graph, samples);
    Ok((graph, report))
}

/// Adds every sample event to the graph's events, after its own; where each went. An event
/// the graph already has is refused.
fn add_sample_events(graph: &mut Profile, samples: &Profile) -> Result<Vec<usize>> {
    let mut event_map = Vec::new();
    for e in &samples.events {
        if graph.event_index(&e.name).is_some() {
            return Err(Error::usage(format!("the graph already has samples of event '{}'", e.name))
                .with_hint("merge each event once"));
        }
        graph.events.push(e.clone());
        event_map.push(graph.events.len() - 1);
    }
    Ok(event_map)
}

/// The graph image (process and image index) of each sample image: the one `--image` names,
/// else the one of the same path, else the only one of the same base name. A merge in which
/// no sample image with samples matches is refused, naming both sides' images.
fn match_images(
    graph: &Profile,
    samples: &Profile,
    sample_images: &[&Image],
    options: &MergeOptions,
) -> Result<Vec<Option<(usize, usize)>>> {
    // Graph images by path and by base name.
    let mut by_path: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut by_base: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (p, process) in graph.processes.iter().enumerate() {
        for (i, image) in process.images.iter().enumerate() {
            if let Some(f) = image.file {
                let path = graph.files.get(f);
                by_path.entry(path).or_insert((p, i));
                by_base.entry(base_name(path)).or_default().push((p, i));
            }
        }
    }
    let graph_images: Vec<String> =
        graph.processes.iter().flat_map(|p| &p.images).map(|i| graph.image_name(i)).collect();
    if options.image.is_some() && sample_images.len() > 1 {
        return Err(Error::usage(
            "--image names the graph image of a single sample image, but the samples cover several",
        )
        .with_hint("merge one sample image at a time, or name the images the same way in both profiles"));
    }
    let find = |name: &str| -> Result<Option<(usize, usize)>> {
        if let Some(&t) = by_path.get(name) {
            return Ok(Some(t));
        }
        match by_base.get(base_name(name)).map(|v| v.as_slice()) {
            Some([one]) => Ok(Some(*one)),
            Some(many) if many.len() > 1 => Err(Error::usage(format!(
                "several graph images are called {}; name one by its full path with --image",
                base_name(name)
            ))),
            _ => Ok(None),
        }
    };
    let mut targets = Vec::with_capacity(sample_images.len());
    for image in sample_images {
        let target = match &options.image {
            Some(wanted) => Some(find(wanted)?.ok_or_else(|| {
                Error::usage(format!("the graph has no image {wanted}"))
                    .with_hint(format!("its images: {}", graph_images.join(", ")))
            })?),
            None if image.file.is_some() => find(&samples.image_name(image))?,
            None => None,
        };
        targets.push(target);
    }
    let with_samples = |k: usize| sample_images[k].costs.any_value();
    if (0..sample_images.len()).any(with_samples)
        && (0..sample_images.len()).filter(|&k| with_samples(k)).all(|k| targets[k].is_none())
    {
        let names: Vec<String> = sample_images.iter().map(|i| samples.image_name(i)).collect();
        return Err(Error::usage(format!(
            "no sample image matches a graph image: the samples are of {}; the graph's images are {}",
            names.join(", "),
            graph_images.join(", ")
        ))
        .with_hint("name the graph image the samples belong to with --image (and --base if it moved)"));
    }
    Ok(targets)
}

/// The samples on their way into the graph: the costs gathered for each graph image, and the
/// sample images no graph image matches.
struct Placement {
    /// Event columns of the merged profile.
    events: usize,
    /// The merged profile's column of each sample event.
    event_map: Vec<usize>,
    /// Costs gathered per graph image, by process and image.
    sinks: Vec<Vec<Sink>>,
    sources: HashMap<(usize, usize), SourceIndex>,
    /// The function holding samples outside blocks, per graph image, once added.
    outside: HashMap<(usize, usize), u32>,
    /// Sample images no graph image matches: (image, its samples), added to the graph at the end.
    unmatched: Vec<(Option<FileId>, u64, CostTable)>,
}

impl Placement {
    /// Places the samples of sample image `image` (named `name`) in graph image `target`,
    /// whose blocks `index` finds: each in its block, else outside the blocks.
    #[allow(clippy::too_many_arguments)]
    fn place_image(
        &mut self,
        graph: &mut Profile,
        samples: &Profile,
        image: &Image,
        name: &str,
        target: Option<(usize, usize)>,
        index: Option<&BlockIndex>,
        options: &MergeOptions,
        report: &mut MergeReport,
    ) {
        // Offset in the graph image = (base - load address) + offset from the text start.
        let shift: i128 = match target.map(|(p, i)| &graph.processes[p].images[i]) {
            Some(g) => options.base.unwrap_or(g.load_addr) as i128 - g.load_addr as i128,
            None => 0,
        };
        if target.is_none() {
            let mut table = CostTable::new();
            table.widen(self.events);
            self.unmatched.push((image.file, image.load_addr, table));
        }
        let mut hint = 0usize;
        let costs = &image.costs;
        for row in 0..costs.len() {
            let row_values = costs.values(row);
            if row_values.iter().all(|&v| v == 0) {
                continue;
            }
            let Some(offset) = costs.offset(row) else { continue };
            let relocated = shift + offset as i128;
            let in_space = (0..=u64::MAX as i128).contains(&relocated);
            let block = match index {
                Some(ix) if in_space => ix.find_from(relocated as u64, &mut hint),
                _ => None,
            };
            // Inline for up to two events: no allocation per sample.
            let mut values = Values::from_elem(0, self.events);
            for (j, &v) in row_values.iter().enumerate() {
                if let Some(&e) = self.event_map.get(j) {
                    values[e] = v;
                }
            }
            match (block, target) {
                (Some(_), Some((p, i))) => {
                    for (j, &v) in row_values.iter().enumerate().take(self.event_map.len()) {
                        report.attributed[j] = report.attributed[j].saturating_add(v);
                    }
                    let g = &graph.processes[p].images[i];
                    let src = self.sources.entry((p, i)).or_insert_with(|| SourceIndex::new(g));
                    let place =
                        src.overlapping(g, relocated as u64, 1).next().map(|l| &g.source_lines[l as usize]);
                    let (file, line) = place.map_or((None, None), |l| (l.file, Some(l.line)));
                    self.sinks[p][i].push(relocated as u64, None, file, line, &values, costs.len());
                }
                _ => {
                    let at = if in_space { Some(relocated as u64) } else { None };
                    self.place_outside(graph, target, at, offset, &values, costs.len());
                    let values: Vec<u64> = (0..samples.events.len()).map(|j| costs.value(row, j)).collect();
                    for (t, v) in report.unattributed_totals.iter_mut().zip(&values) {
                        *t = t.saturating_add(*v);
                    }
                    report.unattributed_addresses += 1;
                    if report.unattributed.len() < MergeReport::LISTED {
                        report.unattributed.push(Unattributed {
                            image: name.to_string(),
                            address: image.load_addr.wrapping_add(offset),
                            values,
                        });
                    }
                }
            }
        }
    }

    /// Keeps a sample in no block at its address (`relocated` in the graph image's space, when
    /// it falls in it; `offset` from the sample image's text start) under a function that says
    /// where it is: [`OUTSIDE_BLOCKS`] of graph image `target`, or of the image of its own a
    /// sample image without a match gets.
    fn place_outside(
        &mut self,
        graph: &mut Profile,
        target: Option<(usize, usize)>,
        relocated: Option<u64>,
        offset: u64,
        values: &[u64],
        expected: usize,
    ) {
        match (target, relocated) {
            (Some((p, i)), Some(at)) => {
                let symbols = &mut graph.processes[p].images[i].symbols;
                let symbol = *self.outside.entry((p, i)).or_insert_with(|| {
                    symbols.push(Symbol { name: OUTSIDE_BLOCKS.into(), ..Symbol::default() });
                    (symbols.len() - 1) as u32
                });
                self.sinks[p][i].push(at, Some(symbol), None, None, values, expected);
            }
            (Some(_), None) => {}
            (None, _) => {
                if let Some(u) = self.unmatched.last_mut() {
                    u.2.push_parts(Some(offset), Some(0), None, None, values);
                }
            }
        }
    }

    /// Puts the gathered costs in their graph images (after any costs an image had), and the
    /// sample images of no graph image in images of their own in the first process.
    fn finish(mut self, graph: &mut Profile, samples: &Profile) {
        let events = self.events;
        for (p, process) in graph.processes.iter_mut().enumerate() {
            for (i, image) in process.images.iter_mut().enumerate() {
                let mut costs = std::mem::take(&mut self.sinks[p][i]).finish(events);
                if costs.is_empty() && image.costs.is_empty() {
                    continue;
                }
                if !image.costs.is_empty() {
                    costs.append(&image.costs);
                    sum_equal_offsets(&mut costs, events);
                }
                image.costs = costs;
            }
        }
        if let Some(process) = graph.processes.first_mut() {
            for (file, load_addr, mut costs) in self.unmatched {
                let file = file.map(|f| graph.files.intern(samples.files.get(f)));
                sum_equal_offsets(&mut costs, events);
                process.images.push(Image {
                    id: process.images.iter().map(|i| i.id).max().map_or(0, |m| m + 1),
                    file,
                    load_addr,
                    symbols: vec![Symbol { name: OUTSIDE_BLOCKS.into(), ..Symbol::default() }],
                    costs,
                    ..Image::default()
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, Cost, Event, Process};

    fn graph() -> Profile {
        let mut g = Profile::default();
        let file = g.files.intern("/bin/app");
        let block = |id, offset, size, count| Block {
            id,
            offset,
            size,
            num_instrs: 2,
            count: Some(count),
            ..Block::default()
        };
        // Block 1 [0x10, 0x30) and block 2 [0x20, 0x30) share a tail; block 3 [0x40, 0x48);
        // block 4 starts where block 1 does.
        let blocks = vec![
            block(1, 0x10, 0x20, 5),
            block(2, 0x20, 0x10, 7),
            block(3, 0x40, 8, 1),
            block(4, 0x10, 4, 1),
        ];
        g.processes.push(Process {
            images: vec![Image { file: Some(file), load_addr: 0x1000, blocks, ..Image::default() }],
            ..Process::default()
        });
        g
    }

    fn samples(offsets: &[(u64, u64)]) -> Profile {
        let mut s = Profile { events: vec![Event::new("cycles")], ..Profile::default() };
        let file = s.files.intern("/elsewhere/app");
        let costs = offsets
            .iter()
            .map(|&(o, v)| Cost { offset: Some(o), values: smallvec::smallvec![v], ..Cost::default() })
            .collect();
        s.processes.push(Process {
            images: vec![Image { file: Some(file), load_addr: 0x9000, costs, ..Image::default() }],
            ..Process::default()
        });
        s
    }

    #[test]
    fn overlapping_blocks_give_the_overlap_to_the_later_start() {
        let g = graph();
        let index = BlockIndex::new(&g.processes[0].images[0]);
        let owner: Vec<Option<u32>> = [0x0f, 0x10, 0x13, 0x14, 0x1f, 0x20, 0x2f, 0x30, 0x40, 0x47, 0x48]
            .iter()
            .map(|&o| index.find(o))
            .collect();
        assert_eq!(
            owner,
            [None, Some(3), Some(3), Some(0), Some(0), Some(1), Some(1), None, Some(2), Some(2), None]
        );
    }

    #[test]
    fn samples_in_any_order_land_in_their_blocks() {
        for order in [
            vec![(0x12, 1), (0x14, 2), (0x24, 3), (0x44, 4), (0x60, 5)],
            vec![(0x44, 4), (0x60, 5), (0x24, 3), (0x12, 1), (0x14, 2)],
        ] {
            // Matched by base name; the text start sits at the load address.
            let (merged, report) = merge(graph(), &samples(&order), &MergeOptions::default()).unwrap();
            assert_eq!(report.attributed, [10]);
            assert_eq!(report.unattributed_totals, [5]);
            assert_eq!(
                report.unattributed,
                [Unattributed { image: "/elsewhere/app".into(), address: 0x9060, values: vec![5] }]
            );
            let image = &merged.processes[0].images[0];
            assert!(
                (1..image.costs.len()).all(|r| image.costs.offset(r - 1) < image.costs.offset(r)),
                "one cost per offset, ascending"
            );
            let (per_block, outside) = block_costs(image, 1);
            assert_eq!(per_block, [vec![2], vec![3], vec![4], vec![1]]);
            // The sample in no block stays, under a function that says so.
            assert_eq!(outside, [5]);
            let row = (0..image.costs.len()).find(|&r| image.costs.offset(r) == Some(0x60)).unwrap();
            assert_eq!(image.symbols[image.costs.symbol(row).unwrap() as usize].name, OUTSIDE_BLOCKS);
            assert_eq!(merged.events, [Event::new("cycles")], "Ir stays in the blocks");
        }
    }

    #[test]
    fn base_relocates_and_unknown_images_are_refused() {
        let options = MergeOptions { image: Some("app".into()), base: Some(0x1000 + 0x30) };
        let (_, report) = merge(graph(), &samples(&[(0x10, 9)]), &options).unwrap();
        // 0x30 + 0x10 = 0x40: block 3.
        assert_eq!(report.attributed, [9]);
        let options = MergeOptions { image: Some("nosuch".into()), base: None };
        assert!(merge(graph(), &samples(&[(0x10, 9)]), &options).is_err());
    }
}
