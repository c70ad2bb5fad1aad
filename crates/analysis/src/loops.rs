//! Natural loops of a routine, with their nesting.
//!
//! An edge `s -> h` inside a routine is a *back edge* when `h` dominates `s`; `h` is then a loop
//! head. The natural loop of `h` is `h` plus every block that reaches one of its back-edge
//! sources without passing through `h`; back edges to the same head make one loop (the DCFG
//! rule: one head, possibly several back edges). Loops with different heads are disjoint or
//! nested; a loop's parent is the innermost other loop that contains its head. This is the
//! "standard graph-traversal" definition the DCFG spec (section 2.15) uses for its `LOOPS` table,
//! whose `LOOP_NODE_IDS` include the inner loops' blocks; a `REP` instruction or a one-block
//! loop is a self edge and makes a loop of one block.
//!
//! Retreating edges whose target does not dominate their source (loops entered at two places,
//! irreducible control flow) make no natural loop and are not reported, as in the DCFG files
//! Pin writes.
//!
//! Algorithm: heads are taken innermost first (decreasing reverse post-order: an outer head
//! dominates, hence precedes, an inner one); each loop body is found by walking predecessors
//! backwards from the back-edge sources, where a union-find collapses every finished inner loop
//! into its head, so each block is walked once per nesting level at most and once in all in
//! practice: near-linear time.

use crate::cfg::RoutineCfg;
use crate::dominators::Dominators;
use cfghub_model::ir::Loop;
use cfghub_model::ir::NO_INDEX;

/// The natural loops of a routine graph as [`Loop`]s over block indices: outer loops before the
/// loops they contain (by reverse post-order of heads), back-edge sources and nodes sorted by
/// block index.
pub(crate) fn natural_loops(g: &RoutineCfg, d: &Dominators) -> Vec<Loop> {
    let n = g.len();
    // Back-edge sources per head, local numbers.
    let mut heads: Vec<u32> = Vec::new();
    let sources = back_edges(g, d);
    if sources.is_empty() {
        return Vec::new();
    }
    for &(h, _) in &sources {
        if heads.last() != Some(&h) {
            heads.push(h);
        }
    }
    // Innermost first.
    let mut order = heads.clone();
    order.sort_unstable_by_key(|&h| std::cmp::Reverse(d.rpo_index[h as usize]));

    let mut uf: Vec<u32> = (0..n as u32).collect();
    let mut mark = vec![NO_INDEX; n];
    let mut innermost = vec![NO_INDEX; n]; // head of the innermost loop containing each node
    let mut parent = vec![NO_INDEX; n]; // for heads: head of the enclosing loop
    let mut is_head = vec![false; n];
    for &h in &heads {
        is_head[h as usize] = true;
    }
    let mut work: Vec<u32> = Vec::new();
    let mut body: Vec<u32> = Vec::new();
    for &h in &order {
        mark[h as usize] = h;
        if innermost[h as usize] == NO_INDEX {
            innermost[h as usize] = h;
        }
        for &(_, s) in back_edges_to(&sources, h) {
            let r = find(&mut uf, s);
            if mark[r as usize] != h {
                mark[r as usize] = h;
                work.push(r);
            }
        }
        body.clear();
        while let Some(r) = work.pop() {
            body.push(r);
            for &p in g.predecessors(r) {
                if !d.reachable(p) {
                    continue;
                }
                let q = find(&mut uf, p);
                if mark[q as usize] != h {
                    mark[q as usize] = h;
                    work.push(q);
                }
            }
        }
        for &r in &body {
            uf[r as usize] = h;
            if is_head[r as usize] && parent[r as usize] == NO_INDEX {
                parent[r as usize] = h;
            }
            if innermost[r as usize] == NO_INDEX {
                innermost[r as usize] = h;
            }
        }
    }
    loop_table(g, d, &heads, &sources, &parent, &innermost)
}

/// The back edges of a routine graph as (head, source) pairs of local numbers, sorted and
/// distinct: the edges to a block that dominates their source.
fn back_edges(g: &RoutineCfg, d: &Dominators) -> Vec<(u32, u32)> {
    let mut sources: Vec<(u32, u32)> = Vec::new(); // (head, source)
    for &v in &d.rpo {
        for &h in g.successors(v) {
            if d.dominates(h, v) {
                sources.push((h, v));
            }
        }
    }
    sources.sort_unstable();
    sources.dedup();
    sources
}

/// The back edges to head `h` among the sorted (head, source) pairs `sources`.
fn back_edges_to(sources: &[(u32, u32)], h: u32) -> &[(u32, u32)] {
    let lo = sources.partition_point(|&(x, _)| x < h);
    let hi = sources.partition_point(|&(x, _)| x <= h);
    &sources[lo..hi]
}

/// The loops of `heads` as [`Loop`]s over block indices (see [`natural_loops`]), from the back
/// edges (`sources`), each head's enclosing loop's head (`parent`) and each node's innermost
/// loop's head (`innermost`), all in local numbers.
fn loop_table(
    g: &RoutineCfg,
    d: &Dominators,
    heads: &[u32],
    sources: &[(u32, u32)],
    parent: &[u32],
    innermost: &[u32],
) -> Vec<Loop> {
    // Members: every node belongs to its innermost loop and that loop's ancestors.
    let mut slot = vec![NO_INDEX; g.len()];
    let mut loops: Vec<Loop> = Vec::with_capacity(heads.len());
    let mut by_rpo = heads.to_vec();
    by_rpo.sort_unstable_by_key(|&h| d.rpo_index[h as usize]);
    for &h in &by_rpo {
        slot[h as usize] = loops.len() as u32;
        let mut back: Vec<u32> =
            back_edges_to(sources, h).iter().map(|&(_, s)| g.blocks[s as usize]).collect();
        back.sort_unstable();
        loops.push(Loop {
            head: g.blocks[h as usize],
            back_edge_sources: back,
            nodes: Vec::new(),
            parent: (parent[h as usize] != NO_INDEX).then(|| g.blocks[parent[h as usize] as usize]),
        });
    }
    for (v, &inner) in innermost.iter().enumerate() {
        let mut h = inner;
        let mut guard = 0;
        while h != NO_INDEX && guard <= heads.len() {
            loops[slot[h as usize] as usize].nodes.push(g.blocks[v]);
            h = parent[h as usize];
            guard += 1;
        }
    }
    for l in &mut loops {
        l.nodes.sort_unstable();
    }
    loops
}

fn find(uf: &mut [u32], mut v: u32) -> u32 {
    while uf[v as usize] != v {
        let p = uf[v as usize];
        uf[v as usize] = uf[p as usize];
        v = p;
    }
    v
}

/// Nesting depth of `loops[index]` among a routine's loops: 1 for an outermost loop, its
/// parent's depth plus one otherwise (parents are named by head block). A parent chain that
/// names a missing loop or cycles stops counting there.
pub fn depth(loops: &[Loop], index: usize) -> usize {
    let mut depth = 1;
    let mut parent = loops[index].parent;
    while let Some(head) = parent {
        if depth > loops.len() {
            break;
        }
        match loops.iter().find(|l| l.head == head) {
            Some(outer) => {
                depth += 1;
                parent = outer.parent;
            }
            None => break,
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_follows_parent_heads() {
        let l = |head, parent| Loop { head, parent, ..Loop::default() };
        // Pin lists inner loops before their parents at times: order must not matter.
        let loops = [l(7, Some(3)), l(3, None), l(9, Some(7)), l(5, Some(42)), l(1, Some(2)), l(2, Some(1))];
        assert_eq!(depth(&loops, 1), 1);
        assert_eq!(depth(&loops, 0), 2);
        assert_eq!(depth(&loops, 2), 3);
        assert_eq!(depth(&loops, 3), 1, "a parent that heads no loop counts as none");
        assert!(depth(&loops, 4) <= loops.len() + 1, "a parent cycle terminates");
    }
    use crate::dominators::compute;

    fn loops(n: usize, edges: &[(u32, u32)]) -> Vec<Loop> {
        let g = RoutineCfg::from_local(n, 0, edges);
        natural_loops(&g, &compute(&g))
    }

    fn lp(head: u32, back: &[u32], nodes: &[u32], parent: Option<u32>) -> Loop {
        Loop { head, back_edge_sources: back.to_vec(), nodes: nodes.to_vec(), parent }
    }

    #[test]
    fn simple_loop_main_shape() {
        // 0 -> 2, 2 -> 1, 1 -> 2 (back edge), 2 -> 3
        assert_eq!(loops(4, &[(0, 2), (2, 1), (1, 2), (2, 3)]), [lp(2, &[1], &[1, 2], None)]);
    }

    #[test]
    fn nesting_like_the_dcfg_spec_example() {
        // Outer loop head 1 with two back edges (from 6 and 8); an inner self loop at 7 and an
        // inner loop 3 <- 4.
        // 0->1, 1->2, 2->3, 3->4, 4->3, 4->5, 5->6, 6->1, 5->7, 7->7, 7->8, 8->1, 1->9
        let got = loops(
            10,
            &[
                (0, 1),
                (1, 2),
                (2, 3),
                (3, 4),
                (4, 3),
                (4, 5),
                (5, 6),
                (6, 1),
                (5, 7),
                (7, 7),
                (7, 8),
                (8, 1),
                (1, 9),
            ],
        );
        assert_eq!(
            got,
            [
                lp(1, &[6, 8], &[1, 2, 3, 4, 5, 6, 7, 8], None),
                lp(3, &[4], &[3, 4], Some(1)),
                lp(7, &[7], &[7], Some(1)),
            ]
        );
    }

    #[test]
    fn three_deep_nesting_reports_every_level() {
        // 0->1->2->3, 3->3 (innermost), 3->4, 4->2, 4->5, 5->1, 5->6
        let got = loops(7, &[(0, 1), (1, 2), (2, 3), (3, 3), (3, 4), (4, 2), (4, 5), (5, 1), (5, 6)]);
        assert_eq!(
            got,
            [
                lp(1, &[5], &[1, 2, 3, 4, 5], None),
                lp(2, &[4], &[2, 3, 4], Some(1)),
                lp(3, &[3], &[3], Some(2))
            ]
        );
    }

    #[test]
    fn irreducible_cycles_are_no_natural_loops() {
        assert!(loops(3, &[(0, 1), (0, 2), (1, 2), (2, 1)]).is_empty());
    }

    #[test]
    fn sibling_loops_share_no_nodes() {
        // 0->1, 1->1, 1->2, 2->3, 3->2, 3->4
        let got = loops(5, &[(0, 1), (1, 1), (1, 2), (2, 3), (3, 2), (3, 4)]);
        assert_eq!(got, [lp(1, &[1], &[1], None), lp(2, &[3], &[2, 3], None)]);
    }

    /// Dominator sets by the textbook data-flow iteration: `dom[v]` as a bit set.
    fn naive_dominators(n: usize, edges: &[(u32, u32)]) -> Vec<Vec<bool>> {
        let mut reach = vec![false; n];
        let mut stack = vec![0usize];
        reach[0] = true;
        while let Some(v) = stack.pop() {
            for &(s, t) in edges {
                if s as usize == v && !reach[t as usize] {
                    reach[t as usize] = true;
                    stack.push(t as usize);
                }
            }
        }
        let mut dom: Vec<Vec<bool>> =
            (0..n).map(|v| if v == 0 { (0..n).map(|u| u == 0).collect() } else { reach.clone() }).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for v in 1..n {
                if !reach[v] {
                    continue;
                }
                let mut new: Vec<bool> = reach.clone();
                for &(s, t) in edges {
                    if t as usize == v && reach[s as usize] {
                        for u in 0..n {
                            new[u] = new[u] && dom[s as usize][u];
                        }
                    }
                }
                new[v] = true;
                if new != dom[v] {
                    dom[v] = new;
                    changed = true;
                }
            }
        }
        for v in 0..n {
            if !reach[v] {
                dom[v] = vec![false; n];
            }
        }
        dom
    }

    proptest::proptest! {
        #[test]
        fn dominators_and_loops_agree_with_their_definitions(
            n in 2usize..24,
            raw in proptest::collection::vec((0u32..24, 0u32..24), 1..60),
        ) {
            let edges: Vec<(u32, u32)> = raw.into_iter().map(|(a, b)| (a % n as u32, b % n as u32)).collect();
            let g = RoutineCfg::from_local(n, 0, &edges);
            let d = compute(&g);
            let dom = naive_dominators(n, &edges);
            for v in 0..n {
                if !d.reachable(v as u32) {
                    continue;
                }
                for (u, &expected) in dom[v].iter().enumerate() {
                    proptest::prop_assert_eq!(d.dominates(u as u32, v as u32), expected, "{} dom {}", u, v);
                }
                if v != 0 {
                    // The immediate dominator: the strict dominator every other one dominates.
                    let i = d.idom[v] as usize;
                    proptest::prop_assert!(i != v && dom[v][i]);
                    for (u, &strict) in dom[v].iter().enumerate() {
                        if u != v && strict {
                            proptest::prop_assert!(dom[i][u], "idom {} of {} not dominated by {}", i, v, u);
                        }
                    }
                }
            }
            let found = natural_loops(&g, &d);
            // Every back edge's head has exactly one loop, holding exactly the natural loop.
            let mut heads: Vec<u32> = edges.iter().filter(|&&(s, t)| d.reachable(s) && dom[s as usize][t as usize]).map(|&(_, t)| t).collect();
            heads.sort_unstable();
            heads.dedup();
            let mut got: Vec<u32> = found.iter().map(|l| l.head).collect();
            got.sort_unstable();
            proptest::prop_assert_eq!(&got, &heads);
            for l in &found {
                let h = l.head;
                let mut body = vec![false; n];
                body[h as usize] = true;
                let mut stack: Vec<u32> = l.back_edge_sources.clone();
                for &s in &stack {
                    body[s as usize] = true;
                }
                while let Some(v) = stack.pop() {
                    if v == h {
                        continue;
                    }
                    for &(s, t) in &edges {
                        if t == v && d.reachable(s) && !body[s as usize] {
                            body[s as usize] = true;
                            stack.push(s);
                        }
                    }
                }
                let expected: Vec<u32> = (0..n as u32).filter(|&v| body[v as usize]).collect();
                proptest::prop_assert_eq!(&l.nodes, &expected, "loop {}", h);
                // The parent is the smallest other loop containing the head.
                let parent = found
                    .iter()
                    .filter(|o| o.head != h && o.nodes.contains(&h))
                    .min_by_key(|o| o.nodes.len())
                    .map(|o| o.head);
                proptest::prop_assert_eq!(l.parent, parent, "parent of {}", h);
            }
        }
    }
}
