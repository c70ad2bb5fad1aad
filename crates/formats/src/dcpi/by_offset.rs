//! The costs of an image in address order, one entry per address.
//!
//! Sample formats (DCPI, dcpicat) list one line or slot per address, in increasing order, and
//! sum what a profile states twice at one address. A table read from such a file is already in
//! that order and is walked as it is stored; any other is sorted once, by an index of its rows,
//! so that no writer keeps a second copy of every row.

use cfghub_model::ir::CostTable;

/// The rows of a table that state an offset, in offset order (rows at one offset in table
/// order).
pub(crate) struct ByOffset<'a> {
    costs: &'a CostTable,
    order: Order,
    /// Rows without an offset (function- or line-level costs), which take no part.
    pub without_offset: usize,
}

/// The order of the rows with an offset.
enum Order {
    /// The table is in offset order already: walked as stored.
    Stored,
    /// Each row as `(offset - base) << 32 | row`, sorted: 8 bytes a row, where the offsets span
    /// less than 4 GiB and the table has fewer than 2^32 rows (an image's always have). As
    /// (offset, row) pairs the 21 MB `cc1plus` Callgrind profile's 1.39 million rows took 22
    /// MB: converting it to DCPI peaked at 83.8 MB instead of 73.8.
    Packed { base: u64, keys: Vec<u64> },
    /// (offset, row) pairs, sorted, where the packed form does not fit.
    Pairs(Vec<(u64, usize)>),
}

impl<'a> ByOffset<'a> {
    pub fn new(costs: &'a CostTable) -> Self {
        let (mut without_offset, mut sorted, mut last) = (0, true, 0);
        let (mut lowest, mut highest) = (u64::MAX, 0);
        for offset in costs.offsets() {
            match offset {
                Some(o) => {
                    sorted &= last <= o;
                    last = o;
                    lowest = lowest.min(o);
                    highest = highest.max(o);
                }
                None => without_offset += 1,
            }
        }
        let rows = costs.offsets().enumerate().filter_map(|(row, o)| Some((o?, row)));
        let order = if sorted {
            Order::Stored
        } else if highest - lowest <= u64::from(u32::MAX) && costs.len() <= u32::MAX as usize {
            let mut keys: Vec<u64> = rows.map(|(o, row)| (o - lowest) << 32 | row as u64).collect();
            keys.sort_unstable();
            Order::Packed { base: lowest, keys }
        } else {
            let mut pairs: Vec<(u64, usize)> = rows.collect();
            pairs.sort_unstable();
            Order::Pairs(pairs)
        };
        ByOffset { costs, order, without_offset }
    }

    /// Calls `f` once per address, in order, with the address and the values of the rows there
    /// that `take` accepts, summed (saturating); an address none of whose rows is taken is left
    /// out. Stops at the first error `f` returns.
    pub(crate) fn try_for_each_address<E>(
        &self,
        take: impl Fn(&[u64]) -> bool,
        f: impl FnMut(u64, &[u64]) -> Result<(), E>,
    ) -> Result<(), E> {
        let width = self.costs.width();
        let mut sums = Sums { take, f, at: None, sum: vec![0u64; width] };
        match &self.order {
            // One event, in order (a DCPI profile of millions of slots): no row to gather.
            Order::Stored if width == 1 => {
                self.costs.try_for_each_offset_and_value(0, |offset, v| sums.add(offset, &[v]))?
            }
            Order::Stored => self.costs.try_for_each_row_values(|_, offset, row| match offset {
                Some(offset) => sums.add(offset, row),
                None => Ok(()),
            })?,
            Order::Packed { base, keys } => self.add_rows(
                keys.iter().map(|&key| (base + (key >> 32), (key & u64::from(u32::MAX)) as usize)),
                &mut sums,
            )?,
            Order::Pairs(pairs) => self.add_rows(pairs.iter().copied(), &mut sums)?,
        }
        match sums.at {
            Some(offset) => (sums.f)(offset, &sums.sum),
            None => Ok(()),
        }
    }
}

impl ByOffset<'_> {
    /// Adds the rows `(offset, row)` to `sums`, in the order given.
    fn add_rows<T, F, E>(
        &self,
        rows: impl Iterator<Item = (u64, usize)>,
        sums: &mut Sums<T, F>,
    ) -> Result<(), E>
    where
        T: Fn(&[u64]) -> bool,
        F: FnMut(u64, &[u64]) -> Result<(), E>,
    {
        let mut values = vec![0u64; self.costs.width()];
        for (offset, row) in rows {
            for (e, v) in values.iter_mut().enumerate() {
                *v = self.costs.value(row, e);
            }
            sums.add(offset, &values)?;
        }
        Ok(())
    }
}

/// The step every walk of [`ByOffset::try_for_each_address`] takes per row: the rows `take`
/// accepts are summed per address, and each address's sums handed to `f` when the next
/// address comes.
struct Sums<T, F> {
    take: T,
    f: F,
    /// The address being summed.
    at: Option<u64>,
    sum: Vec<u64>,
}

impl<T: Fn(&[u64]) -> bool, F> Sums<T, F> {
    /// Always inlined: it runs once per sample (tens of millions in a DCPI profile), and a
    /// call for each cost a quarter of a DCPI conversion when the compiler chose not to.
    #[inline(always)]
    fn add<E>(&mut self, offset: u64, row: &[u64]) -> Result<(), E>
    where
        F: FnMut(u64, &[u64]) -> Result<(), E>,
    {
        if !(self.take)(row) {
            return Ok(());
        }
        if self.at.is_some_and(|a| a != offset) {
            (self.f)(self.at.unwrap_or(0), &self.sum)?;
            self.sum.fill(0);
        }
        self.at = Some(offset);
        for (s, v) in self.sum.iter_mut().zip(row) {
            *s = s.saturating_add(*v);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::Cost;

    fn addresses(b: &ByOffset, take: impl Fn(&[u64]) -> bool) -> Vec<(u64, Vec<u64>)> {
        let mut out = Vec::new();
        b.try_for_each_address(take, |o, v| {
            out.push((o, v.to_vec()));
            Ok::<(), ()>(())
        })
        .unwrap();
        out
    }

    fn table(rows: &[(Option<u64>, &[u64])]) -> CostTable {
        rows.iter().map(|&(offset, v)| Cost { offset, values: v.into(), ..Cost::default() }).collect()
    }

    #[test]
    fn rows_in_order_are_walked_as_stored_and_equal_addresses_summed() {
        let t = table(&[(Some(0), &[1]), (Some(4), &[2]), (Some(4), &[3]), (None, &[9]), (Some(8), &[0])]);
        let b = ByOffset::new(&t);
        assert!(matches!(b.order, Order::Stored));
        assert_eq!(b.without_offset, 1);
        assert_eq!(addresses(&b, |_| true), vec![(0, vec![1]), (4, vec![5]), (8, vec![0])]);
    }

    #[test]
    fn rows_in_order_of_one_event_or_two_are_walked_alike() {
        let rows: [(Option<u64>, &[u64]); 6] = [
            (Some(0), &[1, 5]),
            (Some(4), &[0, 2]),
            (Some(4), &[3, 0]),
            (None, &[9, 9]),
            (Some(8), &[4, 1]),
            (Some(12), &[0, 0]),
        ];
        let two = table(&rows);
        let one = table(&rows.map(|(o, v)| (o, &v[..1])));
        let take = |v: &[u64]| v[0] != 0 || v.iter().all(|&x| x == 0);
        let firsts: Vec<(u64, u64)> =
            addresses(&ByOffset::new(&two), take).iter().map(|(o, v)| (*o, v[0])).collect();
        assert_eq!(firsts, vec![(0, 1), (4, 3), (8, 4), (12, 0)]);
        let ones: Vec<(u64, u64)> =
            addresses(&ByOffset::new(&one), take).iter().map(|(o, v)| (*o, v[0])).collect();
        assert_eq!(ones, vec![(0, 1), (4, 3), (8, 4), (12, 0)]);
    }

    #[test]
    fn rows_out_of_order_are_sorted_and_rows_left_out_take_no_part() {
        let t = table(&[(Some(8), &[1, 0]), (Some(0), &[2, 7]), (Some(8), &[3, 1]), (Some(4), &[0, 5])]);
        let b = ByOffset::new(&t);
        assert!(matches!(b.order, Order::Packed { base: 0, .. }));
        // Only rows with a first value.
        assert_eq!(addresses(&b, |v| v[0] != 0), vec![(0, vec![2, 7]), (8, vec![4, 1])]);
    }

    #[test]
    fn offsets_spanning_more_than_4_gib_are_sorted_as_pairs_alike() {
        let far = 1u64 << 40;
        let rows: [(Option<u64>, &[u64]); 5] = [
            (Some(far + 8), &[1]),
            (Some(0x1000), &[2]),
            (Some(far + 8), &[3]),
            (None, &[4]),
            (Some(far), &[5]),
        ];
        let t = table(&rows);
        let b = ByOffset::new(&t);
        assert!(matches!(b.order, Order::Pairs(_)));
        assert_eq!(addresses(&b, |_| true), vec![(0x1000, vec![2]), (far, vec![5]), (far + 8, vec![4])]);
        // The same rows within 4 GiB of each other are packed, in the same order.
        let near = table(&rows.map(|(o, v)| (o.map(|o| o % (1 << 32)), v)));
        let b = ByOffset::new(&near);
        assert!(matches!(b.order, Order::Packed { base: 0, .. }));
        assert_eq!(addresses(&b, |_| true), vec![(0, vec![5]), (8, vec![4]), (0x1000, vec![2])]);
    }
}
