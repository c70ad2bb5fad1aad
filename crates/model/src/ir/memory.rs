//! How much memory the model holds, part by part.
//!
//! Each part counts the bytes it owns: the inline size of its records and whatever they hold on
//! the heap, at the capacity reserved (what the allocator actually handed out, give or take its
//! rounding). Not counted: the allocator's own bookkeeping and free memory it keeps for reuse.
//! The figures are meant for comparing a model with the input it was read from, and for
//! checking that a representation grows like the input.

use std::mem::size_of;

use super::{Block, BlockLines, Coverage, Edge, Image, LineItem, Process, Profile, Routine};

/// Heap bytes the model holds, by part. Every field is in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelMemory {
    /// Cost tables of every image ([`super::CostTable`]).
    pub costs: u64,
    /// Edges, with their per-thread counts and details.
    pub edges: u64,
    /// Basic blocks of every image.
    pub blocks: u64,
    /// Routines and their loops, dominators and node lists.
    pub routines: u64,
    /// Symbols with their names, source lines and inline chains.
    pub symbols: u64,
    /// Call stacks.
    pub stacks: u64,
    /// Interned file and frame names, and frame sources.
    pub strings: u64,
    /// The rest: header lines, events, processes, images, line and coverage tables.
    pub other: u64,
}

impl ModelMemory {
    /// Every part added up.
    pub fn total(&self) -> u64 {
        self.parts().iter().map(|(_, bytes)| bytes).sum()
    }

    /// The parts with their names, in a fixed order.
    pub fn parts(&self) -> [(&'static str, u64); 8] {
        [
            ("costs", self.costs),
            ("edges", self.edges),
            ("blocks", self.blocks),
            ("routines", self.routines),
            ("symbols", self.symbols),
            ("stacks", self.stacks),
            ("strings", self.strings),
            ("other", self.other),
        ]
    }
}

/// Heap bytes of a vector's buffer (its capacity), not of what its elements own.
/// The inline chains of an image, each counted once however many addresses share it (frame
/// names are indices into the image's table of them, counted beside).
fn inline_chains(inlined: &[super::Inlined]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    inlined
        .iter()
        .filter(|i| seen.insert(i.frames.as_ptr()))
        .map(|i| (i.frames.len() * size_of::<super::InlineFrame>() + 2 * size_of::<usize>()) as u64)
        .sum()
}

fn buffer<T>(v: &Vec<T>) -> u64 {
    (v.capacity() * size_of::<T>()) as u64
}

fn string(s: &str, capacity: usize) -> u64 {
    debug_assert!(capacity >= s.len());
    capacity as u64
}

fn owned(s: &String) -> u64 {
    string(s, s.capacity())
}

impl Profile {
    /// The heap memory the model holds, by part.
    pub fn memory(&self) -> ModelMemory {
        let mut m = ModelMemory {
            strings: self.files.heap_bytes()
                + self.frames.heap_bytes()
                + buffer(&self.frame_sources)
                + self.frame_sources.iter().map(|f| f.system_name.as_ref().map_or(0, owned)).sum::<u64>(),
            other: buffer(&self.meta.headers)
                + self.meta.headers.iter().map(|(k, v)| owned(k) + owned(v)).sum::<u64>()
                + self.meta.creator.as_ref().map_or(0, owned)
                + self.meta.command.as_ref().map_or(0, owned)
                + buffer(&self.events)
                + self
                    .events
                    .iter()
                    .map(|e| owned(&e.name) + e.description.as_ref().map_or(0, owned))
                    .sum::<u64>()
                + buffer(&self.processes),
            ..ModelMemory::default()
        };
        for process in &self.processes {
            process.add_memory(&mut m);
        }
        m
    }
}

impl Process {
    fn add_memory(&self, m: &mut ModelMemory) {
        m.other += buffer(&self.thread_instr_counts) + buffer(&self.images);
        m.edges += buffer(&self.edges) + self.edges.iter().map(edge_heap).sum::<u64>();
        m.stacks += self.stacks.heap_bytes();
        for image in &self.images {
            image.add_memory(m);
        }
    }
}

fn edge_heap(edge: &Edge) -> u64 {
    let counts = edge.counts.heap_bytes();
    let details = edge.details.as_ref().map_or(0, |d| {
        let extra = d.extra.as_ref().map_or(0, |x| {
            size_of::<super::EdgeExtra>() as u64
                + buffer(&x.contexts)
                + x.contexts.iter().map(|c| c.counts.heap_bytes() + c.inclusive.heap_bytes()).sum::<u64>()
        });
        let runs = d.runs.as_ref().map_or(0, |_| size_of::<super::RecordedRuns>());
        (size_of::<super::EdgeDetails>() + runs) as u64 + extra + d.inclusive.heap_bytes()
    });
    counts + details
}

fn routine_heap(r: &Routine) -> u64 {
    buffer(&r.exits)
        + buffer(&r.nodes)
        + buffer(&r.idoms)
        + buffer(&r.loops)
        + r.loops.iter().map(|l| buffer(&l.back_edge_sources) + buffer(&l.nodes)).sum::<u64>()
}

fn block_lines_heap(b: &BlockLines) -> u64 {
    buffer::<LineItem>(&b.items)
}

fn coverage_heap(c: &Coverage) -> u64 {
    owned(&c.array)
        + buffer(&c.sites)
        + c.sites
            .iter()
            .map(|s| owned(&s.label) + buffer(&s.lines) + s.callee.as_ref().map_or(0, owned))
            .sum::<u64>()
}

impl Image {
    fn add_memory(&self, m: &mut ModelMemory) {
        m.costs += self.costs.heap_bytes();
        m.blocks += buffer::<Block>(&self.blocks);
        m.routines +=
            self.routines.as_ref().map_or(0, |rs| buffer(rs) + rs.iter().map(routine_heap).sum::<u64>());
        m.symbols += buffer(&self.symbols)
            + self.symbols.iter().map(|s| owned(&s.name)).sum::<u64>()
            + buffer(&self.source_lines)
            + buffer(&self.inlined)
            + inline_chains(&self.inlined)
            + self.inline_names.heap_bytes();
        m.other += self.build_id.as_ref().map_or(0, owned)
            + buffer(&self.block_lines)
            + self.block_lines.iter().map(block_lines_heap).sum::<u64>()
            + buffer(&self.coverage)
            + self.coverage.iter().map(coverage_heap).sum::<u64>();
    }
}

impl Profile {
    /// Gives back the room vectors hold beyond their contents: what a reader reserved ahead
    /// from the input's size and did not fill. Large vectors shrink in place (the allocator
    /// returns their unused pages), so this costs little beside the reading.
    pub fn shrink_to_fit(&mut self) {
        self.meta.headers.shrink_to_fit();
        self.frame_sources.shrink_to_fit();
        self.processes.shrink_to_fit();
        for process in &mut self.processes {
            process.edges.shrink_to_fit();
            process.stacks.shrink_to_fit();
            process.images.shrink_to_fit();
            for image in &mut process.images {
                image.symbols.shrink_to_fit();
                image.source_lines.shrink_to_fit();
                image.blocks.shrink_to_fit();
                image.inlined.shrink_to_fit();
                image.block_lines.shrink_to_fit();
                if let Some(routines) = &mut image.routines {
                    routines.shrink_to_fit();
                }
                image.costs.shrink_to_fit();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Cost, Symbol, Values};

    #[test]
    fn parts_add_up_and_grow_with_what_they_hold() {
        let mut profile = Profile::default();
        let empty = profile.memory();
        let mut image = Image::default();
        for i in 0..1000u64 {
            image.costs.push(Cost {
                offset: Some(i * 4),
                values: Values::from_slice(&[i]),
                ..Cost::default()
            });
        }
        image.symbols.push(Symbol { name: "x".repeat(100), ..Symbol::default() });
        image.blocks = vec![Block::default(); 10];
        profile.files.intern("/a/file");
        profile.processes.push(Process {
            images: vec![image],
            edges: vec![Edge::default(); 3],
            ..Process::default()
        });
        let m = profile.memory();
        assert_eq!(m.total(), m.parts().iter().map(|p| p.1).sum::<u64>());
        assert!(m.costs > 0 && m.costs > empty.costs);
        assert!(m.symbols >= 100 + size_of::<Symbol>() as u64);
        assert_eq!(m.blocks, 10 * size_of::<Block>() as u64);
        assert_eq!(m.edges, 3 * size_of::<Edge>() as u64);
        assert!(m.strings >= "/a/file".len() as u64);
    }

    /// A shared inline chain counts once, at 16 bytes a frame, whatever the number of
    /// addresses that share it; each address adds its 24-byte entry.
    #[test]
    fn inline_chains_count_once_at_16_bytes_a_frame() {
        use crate::ir::{InlineFrame, Inlined};
        let symbols_of = |inlined: Vec<Inlined>, names: &[&str]| {
            let mut image = Image { inlined, ..Image::default() };
            for n in names {
                image.inline_names.intern(n);
            }
            let profile = Profile {
                processes: vec![Process { images: vec![image], ..Process::default() }],
                ..Profile::default()
            };
            profile.memory().symbols
        };
        let chain: std::sync::Arc<[InlineFrame]> =
            (0..10).map(|k| InlineFrame::new(k % 2, Some(0), Some(k))).collect::<Vec<_>>().into();
        let names = ["helper", "outer"];
        let at = |n: u64| (0..n).map(|o| Inlined { offset: o, frames: chain.clone() }).collect::<Vec<_>>();
        let (one, thousand) = (symbols_of(at(1), &names), symbols_of(at(1000), &names));
        assert_eq!(thousand - one, 999 * size_of::<Inlined>() as u64);
        assert_eq!(size_of::<Inlined>(), 24);
        let without_chain = symbols_of(Vec::new(), &names);
        assert_eq!(one - without_chain, 24 + 10 * 16 + 2 * size_of::<usize>() as u64);
    }
}
