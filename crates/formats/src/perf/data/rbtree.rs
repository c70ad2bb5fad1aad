//! The red-black tree perf keeps an image's symbols in, rebuilt node for node.
//!
//! perf looks a sample's address up by walking that tree from its root (`symbols__find`):
//! left while the address is below a node's start, right while it is at or past its end,
//! else that node. Where symbols overlap (the PLT entries perf adds after it has stretched a
//! symbol without a size over the PLT), which one a walk meets first depends on the shape of
//! the tree, and so on the order symbols were inserted and erased in. To name such an address
//! as perf does, the tree is built here with the same steps as the kernel's `lib/rbtree.c`
//! (the classic algorithm: insertion fixed up by recolouring and rotations, erasure replacing
//! a node with two children by its in-order successor), keys equal to a node's going right.

use cfghub_model::ir::NO_INDEX;

#[derive(Clone, Copy, Debug)]
struct Node {
    key: u64,
    left: u32,
    right: u32,
    parent: u32,
    red: bool,
}

/// A red-black tree of `u64` keys; nodes are numbered in insertion order.
#[derive(Debug, Default)]
pub(crate) struct RbTree {
    nodes: Vec<Node>,
    root: u32,
}

impl RbTree {
    pub fn new() -> RbTree {
        RbTree { nodes: Vec::new(), root: NO_INDEX }
    }

    #[cfg(test)]
    pub fn key(&self, node: u32) -> u64 {
        self.nodes[node as usize].key
    }

    pub fn root(&self) -> Option<u32> {
        (self.root != NO_INDEX).then_some(self.root)
    }

    pub fn left(&self, node: u32) -> Option<u32> {
        let l = self.nodes[node as usize].left;
        (l != NO_INDEX).then_some(l)
    }

    pub fn right(&self, node: u32) -> Option<u32> {
        let r = self.nodes[node as usize].right;
        (r != NO_INDEX).then_some(r)
    }

    /// Inserts a node with `key` below the last node whose key it is not less than (so after
    /// the nodes of an equal key, in order), and returns its number.
    pub fn insert(&mut self, key: u64) -> u32 {
        let id = self.nodes.len() as u32;
        let mut parent = NO_INDEX;
        let mut at = self.root;
        let mut to_left = false;
        while at != NO_INDEX {
            parent = at;
            to_left = key < self.n(at).key;
            at = if to_left { self.n(at).left } else { self.n(at).right };
        }
        self.nodes.push(Node { key, left: NO_INDEX, right: NO_INDEX, parent, red: true });
        if parent == NO_INDEX {
            self.root = id;
        } else if to_left {
            self.m(parent).left = id;
        } else {
            self.m(parent).right = id;
        }
        self.insert_fixup(id);
        id
    }

    fn n(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    fn m(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    fn is_red(&self, i: u32) -> bool {
        i != NO_INDEX && self.n(i).red
    }

    /// Puts `new` where `old` hangs from `parent` (or at the root).
    fn replace_child(&mut self, old: u32, new: u32, parent: u32) {
        if parent == NO_INDEX {
            self.root = new;
        } else if self.n(parent).left == old {
            self.m(parent).left = new;
        } else {
            self.m(parent).right = new;
        }
        if new != NO_INDEX {
            self.m(new).parent = parent;
        }
    }

    /// Rotates `x` down to the left: its right child takes its place.
    fn rotate_left(&mut self, x: u32) {
        let y = self.n(x).right;
        let inner = self.n(y).left;
        self.m(x).right = inner;
        if inner != NO_INDEX {
            self.m(inner).parent = x;
        }
        let parent = self.n(x).parent;
        self.replace_child(x, y, parent);
        self.m(y).left = x;
        self.m(x).parent = y;
    }

    /// Rotates `x` down to the right: its left child takes its place.
    fn rotate_right(&mut self, x: u32) {
        let y = self.n(x).left;
        let inner = self.n(y).right;
        self.m(x).left = inner;
        if inner != NO_INDEX {
            self.m(inner).parent = x;
        }
        let parent = self.n(x).parent;
        self.replace_child(x, y, parent);
        self.m(y).right = x;
        self.m(x).parent = y;
    }

    fn insert_fixup(&mut self, mut node: u32) {
        loop {
            let mut parent = self.n(node).parent;
            if parent == NO_INDEX {
                self.m(node).red = false;
                return;
            }
            if !self.n(parent).red {
                return;
            }
            let grand = self.n(parent).parent;
            let parent_is_left = self.n(grand).left == parent;
            let uncle = if parent_is_left { self.n(grand).right } else { self.n(grand).left };
            if self.is_red(uncle) {
                // Recolour and go on two levels up.
                self.m(uncle).red = false;
                self.m(parent).red = false;
                self.m(grand).red = true;
                node = grand;
                continue;
            }
            if parent_is_left {
                if self.n(parent).right == node {
                    self.rotate_left(parent);
                    parent = node;
                }
                self.rotate_right(grand);
            } else {
                if self.n(parent).left == node {
                    self.rotate_right(parent);
                    parent = node;
                }
                self.rotate_left(grand);
            }
            self.m(parent).red = false;
            self.m(grand).red = true;
            return;
        }
    }

    /// Takes `node` out of the tree; a node with two children gives its place (and colour) to
    /// its in-order successor.
    pub(crate) fn erase(&mut self, node: u32) {
        let Node { left, right, parent, red, .. } = *self.n(node);
        // The node whose parent loses a black node, when one does.
        let rebalance;
        if left == NO_INDEX || right == NO_INDEX {
            let child = if left == NO_INDEX { right } else { left };
            self.replace_child(node, child, parent);
            if child != NO_INDEX {
                // A lone child is red: painted black, it makes up for the node.
                self.m(child).red = false;
                rebalance = NO_INDEX;
            } else {
                rebalance = if red { NO_INDEX } else { parent };
            }
        } else {
            let mut successor = right;
            while self.n(successor).left != NO_INDEX {
                successor = self.n(successor).left;
            }
            let successor_red = self.n(successor).red;
            let child = self.n(successor).right;
            let fixup_parent;
            if successor == right {
                fixup_parent = successor;
            } else {
                fixup_parent = self.n(successor).parent;
                self.m(fixup_parent).left = child;
                if child != NO_INDEX {
                    self.m(child).parent = fixup_parent;
                }
                self.m(successor).right = right;
                self.m(right).parent = successor;
            }
            self.m(successor).left = left;
            self.m(left).parent = successor;
            self.replace_child(node, successor, parent);
            self.m(successor).red = red;
            if child != NO_INDEX {
                self.m(child).red = false;
                rebalance = NO_INDEX;
            } else {
                rebalance = if successor_red { NO_INDEX } else { fixup_parent };
            }
        }
        if rebalance != NO_INDEX {
            self.erase_fixup(rebalance);
        }
    }

    /// Restores the black heights after a black node left from below `parent` (on the side
    /// where `node`, black or none, now is).
    fn erase_fixup(&mut self, mut parent: u32) {
        let mut node = NO_INDEX;
        loop {
            let node_is_left = self.n(parent).left == node;
            let mut sibling = if node_is_left { self.n(parent).right } else { self.n(parent).left };
            if self.is_red(sibling) {
                if node_is_left {
                    self.rotate_left(parent);
                } else {
                    self.rotate_right(parent);
                }
                self.m(sibling).red = false;
                self.m(parent).red = true;
                sibling = if node_is_left { self.n(parent).right } else { self.n(parent).left };
            }
            let (near, far) = if node_is_left {
                (self.n(sibling).left, self.n(sibling).right)
            } else {
                (self.n(sibling).right, self.n(sibling).left)
            };
            if !self.is_red(far) && !self.is_red(near) {
                self.m(sibling).red = true;
                if self.n(parent).red {
                    self.m(parent).red = false;
                    return;
                }
                node = parent;
                parent = self.n(node).parent;
                if parent == NO_INDEX {
                    return;
                }
                continue;
            }
            if !self.is_red(far) {
                // The near nephew is red: turn it into the far one.
                if node_is_left {
                    self.rotate_right(sibling);
                } else {
                    self.rotate_left(sibling);
                }
                self.m(near).red = false;
                self.m(sibling).red = true;
                sibling = near;
            }
            let far = if node_is_left { self.n(sibling).right } else { self.n(sibling).left };
            if node_is_left {
                self.rotate_left(parent);
            } else {
                self.rotate_right(parent);
            }
            self.m(sibling).red = self.n(parent).red;
            self.m(parent).red = false;
            self.m(far).red = false;
            return;
        }
    }

    /// Checks the tree's invariants; returns its black height.
    #[cfg(test)]
    fn check(&self, at: u32, low: u64, high: u64) -> usize {
        if at == NO_INDEX {
            return 1;
        }
        let n = self.n(at);
        assert!(low <= n.key && n.key <= high);
        if n.red {
            assert!(!self.is_red(n.left) && !self.is_red(n.right), "red node with a red child");
        }
        for c in [n.left, n.right] {
            if c != NO_INDEX {
                assert_eq!(self.n(c).parent, at);
            }
        }
        let l = self.check(n.left, low, n.key);
        let r = self.check(n.right, n.key, high);
        assert_eq!(l, r, "black heights differ");
        l + usize::from(!n.red)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(t: &RbTree, at: Option<u32>) -> String {
        match at {
            None => ".".into(),
            Some(i) => format!(
                "({} {}{} {})",
                shape(t, t.left(i)),
                t.key(i),
                if t.n(i).red { "r" } else { "" },
                shape(t, t.right(i))
            ),
        }
    }

    /// Shapes worked out by hand from the algorithm's cases: ascending keys rotate left,
    /// a red uncle recolours, equal keys go right.
    #[test]
    fn insertion_rebalances_as_the_kernel_tree_does() {
        let mut t = RbTree::new();
        for k in [1, 2, 3] {
            t.insert(k);
        }
        assert_eq!(shape(&t, t.root()), "((. 1r .) 2 (. 3r .))");
        t.insert(4);
        assert_eq!(shape(&t, t.root()), "((. 1 .) 2 (. 3 (. 4r .)))");
        t.insert(4);
        assert_eq!(shape(&t, t.root()), "((. 1 .) 2 ((. 3r .) 4 (. 4r .)))");
    }

    #[test]
    fn erasure_keeps_order_and_balance() {
        let mut t = RbTree::new();
        let mut x: u64 = 12345;
        let mut ids = Vec::new();
        for _ in 0..500 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ids.push(t.insert((x >> 40) % 200));
            t.check(t.root, 0, u64::MAX);
        }
        for (n, id) in ids.iter().enumerate() {
            if n % 3 != 1 {
                t.erase(*id);
                t.check(t.root, 0, u64::MAX);
            }
        }
        let mut inorder = Vec::new();
        fn walk(t: &RbTree, at: Option<u32>, out: &mut Vec<u32>) {
            if let Some(i) = at {
                walk(t, t.left(i), out);
                out.push(i);
                walk(t, t.right(i), out);
            }
        }
        walk(&t, t.root(), &mut inorder);
        let kept: Vec<u32> = ids.iter().enumerate().filter(|(n, _)| n % 3 == 1).map(|(_, &id)| id).collect();
        let mut expected = kept.clone();
        // In order: by key, equal keys in insertion order.
        expected.sort_by_key(|&id| (t.key(id), id));
        assert_eq!(inorder, expected);
    }

    /// Erasing a node with two children puts its successor in its place with its colour.
    #[test]
    fn erasure_moves_the_successor_up() {
        let mut t = RbTree::new();
        let ids: Vec<u32> = [10, 5, 20, 15, 30].into_iter().map(|k| t.insert(k)).collect();
        assert_eq!(shape(&t, t.root()), "((. 5 .) 10 ((. 15r .) 20 (. 30r .)))");
        t.erase(ids[0]);
        assert_eq!(shape(&t, t.root()), "((. 5 .) 15 (. 20 (. 30r .)))");
        t.erase(ids[1]);
        assert_eq!(shape(&t, t.root()), "((. 15 .) 20 (. 30 .))");
    }
}
