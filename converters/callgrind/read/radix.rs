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

/// The items of the rows that have a key, sorted by key, stably: a counting sort into about
/// one bucket per item (keys divided by a power of two), then a sort of each bucket, which
/// holds a few items where the keys are as dense as a program's instruction addresses.
///
/// `key_of(row)` is asked twice per row (to count, then to place), `make(row, key)` once per
/// item. Made for the executed addresses of an image: one read of the cost columns to count,
/// one to build the sorted items in place, no list of (address, row) pairs in between.
pub fn bucket_sort<T: Copy + Default>(
    rows: usize,
    key_of: impl Fn(usize) -> Option<u64>,
    make: impl Fn(usize, u64) -> T,
    key: impl Fn(&T) -> u64,
) -> Vec<T> {
    let (mut lo, mut hi, mut n) = (u64::MAX, 0u64, 0usize);
    for row in 0..rows {
        if let Some(k) = key_of(row) {
            lo = lo.min(k);
            hi = hi.max(k);
            n += 1;
        }
    }
    if n >= u32::MAX as usize {
        let mut items: Vec<T> = (0..rows).filter_map(|row| key_of(row).map(|k| make(row, k))).collect();
        sort_by_key(&mut items, key);
        return items;
    }
    if n == 0 {
        return Vec::new();
    }
    let span = hi - lo;
    let mut shift = 0u32;
    while (span >> shift) >= n as u64 {
        shift += 1;
    }
    let buckets = (span >> shift) as usize + 1;
    // Where each bucket starts, then (after placing) where it ends.
    let mut at = vec![0u32; buckets + 1];
    for row in 0..rows {
        if let Some(k) = key_of(row) {
            at[((k - lo) >> shift) as usize + 1] += 1;
        }
    }
    for b in 1..at.len() {
        at[b] += at[b - 1];
    }
    let mut items = vec![T::default(); n];
    for row in 0..rows {
        if let Some(k) = key_of(row) {
            let b = &mut at[((k - lo) >> shift) as usize];
            items[*b as usize] = make(row, k);
            *b += 1;
        }
    }
    let mut from = 0usize;
    for &end in &at[..buckets] {
        let end = end as usize;
        if end - from > 1 {
            // Stable, and an insertion sort for the few items of a bucket.
            items[from..end].sort_by_key(|t| key(t));
        }
        from = end;
    }
    items
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

        let rows: Vec<Option<u64>> =
            expected.iter().enumerate().map(|(i, &(k, _))| (i % 5 != 0).then_some(k)).collect();
        let mut by_rows: Vec<(u64, u32)> =
            rows.iter().enumerate().filter_map(|(i, k)| Some(((*k)?, i as u32))).collect();
        by_rows.sort_by_key(|&(k, _)| k);
        let bucketed = bucket_sort(rows.len(), |r| rows[r], |r, k| (k, r as u32), |&(k, _)| k);
        assert_eq!(bucketed, by_rows);
        let dense: Vec<Option<u64>> = (0..3000u64).map(|i| Some(0x40_0000 + (i * 7919) % 3001)).collect();
        let bucketed = bucket_sort(dense.len(), |r| dense[r], |r, k| (k, r as u32), |&(k, _)| k);
        assert!(bucketed.windows(2).all(|w| w[0] <= w[1]) && bucketed.len() == 3000);
        assert!(bucket_sort(3, |_| None, |r, k| (k, r), |&(k, _)| k).is_empty());

        let mut short = vec![(3u64, 0u32), (1, 1), (3, 2), (2, 3)];
        sort_by_key(&mut short, |&(k, _)| k);
        assert_eq!(short, vec![(1, 1), (2, 3), (3, 0), (3, 2)]);
    }
}
