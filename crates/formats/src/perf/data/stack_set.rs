//! Stacks of a recording: logged sample by sample as the records are replayed
//! ([`StackLog`]), then added up by key ([`StackSet`]) once the frames are named.
//!
//! A recording's samples make hundreds of thousands of distinct stacks. Held as a map from
//! boxed keys, each stack is an allocation of its own, its key a pointer away from the table,
//! and the map hashes each new key twice (a look-up, then an insertion). A [`StackSet`] keeps
//! the keys one after another in one vector, its table holds indices into the stacks, and a
//! key is hashed once. Measured on a 136 MiB recording of 1.2 million samples (874,000
//! distinct call chains, 378,000 folded stacks), together with leaving the sampled
//! instructions out of a conversion to folded stacks: the named stacks added up in 0.16 CPU
//! seconds rather than 0.52, the thread that adds up the samples in 0.63 rather than 0.96,
//! and the whole conversion took 2.5 CPU seconds rather than 3.6, with a peak of 215 MiB
//! rather than 253.

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};
use rustc_hash::FxBuildHasher;

/// The totals of the samples that share a key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StackTotal {
    pub samples: u64,
    pub period: u64,
}

/// One distinct key: where it lies in [`StackSet::words`], and its totals.
#[derive(Clone, Copy, Debug)]
struct Stack {
    start: usize,
    len: u32,
    total: StackTotal,
}

/// Distinct keys with their totals, in the order they were first added.
#[derive(Default)]
pub(crate) struct StackSet {
    /// The keys, one after another.
    words: Vec<u32>,
    stacks: Vec<Stack>,
    /// Indices into `stacks`, hashed by their keys.
    index: HashTable<u32>,
}

fn hash(key: &[u32]) -> u64 {
    FxBuildHasher.hash_one(key)
}

impl StackSet {
    /// Adds one sample of weight `period` to the stack `key`.
    pub fn add(&mut self, key: &[u32], period: u64) {
        self.add_total(key, StackTotal { samples: 1, period });
    }

    /// Adds `total` to the stack `key` (periods saturate rather than wrap).
    pub(crate) fn add_total(&mut self, key: &[u32], total: StackTotal) {
        let (words, stacks) = (&mut self.words, &mut self.stacks);
        let at = |s: &Stack| &words[s.start..s.start + s.len as usize];
        let found = self.index.entry(
            hash(key),
            |&i| at(&stacks[i as usize]) == key,
            |&i| hash(at(&stacks[i as usize])),
        );
        match found {
            Entry::Occupied(entry) => {
                let sum = &mut stacks[*entry.get() as usize].total;
                sum.samples += total.samples;
                sum.period = sum.period.saturating_add(total.period);
            }
            Entry::Vacant(entry) => {
                entry.insert(stacks.len() as u32);
                stacks.push(Stack { start: words.len(), len: key.len() as u32, total });
                words.extend_from_slice(key);
            }
        }
    }

    fn len(&self) -> usize {
        self.stacks.len()
    }

    /// The key of the `i`th stack (in the order first added).
    pub fn key(&self, i: usize) -> &[u32] {
        let s = &self.stacks[i];
        &self.words[s.start..s.start + s.len as usize]
    }

    /// The totals of the `i`th stack.
    pub fn total(&self, i: usize) -> StackTotal {
        self.stacks[i].total
    }

    /// The stacks' indices ordered by their keys (element by element).
    pub fn sorted(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| self.key(a as usize).cmp(self.key(b as usize)));
        order
    }
}

/// Stacks as they were sampled, one after another, not added up: the replay's tally logs
/// each sample's key here, and the stacks are added up once, by their names (many chains
/// name the same stack: they differ in addresses inside one function). Adding up the raw
/// chains as well cost a look-up per sample in a table as large as the distinct chains, and
/// saved little: most chains of a busy system are sampled once. On the recording above,
/// logging took the tally thread from 0.6 to 0.3 CPU seconds and the whole conversion from
/// 2.3-2.5 to 2.0-2.2 (the named stacks then add up 1.2 million entries rather than 874,000:
/// 0.02-0.04 s more), its peak from 216 to 205 MiB.
#[derive(Default)]
pub struct StackLog {
    /// Each stack: its key's length, its period (two words, the low one first), its key.
    words: Vec<u32>,
    len: usize,
}

impl StackLog {
    /// Logs one sample of weight `period` on the stack `key`.
    pub fn push(&mut self, key: &[u32], period: u64) {
        self.words.extend_from_slice(&[key.len() as u32, period as u32, (period >> 32) as u32]);
        self.words.extend_from_slice(key);
        self.len += 1;
    }

    /// The number of samples logged.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no sample is logged.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every sample's key and period, in the order logged.
    pub fn iter(&self) -> impl Iterator<Item = (&[u32], u64)> + '_ {
        let mut rest = self.words.as_slice();
        std::iter::from_fn(move || {
            let (&[len, low, high], after) = rest.split_first_chunk::<3>()?;
            let (key, after) = after.split_at(len as usize);
            rest = after;
            Some((key, u64::from(low) | u64::from(high) << 32))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal keys add up into one stack, whatever the order and however many the table
    /// grows to hold; each key keeps its own words.
    #[test]
    fn equal_keys_add_up_and_keys_keep_their_words() {
        let mut set = StackSet::default();
        let keys: Vec<Vec<u32>> =
            (0..5000u32).map(|i| (0..i % 7).map(|d| (i * 31 + d) % 97).collect()).collect();
        let mut expected: std::collections::BTreeMap<Vec<u32>, StackTotal> = Default::default();
        for (i, key) in keys.iter().enumerate() {
            set.add(key, i as u64);
            let t = expected.entry(key.clone()).or_default();
            t.samples += 1;
            t.period += i as u64;
        }
        set.add_total(&[1, 2], StackTotal { samples: 2, period: u64::MAX });
        let t = expected.entry(vec![1, 2]).or_default();
        t.samples += 2;
        t.period = t.period.saturating_add(u64::MAX);
        let got: std::collections::BTreeMap<Vec<u32>, StackTotal> =
            (0..set.len()).map(|i| (set.key(i).to_vec(), set.total(i))).collect();
        assert_eq!(set.len(), expected.len());
        assert_eq!(got, expected);
        let sorted: Vec<Vec<u32>> = set.sorted().iter().map(|&i| set.key(i as usize).to_vec()).collect();
        assert_eq!(sorted, expected.keys().cloned().collect::<Vec<_>>());
    }

    /// The log gives back every key and period as logged, periods of 64 bits whole.
    #[test]
    fn the_log_gives_back_what_was_logged() {
        let logged: Vec<(Vec<u32>, u64)> =
            vec![(vec![1, 2, 3], 7), (vec![], u64::MAX), (vec![9], 1 << 40), (vec![1, 2, 3], 0)];
        let mut log = StackLog::default();
        for (key, period) in &logged {
            log.push(key, *period);
        }
        assert_eq!(log.len(), 4);
        let back: Vec<(Vec<u32>, u64)> = log.iter().map(|(k, p)| (k.to_vec(), p)).collect();
        assert_eq!(back, logged);
    }
}
