//! A stable least-significant-digit radix sort on `u64` keys, for the block rebuild's address
//! lists (millions of executed addresses, hundreds of thousands of jump ends).
//!
//! Addresses of one object share their high bytes, so the digits (bytes) on which every key
//! agrees are found in one pass and skipped: a typical list sorts in three or four passes of
//! one read and one scattered write each, against the `n log n` comparisons of a comparison
//! sort.

/// Below this length a comparison sort is cheaper than the histogram passes.
const SMALL: usize = 256;

/// Sorts `items` by `key`, stably (items with equal keys keep their order).
pub fn sort_by_key<T: Copy + Default>(items: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    let n = items.len();
    if n < SMALL {
        items.sort_by_key(|t| key(t));
        return;
    }
    let first = key(&items[0]);
    // Bits in which some key differs from the first: only those digits need a pass.
    let differ = items.iter().fold(0u64, |acc, t| acc | (key(t) ^ first));
    if differ == 0 {
        return;
    }
    let mut from = std::mem::take(items);
    let mut to: Vec<T> = vec![T::default(); n];
    let mut counts = [0usize; 256];
    for digit in 0..8 {
        let shift = digit * 8;
        if (differ >> shift) & 0xff == 0 {
            continue;
        }
        counts.fill(0);
        for t in &from {
            counts[((key(t) >> shift) & 0xff) as usize] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = at;
            at += here;
        }
        for t in &from {
            let d = ((key(t) >> shift) & 0xff) as usize;
            to[counts[d]] = *t;
            counts[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *items = from;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_like_a_comparison_sort() {
        // A small linear congruential sequence: keys with shared high bytes, repeats, and a few
        // far apart, in the patterns the reader sorts.
        let mut x = 12345u64;
        let mut items: Vec<(u64, u32)> = (0..5000u32)
            .map(|i| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let key = match i % 7 {
                    0 => 0x7fff_0000_0000 + (x >> 40),
                    1 => u64::MAX - (x >> 60),
                    _ => 0x40_0000 + (x >> 50),
                };
                (key, i)
            })
            .collect();
        let mut expected = items.clone();
        expected.sort_by_key(|&(k, _)| k);
        sort_by_key(&mut items, |&(k, _)| k);
        assert_eq!(items, expected);

        let mut same: Vec<(u64, u32)> = (0..1000).map(|i| (7, i)).collect();
        let copy = same.clone();
        sort_by_key(&mut same, |&(k, _)| k);
        assert_eq!(same, copy);

        let mut short = vec![(3u64, 0u32), (1, 1), (3, 2), (2, 3)];
        sort_by_key(&mut short, |&(k, _)| k);
        assert_eq!(short, vec![(1, 1), (2, 3), (3, 0), (3, 2)]);
    }
}
