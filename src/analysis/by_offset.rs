//! The costs of an image in address order, one entry per address.
//!
//! Sample formats (DCPI, dcpicat) list one line or slot per address, in increasing order, and
//! sum what a profile states twice at one address. A table read from such a file is already in
//! that order and is walked as it is stored; any other is sorted once, by an index of its rows,
//! so that no writer keeps a second copy of every row.

use crate::ir::{CostTable, Values};

/// The rows of a table that state an offset, in offset order (rows at one offset in table
/// order).
pub struct ByOffset<'a> {
    costs: &'a CostTable,
    /// The rows with an offset, sorted by it; `None` when the table is in order already.
    order: Option<Vec<(u64, usize)>>,
    /// Rows without an offset (function- or line-level costs), which take no part.
    pub without_offset: usize,
}

impl<'a> ByOffset<'a> {
    pub fn new(costs: &'a CostTable) -> Self {
        let (mut without_offset, mut sorted, mut last) = (0, true, 0);
        for offset in costs.offsets() {
            match offset {
                Some(o) => {
                    sorted &= last <= o;
                    last = o;
                }
                None => without_offset += 1,
            }
        }
        let order = (!sorted).then(|| {
            let mut rows: Vec<(u64, usize)> =
                costs.offsets().enumerate().filter_map(|(row, o)| Some((o?, row))).collect();
            rows.sort_unstable();
            rows
        });
        ByOffset { costs, order, without_offset }
    }

    /// Each row with an offset, in offset order: its offset and values.
    pub fn rows(&self) -> Box<dyn Iterator<Item = (u64, Values)> + '_> {
        match &self.order {
            None => Box::new(self.costs.iter().filter_map(|c| Some((c.offset?, c.values)))),
            Some(order) => Box::new(order.iter().map(|&(o, row)| (o, self.costs.values(row)))),
        }
    }

    /// One entry per address, in order: the address and what `take` makes of its rows' values,
    /// summed (saturating) over the rows at that address; rows `take` returns `None` for take no
    /// part (an address none of whose rows take part has no entry).
    pub fn addresses<F>(&self, mut take: F) -> impl Iterator<Item = (u64, Values)> + '_
    where
        F: FnMut(&Values) -> Option<Values> + 'a,
    {
        let mut rows = self.rows().filter_map(move |(o, v)| Some((o, take(&v)?))).peekable();
        std::iter::from_fn(move || {
            let (offset, mut sum) = rows.next()?;
            while let Some((_, more)) = rows.next_if(|(o, _)| *o == offset) {
                if more.len() > sum.len() {
                    sum.resize(more.len(), 0);
                }
                for (s, m) in sum.iter_mut().zip(&more) {
                    *s = s.saturating_add(*m);
                }
            }
            Some((offset, sum))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Cost;

    fn table(rows: &[(Option<u64>, &[u64])]) -> CostTable {
        rows.iter().map(|&(offset, v)| Cost { offset, values: v.into(), ..Cost::default() }).collect()
    }

    #[test]
    fn rows_in_order_are_walked_as_stored_and_equal_addresses_summed() {
        let t = table(&[(Some(0), &[1]), (Some(4), &[2]), (Some(4), &[3]), (None, &[9]), (Some(8), &[0])]);
        let b = ByOffset::new(&t);
        assert!(b.order.is_none());
        assert_eq!(b.without_offset, 1);
        let got: Vec<(u64, Vec<u64>)> =
            b.addresses(|v| Some(v.clone())).map(|(o, v)| (o, v.to_vec())).collect();
        assert_eq!(got, vec![(0, vec![1]), (4, vec![5]), (8, vec![0])]);
    }

    #[test]
    fn rows_out_of_order_are_sorted_and_rows_left_out_take_no_part() {
        let t = table(&[(Some(8), &[1, 0]), (Some(0), &[2, 7]), (Some(8), &[3, 1]), (Some(4), &[0, 5])]);
        let b = ByOffset::new(&t);
        assert!(b.order.is_some());
        // Only rows with a first value, as the first value.
        let got: Vec<(u64, Vec<u64>)> = b
            .addresses(|v| (v[0] != 0).then(|| Values::from_slice(&v[..1])))
            .map(|(o, v)| (o, v.to_vec()))
            .collect();
        assert_eq!(got, vec![(0, vec![2]), (8, vec![4])]);
    }
}
