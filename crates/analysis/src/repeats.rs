//! Repeats counted once: the same branch, range or record seen many times in a profile (branch
//! records, BOLT records, LLVM's counted pairs, calls of one site) is added up into one item.

/// Sorts `items` by `key` and adds each run of equal keys into its first item
/// ([`add_up_runs`]): the repeats of one branch, range or record counted once.
pub fn add_up<T, K: Ord>(items: &mut Vec<T>, key: impl Fn(&T) -> K, add: impl FnMut(&mut T, &T)) {
    items.sort_unstable_by_key(&key);
    add_up_runs(items, key, add);
}

/// Adds each run of neighbouring items with equal keys into the run's first item
/// (`add(first, later)`), the later ones dropped.
pub fn add_up_runs<T, K: PartialEq>(
    items: &mut Vec<T>,
    key: impl Fn(&T) -> K,
    mut add: impl FnMut(&mut T, &T),
) {
    items.dedup_by(|later, kept| {
        let same = key(later) == key(kept);
        if same {
            add(kept, later);
        }
        same
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_add_up_into_the_first_of_their_run() {
        let mut items = vec![(3, 1, 'a'), (1, 2, 'b'), (3, 4, 'c'), (2, u64::MAX, 'd'), (2, 1, 'e')];
        let add =
            |kept: &mut (u32, u64, char), later: &(u32, u64, char)| kept.1 = kept.1.saturating_add(later.1);
        add_up(&mut items, |i| i.0, add);
        let sums: Vec<(u32, u64)> = items.iter().map(|i| (i.0, i.1)).collect();
        assert_eq!(sums, [(1, 2), (2, u64::MAX), (3, 5)]);
        // Runs only: equal keys apart stay apart.
        let mut runs = vec![(1, 1, 'a'), (1, 1, 'b'), (2, 1, 'c'), (1, 1, 'd')];
        add_up_runs(&mut runs, |i| i.0, add);
        assert_eq!(runs, [(1, 2, 'a'), (2, 1, 'c'), (1, 1, 'd')]);
    }
}
