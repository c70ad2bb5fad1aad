//! Profiles summed: any number of profiles, of any formats, added up into one, exactly.
//!
//! Profiles come by the thousand (one per host, per service, per day); what a fleet asks is
//! their sum. [`ProfileSum`] takes them one at a time, so that memory follows the sum, not
//! the inputs:
//! - **Events** are matched by name and unit (pprof's sample types, perf's events, Valgrind's
//!   `Ir`): an event of one name counted in two units is refused, with both named; an event
//!   only some inputs have is a column the others leave at 0.
//! - **Processes** are matched by the program they ran, the build id of their first image, else
//!   its path: the same service on many hosts adds up, different programs stay side by side,
//!   and profiles without images (folded stacks) add up into one.
//! - **Images** of a process are matched by build id, else path; their symbols by name and
//!   address; their costs by address, function, file and line; their blocks by address (the
//!   blocks of one binary: inputs whose blocks of one image differ are refused), block counts
//!   and edge traversals added.
//! - **Stacks** are merged on the prefix tree: each path is found or made once, and the samples
//!   of one path on one thread become one sample with the values added.
//!
//! Values are added exactly, as integers: a sum past 2^64 - 1 (a total of an event, or one
//! value) is refused with the event named, never wrapped or saturated. Fractional stack values
//! are added at the finer of the two decimal scales.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{
    event_unit, power_of_ten, Block, BlockRef, Counts, Edge, EdgeKind, Event, FileId, FrameId, Image,
    NodeRef, Process, Profile, StackNode, StackValue, SymbolRef, EVENT_UNIT_KEY, NO_INDEX,
};

/// The sum of the profiles added so far (see the module documentation).
#[derive(Default)]
pub struct ProfileSum {
    out: Profile,
    /// The unit of each event of `out`, when an input stated one.
    units: Vec<Option<String>>,
    processes: Vec<ProcessSum>,
    /// Output process by the program it ran.
    process_keys: HashMap<String, usize>,
    /// Each event's total over the stacks, and over the cost rows, so far.
    stack_totals: Vec<StackValue>,
    cost_totals: Vec<u128>,
    inputs: usize,
}

/// What is kept beside an output process to find what an input adds to.
#[derive(Default)]
struct ProcessSum {
    images: Vec<ImageSum>,
    image_keys: HashMap<String, usize>,
    /// Sample by its node, thread and label set.
    samples: FxHashMap<(u32, u32, u32), usize>,
    /// The child of each output node (slot 0: of the roots) an input last went to: the next
    /// input's path most often goes the same way, and a look at that one node spares the tree's
    /// hash table (a hundred pprof files of 100,000 samples merged in 2.66 s instead of 3.48).
    last_child: Vec<u32>,
    /// Edge by its source, target and kind.
    edges: HashMap<(NodeRef, NodeRef, EdgeKind), usize>,
}

/// One input as it is added: the output column of each of its events, and the output's frame
/// and file of each of its own, found as they are met.
struct Incoming<'a> {
    profile: &'a Profile,
    columns: Vec<usize>,
    frames: Vec<Option<FrameId>>,
    files: HashMap<FileId, FileId>,
}

/// What is kept beside an output image: its symbols by name and address, its blocks by
/// address, and its cost rows by where they are, with their values, in the order first met.
#[derive(Default)]
struct ImageSum {
    symbols: HashMap<(String, Option<u64>), u32>,
    blocks: HashMap<u64, u32>,
    cost_rows: HashMap<CostKey, usize>,
    costs: Vec<(CostKey, Vec<u64>)>,
}

/// Where a cost row is: offset, function, file, line.
type CostKey = (Option<u64>, Option<u32>, Option<FileId>, Option<u32>);

/// The refusal of a sum past 2^64 - 1.
fn overflow(event: &str) -> Error {
    Error::unsupported(format!(
        "event {event}: the merged values pass 2^64 - 1, which no profile format holds"
    ))
    .with_hint("merge fewer profiles into one, or keep them apart (one output per group)")
}

impl ProfileSum {
    /// An empty sum.
    pub fn new() -> Self {
        ProfileSum::default()
    }

    /// Adds `input` to the sum; on an error (units that disagree, a sum past 2^64 - 1) the sum
    /// is left part-way and should be dropped.
    pub fn add(&mut self, input: Profile) -> Result<()> {
        if self.inputs == 0 {
            self.out.meta = input.meta.clone();
            self.out.meta.headers.retain(|(k, _)| k != EVENT_UNIT_KEY);
            // The first input's file ids stay as they are: what is copied of it needs no
            // renumbering.
            self.out.files = input.files.clone();
        } else {
            self.add_headers(&input);
        }
        self.inputs += 1;
        let columns = self.map_events(&input)?;
        let mut incoming = Incoming {
            profile: &input,
            columns,
            frames: vec![None; input.frames.len()],
            files: HashMap::new(),
        };
        for p in &input.processes {
            let k = self.process_for(&input, p);
            self.add_process(&mut incoming, p, k)?;
        }
        Ok(())
    }

    /// What a later input's headers add: a duration in nanoseconds (pprof's `duration_nanos`)
    /// is summed, a start time (`time_nanos`) is the earliest, as `go tool pprof` merges them;
    /// the rest are the first input's.
    fn add_headers(&mut self, input: &Profile) {
        for (key, value) in &input.meta.headers {
            let combine: fn(u64, u64) -> u64 = if key.ends_with("duration_nanos") {
                u64::saturating_add
            } else if key.ends_with("time_nanos") {
                u64::min
            } else {
                continue;
            };
            let Ok(theirs) = value.trim().parse::<u64>() else { continue };
            match self.out.meta.headers.iter_mut().find(|(k, _)| k == key) {
                Some((_, mine)) => {
                    if let Ok(m) = mine.trim().parse::<u64>() {
                        *mine = combine(m, theirs).to_string();
                    }
                }
                None => self.out.meta.headers.push((key.clone(), value.clone())),
            }
        }
    }

    /// The output column of each of the input's events, adding those the sum lacks.
    fn map_events(&mut self, input: &Profile) -> Result<Vec<usize>> {
        let mut columns = Vec::with_capacity(input.events.len());
        for e in &input.events {
            let unit = event_unit(&input.meta, &e.name).map(str::to_string);
            let found = self.out.events.iter().position(|o| o.name == e.name);
            let column = match found {
                Some(c) => {
                    match (&self.units[c], &unit) {
                        (Some(have), Some(new)) if have != new => {
                            return Err(Error::usage(format!(
                                "event {} is counted in {have} in one input and in {new} in another: values in two units cannot be added",
                                e.name
                            ))
                            .with_hint("merge the profiles of each unit apart"));
                        }
                        (None, Some(_)) => self.units[c] = unit,
                        _ => {}
                    }
                    c
                }
                None => {
                    self.out.events.push(Event { name: e.name.clone(), description: e.description.clone() });
                    self.units.push(unit);
                    self.out.events.len() - 1
                }
            };
            columns.push(column);
        }
        Ok(columns)
    }

    /// The output process an input process adds to, made when new.
    fn process_for(&mut self, input: &Profile, p: &Process) -> usize {
        let key = p.images.first().and_then(|i| identity(input, i)).unwrap_or_default();
        if let Some(&k) = self.process_keys.get(&key) {
            return k;
        }
        let pid = p.pid;
        self.out.processes.push(Process { pid, ..Process::default() });
        self.processes.push(ProcessSum::default());
        self.process_keys.insert(key, self.processes.len() - 1);
        self.processes.len() - 1
    }

    /// Adds process `p` of the input to output process `k`.
    fn add_process(&mut self, incoming: &mut Incoming, p: &Process, k: usize) -> Result<()> {
        let (input, columns) = (incoming.profile, &incoming.columns);
        let files = &mut incoming.files;
        let mut file = |out: &mut Profile, f: Option<FileId>| {
            f.map(|f| *files.entry(f).or_insert_with(|| out.files.intern(input.file_name(f))))
        };
        // Images, and where each input image's symbols and blocks went.
        let mut image_map = Vec::with_capacity(p.images.len());
        let mut symbol_maps = Vec::with_capacity(p.images.len());
        let mut block_maps = Vec::with_capacity(p.images.len());
        for (i, image) in p.images.iter().enumerate() {
            let key = identity(input, image).unwrap_or_else(|| format!("image {i}"));
            let sum = &mut self.processes[k];
            let o = match sum.image_keys.get(&key) {
                Some(&o) => o,
                None => {
                    let out_image = Image {
                        id: image.id,
                        file: file(&mut self.out, image.file),
                        load_addr: image.load_addr,
                        size: image.size,
                        file_offset: image.file_offset,
                        build_id: image.build_id.clone(),
                        no_addresses: image.no_addresses,
                        ..Image::default()
                    };
                    self.out.processes[k].images.push(out_image);
                    sum.images.push(ImageSum::default());
                    let o = sum.images.len() - 1;
                    sum.image_keys.insert(key, o);
                    o
                }
            };
            image_map.push(o as u32);
            let symbols = self.add_symbols(image, k, o, &mut file);
            let blocks = self.add_blocks(input, image, k, o, &mut file)?;
            self.add_costs(image, k, o, columns, &symbols, &mut file)?;
            symbol_maps.push(symbols);
            block_maps.push(blocks);
        }
        let node = |n: NodeRef| match n {
            NodeRef::Block(b) => NodeRef::Block(BlockRef {
                image: image_map[b.image as usize],
                block: block_maps[b.image as usize][b.block as usize],
            }),
            NodeRef::Symbol(s) => NodeRef::Symbol(SymbolRef {
                image: image_map[s.image as usize],
                symbol: symbol_maps[s.image as usize][s.symbol as usize],
            }),
            other => other,
        };
        self.add_edges(p, k, columns, &node)?;
        self.add_stacks(incoming, p, k, &image_map)?;
        let out = &mut self.out.processes[k];
        out.instr_count = match (out.instr_count, p.instr_count) {
            (Some(a), Some(b)) => Some(a.checked_add(b).ok_or_else(|| overflow("instructions"))?),
            (a, b) => a.or(b),
        };
        for (t, &n) in p.thread_instr_counts.iter().enumerate() {
            if out.thread_instr_counts.len() <= t {
                out.thread_instr_counts.resize(t + 1, 0);
            }
            out.thread_instr_counts[t] =
                out.thread_instr_counts[t].checked_add(n).ok_or_else(|| overflow("instructions"))?;
        }
        Ok(())
    }

    /// The output symbol of each of an input image's symbols, adding those the output image
    /// lacks.
    fn add_symbols(
        &mut self,
        image: &Image,
        k: usize,
        o: usize,
        file: &mut impl FnMut(&mut Profile, Option<FileId>) -> Option<FileId>,
    ) -> Vec<u32> {
        let mut map = Vec::with_capacity(image.symbols.len());
        for s in &image.symbols {
            let key = (s.name.clone(), s.offset);
            let sum = &mut self.processes[k].images[o];
            let index = match sum.symbols.get(&key) {
                Some(&index) => index,
                None => {
                    let f = file(&mut self.out, s.file);
                    let symbols = &mut self.out.processes[k].images[o].symbols;
                    symbols.push(cfghub_model::ir::Symbol { file: f, ..s.clone() });
                    let index = (symbols.len() - 1) as u32;
                    self.processes[k].images[o].symbols.insert(key, index);
                    index
                }
            };
            map.push(index);
        }
        map
    }

    /// The output block of each of an input image's blocks, their counts added: the first
    /// input with blocks gives the image its blocks and routines, the first with source lines
    /// its lines, and every later one must have the same blocks. (What the first input alone
    /// states of an image, the lines of blocks without addresses, coverage arrays and inlined
    /// frames, is kept from the first input.)
    fn add_blocks(
        &mut self,
        input: &Profile,
        image: &Image,
        k: usize,
        o: usize,
        file: &mut impl FnMut(&mut Profile, Option<FileId>) -> Option<FileId>,
    ) -> Result<Vec<u32>> {
        if self.out.processes[k].images[o].source_lines.is_empty() && !image.source_lines.is_empty() {
            let mut lines = image.source_lines.clone();
            for l in &mut lines {
                l.file = file(&mut self.out, l.file);
            }
            self.out.processes[k].images[o].source_lines = lines;
        }
        let first = self.inputs == 1;
        let out = &mut self.out.processes[k].images[o];
        let sum = &mut self.processes[k].images[o];
        if first && out.inlined.is_empty() && out.coverage.is_empty() && out.block_lines.is_empty() {
            out.inlined = image.inlined.clone();
            out.coverage = image.coverage.clone();
            out.block_lines = image.block_lines.clone();
        }
        if image.blocks.is_empty() {
            return Ok(Vec::new());
        }
        if out.blocks.is_empty() {
            out.blocks = image.blocks.clone();
            out.routines = image.routines.clone();
            sum.blocks = out.blocks.iter().enumerate().map(|(b, block)| (block.offset, b as u32)).collect();
            return Ok((0..image.blocks.len() as u32).collect());
        }
        let differ = || {
            Error::unsupported(format!(
                "image {}: the inputs' basic blocks differ (profiles of different builds of one binary?): block counts can only be added over the same blocks",
                input.image_name(image)
            ))
        };
        if image.blocks.len() != out.blocks.len() {
            return Err(differ());
        }
        let mut map = Vec::with_capacity(image.blocks.len());
        for b in &image.blocks {
            let &m = sum.blocks.get(&b.offset).ok_or_else(differ)?;
            let have: &mut Block = &mut out.blocks[m as usize];
            if have.size != b.size || have.num_instrs != b.num_instrs {
                return Err(differ());
            }
            have.count = match (have.count, b.count) {
                (Some(x), Some(y)) => Some(x.checked_add(y).ok_or_else(|| overflow("block executions"))?),
                (x, y) => x.or(y),
            };
            map.push(m);
        }
        Ok(map)
    }

    /// Adds an input image's cost rows to the output image's, by where they are.
    fn add_costs(
        &mut self,
        image: &Image,
        k: usize,
        o: usize,
        columns: &[usize],
        symbols: &[u32],
        file: &mut impl FnMut(&mut Profile, Option<FileId>) -> Option<FileId>,
    ) -> Result<()> {
        let width = self.out.events.len();
        if self.cost_totals.len() < width {
            self.cost_totals.resize(width, 0);
        }
        for cost in &image.costs {
            let f = file(&mut self.out, cost.file);
            let key: CostKey = (cost.offset, cost.symbol.map(|s| symbols[s as usize]), f, cost.line);
            let sum = &mut self.processes[k].images[o];
            let row = *sum.cost_rows.entry(key).or_insert_with(|| {
                sum.costs.push((key, Vec::new()));
                sum.costs.len() - 1
            });
            let values = &mut sum.costs[row].1;
            if values.len() < width {
                values.resize(width, 0);
            }
            for (e, &v) in cost.values.iter().enumerate() {
                let Some(&c) = columns.get(e) else { continue };
                let name = &self.out.events[c].name;
                values[c] = values[c].checked_add(v).ok_or_else(|| overflow(name))?;
                self.cost_totals[c] += u128::from(v);
                if self.cost_totals[c] > u128::from(u64::MAX) {
                    return Err(overflow(name));
                }
            }
        }
        Ok(())
    }

    /// Adds an input process's edges, their ends mapped by `node`, to the output process's:
    /// traversals (and a call's inclusive costs) added.
    fn add_edges(
        &mut self,
        p: &Process,
        k: usize,
        columns: &[usize],
        node: &dyn Fn(NodeRef) -> NodeRef,
    ) -> Result<()> {
        for e in &p.edges {
            let (source, target) = (node(e.source), node(e.target));
            let key = (source, target, e.kind);
            let sum = &mut self.processes[k];
            let edges = &mut self.out.processes[k].edges;
            match sum.edges.get(&key) {
                None => {
                    let mut edge = Edge { source, target, ..e.clone() };
                    if let Some(d) = edge.details.as_mut() {
                        d.inclusive = remap(e.inclusive(), columns);
                    }
                    edges.push(edge);
                    sum.edges.insert(key, edges.len() - 1);
                }
                Some(&at) => {
                    let have = &mut edges[at];
                    add_counts(&mut have.counts, &e.counts)?;
                    let inclusive = remap(e.inclusive(), columns);
                    if !inclusive.is_empty() {
                        if let Some(d) = have.details.as_mut() {
                            add_counts(&mut d.inclusive, &inclusive)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds an input process's samples to the output process's tree: each input node's path
    /// found or made once, samples of one path and thread added into one.
    fn add_stacks(
        &mut self,
        incoming: &mut Incoming,
        p: &Process,
        k: usize,
        image_map: &[u32],
    ) -> Result<()> {
        let Incoming { profile: input, columns, frames, .. } = incoming;
        let stacks = &p.stacks;
        if stacks.is_empty() {
            return Ok(());
        }
        let width = self.out.events.len();
        if self.stack_totals.len() < width {
            self.stack_totals.resize(width, 0);
        }
        let out = &mut self.out.processes[k].stacks;
        if out.width() < width {
            out.widen(width);
        }
        // The finer decimal scale of each column.
        let mut scale = vec![1; stacks.width()];
        for (c, &o) in columns.iter().enumerate().take(stacks.width()) {
            let (mine, theirs) = (stacks.decimals_of(c), out.decimals_of(o));
            if mine > theirs && !out.set_decimals(o, mine) {
                return Err(overflow(&self.out.events[o].name));
            }
            scale[c] = power_of_ten(out.decimals_of(o) - mine);
        }
        let mut nodes = vec![NO_INDEX; stacks.nodes().len()];
        for (n, s) in stacks.nodes().iter().enumerate() {
            let frame = *frames[s.frame as usize]
                .get_or_insert_with(|| copy_frame(&mut self.out, input, s.frame, image_map));
            let parent = if s.parent == NO_INDEX { NO_INDEX } else { nodes[s.parent as usize] };
            let out = &mut self.out.processes[k].stacks;
            let last = &mut self.processes[k].last_child;
            let slot = if parent == NO_INDEX { 0 } else { parent as usize + 1 };
            if last.len() <= slot {
                last.resize(out.nodes().len().max(slot) + 1, NO_INDEX);
            }
            let guess = last[slot];
            nodes[n] = if guess != NO_INDEX && out.nodes()[guess as usize] == (StackNode { parent, frame }) {
                guess
            } else {
                let node = out.node(parent, frame);
                last[slot] = node;
                node
            };
        }
        let mut values = vec![0 as StackValue; width];
        let mut label_sets = vec![NO_INDEX; stacks.label_sets().len()];
        for (i, set) in stacks.label_sets().iter().enumerate() {
            label_sets[i] = self.out.processes[k].stacks.label_set(set.to_vec());
        }
        for sample in stacks.samples() {
            let node = if sample.node == NO_INDEX { NO_INDEX } else { nodes[sample.node as usize] };
            values.iter_mut().for_each(|v| *v = 0);
            for (c, &v) in sample.values.iter().enumerate() {
                // (A column without an event, which no reader makes, has nowhere to go.)
                let Some(&o) = columns.get(c) else { continue };
                values[o] = v.checked_mul(scale[c]).ok_or_else(|| overflow(&self.out.events[o].name))?;
            }
            for (o, &v) in values.iter().enumerate() {
                let total = self.stack_totals[o].checked_add(v);
                let limit = StackValue::from(u64::MAX)
                    .checked_mul(power_of_ten(self.out.processes[k].stacks.decimals_of(o)))
                    .unwrap_or(StackValue::MAX);
                match total {
                    Some(t) if t.abs() <= limit => self.stack_totals[o] = t,
                    _ => return Err(overflow(&self.out.events[o].name)),
                }
            }
            let labels =
                if sample.label_set == NO_INDEX { NO_INDEX } else { label_sets[sample.label_set as usize] };
            let key = (node, sample.thread.unwrap_or(NO_INDEX), labels);
            let sum = &mut self.processes[k];
            let out = &mut self.out.processes[k].stacks;
            match sum.samples.get(&key) {
                Some(&at) => {
                    for (have, v) in out.values_mut(at).iter_mut().zip(&values) {
                        *have += v;
                    }
                }
                None => {
                    out.push_labelled_sample(node, sample.thread, labels, &values);
                    sum.samples.insert(key, out.len() - 1);
                }
            }
        }
        Ok(())
    }

    /// The sum: its images' cost rows in the order first met, block and edge ids numbered anew
    /// (the inputs' ids clash).
    pub fn finish(mut self) -> Profile {
        for (k, sum) in self.processes.into_iter().enumerate() {
            let process = &mut self.out.processes[k];
            for (o, image_sum) in sum.images.into_iter().enumerate() {
                let costs = &mut process.images[o].costs;
                for (key, values) in image_sum.costs {
                    costs.push_parts(key.0, key.1, key.2, key.3, &values);
                }
            }
            let mut id = 4;
            for image in &mut process.images {
                for b in &mut image.blocks {
                    b.id = id;
                    id += 1;
                }
            }
            for (n, e) in process.edges.iter_mut().enumerate() {
                e.id = n as u64 + 1;
            }
        }
        for (event, unit) in self.out.events.iter().zip(&self.units) {
            if let Some(unit) = unit {
                self.out.meta.headers.push((EVENT_UNIT_KEY.to_string(), format!("{} {unit}", event.name)));
            }
        }
        self.out
    }
}

/// What tells an image apart across profiles: its build id, else its path.
fn identity(profile: &Profile, image: &Image) -> Option<String> {
    let path = || image.file.map(|f| format!("path {}", profile.file_name(f)));
    image.build_id.as_ref().map(|b| format!("build {b}")).or_else(path)
}

/// Values of an input's columns at the output's (`columns`).
fn remap(values: &[u64], columns: &[usize]) -> Counts {
    let width = columns.iter().take(values.len()).map(|&c| c + 1).max().unwrap_or(0);
    let mut out = Counts::from_elem(0, width);
    for (c, &v) in values.iter().enumerate() {
        if let Some(&o) = columns.get(c) {
            out[o] = v;
        }
    }
    out
}

/// Adds `more` to `into`, value by value, refusing a sum past 2^64 - 1.
fn add_counts(into: &mut Counts, more: &[u64]) -> Result<()> {
    if into.len() < more.len() {
        into.resize(more.len(), 0);
    }
    for (t, &n) in more.iter().enumerate() {
        into[t] = into[t].checked_add(n).ok_or_else(|| overflow("edge traversals"))?;
    }
    Ok(())
}

/// Interns an input's frame in the output, with its source (its file and its address's image
/// in the output's numbering) where the output has none yet.
fn copy_frame(out: &mut Profile, input: &Profile, frame: FrameId, image_map: &[u32]) -> FrameId {
    let id = out.frames.intern(input.frames.get(frame));
    if let Some(source) = input.frame_sources.get(frame as usize) {
        let n = id as usize;
        if out.frame_sources.len() <= n {
            out.frame_sources.resize(n + 1, Default::default());
        }
        if out.frame_sources[n] == Default::default() {
            let mut source = source.clone();
            source.file = source.file.map(|f| out.files.intern(input.file_name(f)));
            if let Some(a) = source.address.as_mut() {
                a.image = a.image.and_then(|i| image_map.get(i as usize).copied());
            }
            out.frame_sources[n] = source;
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{CostTable, Meta};

    /// A profile of one process without images whose stacks are `stacks` (frames by name,
    /// root first, and one value per event), of events named with their units.
    fn stacks_profile(events: &[(&str, Option<&str>)], stacks: &[(&[&str], &[StackValue])]) -> Profile {
        let mut p = Profile::default();
        for (name, unit) in events {
            p.events.push(Event::new(*name));
            if let Some(u) = unit {
                p.meta.headers.push((EVENT_UNIT_KEY.into(), format!("{name} {u}")));
            }
        }
        let mut process = Process::default();
        for (frames, values) in stacks {
            let ids: Vec<FrameId> = frames.iter().map(|f| p.frames.intern(f)).collect();
            process.stacks.push(&ids, None, values);
        }
        p.processes.push(process);
        p
    }

    fn summed(inputs: Vec<Profile>) -> Result<Profile> {
        let mut sum = ProfileSum::new();
        for p in inputs {
            sum.add(p)?;
        }
        Ok(sum.finish())
    }

    /// The stacks of the first process as (path, values), in sample order.
    fn paths(p: &Profile) -> Vec<(String, Vec<StackValue>)> {
        let s = &p.processes[0].stacks;
        s.samples()
            .map(|x| {
                let names: Vec<&str> = s.frames(x.node).iter().map(|&f| p.frames.get(f)).collect();
                (names.join(";"), x.values.to_vec())
            })
            .collect()
    }

    #[test]
    fn stacks_of_one_path_add_up_exactly_and_new_paths_join_the_tree() {
        let big: StackValue = (1 << 53) + 1;
        let a = stacks_profile(&[("samples", None)], &[(&["main", "f"], &[big]), (&["main"], &[1])]);
        let b = stacks_profile(&[("samples", None)], &[(&["main", "f"], &[1]), (&["main", "g"], &[3])]);
        let p = summed(vec![a, b]).unwrap();
        assert_eq!(
            paths(&p),
            [("main;f".to_string(), vec![big + 1]), ("main".into(), vec![1]), ("main;g".into(), vec![3])]
        );
        // One node per distinct path: main, main;f, main;g.
        assert_eq!(p.processes[0].stacks.nodes().len(), 3);
    }

    #[test]
    fn events_are_matched_by_name_and_a_second_unit_is_refused_naming_both() {
        let cpu = stacks_profile(&[("cpu", Some("nanoseconds"))], &[(&["main"], &[5])]);
        let heap = stacks_profile(&[("alloc_space", Some("bytes"))], &[(&["main"], &[7])]);
        let p = summed(vec![cpu.clone(), heap]).unwrap();
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["cpu", "alloc_space"]);
        assert_eq!(paths(&p), [("main".to_string(), vec![5, 7])]);
        assert_eq!(event_unit(&p.meta, "alloc_space"), Some("bytes"));
        let millis = stacks_profile(&[("cpu", Some("milliseconds"))], &[(&["main"], &[5])]);
        let e = summed(vec![cpu, millis]).unwrap_err().to_string();
        assert!(e.contains("cpu") && e.contains("nanoseconds") && e.contains("milliseconds"), "{e}");
    }

    #[test]
    fn a_total_past_2_to_the_64_is_refused_with_its_event_named_never_wrapped() {
        let max = StackValue::from(u64::MAX);
        let a = stacks_profile(&[("samples", None)], &[(&["main", "f"], &[max])]);
        let b = stacks_profile(&[("samples", None)], &[(&["main", "g"], &[1])]);
        let e = summed(vec![a.clone(), b]).unwrap_err().to_string();
        assert!(e.contains("samples") && e.contains("2^64"), "{e}");
        // Cost rows too.
        let costs = |v: u64| {
            let mut p = Profile { events: vec![Event::new("Ir")], ..Profile::default() };
            let mut table = CostTable::new();
            table.push_parts(Some(0x10), None, None, None, &[v]);
            p.processes.push(Process {
                images: vec![Image { costs: table, ..Image::default() }],
                ..Process::default()
            });
            p
        };
        let e = summed(vec![costs(u64::MAX), costs(1)]).unwrap_err().to_string();
        assert!(e.contains("Ir") && e.contains("2^64"), "{e}");
        let p = summed(vec![costs(u64::MAX - 1), costs(1)]).unwrap();
        assert_eq!(p.processes[0].images[0].costs.value(0, 0), u64::MAX);
    }

    #[test]
    fn fractions_add_at_the_finer_scale() {
        // 0.5 (5 tenths) and 0.25 (25 hundredths): 0.75.
        let tenths = |decimals: u8, value: StackValue| {
            let mut p = stacks_profile(&[("ms", None)], &[]);
            let main = p.frames.intern("main");
            let stacks = &mut p.processes[0].stacks;
            stacks.set_decimals(0, decimals);
            stacks.push(&[main], None, &[value]);
            p
        };
        let p = summed(vec![tenths(1, 5), tenths(2, 25)]).unwrap();
        let s = &p.processes[0].stacks;
        assert_eq!((s.decimals_of(0), s.sample(0).values[0]), (2, 75));
    }

    /// One process of a binary (by build id) with blocks at 0x10 and 0x20, counted `n` and
    /// `m`, an edge between them, and the cost rows `Ir` of both.
    fn blocks_profile(build_id: &str, n: u64, m: u64) -> Profile {
        let mut p = Profile { events: vec![Event::new("Ir")], meta: Meta::default(), ..Profile::default() };
        let block =
            |offset, count| Block { offset, size: 4, num_instrs: 2, count: Some(count), ..Block::default() };
        let mut costs = CostTable::new();
        costs.push_parts(Some(0x10), None, None, None, &[2 * n]);
        costs.push_parts(Some(0x20), None, None, None, &[2 * m]);
        let image = Image {
            build_id: Some(build_id.into()),
            blocks: vec![block(0x10, n), block(0x20, m)],
            costs,
            ..Image::default()
        };
        let edge = Edge {
            source: NodeRef::Block(BlockRef { image: 0, block: 0 }),
            target: NodeRef::Block(BlockRef { image: 0, block: 1 }),
            kind: EdgeKind::ConditionalBranch,
            counts: Counts::from_slice(&[m]),
            ..Edge::default()
        };
        p.processes.push(Process { images: vec![image], edges: vec![edge], ..Process::default() });
        p
    }

    #[test]
    fn block_and_edge_counts_of_one_binary_add_up_and_other_programs_stay_apart() {
        let p =
            summed(vec![blocks_profile("ab", 3, 1), blocks_profile("ab", 4, 2), blocks_profile("cd", 1, 1)])
                .unwrap();
        assert_eq!(p.processes.len(), 2, "two programs side by side");
        let image = &p.processes[0].images[0];
        let counts: Vec<Option<u64>> = image.blocks.iter().map(|b| b.count).collect();
        assert_eq!(counts, [Some(7), Some(3)]);
        assert_eq!(p.processes[0].edges.len(), 1);
        assert_eq!(&p.processes[0].edges[0].counts[..], &[3]);
        assert_eq!((image.costs.value(0, 0), image.costs.value(1, 0)), (14, 6));
        // Block ids stay unique in the process.
        let ids: Vec<u64> = image.blocks.iter().map(|b| b.id).collect();
        assert_eq!(ids, [4, 5]);
    }

    #[test]
    fn inputs_whose_blocks_of_one_binary_differ_are_refused() {
        let mut other = blocks_profile("ab", 1, 1);
        other.processes[0].images[0].blocks[1].offset = 0x24;
        let e = summed(vec![blocks_profile("ab", 1, 1), other]).unwrap_err().to_string();
        assert!(e.contains("blocks differ"), "{e}");
    }
}
