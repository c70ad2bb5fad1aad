//! The costs of an image, stored by column.
//!
//! A DCPI profile holds one sample count per instruction slot (25 million rows for a 100 MB
//! file) and a Callgrind profile one cost line per instruction; most rows state only an offset
//! and one or two values. Stored as rows of [`Cost`] (64 bytes each) those profiles spent their
//! reading time in page faults. Stored by column, a column nobody stated takes no memory at all,
//! and a DCPI sample takes 16 bytes: its offset and its count.

use super::{Cost, FileId, Values};

/// A column of optional values, materialised only as far as needed:
/// - no row stated a value: both vectors are empty;
/// - every row stated one: `data` holds them and `present` is empty;
/// - some did: `present` says which, and `data` holds a default where it is `false`.
#[derive(Clone, Debug, Default)]
struct OptColumn<T> {
    data: Vec<T>,
    present: Vec<bool>,
}

impl<T: Copy + Default> OptColumn<T> {
    /// Appends row `rows` (the number of rows before it).
    #[inline(always)]
    fn push(&mut self, rows: usize, value: Option<T>) {
        // The two common cases, every row with a value or none with one, stay inline.
        if self.present.is_empty() {
            match value {
                Some(v) if self.data.len() == rows => return self.data.push(v),
                None if self.data.is_empty() => return,
                _ => {}
            }
        }
        self.push_mixed(rows, value);
    }

    /// Appends a row once rows with and without a value mix (or are about to).
    #[cold]
    #[inline(never)]
    fn push_mixed(&mut self, rows: usize, value: Option<T>) {
        if self.present.is_empty() {
            if value.is_some() {
                // Every earlier row had none.
                self.data = vec![T::default(); rows];
                self.present = vec![false; rows];
            } else {
                // Every earlier row had one.
                self.present = vec![true; rows];
            }
        }
        self.data.push(value.unwrap_or_default());
        self.present.push(value.is_some());
    }

    /// Appends rows `rows..rows + count`: the values of `values` when given (`count` of them),
    /// else none.
    #[inline]
    fn extend(&mut self, rows: usize, count: usize, values: Option<&[T]>) {
        if self.present.is_empty() {
            match values {
                Some(v) if self.data.len() == rows => return self.data.extend_from_slice(&v[..count]),
                None if self.data.is_empty() => return,
                _ => {}
            }
        }
        for k in 0..count {
            self.push_mixed(rows + k, values.map(|v| v[k]));
        }
    }

    /// Appends rows `rows..rows + count`, all with `value`.
    #[inline]
    fn extend_same(&mut self, rows: usize, count: usize, value: Option<T>) {
        if self.present.is_empty() {
            match value {
                Some(v) if self.data.len() == rows => return self.data.resize(rows + count, v),
                None if self.data.is_empty() => return,
                _ => {}
            }
        }
        for k in 0..count {
            self.push_mixed(rows + k, value);
        }
    }

    #[inline]
    fn get(&self, row: usize) -> Option<T> {
        if !self.present.is_empty() {
            self.present[row].then(|| self.data[row])
        } else {
            self.data.get(row).copied()
        }
    }

    /// Appends the `count` rows of `other`, each value passed through `f` (which may drop it).
    fn extend_mapped(&mut self, rows: usize, other: &OptColumn<T>, count: usize, f: impl Fn(T) -> Option<T>) {
        if let Some(src) = other.dense(count) {
            if self.present.is_empty() && self.data.len() == rows {
                // Every row so far and every row to come has a value, unless `f` drops one.
                self.data.extend(src.iter().map_while(|&v| f(v)));
                if self.data.len() == rows + count {
                    return;
                }
                self.data.truncate(rows);
            }
        }
        for k in 0..count {
            self.push(rows + k, other.get(k).and_then(&f));
        }
    }

    fn reserve(&mut self, additional: usize) {
        if !self.data.is_empty() {
            self.data.reserve(additional);
        }
        if !self.present.is_empty() {
            self.present.reserve(additional);
        }
    }

    /// Every row's value, when every row of `rows` has one.
    fn dense(&self, rows: usize) -> Option<&[T]> {
        (self.present.is_empty() && self.data.len() == rows).then_some(&self.data[..])
    }

    /// Whether any row has a value.
    fn any(&self) -> bool {
        !self.data.is_empty()
    }
}

/// Costs of one image: for each row an optional offset, function, file and line, and one value
/// per event (`width` values; rows pushed with fewer are padded with zeros, which is what a
/// missing trailing value means).
///
/// Rows are read back as owned [`Cost`]s (`get`, `iter`) or one column at a time (`offset`,
/// `values`...). Equality ignores how the table is laid out: two tables are equal when their
/// rows are, trailing zero values aside.
#[derive(Clone, Debug, Default)]
pub struct CostTable {
    rows: usize,
    width: usize,
    offsets: OptColumn<u64>,
    symbols: OptColumn<u32>,
    files: OptColumn<FileId>,
    lines: OptColumn<u32>,
    /// `rows * width` values, row after row.
    values: Vec<u64>,
}

impl CostTable {
    pub fn new() -> Self {
        CostTable::default()
    }

    /// A table of samples, the fastest way to build one: a row per offset, with one value
    /// each. Panics unless both vectors are as long.
    pub fn from_samples(offsets: Vec<u64>, values: Vec<u64>) -> Self {
        assert_eq!(offsets.len(), values.len(), "one value per offset");
        CostTable {
            rows: offsets.len(),
            width: 1,
            offsets: OptColumn { data: offsets, present: Vec::new() },
            values,
            ..CostTable::default()
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Values per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Removes every row.
    pub fn clear(&mut self) {
        *self = CostTable::default();
    }

    /// Makes room for `additional` more rows of the current width, in the columns that are
    /// stored.
    pub fn reserve(&mut self, additional: usize) {
        self.offsets.reserve(additional);
        self.symbols.reserve(additional);
        self.files.reserve(additional);
        self.lines.reserve(additional);
        self.values.reserve(additional.saturating_mul(self.width));
    }

    /// Appends a row.
    pub fn push(&mut self, cost: Cost) {
        self.push_parts(cost.offset, cost.symbol, cost.file, cost.line, &cost.values);
    }

    /// Appends a row from its parts, without building a [`Cost`].
    #[inline]
    pub fn push_parts(
        &mut self,
        offset: Option<u64>,
        symbol: Option<u32>,
        file: Option<FileId>,
        line: Option<u32>,
        values: &[u64],
    ) {
        if values.len() > self.width {
            self.widen(values.len());
        }
        let rows = self.rows;
        self.offsets.push(rows, offset);
        self.symbols.push(rows, symbol);
        self.files.push(rows, file);
        self.lines.push(rows, line);
        self.values.extend_from_slice(values);
        if values.len() < self.width {
            self.values.resize((rows + 1) * self.width, 0);
        }
        self.rows += 1;
    }

    /// Appends `count` rows of one function and one file from columns: `offsets` and `lines`,
    /// when given, hold (at least) `count` entries, and `values` the values of the rows, row
    /// after row, as many for each. The same rows as [`CostTable::push_parts`] one by one, in a
    /// few copies.
    pub fn extend_columns(
        &mut self,
        count: usize,
        offsets: Option<&[u64]>,
        symbol: Option<u32>,
        file: Option<FileId>,
        lines: Option<&[u32]>,
        values: &[u64],
    ) {
        if count == 0 {
            return;
        }
        assert_eq!(values.len() % count, 0, "as many values for each row");
        let width = values.len() / count;
        if width > self.width {
            self.widen(width);
        }
        if width < self.width {
            for row in 0..count {
                self.push_parts(
                    offsets.map(|o| o[row]),
                    symbol,
                    file,
                    lines.map(|l| l[row]),
                    &values[row * width..(row + 1) * width],
                );
            }
            return;
        }
        let rows = self.rows;
        self.offsets.extend(rows, count, offsets);
        self.symbols.extend_same(rows, count, symbol);
        self.files.extend_same(rows, count, file);
        self.lines.extend(rows, count, lines);
        self.values.extend_from_slice(values);
        self.rows += count;
    }

    /// Appends the rows of `other`, with each function passed through `symbol` and each file
    /// through `file` (which may drop it): how the parts of a file read side by side are
    /// joined.
    ///
    /// The columns are copied on two threads, and each of `other`'s is freed as soon as it is
    /// copied, so that few of them are held twice.
    pub fn append_mapped(
        &mut self,
        mut other: CostTable,
        symbol: impl Fn(u32) -> u32 + Sync,
        file: impl Fn(FileId) -> Option<FileId> + Sync,
    ) {
        let count = other.rows;
        if count == 0 {
            return;
        }
        if other.width > self.width {
            self.widen(other.width);
        }
        let rows = self.rows;
        let width = self.width;
        let CostTable { offsets, symbols, files, lines, values, .. } = self;
        let (other_offsets, other_symbols) =
            (std::mem::take(&mut other.offsets), std::mem::take(&mut other.symbols));
        let (other_files, other_lines) = (std::mem::take(&mut other.files), std::mem::take(&mut other.lines));
        let (other_values, other_width) = (std::mem::take(&mut other.values), other.width);
        rayon::join(
            || {
                offsets.extend_mapped(rows, &other_offsets, count, Some);
                drop(other_offsets);
                if other_width == width {
                    values.extend_from_slice(&other_values);
                } else if other_width == 0 {
                    values.resize((rows + count) * width, 0);
                } else {
                    for row in other_values.chunks_exact(other_width) {
                        values.extend_from_slice(row);
                        values.resize(values.len() + width - other_width, 0);
                    }
                }
            },
            || {
                symbols.extend_mapped(rows, &other_symbols, count, |s| Some(symbol(s)));
                drop(other_symbols);
                files.extend_mapped(rows, &other_files, count, &file);
                drop(other_files);
                lines.extend_mapped(rows, &other_lines, count, Some);
            },
        );
        self.rows += count;
    }

    /// Makes every row `width` values wide (no narrower than it is).
    pub fn widen(&mut self, width: usize) {
        if width <= self.width {
            return;
        }
        if self.rows > 0 && self.width > 0 {
            let mut values = Vec::with_capacity(self.rows.saturating_mul(width));
            for row in self.values.chunks_exact(self.width) {
                values.extend_from_slice(row);
                values.resize(values.len() + width - self.width, 0);
            }
            self.values = values;
        } else {
            self.values = vec![0; self.rows.saturating_mul(width)];
        }
        self.width = width;
    }

    pub fn offset(&self, row: usize) -> Option<u64> {
        self.offsets.get(row)
    }

    pub fn symbol(&self, row: usize) -> Option<u32> {
        self.symbols.get(row)
    }

    pub fn file(&self, row: usize) -> Option<FileId> {
        self.files.get(row)
    }

    pub fn line(&self, row: usize) -> Option<u32> {
        self.lines.get(row)
    }

    /// The offset of every row, when every row has one; `None` otherwise (read them with
    /// [`CostTable::offset`]). For walks over millions of rows.
    pub fn offsets_slice(&self) -> Option<&[u64]> {
        self.offsets.dense(self.rows)
    }

    /// The function of every row, when every row has one; `None` otherwise.
    pub fn symbols_slice(&self) -> Option<&[u32]> {
        self.symbols.dense(self.rows)
    }

    /// The file of every row, when every row has one; `None` otherwise.
    pub fn files_slice(&self) -> Option<&[FileId]> {
        self.files.dense(self.rows)
    }

    /// The line of every row, when every row has one; `None` otherwise.
    pub fn lines_slice(&self) -> Option<&[u32]> {
        self.lines.dense(self.rows)
    }

    /// The values of every row, row after row, `width` each.
    pub fn values_slice(&self) -> &[u64] {
        &self.values
    }

    /// The values of a row, `width` long.
    pub fn values(&self, row: usize) -> &[u64] {
        &self.values[row * self.width..(row + 1) * self.width]
    }

    /// The values of a row, to change in place (call [`CostTable::widen`] first to add events).
    pub fn values_mut(&mut self, row: usize) -> &mut [u64] {
        &mut self.values[row * self.width..(row + 1) * self.width]
    }

    /// The value of one event in a row (0 when the row has none).
    pub fn value(&self, row: usize, event: usize) -> u64 {
        if event < self.width {
            self.values[row * self.width + event]
        } else {
            0
        }
    }

    /// The sum of one event over every row (saturating).
    pub fn total(&self, event: usize) -> u64 {
        if event >= self.width {
            return 0;
        }
        self.values.iter().skip(event).step_by(self.width).fold(0u64, |s, &v| s.saturating_add(v))
    }

    /// One row as an owned [`Cost`].
    pub fn get(&self, row: usize) -> Cost {
        Cost {
            symbol: self.symbol(row),
            offset: self.offset(row),
            file: self.file(row),
            line: self.line(row),
            values: Values::from_slice(self.values(row)),
        }
    }

    /// Every row, in order, as owned [`Cost`]s.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Cost> + '_ {
        (0..self.rows).map(move |row| self.get(row))
    }

    /// Whether any row states an offset (a line, a function, a file).
    pub fn has_offsets(&self) -> bool {
        self.offsets.any()
    }

    pub fn has_lines(&self) -> bool {
        self.lines.any()
    }

    /// Appends every row of `other`.
    pub fn append(&mut self, other: &CostTable) {
        self.widen(other.width);
        self.reserve(other.rows);
        for row in 0..other.rows {
            self.push_parts(
                other.offset(row),
                other.symbol(row),
                other.file(row),
                other.line(row),
                other.values(row),
            );
        }
    }
}

impl PartialEq for CostTable {
    fn eq(&self, other: &Self) -> bool {
        let padded_eq = |a: &[u64], b: &[u64]| {
            let n = a.len().max(b.len());
            (0..n).all(|i| a.get(i).copied().unwrap_or(0) == b.get(i).copied().unwrap_or(0))
        };
        self.rows == other.rows
            && (0..self.rows).all(|r| {
                self.offset(r) == other.offset(r)
                    && self.symbol(r) == other.symbol(r)
                    && self.file(r) == other.file(r)
                    && self.line(r) == other.line(r)
                    && padded_eq(self.values(r), other.values(r))
            })
    }
}

impl Eq for CostTable {}

impl FromIterator<Cost> for CostTable {
    fn from_iter<I: IntoIterator<Item = Cost>>(iter: I) -> Self {
        let mut table = CostTable::new();
        for cost in iter {
            table.push(cost);
        }
        table
    }
}

impl From<Vec<Cost>> for CostTable {
    fn from(costs: Vec<Cost>) -> Self {
        costs.into_iter().collect()
    }
}

impl Extend<Cost> for CostTable {
    fn extend<I: IntoIterator<Item = Cost>>(&mut self, iter: I) {
        for cost in iter {
            self.push(cost);
        }
    }
}

impl<'a> IntoIterator for &'a CostTable {
    type Item = Cost;
    type IntoIter = Box<dyn ExactSizeIterator<Item = Cost> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cost(offset: Option<u64>, line: Option<u32>, values: &[u64]) -> Cost {
        Cost { offset, line, values: Values::from_slice(values), ..Cost::default() }
    }

    #[test]
    fn samples_take_two_words_a_row() {
        let mut t = CostTable::new();
        for i in 0..1000 {
            t.push_parts(Some(4 * i), None, None, None, &[i]);
        }
        assert_eq!((t.len(), t.width(), t.offsets.data.len(), t.values.len()), (1000, 1, 1000, 1000));
        assert!(t.offsets.present.is_empty() && !t.symbols.any() && !t.has_lines() && !t.files.any());
        assert_eq!(t.get(7), cost(Some(28), None, &[7]));
        assert_eq!(
            (t.offsets_slice().map(|o| o[7]), t.symbols_slice(), t.values_slice()[7]),
            (Some(28), None, 7)
        );
    }

    #[test]
    fn columns_start_late_or_stop_early_and_values_widen() {
        let rows = [
            cost(None, None, &[1]),
            cost(Some(4), Some(9), &[2, 3]),
            cost(Some(8), None, &[]),
            cost(None, Some(2), &[5]),
        ];
        let t: CostTable = rows.iter().cloned().collect();
        assert_eq!(t.width(), 2);
        let back: Vec<Cost> = t.iter().collect();
        assert_eq!(back[0], cost(None, None, &[1, 0]));
        assert_eq!(back[1], rows[1]);
        assert_eq!(back[2], cost(Some(8), None, &[0, 0]));
        assert_eq!(back[3], cost(None, Some(2), &[5, 0]));
        assert_eq!(t, CostTable::from(rows.to_vec()));
        assert_eq!((t.total(0), t.total(1), t.total(2)), (8, 3, 0));
    }

    #[test]
    fn equality_ignores_trailing_zero_values_and_layout() {
        let narrow: CostTable = vec![cost(Some(1), None, &[3])].into();
        let mut wide = narrow.clone();
        wide.widen(3);
        assert_eq!(narrow, wide);
        wide.values_mut(0)[2] = 1;
        assert_ne!(narrow, wide);
    }

    #[test]
    fn extending_by_columns_gives_the_rows_pushed_one_by_one() {
        let start: CostTable = vec![cost(Some(4), Some(9), &[2])].into();
        let (offsets, lines, values) = ([8u64, 12, 16], [1u32, 2, 3], [5u64, 6, 7, 8, 9, 10]);
        for (offsets, file, lines, width) in [
            (Some(&offsets[..]), Some(1), Some(&lines[..]), 2),
            (None, None, Some(&lines[..]), 1),
            (Some(&offsets[..]), Some(2), None, 2),
        ] {
            for base in [CostTable::new(), start.clone()] {
                let mut by_rows = base.clone();
                for row in 0..3 {
                    by_rows.push_parts(
                        offsets.map(|o| o[row]),
                        Some(3),
                        file,
                        lines.map(|l| l[row]),
                        &values[row * width..(row + 1) * width],
                    );
                }
                let mut by_columns = base.clone();
                by_columns.extend_columns(3, offsets, Some(3), file, lines, &values[..3 * width]);
                assert_eq!(by_columns, by_rows);
                assert_eq!(by_columns.iter().collect::<Vec<_>>(), by_rows.iter().collect::<Vec<_>>());
            }
        }
    }

    /// Up to `max` rows of any shape: each column stated or not, zero to three values.
    fn any_rows(max: usize) -> impl Strategy<Value = Vec<Cost>> {
        let row = (
            proptest::option::of(0u64..1 << 40),
            proptest::option::of(0u32..8),
            proptest::option::of(0u32..5),
            proptest::option::of(0u32..900),
            proptest::collection::vec(0u64..1000, 0..4),
        );
        proptest::collection::vec(row, 0..max).prop_map(|rows| {
            rows.into_iter()
                .map(|(offset, symbol, file, line, values)| Cost {
                    offset,
                    symbol,
                    file,
                    line,
                    values: values.into(),
                })
                .collect()
        })
    }

    proptest! {
        /// Whatever rows go in come out, padded to the table's width.
        #[test]
        fn rows_come_back(rows in proptest::collection::vec(
            (proptest::option::of(0u64..1 << 40), proptest::option::of(0u32..50), proptest::option::of(0u32..5),
             proptest::option::of(0u32..900), proptest::collection::vec(0u64..1000, 0..4)),
            0..40,
        )) {
            let costs: Vec<Cost> = rows
                .into_iter()
                .map(|(offset, symbol, file, line, values)| Cost { offset, symbol, file, line, values: values.into() })
                .collect();
            let table = CostTable::from(costs.clone());
            prop_assert_eq!(table.len(), costs.len());
            for (row, c) in costs.iter().enumerate() {
                let got = table.get(row);
                prop_assert_eq!((got.offset, got.symbol, got.file, got.line), (c.offset, c.symbol, c.file, c.line));
                prop_assert_eq!(got.values.len(), table.width());
                prop_assert!(got.values.iter().enumerate().all(|(e, &v)| v == c.value(e)));
            }
            let copy: CostTable = table.iter().collect();
            prop_assert_eq!(&copy, &table);
        }

        /// Appending a table with its functions and files mapped gives the rows pushed one by
        /// one, mapped; a file mapped to none leaves the row without one.
        #[test]
        fn appended_rows_are_the_rows_pushed(first in any_rows(20), second in any_rows(20)) {
            let symbol = |s: u32| s * 3 + 1;
            let file = |f: FileId| (f != 4).then_some(f + 10);
            let mut expected = CostTable::from(first.clone());
            for c in &second {
                expected.push_parts(c.offset, c.symbol.map(symbol), c.file.and_then(file), c.line, &c.values);
            }
            let mut appended = CostTable::from(first);
            appended.append_mapped(CostTable::from(second), symbol, file);
            prop_assert_eq!(appended.len(), expected.len());
            prop_assert_eq!(appended.iter().collect::<Vec<_>>(), expected.iter().collect::<Vec<_>>());
        }
    }
}
