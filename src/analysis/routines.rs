//! Routines: the ones an input gave, or discovered by the DCFG rules when it gave none.
//!
//! DCFG rules (spec section 2.14): a routine has one entry; every node is reachable from the
//! entry without inter-routine edges (calls, returns, context changes), bypass edges allowed;
//! every block of an image is in exactly one routine.

use std::borrow::Cow;
use std::collections::VecDeque;

use crate::ir::{EdgeKind, NodeRef, Process, Routine};

/// The routines of every image of a process (index = image index): as given by the input, or
/// discovered with [`discover`] when the input has none.
pub fn all(process: &Process) -> Vec<Cow<'_, [Routine]>> {
    let mut discovered: Option<Vec<Vec<Routine>>> = None;
    (0..process.images.len())
        .map(|i| match &process.images[i].routines {
            Some(given) => Cow::Borrowed(given.as_slice()),
            None => {
                let d = discovered.get_or_insert_with(|| discover(process));
                Cow::Owned(std::mem::take(&mut d[i]))
            }
        })
        .collect()
}

/// Discovers the routines of every image from the edges (without dominators or loops; see
/// `crate::analysis` for those). Entries are call targets and the `ENTRY` edge's target;
/// blocks no entry reaches start routines of their own, in address order.
pub fn discover(process: &Process) -> Vec<Vec<Routine>> {
    let mut result = Vec::with_capacity(process.images.len());
    for (img, image) in process.images.iter().enumerate() {
        let n = image.blocks.len();
        let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut has_intra_pred = vec![false; n];
        let mut is_entry = vec![false; n];
        let mut leaves = vec![false; n];
        for e in &process.edges {
            let src = match e.source {
                NodeRef::Block(b) if b.image as usize == img => Some(b.block),
                _ => None,
            };
            let dst = match e.target {
                NodeRef::Block(b) if b.image as usize == img => Some(b.block),
                _ => None,
            };
            if let Some(d) = dst {
                if e.kind.is_call() || e.kind == EdgeKind::Entry {
                    is_entry[d as usize] = true;
                }
            }
            match (src, dst) {
                (Some(s), Some(d)) if e.kind.is_intra_routine() => {
                    succ[s as usize].push(d);
                    has_intra_pred[d as usize] = true;
                }
                (Some(s), _) if !e.kind.is_call() && !e.kind.is_bypass() => leaves[s as usize] = true,
                _ => {}
            }
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&b| (image.blocks[b as usize].offset, b));
        let mut owner: Vec<u32> = vec![u32::MAX; n];
        let mut routines: Vec<Routine> = Vec::new();
        let claim = |entry: u32, owner: &mut Vec<u32>, routines: &mut Vec<Routine>| {
            let r = routines.len() as u32;
            let mut nodes = Vec::new();
            let mut queue = VecDeque::from([entry]);
            owner[entry as usize] = r;
            while let Some(b) = queue.pop_front() {
                nodes.push(b);
                for &s in &succ[b as usize] {
                    if owner[s as usize] == u32::MAX {
                        owner[s as usize] = r;
                        queue.push_back(s);
                    }
                }
            }
            routines.push(Routine { entry, nodes, ..Routine::default() });
        };
        for pass in 0..3 {
            for &b in &order {
                let wanted = match pass {
                    0 => is_entry[b as usize],
                    1 => !has_intra_pred[b as usize],
                    _ => true,
                };
                if wanted && owner[b as usize] == u32::MAX {
                    claim(b, &mut owner, &mut routines);
                }
            }
        }
        // Exits: blocks with an edge that leaves their routine.
        for e in &process.edges {
            let NodeRef::Block(s) = e.source else { continue };
            if s.image as usize != img {
                continue;
            }
            let leaves_routine = match e.target {
                NodeRef::Block(t) if t.image as usize == img && e.kind.is_intra_routine() => {
                    owner[t.block as usize] != owner[s.block as usize]
                }
                _ => leaves[s.block as usize],
            };
            if leaves_routine {
                let r = &mut routines[owner[s.block as usize] as usize];
                if !r.exits.contains(&s.block) {
                    r.exits.push(s.block);
                }
            }
        }
        for r in &mut routines {
            r.exits.sort_unstable();
        }
        result.push(routines);
    }
    result
}
