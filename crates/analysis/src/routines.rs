//! Routines: the ones an input gave, or discovered by the DCFG rules when it gave none, with
//! their immediate dominators and natural loops.
//!
//! DCFG rules (spec section 2.14): a routine has one entry; every node is reachable from the
//! entry without inter-routine edges (calls, returns, context changes), bypass edges allowed;
//! every block of an image is in exactly one routine.
//!
//! Routines given by the input are used as given, dominators and loops included (a DCFG's
//! `NODES` and `LOOPS` tables); when a format gives routines without dominators, the
//! dominators ([`crate::dominators`]) and loops ([`crate::loops`]) are
//! computed for them. [`all_recomputed`] ignores what the input said and derives everything
//! from the edges (`--recompute`).

use std::borrow::Cow;

use crate::cfg::{self, ImageCfg, RoutineCfg};
use crate::{dominators, loops};
use cfghub_model::ir::{EdgeKind, NodeRef, Process, Routine};

/// The routines of every image of a process (index = image index): as given by the input
/// (completed with dominators and loops when it gave none), or discovered when it has none.
pub fn all(process: &Process) -> Vec<Cow<'_, [Routine]>> {
    derive(process, false)
}

/// The routines of every image as [`all`] gives them, but without the dominators and loops it
/// completes: which blocks each routine holds and its entry, for callers that need no more
/// (the call graph's nodes). A Callgrind profile's routines come without dominators:
/// completing the 21 MB `cc1plus` profile's built every image's control-flow graph (4.2 MB)
/// and a copy of the routines (1.4 MB).
pub(crate) fn outlines(process: &Process) -> Vec<Cow<'_, [Routine]>> {
    let mut discovered = if process.images.iter().any(|i| i.routines.is_none()) {
        discover_with(process, &cfg::build(process))
    } else {
        Vec::new()
    };
    process
        .images
        .iter()
        .enumerate()
        .map(|(i, image)| match &image.routines {
            Some(given) => Cow::Borrowed(given.as_slice()),
            None => Cow::Owned(discovered.get_mut(i).map(std::mem::take).unwrap_or_default()),
        })
        .collect()
}

/// Routines of every image derived from the edges alone, whatever the input said.
pub fn all_recomputed(process: &Process) -> Vec<Vec<Routine>> {
    let cfgs = cfg::build(process);
    let mut result = discover_with(process, &cfgs);
    for (rs, g) in result.iter_mut().zip(&cfgs) {
        complete(g, rs);
    }
    result
}

/// [`all`] or, with `recompute`, [`all_recomputed`], as borrowed-or-owned slices.
pub fn derive(process: &Process, recompute: bool) -> Vec<Cow<'_, [Routine]>> {
    if recompute {
        return all_recomputed(process).into_iter().map(Cow::Owned).collect();
    }
    let needs_work = process.images.iter().any(|i| match &i.routines {
        None => true,
        Some(rs) => rs.iter().any(|r| r.idoms.len() != r.nodes.len()),
    });
    if !needs_work {
        return process.images.iter().map(|i| Cow::Borrowed(i.routines.as_deref().unwrap_or(&[]))).collect();
    }
    let cfgs = cfg::build(process);
    let mut discovered: Option<Vec<Vec<Routine>>> = None;
    (0..process.images.len())
        .map(|i| match &process.images[i].routines {
            Some(given) if given.iter().all(|r| r.idoms.len() == r.nodes.len()) => {
                Cow::Borrowed(given.as_slice())
            }
            Some(given) => {
                let mut rs = given.clone();
                complete(&cfgs[i], &mut rs);
                Cow::Owned(rs)
            }
            None => {
                let d = discovered.get_or_insert_with(|| discover_with(process, &cfgs));
                let mut rs = std::mem::take(&mut d[i]);
                complete(&cfgs[i], &mut rs);
                Cow::Owned(rs)
            }
        })
        .collect()
}

/// Fills the immediate dominators and loops of `routines` (blocks of the image whose
/// intra-routine graph is `g`), replacing whatever they held.
pub fn complete(g: &ImageCfg, routines: &mut [Routine]) {
    let mut map = vec![u32::MAX; g.len()];
    for r in routines.iter_mut() {
        let rg = RoutineCfg::new(g, r.entry, &r.nodes, &mut map);
        let d = dominators::compute(&rg);
        r.idoms = dominators::idoms_of(&rg, &d, &r.nodes, &mut map);
        r.loops = loops::natural_loops(&rg, &d);
    }
}

/// Discovers the routines of every image from the edges (without dominators or loops).
///
/// Entries are call targets and the `ENTRY` edge's target; each claims, breadth first, the
/// blocks it reaches over intra-routine edges without entering another entry (a jump to
/// another entry is a tail call). Blocks no entry reaches start
/// routines of their own, in address order: first those without intra-routine predecessors,
/// then the rest. Exits are the blocks with an edge leaving the routine (calls included), as in
/// the DCFG files Pin writes. Pin's own routines follow its symbol-based routine boundaries, so
/// discovered routines can split or merge differently from Pin's around jumps between
/// functions (on simple-loop, 125 of 132 routines agree).
pub fn discover(process: &Process) -> Vec<Vec<Routine>> {
    discover_with(process, &cfg::build(process))
}

fn discover_with(process: &Process, cfgs: &[ImageCfg]) -> Vec<Vec<Routine>> {
    let mut is_entry: Vec<Vec<bool>> = process.images.iter().map(|i| vec![false; i.blocks.len()]).collect();
    let valid = |r: NodeRef| match r {
        NodeRef::Block(b) => {
            process.images.get(b.image as usize).is_some_and(|i| (b.block as usize) < i.blocks.len())
        }
        _ => false,
    };
    for e in &process.edges {
        if let NodeRef::Block(t) = e.target {
            if valid(e.target) && (e.kind.is_call() || e.kind == EdgeKind::Entry) {
                is_entry[t.image as usize][t.block as usize] = true;
            }
        }
    }
    let mut owners: Vec<Vec<u32>> = Vec::with_capacity(process.images.len());
    let mut result = Vec::with_capacity(process.images.len());
    for (img, image) in process.images.iter().enumerate() {
        let g = &cfgs[img];
        let n = image.blocks.len();
        let mut has_intra_pred = vec![false; n];
        for b in 0..n as u32 {
            for &s in g.successors(b) {
                has_intra_pred[s as usize] = true;
            }
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&b| (image.blocks[b as usize].offset, b));
        let mut owner: Vec<u32> = vec![u32::MAX; n];
        let mut routines: Vec<Routine> = Vec::new();
        let mut queue: Vec<u32> = Vec::new();
        for pass in 0..3 {
            for &b in &order {
                let wanted = match pass {
                    0 => is_entry[img][b as usize],
                    1 => !has_intra_pred[b as usize],
                    _ => true,
                };
                if !wanted || owner[b as usize] != u32::MAX {
                    continue;
                }
                // Breadth-first claim of everything the entry reaches that is still free.
                let r = routines.len() as u32;
                let mut nodes = Vec::new();
                owner[b as usize] = r;
                queue.clear();
                queue.push(b);
                let mut head = 0;
                while head < queue.len() {
                    let v = queue[head];
                    head += 1;
                    nodes.push(v);
                    for &s in g.successors(v) {
                        if owner[s as usize] == u32::MAX && !is_entry[img][s as usize] {
                            owner[s as usize] = r;
                            queue.push(s);
                        }
                    }
                }
                routines.push(Routine { entry: b, nodes, ..Routine::default() });
            }
        }
        owners.push(owner);
        result.push(routines);
    }
    // Exits, as Pin marks them: blocks with an edge that leaves their routine, whether a call,
    // a return, the process's EXIT or a jump into another routine.
    for e in &process.edges {
        let NodeRef::Block(s) = e.source else { continue };
        if !valid(e.source) {
            continue;
        }
        let img = s.image as usize;
        let here = owners[img][s.block as usize];
        let stays = match e.target {
            NodeRef::Block(t) if valid(e.target) && e.kind.is_intra_routine() => {
                t.image as usize == img && owners[img][t.block as usize] == here
            }
            _ => false,
        };
        if !stays {
            result[img][here as usize].exits.push(s.block);
        }
    }
    for rs in &mut result {
        for r in rs.iter_mut() {
            r.exits.sort_unstable();
            r.exits.dedup();
        }
    }
    result
}
