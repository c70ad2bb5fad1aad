//! The transition table (spec section 3.5): for each current edge, prefix codes that select the
//! edge ids that follow it.
//!
//! A row `[CURRENT_EDGE_ID, TRANSITION_CODE, NEXT_EDGE_IDS]` says: after edge `CURRENT_EDGE_ID`,
//! the bits `TRANSITION_CODE` (zero to 32 characters `0`/`1`) mean that the edges
//! `NEXT_EDGE_IDS` come next; the last of them is the new current edge. The codes of one
//! current edge must be decodable by reading the fewest bits that settle the choice, so no code
//! may be a prefix of another (the spec's weaker rule, "unique when padded to 32 bits", still
//! lets `0` and `01` both stand, which no reader can tell apart; such tables are rejected).
//!
//! Edge ids become dense *states* (indices); each state gets a decoding strategy: no
//! transitions, one transition with the empty code, a lookup table indexed by the next
//! `peek` bits, or, for long codes, a binary trie walked bit by bit.

use std::collections::HashMap;

use cfghub_model::error::{Error, Result};

/// Longest code served from a lookup table; longer ones use the trie.
const LUT_MAX_BITS: u32 = 12;
/// Lookup-table entries over all states before the remaining states fall back to tries.
const LUT_BUDGET: usize = 1 << 22;

/// One row of a transition table as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// `CURRENT_EDGE_ID`: the edge the code follows.
    pub current: u64,
    /// Code bits, right-aligned.
    pub code: u32,
    /// Code length in bits (0 to 32; 0 is the empty code).
    pub len: u8,
    /// `NEXT_EDGE_IDS`: the edges the code stands for, in order; the last becomes current.
    pub next: Vec<u64>,
}

impl Row {
    /// Parses a `TRANSITION_CODE` string.
    pub(crate) fn parse_code(text: &str) -> std::result::Result<(u32, u8), String> {
        if text.len() > 32 {
            return Err(format!("a transition code has at most 32 bits, this one {}", text.len()));
        }
        let mut code = 0u32;
        for c in text.bytes() {
            code = (code << 1)
                | match c {
                    b'0' => 0,
                    b'1' => 1,
                    _ => {
                        return Err(format!("transition code \"{text}\" has a character other than 0 and 1"))
                    }
                };
        }
        Ok((code, text.len() as u8))
    }

    /// The code as text.
    pub(crate) fn code_text(code: u32, len: u8) -> String {
        (0..len).rev().map(|i| if (code >> i) & 1 == 1 { '1' } else { '0' }).collect()
    }
}

/// What a matched code yields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Code length in bits; for lookup tables, 0 marks "no code matches these bits".
    pub len: u8,
    /// Set when a check (against a paired DCFG) failed for this transition.
    pub bad: bool,
    /// Number of next edges (1 or more; 0 in an empty lookup slot).
    pub count: u32,
    /// The single next state, or the offset of the next states in [`Table::seqs`].
    pub next: u32,
}

/// How a state decodes its successor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No rows: a trace cannot continue after this edge.
    None,
    /// One row with the empty code.
    Direct(Entry),
    /// Look up the next `peek` bits at `lut[base..]`.
    Lut {
        /// Bits looked at: the state's longest code length.
        peek: u8,
        /// Index of the state's first slot in [`Table::lut`].
        base: u32,
    },
    /// Walk the trie from node `root`.
    Trie {
        /// Index of the root node in the table's trie.
        root: u32,
    },
}

/// A trie node: children for bit 0 and bit 1 (`u32::MAX` when absent), or a leaf entry.
#[derive(Clone, Copy, Debug)]
struct Node {
    child: [u32; 2],
    leaf: Option<Entry>,
}

/// A compiled transition table over dense states.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Edge id of each state.
    pub ids: Vec<u64>,
    /// State of each edge id.
    pub states: HashMap<u64, u32>,
    /// Decoding strategy of each state.
    pub kinds: Vec<Kind>,
    /// Lookup-table slots of every [`Kind::Lut`] state: `1 << peek` of them from its `base`.
    pub lut: Vec<Entry>,

    trie: Vec<Node>,
    /// Multi-edge NEXT_EDGE_IDS, as states.
    pub seqs: Vec<u32>,
    /// States flagged by a check against a paired DCFG (edge absent from it).
    pub bad_state: Vec<bool>,
    /// Number of rows read.
    pub rows: usize,
    /// Fast path per state: `base << 8 | peek`, into `flut` (see [`Table::build_fast`]).
    pub fast: Vec<u64>,
    /// Fast-path entries: `next | len << 32 | FAST`; entry 0 is empty.
    pub flut: Vec<u64>,
}

/// Flag of a fast-path entry that yields exactly one edge and passed every check.
pub(crate) const FAST: u64 = 1 << 40;

impl Table {
    /// The state of `id`, adding it when new.
    fn intern(&mut self, id: u64) -> u32 {
        if let Some(&s) = self.states.get(&id) {
            return s;
        }
        let s = self.ids.len() as u32;
        self.ids.push(id);
        self.states.insert(id, s);
        s
    }

    /// Compiles rows; `what` names the table in messages. Rejects ambiguous codes.
    pub fn build(rows: &[Row], what: &str) -> Result<Table> {
        let mut t = Table { rows: rows.len(), ..Table::default() };
        let mut per_state: Vec<Vec<(u32, u8, Entry, usize)>> = Vec::new();
        for (r, row) in rows.iter().enumerate() {
            if row.next.is_empty() {
                return Err(Error::input(format!("{what} row {}: NEXT_EDGE_IDS is empty", r + 1)));
            }
            let cur = t.intern(row.current) as usize;
            let states: Vec<u32> = row.next.iter().map(|&id| t.intern(id)).collect();
            let entry = if states.len() == 1 {
                Entry { len: row.len, bad: false, count: 1, next: states[0] }
            } else {
                let off = t.seqs.len() as u32;
                t.seqs.extend_from_slice(&states);
                Entry { len: row.len, bad: false, count: states.len() as u32, next: off }
            };
            if per_state.len() <= cur {
                per_state.resize_with(t.ids.len(), Vec::new);
            }
            per_state[cur].push((row.code, row.len, entry, r));
        }
        per_state.resize_with(t.ids.len(), Vec::new);
        t.bad_state = vec![false; t.ids.len()];
        t.kinds = vec![Kind::None; t.ids.len()];
        let mut budget = LUT_BUDGET;
        for (s, codes) in per_state.iter_mut().enumerate() {
            if codes.is_empty() {
                continue;
            }
            // Sorted by the code padded to 32 bits, a code and any code it prefixes are
            // neighbours; equal padded codes of different lengths are prefixes too.
            let padded = |c: u32, l: u8| if l == 0 { 0 } else { (c as u64) << (32 - l as u32) };
            codes.sort_by_key(|&(c, l, _, _)| (padded(c, l), l));
            for pair in codes.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                let l = a.1.min(b.1) as u32;
                let top = |c: u32, len: u8| if l == 0 { 0 } else { c >> (len as u32 - l) };
                if top(a.0, a.1) == top(b.0, b.1) {
                    return Err(Error::input(format!(
                        "{what}: the codes \"{}\" (row {}) and \"{}\" (row {}) after edge {} are ambiguous: \
                         one is a prefix of the other",
                        Row::code_text(a.0, a.1),
                        a.3 + 1,
                        Row::code_text(b.0, b.1),
                        b.3 + 1,
                        t.ids[s]
                    )));
                }
            }
            let max = codes.iter().map(|c| c.1 as u32).max().unwrap_or(0);
            if max == 0 {
                t.kinds[s] = Kind::Direct(codes[0].2);
            } else if max <= LUT_MAX_BITS && budget >= 1 << max {
                budget -= 1 << max;
                let base = t.lut.len();
                t.lut.resize(base + (1 << max), Entry::default());
                for &(c, l, e, _) in codes.iter() {
                    let shift = max - l as u32;
                    let first = (c as usize) << shift;
                    for slot in &mut t.lut[base + first..base + first + (1 << shift)] {
                        *slot = e;
                    }
                }
                t.kinds[s] = Kind::Lut { peek: max as u8, base: base as u32 };
            } else {
                let root = t.trie.len() as u32;
                t.trie.push(Node { child: [u32::MAX; 2], leaf: None });
                for &(c, l, e, _) in codes.iter() {
                    let mut n = root as usize;
                    for i in (0..l as u32).rev() {
                        let bit = ((c >> i) & 1) as usize;
                        if t.trie[n].child[bit] == u32::MAX {
                            t.trie[n].child[bit] = t.trie.len() as u32;
                            t.trie.push(Node { child: [u32::MAX; 2], leaf: None });
                        }
                        n = t.trie[n].child[bit] as usize;
                    }
                    t.trie[n].leaf = Some(e);
                }
                t.kinds[s] = Kind::Trie { root };
            }
        }
        t.build_fast();
        Ok(t)
    }

    /// Builds the fast path: every state becomes one lookup of `peek` bits (0 for one
    /// successor) into packed entries; states whose transitions need more (long codes,
    /// several next edges, failed checks, no rows) lead to an empty entry, which sends the
    /// decoder to the general path. Call again after flagging entries.
    pub(crate) fn build_fast(&mut self) {
        let pack = |e: &Entry| -> u64 {
            if e.count == 1 && !e.bad {
                e.next as u64 | (e.len as u64) << 32 | FAST
            } else {
                0
            }
        };
        self.flut = vec![0];
        self.fast = Vec::with_capacity(self.kinds.len());
        for k in &self.kinds {
            let st = match k {
                Kind::None | Kind::Trie { .. } => 0,
                Kind::Direct(e) => {
                    self.flut.push(pack(e));
                    ((self.flut.len() - 1) as u64) << 8
                }
                Kind::Lut { peek, base } => {
                    let start = self.flut.len() as u64;
                    let (p, b) = (*peek as usize, *base as usize);
                    for e in &self.lut[b..b + (1 << p)] {
                        self.flut.push(pack(e));
                    }
                    start << 8 | *peek as u64
                }
            };
            self.fast.push(st);
        }
    }

    /// Matches the code at the front of `bits` (the next 32 bits, most significant first) in
    /// the trie from `root`: the entry, or `None` when no code matches.
    pub(crate) fn trie_match(&self, root: u32, bits: u64) -> Option<Entry> {
        let mut n = root as usize;
        for i in 0..33u32 {
            if let Some(e) = self.trie[n].leaf {
                return Some(e);
            }
            if i == 32 {
                break;
            }
            let bit = ((bits >> (31 - i)) & 1) as usize;
            let c = self.trie[n].child[bit];
            if c == u32::MAX {
                return None;
            }
            n = c as usize;
        }
        None
    }

    /// Longest code of a state (the bits a lookup needs).
    pub fn max_len(&self, state: u32) -> u32 {
        match self.kinds[state as usize] {
            Kind::None | Kind::Direct(_) => 0,
            Kind::Lut { peek, .. } => peek as u32,
            Kind::Trie { .. } => 32,
        }
    }

    /// Applies `f` to every transition entry (for checks against a paired DCFG), with the
    /// state it leaves.
    pub(crate) fn for_each_entry_mut(&mut self, mut f: impl FnMut(u32, &mut Entry, &[u32])) {
        let seqs = std::mem::take(&mut self.seqs);
        for s in 0..self.kinds.len() {
            match self.kinds[s] {
                Kind::None => {}
                Kind::Direct(mut e) => {
                    f(s as u32, &mut e, &seqs);
                    self.kinds[s] = Kind::Direct(e);
                }
                Kind::Lut { peek, base } => {
                    let (p, b) = (peek as usize, base as usize);
                    for e in &mut self.lut[b..b + (1 << p)] {
                        if e.count > 0 {
                            f(s as u32, e, &seqs);
                        }
                    }
                }
                Kind::Trie { root } => {
                    let mut stack = vec![root as usize];
                    while let Some(n) = stack.pop() {
                        if let Some(e) = self.trie[n].leaf.as_mut() {
                            f(s as u32, e, &seqs);
                        }
                        for c in self.trie[n].child {
                            if c != u32::MAX {
                                stack.push(c as usize);
                            }
                        }
                    }
                }
            }
        }
        self.seqs = seqs;
    }

    /// The next states an entry yields.
    pub(crate) fn next_states<'a>(&'a self, e: &'a Entry) -> &'a [u32] {
        if e.count == 1 {
            std::slice::from_ref(&e.next)
        } else {
            &self.seqs[e.next as usize..e.next as usize + e.count as usize]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn row(cur: u64, code: &str, next: &[u64]) -> Row {
        let (code, len) = Row::parse_code(code).unwrap();
        Row { current: cur, code, len, next: next.to_vec() }
    }

    #[test]
    fn ambiguous_codes_are_rejected() {
        for codes in [["0", "01"], ["", "1"], ["10", "10"], ["1", "1"]] {
            let rows = vec![row(1, codes[0], &[2]), row(1, codes[1], &[3])];
            let e = Table::build(&rows, "TRANSITION_TABLE").unwrap_err().to_string();
            assert!(e.contains("ambiguous"), "{codes:?}: {e}");
        }
        let rows = vec![row(1, "0", &[2]), row(1, "10", &[3]), row(1, "11", &[4]), row(2, "0", &[1])];
        assert!(Table::build(&rows, "T").is_ok());
    }

    #[test]
    fn codes_are_checked() {
        assert!(Row::parse_code(&"0".repeat(33)).is_err());
        assert!(Row::parse_code("012").is_err());
        assert_eq!(Row::parse_code("101"), Ok((5, 3)));
        assert_eq!(Row::code_text(5, 3), "101");
    }

    #[test]
    fn long_codes_use_the_trie() {
        let mut rows = vec![row(1, "1", &[2])];
        rows.push(row(1, &format!("{}1", "0".repeat(19)), &[3]));
        rows.push(row(1, &"0".repeat(20), &[4]));
        let t = Table::build(&rows, "T").unwrap();
        let s = t.states[&1];
        let Kind::Trie { root } = t.kinds[s as usize] else { panic!("{:?}", t.kinds[s as usize]) };
        let e = t.trie_match(root, 1 << 12).unwrap();
        assert_eq!((e.len, t.ids[e.next as usize]), (20, 3));
        let e = t.trie_match(root, 1 << 31).unwrap();
        assert_eq!((e.len, t.ids[e.next as usize]), (1, 2));
    }
}
