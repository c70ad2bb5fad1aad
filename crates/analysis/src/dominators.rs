//! Immediate dominators of a routine's blocks.
//!
//! Block `d` dominates block `b` when every path from the routine's entry to `b` passes
//! through `d`; the immediate dominator of `b` is its closest strict dominator. DCFG files
//! carry them in each routine's `NODES` table (`IDOM_NODE_ID`, the entry naming itself); this
//! module computes them for formats without them and for `--recompute`.
//!
//! The algorithm is Cooper, Harvey and Kennedy's "A Simple, Fast Dominance Algorithm" (2001):
//! number the blocks in reverse post-order from the entry, then repeat
//! `idom(b) = intersect(processed predecessors of b)` until nothing changes, where `intersect`
//! walks the two candidates up the tree by post-order number. On the reducible graphs compilers
//! produce it settles in two passes, which makes it faster in practice than Lengauer-Tarjan.
//!
//! Only edges between the routine's own blocks count ([`crate::cfg::RoutineCfg`]).
//! Blocks the entry does not reach (which the DCFG rules forbid, but a producer's routines may
//! not match its edges) get the entry as their immediate dominator and no post-order number.

use crate::cfg::RoutineCfg;
use cfghub_model::ir::NO_INDEX;

/// The dominator tree of one routine, over its local node numbers.
#[derive(Clone, Debug, Default)]
pub struct Dominators {
    /// Immediate dominator of every local node; the entry's is itself.
    pub idom: Vec<u32>,
    /// Local nodes reachable from the entry, in reverse post-order (the entry first).
    pub rpo: Vec<u32>,
    /// Position of every local node in `rpo`, [`NO_INDEX`] when unreachable.
    pub rpo_index: Vec<u32>,
    /// Pre- and post-order numbers in the dominator tree, for O(1) dominance tests.
    tree_pre: Vec<u32>,
    tree_post: Vec<u32>,
}

impl Dominators {
    /// Whether local node `v` is reachable from the entry.
    pub fn reachable(&self, v: u32) -> bool {
        self.rpo_index[v as usize] != NO_INDEX
    }

    /// Whether `a` dominates `b` (every node dominates itself). False when either is
    /// unreachable.
    pub fn dominates(&self, a: u32, b: u32) -> bool {
        let (a, b) = (a as usize, b as usize);
        self.tree_pre[a] != NO_INDEX
            && self.tree_pre[b] != NO_INDEX
            && self.tree_pre[a] <= self.tree_pre[b]
            && self.tree_post[b] <= self.tree_post[a]
    }
}

/// Computes the dominator tree of a routine graph.
pub fn compute(g: &RoutineCfg) -> Dominators {
    let n = g.len();
    if n == 0 {
        return Dominators::default();
    }
    let entry = g.entry;
    // Iterative depth-first search for the post-order.
    let mut post: Vec<u32> = Vec::with_capacity(n);
    let mut visited = vec![false; n];
    let mut stack: Vec<(u32, u32)> = vec![(entry, 0)];
    visited[entry as usize] = true;
    while let Some(top) = stack.last_mut() {
        let (v, i) = *top;
        let succ = g.successors(v);
        if (i as usize) < succ.len() {
            top.1 += 1;
            let w = succ[i as usize];
            if !visited[w as usize] {
                visited[w as usize] = true;
                stack.push((w, 0));
            }
        } else {
            post.push(v);
            stack.pop();
        }
    }
    let mut po_num = vec![NO_INDEX; n];
    for (i, &v) in post.iter().enumerate() {
        po_num[v as usize] = i as u32;
    }
    let rpo: Vec<u32> = post.iter().rev().copied().collect();
    let mut rpo_index = vec![NO_INDEX; n];
    for (i, &v) in rpo.iter().enumerate() {
        rpo_index[v as usize] = i as u32;
    }

    let mut idom = vec![NO_INDEX; n];
    idom[entry as usize] = entry;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in rpo.iter().skip(1) {
            let mut new_idom = NO_INDEX;
            for &p in g.predecessors(b) {
                if idom[p as usize] == NO_INDEX {
                    continue;
                }
                new_idom = if new_idom == NO_INDEX { p } else { intersect(&idom, &po_num, p, new_idom) };
            }
            if new_idom != NO_INDEX && idom[b as usize] != new_idom {
                idom[b as usize] = new_idom;
                changed = true;
            }
        }
    }
    for d in idom.iter_mut() {
        if *d == NO_INDEX {
            *d = entry;
        }
    }

    // Dominator tree numbering (children in reverse post-order for a stable walk).
    let mut child_start = vec![0u32; n + 1];
    for &v in rpo.iter().skip(1) {
        child_start[idom[v as usize] as usize + 1] += 1;
    }
    for i in 0..n {
        child_start[i + 1] += child_start[i];
    }
    let mut fill = child_start.clone();
    let mut children = vec![0u32; rpo.len().saturating_sub(1)];
    for &v in rpo.iter().skip(1) {
        let p = idom[v as usize] as usize;
        children[fill[p] as usize] = v;
        fill[p] += 1;
    }
    let mut tree_pre = vec![NO_INDEX; n];
    let mut tree_post = vec![NO_INDEX; n];
    let (mut pre_n, mut post_n) = (0u32, 0u32);
    let mut stack: Vec<(u32, u32)> = vec![(entry, child_start[entry as usize])];
    tree_pre[entry as usize] = pre_n;
    pre_n += 1;
    while let Some(top) = stack.last_mut() {
        let (v, i) = *top;
        if i < child_start[v as usize + 1] {
            top.1 += 1;
            let c = children[i as usize];
            tree_pre[c as usize] = pre_n;
            pre_n += 1;
            stack.push((c, child_start[c as usize]));
        } else {
            tree_post[v as usize] = post_n;
            post_n += 1;
            stack.pop();
        }
    }
    Dominators { idom, rpo, rpo_index, tree_pre, tree_post }
}

fn intersect(idom: &[u32], po: &[u32], mut a: u32, mut b: u32) -> u32 {
    while a != b {
        while po[a as usize] < po[b as usize] {
            a = idom[a as usize];
        }
        while po[b as usize] < po[a as usize] {
            b = idom[b as usize];
        }
    }
    a
}

/// Immediate dominators of `nodes` (block indices) as block indices, in the order of `nodes`:
/// the shape of [`cfghub_model::ir::Routine::idoms`].
pub(crate) fn idoms_of(g: &RoutineCfg, d: &Dominators, nodes: &[u32], map: &mut Vec<u32>) -> Vec<u32> {
    let max = g.blocks.iter().copied().max().map_or(0, |m| m as usize + 1);
    if map.len() < max {
        map.resize(max, NO_INDEX);
    }
    for (i, &b) in g.blocks.iter().enumerate() {
        map[b as usize] = i as u32;
    }
    let out = nodes
        .iter()
        .map(|&b| match map.get(b as usize) {
            Some(&l) if l != NO_INDEX => g.blocks[d.idom[l as usize] as usize],
            _ => g.blocks.first().copied().unwrap_or(b),
        })
        .collect();
    for &b in &g.blocks {
        map[b as usize] = NO_INDEX;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idoms(n: usize, edges: &[(u32, u32)]) -> Vec<u32> {
        compute(&RoutineCfg::from_local(n, 0, edges)).idom
    }

    #[test]
    fn diamond_and_chain() {
        // 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 4
        assert_eq!(idoms(5, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]), [0, 0, 0, 0, 3]);
    }

    #[test]
    fn loop_with_a_test_at_the_bottom_like_simple_loop_main() {
        // main of simple-loop: 0 -> 2 (jump to the test), 2 -> 1 (body), 1 -> 2 (back), 2 -> 3.
        let d = compute(&RoutineCfg::from_local(4, 0, &[(0, 2), (2, 1), (1, 2), (2, 3)]));
        assert_eq!(d.idom, [0, 2, 0, 2]);
        assert!(d.dominates(2, 1));
        assert!(!d.dominates(1, 2));
        assert!(d.dominates(0, 3));
        assert!(d.dominates(3, 3));
    }

    #[test]
    fn irreducible_region_and_unreachable_node() {
        // 0 -> 1, 0 -> 2, 1 <-> 2 (two entries into the cycle); 3 unreachable.
        let d = compute(&RoutineCfg::from_local(4, 0, &[(0, 1), (0, 2), (1, 2), (2, 1), (3, 1)]));
        assert_eq!(d.idom, [0, 0, 0, 0]);
        assert!(!d.reachable(3));
        assert!(!d.dominates(0, 3));
    }

    #[test]
    fn the_textbook_example_of_cooper_harvey_kennedy() {
        // Figure 4 of the paper, nodes renumbered 5..1 -> 0..4 with 0 the entry:
        // 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 4, 3 -> 4, 4 -> 3.
        assert_eq!(idoms(5, &[(0, 1), (0, 2), (1, 3), (2, 4), (3, 4), (4, 3)]), [0, 0, 0, 0, 0]);
    }
}
