//! Sorts for the block rebuild's address lists (millions of executed addresses, hundreds of
//! thousands of jump ends): a stable least-significant-digit radix sort on `u64` keys, and a
//! merge of presorted runs.
//!
//! Addresses of one object share their high bits, so the bits on which every key agrees are
//! found in one pass and skipped; the others are sorted in digits of up to 8 bits (11 for long
//! lists): a typical list sorts in two or three passes of one read and one scattered write
//! each, against the `n log n` comparisons of a comparison sort.
//!
//! What it saves, measured on the whole command (`cfghub convert` of the 21 MB Valgrind
//! profile of `cc1plus` to Callgrind, interleaved rounds, 2-core machine under load): with
//! the standard library's stable `sort_by_key` (and a sort of (address, row) pairs in place of
//! [`sort_by_runs`]) the command takes 0.45 s of processor time against 0.40 s on one core
//! (1.16 s against 1.03 s wall), 0.48 s against 0.44 s on two (1.21 s against 1.05 s wall);
//! with rayon's `par_sort_by_key` and `par_sort_unstable`, 0.47 s and 0.50 s (1.18 s and
//! 1.25 s wall).

/// Below this length a comparison sort is cheaper than the histogram passes.
const SMALL: usize = 64;
/// Widest digit (in bits) of a pass, for long lists: 2048 counters.
const MAX_DIGIT_BITS: u32 = 11;

/// Sorts `items` by `key`, stably (items with equal keys keep their order).
pub fn sort_by_key<T: Copy + Default>(items: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    sort_with(items, &mut Vec::new(), key);
}

/// [`sort_by_key`] with a scratch buffer of the caller's, for many sorts in a row.
pub(crate) fn sort_with<T: Copy + Default>(
    items: &mut Vec<T>,
    scratch: &mut Vec<T>,
    key: impl Fn(&T) -> u64,
) {
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
    if scratch.capacity() < n {
        *scratch = Vec::with_capacity(n);
    }
    scratch.clear();
    scratch.resize(n, T::default());
    let (mut from, mut to) = (std::mem::take(items), std::mem::take(scratch));
    // The differing bits, lowest to highest, in as few digits as the widest digit allows, each
    // as narrow as that number of digits allows: a short list spends less on its counters, a
    // long one may save a pass.
    let low = differ.trailing_zeros();
    let span = 64 - differ.leading_zeros() - low;
    let widest = if n >= 1 << 14 { MAX_DIGIT_BITS } else { 8 };
    let passes = span.div_ceil(widest);
    let bits = span.div_ceil(passes);
    let mask = (1u64 << bits) - 1;
    // Counters on the stack for the many short lists; the few long ones allocate theirs.
    let mut small = [0usize; 256];
    let mut large: Vec<usize>;
    let counts: &mut [usize] = if bits <= 8 {
        &mut small[..1 << bits]
    } else {
        large = vec![0; 1 << bits];
        &mut large
    };
    for pass in 0..passes {
        let shift = low + pass * bits;
        if (differ >> shift) & mask == 0 {
            continue;
        }
        counts.fill(0);
        for t in &from {
            counts[((key(t) >> shift) & mask) as usize] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = at;
            at += here;
        }
        for t in &from {
            let d = ((key(t) >> shift) & mask) as usize;
            to[counts[d]] = *t;
            counts[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *items = from;
    *scratch = to;
}

/// The widest step between consecutive keys of one run. A run stays within one piece of code:
/// a function's hot and cold parts, or two functions next to each other in the file but not in
/// memory, make runs of their own, so that runs of different functions seldom overlap.
const RUN_GAP: u64 = 1024;

/// A run of consecutive rows whose keys strictly ascend.
#[derive(Clone, Copy, Default)]
struct Run {
    first: u64,
    last: u64,
    start: u32,
    end: u32,
}

/// The rows below `rows` that have a key, sorted by (key, row): for input that comes in
/// ascending runs, such as the cost lines of a Callgrind file (each basic block's lines in
/// address order, the blocks of a function near each other, the functions in no order).
///
/// The runs are found in one pass and sorted by their first key; runs whose key ranges do not
/// overlap are then copied out in order, and only the rows of runs that overlap are sorted
/// together: the basic blocks of one function, which Valgrind lists in no address order (in a
/// profile of cc1plus, 5 in 6 rows, in clusters of about 200), or a recursion level's cost lines
/// beside its base function's. `key_of` is asked for most rows twice, and for a cluster's rows
/// in row order; nothing is moved but row numbers and, within a cluster, its keys. Rows are
/// numbered in 32 bits: `rows` must be below `u32::MAX` (the block rebuild checks it first).
pub(crate) fn sort_by_runs(rows: usize, mut key_of: impl FnMut(usize) -> Option<u64>) -> Vec<u32> {
    assert!(rows < u32::MAX as usize, "rows are numbered in 32 bits; the caller checks");
    let mut runs: Vec<Run> = Vec::new();
    let mut keyed = 0usize;
    let mut row = 0;
    while row < rows {
        let Some(first) = key_of(row) else {
            row += 1;
            continue;
        };
        // The run goes on while keys ascend by small steps.
        let (start, mut last) = (row, first);
        row += 1;
        while row < rows {
            match key_of(row) {
                Some(k) if k > last && k - last <= RUN_GAP => last = k,
                _ => break,
            }
            row += 1;
        }
        keyed += row - start;
        runs.push(Run { first, last, start: start as u32, end: row as u32 });
    }
    // Found in row order: sorted stably by first key, they are sorted by (first key, row).
    sort_by_key(&mut runs, |r| r.first);
    let mut out: Vec<u32> = Vec::with_capacity(keyed);
    let mut overlap: Vec<(u64, u32)> = Vec::new();
    let mut scratch: Vec<(u64, u32)> = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let mut j = i + 1;
        let mut last = runs[i].last;
        while j < runs.len() && runs[j].first <= last {
            last = last.max(runs[j].last);
            j += 1;
        }
        if j == i + 1 {
            out.extend(runs[i].start..runs[i].end);
        } else {
            // The rows of overlapping runs in row order, then stably by key: a few short runs of
            // one function (its basic blocks, not in address order), so a radix sort on the
            // low bytes.
            let cluster = &mut runs[i..j];
            cluster.sort_unstable_by_key(|r| r.start);
            overlap.clear();
            for run in cluster.iter() {
                overlap.extend((run.start..run.end).filter_map(|row| Some((key_of(row as usize)?, row))));
            }
            sort_with(&mut overlap, &mut scratch, |&(k, _)| k);
            out.extend(overlap.iter().map(|&(_, row)| row));
        }
        i = j;
    }
    out
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

        // Long enough for wide digits, with keys spread over 40 bits and all 64.
        for spread in [40u32, 64] {
            let mut long: Vec<(u64, u32)> = (0..40_000u32)
                .map(|i| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> (64 - spread), i)
                })
                .collect();
            let mut expected = long.clone();
            expected.sort_by_key(|&(k, _)| k);
            sort_by_key(&mut long, |&(k, _)| k);
            assert_eq!(long, expected);
        }

        let mut same: Vec<(u64, u32)> = (0..1000).map(|i| (7, i)).collect();
        let copy = same.clone();
        sort_by_key(&mut same, |&(k, _)| k);
        assert_eq!(same, copy);

        let rows: Vec<Option<u64>> =
            expected.iter().enumerate().map(|(i, &(k, _))| (i % 5 != 0).then_some(k)).collect();
        let mut by_rows: Vec<(u64, u32)> =
            rows.iter().enumerate().filter_map(|(i, k)| Some(((*k)?, i as u32))).collect();
        by_rows.sort_by_key(|&(k, _)| k);
        let by_runs: Vec<(u64, u32)> = sort_by_runs(rows.len(), |r| rows[r])
            .into_iter()
            .map(|r| (rows[r as usize].unwrap(), r))
            .collect();
        assert_eq!(by_runs, by_rows);
        // Ascending runs that overlap, repeat keys, touch, or hold one row.
        let runs: Vec<Option<u64>> = [10u64, 20, 30, 5, 15, 25, 30, 40, 50, 60, 45, 1, 70, 70, 80]
            .iter()
            .map(|&k| Some(k))
            .chain([None, Some(2), Some(3), None])
            .collect();
        let mut expected: Vec<(u64, u32)> =
            runs.iter().enumerate().filter_map(|(i, k)| Some(((*k)?, i as u32))).collect();
        expected.sort_unstable();
        let sorted = sort_by_runs(runs.len(), |r| runs[r]);
        assert_eq!(sorted, expected.iter().map(|&(_, r)| r).collect::<Vec<u32>>());
        assert!(sort_by_runs(3, |_| None).is_empty());
        // One cluster of interleaved runs, few or many, with repeated keys.
        for nruns in [3u64, 16, 17, 40] {
            let keys: Vec<Option<u64>> =
                (0..nruns).flat_map(|r| (0..5).map(move |k| Some(1000 + k * 100 + r % 7))).collect();
            let mut expected: Vec<(u64, u32)> =
                keys.iter().enumerate().filter_map(|(i, k)| Some(((*k)?, i as u32))).collect();
            expected.sort_unstable();
            let sorted = sort_by_runs(keys.len(), |r| keys[r]);
            assert_eq!(sorted, expected.iter().map(|&(_, r)| r).collect::<Vec<u32>>(), "{nruns} runs");
        }

        let mut short = vec![(3u64, 0u32), (1, 1), (3, 2), (2, 3)];
        sort_by_key(&mut short, |&(k, _)| k);
        assert_eq!(short, vec![(1, 1), (2, 3), (3, 0), (3, 2)]);
    }
}
