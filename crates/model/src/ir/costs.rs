//! The costs of an image, stored by column in packs of rows.
//!
//! A DCPI profile holds one sample count per instruction slot (25 million rows for a 100 MB
//! file) and a Callgrind profile one cost line per instruction; most rows state only an offset
//! and one or two values, and neighbouring rows state nearly the same ones: offsets a few bytes
//! apart, the same function and file, lines close together, counts of one magnitude. So each
//! column (offset, function, file, line, and one per event) is cut into packs of
//! [`PACK`] rows, and a pack keeps only its smallest value and each row's difference from it,
//! in as few whole bytes as the pack's largest difference needs (none when every row is the
//! same). A column nobody stated costs a few bytes per pack, and a row about four bytes.
//!
//! What the packing saves, against plain columns (a vector per column beside a bit set of the
//! rows without a value, a column no row states holding nothing), measured in 5 interleaved
//! rounds of release builds on 2 cores (best of 5, whole commands):
//! - the 103 MB DCPI file of `scripts/gen-dcpi.py` (25 million samples): costs 111.7 MB
//!   against 409.4 MB (4.5 against 16.4 bytes a row); `cfghub info` and `convert` to DCPI peak
//!   at 229 MiB against 512 MiB, 55% less;
//! - the 21 MB Callgrind profile of cc1plus (1.4 million cost lines): costs 5.9 MB against
//!   34.3 MB (4.2 against 24.2 bytes a row); `info` peaks at 77 MiB against 106 MiB and
//!   `convert` to Callgrind at 74 MiB against 106 MiB, 30% less.
//!
//! Plain columns would break both memory targets (a DCPI file at most three times its size, a
//! Callgrind file at most `callgrind_annotate`'s 78 MiB on the same file). Processor time is
//! the same either way (0.59 s both converting the DCPI file, 0.44 s both converting the
//! Callgrind file; 2.9 against 3.3 s writing a 10 MB DCPI file as folded stacks); a pprof
//! profile holds few costs and does not notice.
//!
//! Rows are appended at the end and read anywhere: reading a row finds its pack at once
//! (`row / PACK`) and its bytes at a fixed place in it. The rows after the last full pack stay
//! unpacked (the *tail*), so the last row can still be changed ([`CostTable::add_to_last`]).

use super::{Cost, FileId, Values};

/// Rows per pack.
pub(crate) const PACK: usize = 256;
/// Words of a pack's bit set of rows without a value.
const MASK_WORDS: usize = PACK / 64;
/// Bytes of that bit set, kept before the values of a pack whose rows mix stated and unstated.
const MASK_BYTES: usize = PACK / 8;
/// Most bytes a page of packs holds: pages are never copied as they grow past it.
const PAGE: usize = 1 << 20;

/// Which rows of a pack state a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Presence {
    All,
    None,
    /// A bit set of the rows without one precedes the values.
    Mixed,
}

/// Where and how one pack of a column is stored.
#[derive(Clone, Copy, Debug)]
struct Head {
    /// The smallest value stated in the pack; each row stores its difference from it.
    base: u64,
    page: u32,
    at: u32,
    /// Bytes per row (per run when `runs` is not 0): 0 (every row is `base`), 1, 2, 4 or 8.
    width: u8,
    presence: Presence,
    /// 0: a difference per row. Otherwise the pack is that many runs of one value each: the
    /// row each run starts at (a byte each), then each run's difference.
    runs: u8,
}

/// Most runs a pack is stored as (beyond, a difference per row is as small).
const MOST_RUNS: usize = 64;

impl Head {
    /// The difference from `base` of row `i` of the pack whose bytes are `bytes`.
    #[inline(always)]
    fn delta_of(&self, bytes: &[u8], i: usize) -> u64 {
        if self.runs == 0 {
            return delta(bytes, self.width, i);
        }
        let runs = self.runs as usize;
        let run = bytes[..runs].partition_point(|&start| start as usize <= i) - 1;
        delta(&bytes[runs..], self.width, run)
    }
}

/// Bytes per row that differences up to `range` need.
fn width_for(range: u64) -> u8 {
    match range {
        0 => 0,
        1..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFFFF_FFFF => 4,
        _ => 8,
    }
}

/// The `i`th difference of a pack's packed values.
#[inline(always)]
fn delta(bytes: &[u8], width: u8, i: usize) -> u64 {
    match width {
        0 => 0,
        1 => u64::from(bytes[i]),
        2 => u64::from(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]])),
        4 => u64::from(u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("four bytes"))),
        _ => u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("eight bytes")),
    }
}

fn missing_bit(mask: &[u64; MASK_WORDS], i: usize) -> bool {
    mask[i / 64] >> (i % 64) & 1 == 1
}

/// One column of optional values: packs, then the unpacked tail.
#[derive(Clone, Debug, Default)]
struct Column {
    heads: Vec<Head>,
    pages: Vec<Vec<u8>>,
    /// Values of the rows after the last pack (0 where none is stated).
    tail: Vec<u64>,
    /// Which tail rows state no value.
    tail_missing: [u64; MASK_WORDS],
    /// Rows that state a value, packed or not.
    stated: usize,
}

impl Column {
    /// A column of `packs` packs and `tail` tail rows, every row 0.
    fn zeros(packs: usize, tail: usize) -> Column {
        let zero = Head { base: 0, page: 0, at: 0, width: 0, presence: Presence::All, runs: 0 };
        Column {
            heads: vec![zero; packs],
            tail: vec![0; tail],
            stated: packs * PACK + tail,
            ..Column::default()
        }
    }

    #[inline(always)]
    fn push(&mut self, value: Option<u64>) {
        match value {
            Some(v) => {
                self.tail.push(v);
                self.stated += 1;
            }
            None => self.push_missing(),
        }
    }

    fn push_missing(&mut self) {
        let i = self.tail.len();
        self.tail_missing[i / 64] |= 1 << (i % 64);
        self.tail.push(0);
    }

    /// Appends stated values (the tail has room for them).
    #[inline]
    fn extend(&mut self, values: impl ExactSizeIterator<Item = u64>) {
        self.stated += values.len();
        self.tail.extend(values);
    }

    /// Appends `n` rows of one value, or of none.
    #[inline]
    fn extend_same(&mut self, value: Option<u64>, n: usize) {
        match value {
            Some(v) => {
                self.tail.resize(self.tail.len() + n, v);
                self.stated += n;
            }
            None => (0..n).for_each(|_| self.push_missing()),
        }
    }

    fn get(&self, row: usize) -> Option<u64> {
        let pack = row / PACK;
        let i = row % PACK;
        let Some(head) = self.heads.get(pack) else {
            let i = row - self.heads.len() * PACK;
            return (!missing_bit(&self.tail_missing, i)).then(|| self.tail[i]);
        };
        let bytes = &self.pages.get(head.page as usize).map_or(&[][..], |p| &p[head.at as usize..]);
        match head.presence {
            Presence::None => None,
            Presence::All => Some(head.base + head.delta_of(bytes, i)),
            Presence::Mixed => {
                let missing = bytes[i / 8] >> (i % 8) & 1 == 1;
                (!missing).then(|| head.base + delta(&bytes[MASK_BYTES..], head.width, i))
            }
        }
    }

    /// Packs the tail, [`PACK`] rows long, into a pack.
    fn seal(&mut self) {
        debug_assert_eq!(self.tail.len(), PACK);
        let missing: u32 = self.tail_missing.iter().map(|w| w.count_ones()).sum();
        let presence = match missing {
            0 => Presence::All,
            m if m as usize == PACK => Presence::None,
            _ => Presence::Mixed,
        };
        let (mut lo, mut hi, mut changes) = (u64::MAX, 0, 0usize);
        if presence == Presence::All {
            for (k, &v) in self.tail.iter().enumerate() {
                lo = lo.min(v);
                hi = hi.max(v);
                changes += (k > 0 && v != self.tail[k - 1]) as usize;
            }
        } else {
            for (i, &v) in self.tail.iter().enumerate() {
                if !missing_bit(&self.tail_missing, i) {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
        }
        let (base, width) = if lo > hi { (0, 0) } else { (lo, width_for(hi - lo)) };
        // Runs of one value (a function's rows, a basic block's counts) when fewer bytes.
        let runs = changes + 1;
        if presence == Presence::All
            && width > 0
            && runs <= MOST_RUNS
            && runs * (1 + width as usize) < PACK * width as usize
        {
            let (page, at) = self.room(runs * (1 + width as usize));
            let bytes = &mut self.pages[page as usize];
            let mut values = Vec::with_capacity(runs);
            for (k, &v) in self.tail.iter().enumerate() {
                if k == 0 || v != self.tail[k - 1] {
                    bytes.push(k as u8);
                    values.push(v);
                }
            }
            pack(&values, base, width, bytes);
            self.heads.push(Head { base, page, at, width, presence, runs: runs as u8 });
            self.tail.clear();
            return;
        }
        let need = width as usize * PACK + if presence == Presence::Mixed { MASK_BYTES } else { 0 };
        let (page, at) = self.room(need);
        if need > 0 {
            let bytes = &mut self.pages[page as usize];
            if presence == Presence::Mixed {
                for w in self.tail_missing {
                    bytes.extend_from_slice(&w.to_le_bytes());
                }
            }
            pack(&self.tail, base, width, bytes);
        }
        self.heads.push(Head { base, page, at, width, presence, runs: 0 });
        self.tail.clear();
        self.tail_missing = [0; MASK_WORDS];
    }

    /// A page with room for `need` more bytes, and where they will start in it.
    fn room(&mut self, need: usize) -> (u32, u32) {
        if need == 0 {
            return (0, 0);
        }
        match self.pages.last() {
            Some(p) if p.len() + need <= PAGE => {}
            // The first page grows as needed (most tables are small); later ones are whole.
            Some(_) => self.pages.push(Vec::with_capacity(PAGE)),
            None => self.pages.push(Vec::new()),
        }
        let page = self.pages.len() - 1;
        (page as u32, self.pages[page].len() as u32)
    }

    fn any(&self) -> bool {
        self.stated > 0
    }

    fn heap_bytes(&self) -> usize {
        self.heads.capacity() * std::mem::size_of::<Head>()
            + self.pages.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.pages.iter().map(Vec::capacity).sum::<usize>()
            + self.tail.capacity() * 8
    }
}

/// The values of a column in row order, unpacked a pack at a time.
#[derive(Clone)]
pub(crate) struct ColumnIter<'a> {
    column: &'a Column,
    /// The next pack to unpack (`heads.len()`: the tail; beyond: none left).
    next_pack: usize,
    /// The rows unpacked, and which of them state no value.
    rows: Box<[u64; PACK]>,
    missing: [u64; MASK_WORDS],
    len: usize,
    /// The next row of `rows`.
    i: usize,
    /// Packs that end in padding rows of the table, and the rows before the padding.
    short: Vec<(usize, usize)>,
}

impl<'a> ColumnIter<'a> {
    /// The values of `column`, a column of `table`, without the table's padding rows.
    fn new(table: &CostTable, column: &'a Column) -> Self {
        ColumnIter {
            column,
            next_pack: 0,
            rows: Box::new([0; PACK]),
            missing: [0; MASK_WORDS],
            len: 0,
            i: 0,
            short: table.short_packs(),
        }
    }

    /// Unpacks the next pack (or the tail); `false` when none is left.
    fn unpack(&mut self) -> bool {
        let pack = self.next_pack;
        self.next_pack += 1;
        self.i = 0;
        match self.column.unpack(pack, &mut self.rows, &mut self.missing) {
            Some(len) => {
                self.len = self.short.iter().find(|s| s.0 == pack).map_or(len, |s| s.1);
                true
            }
            None => false,
        }
    }
}

impl Column {
    /// Unpacks pack `pack` (`heads.len()`: the tail) into `rows`, with which rows state no
    /// value into `missing`; the number of rows, or `None` past the last.
    fn unpack(&self, pack: usize, rows: &mut [u64; PACK], missing: &mut [u64; MASK_WORDS]) -> Option<usize> {
        let Some(head) = self.heads.get(pack) else {
            if pack > self.heads.len() || self.tail.is_empty() {
                return None;
            }
            rows[..self.tail.len()].copy_from_slice(&self.tail);
            *missing = self.tail_missing;
            return Some(self.tail.len());
        };
        let bytes = self.pages.get(head.page as usize).map_or(&[][..], |p| &p[head.at as usize..]);
        let (base, width) = (head.base, head.width);
        *missing = [0; MASK_WORDS];
        match head.presence {
            Presence::None => *missing = [u64::MAX; MASK_WORDS],
            Presence::Mixed => {
                for (w, word) in missing.iter_mut().enumerate() {
                    *word = u64::from_le_bytes(bytes[w * 8..w * 8 + 8].try_into().expect("eight bytes"));
                }
                unpack(&bytes[MASK_BYTES..], base, width, rows);
            }
            Presence::All if head.runs > 0 => {
                let runs = head.runs as usize;
                for run in 0..runs {
                    let start = bytes[run] as usize;
                    let end = if run + 1 < runs { bytes[run + 1] as usize } else { PACK };
                    rows[start..end].fill(base + delta(&bytes[runs..], width, run));
                }
            }
            Presence::All => unpack(bytes, base, width, rows),
        }
        Some(PACK)
    }
}

/// Packs a [`Cursor`] keeps unpacked per column (by pack number modulo this).
const CACHED_PACKS: usize = 16;

/// One column's recently unpacks, for reading rows in an order that mostly stays
/// among a few neighbouring packs.
struct CachedPack {
    packs: [usize; CACHED_PACKS],
    rows: Vec<[u64; PACK]>,
    missing: [[u64; MASK_WORDS]; CACHED_PACKS],
}

impl CachedPack {
    fn new() -> Self {
        CachedPack {
            packs: [usize::MAX; CACHED_PACKS],
            rows: Vec::new(),
            missing: [[0; MASK_WORDS]; CACHED_PACKS],
        }
    }

    #[inline]
    fn get(&mut self, column: &Column, row: usize) -> Option<u64> {
        let pack = row / PACK;
        let slot = pack % CACHED_PACKS;
        if self.rows.is_empty() {
            // Unpacked room is made on first use: most cursors read few columns.
            self.rows = vec![[0; PACK]; CACHED_PACKS];
        }
        if self.packs[slot] != pack {
            // A row past the end reads as stating nothing.
            column.unpack(pack, &mut self.rows[slot], &mut self.missing[slot])?;
            self.packs[slot] = pack;
        }
        let i = row % PACK;
        (!missing_bit(&self.missing[slot], i)).then_some(self.rows[slot][i])
    }
}

/// Reads rows of a table in any order, unpacking each pack once while the rows read stay in
/// it: for walks in an order of their own that mostly follows the table's (rows sorted by
/// address, say).
pub struct Cursor<'a> {
    table: &'a CostTable,
    offsets: CachedPack,
    symbols: CachedPack,
    files: CachedPack,
    lines: CachedPack,
    values: Vec<CachedPack>,
}

impl Cursor<'_> {
    /// The instruction address of a row, relative to the image's load address, when it states one.
    pub fn offset(&mut self, row: usize) -> Option<u64> {
        self.offsets.get(&self.table.offsets, self.table.at(row))
    }

    /// The function of a row (index into the image's symbols), when it states one.
    pub fn symbol(&mut self, row: usize) -> Option<u32> {
        self.symbols.get(&self.table.symbols, self.table.at(row)).map(|s| s as u32)
    }

    /// The source file of a row, when it states one.
    pub fn file(&mut self, row: usize) -> Option<FileId> {
        self.files.get(&self.table.files, self.table.at(row)).map(|f| f as FileId)
    }

    /// The source line of a row, when it states one.
    pub fn line(&mut self, row: usize) -> Option<u32> {
        self.lines.get(&self.table.lines, self.table.at(row)).map(|l| l as u32)
    }

    /// Rows of the table.
    pub fn len(&self) -> usize {
        self.table.rows
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.table.rows == 0
    }

    /// The values of a row, `width` long.
    pub fn values(&mut self, row: usize) -> Values {
        let columns = &self.table.values;
        let at = self.table.at(row);
        self.values
            .iter_mut()
            .zip(columns)
            .map(|(cache, column)| cache.get(column, at).unwrap_or(0))
            .collect()
    }

    /// The value of one event in a row (0 when the row has none).
    pub fn value(&mut self, row: usize, event: usize) -> u64 {
        match (self.values.get_mut(event), self.table.values.get(event)) {
            (Some(cache), Some(column)) => cache.get(column, self.table.at(row)).unwrap_or(0),
            _ => 0,
        }
    }
}

/// Writes `base` plus each of a pack's differences, `width` bytes each, into `out`. Wrapping,
/// as [`pack`] takes them: a row without a value was packed as 0, below `base`, and unpacks to
/// a number nobody reads.
fn unpack(bytes: &[u8], base: u64, width: u8, out: &mut [u64; PACK]) {
    match width {
        0 => out.fill(base),
        1 => out.iter_mut().zip(bytes).for_each(|(o, &b)| *o = base.wrapping_add(u64::from(b))),
        2 => out
            .iter_mut()
            .zip(bytes.chunks_exact(2))
            .for_each(|(o, b)| *o = base.wrapping_add(u64::from(u16::from_le_bytes([b[0], b[1]])))),
        4 => out.iter_mut().zip(bytes.chunks_exact(4)).for_each(|(o, b)| {
            *o = base.wrapping_add(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        }),
        _ => out.iter_mut().zip(bytes.chunks_exact(8)).for_each(|(o, b)| {
            *o = base.wrapping_add(u64::from_le_bytes(b.try_into().expect("eight bytes")))
        }),
    }
}

impl Iterator for ColumnIter<'_> {
    type Item = Option<u64>;

    #[inline]
    fn next(&mut self) -> Option<Option<u64>> {
        if self.i == self.len && !self.unpack() {
            return None;
        }
        let i = self.i;
        self.i += 1;
        Some((!missing_bit(&self.missing, i)).then_some(self.rows[i]))
    }
}

/// One event's value in every row ([`CostTable::event_values`]): the column's, or zeros for an
/// event beyond the table's width.
struct EventValues<'a> {
    column: Option<ColumnIter<'a>>,
    /// Zeros left to give when there is no column.
    zeros: usize,
}

impl Iterator for EventValues<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        match &mut self.column {
            Some(column) => column.next().map(|v| v.unwrap_or(0)),
            None if self.zeros > 0 => {
                self.zeros -= 1;
                Some(0)
            }
            None => None,
        }
    }
}

/// Every row of a table as an owned [`Cost`], unpacked a pack at a time.
pub struct Rows<'a> {
    offsets: ColumnIter<'a>,
    symbols: ColumnIter<'a>,
    files: ColumnIter<'a>,
    lines: ColumnIter<'a>,
    values: Vec<ColumnIter<'a>>,
    left: usize,
}

impl Iterator for Rows<'_> {
    type Item = Cost;

    #[inline]
    fn next(&mut self) -> Option<Cost> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(Cost {
            offset: self.offsets.next().flatten(),
            symbol: self.symbols.next().flatten().map(|s| s as u32),
            file: self.files.next().flatten().map(|f| f as FileId),
            line: self.lines.next().flatten().map(|l| l as u32),
            values: self.values.iter_mut().map(|c| c.next().flatten().unwrap_or(0)).collect(),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Rows<'_> {}

/// Appends the differences of `values` from `base`, `width` bytes each.
fn pack(values: &[u64], base: u64, width: u8, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + values.len() * width as usize, 0);
    let out = &mut out[start..];
    match width {
        0 => {}
        1 => out.iter_mut().zip(values).for_each(|(o, &v)| *o = v.wrapping_sub(base) as u8),
        2 => out
            .chunks_exact_mut(2)
            .zip(values)
            .for_each(|(o, &v)| o.copy_from_slice(&(v.wrapping_sub(base) as u16).to_le_bytes())),
        4 => out
            .chunks_exact_mut(4)
            .zip(values)
            .for_each(|(o, &v)| o.copy_from_slice(&(v.wrapping_sub(base) as u32).to_le_bytes())),
        _ => out
            .chunks_exact_mut(8)
            .zip(values)
            .for_each(|(o, &v)| o.copy_from_slice(&v.wrapping_sub(base).to_le_bytes())),
    }
}

/// Costs of one image: for each row an optional offset, function, file and line, and one value
/// per event (`width` values; rows pushed with fewer are padded with zeros, which is what a
/// missing trailing value means).
///
/// Rows are read back as owned [`Cost`]s (`get`, `iter`) or one field at a time (`offset`,
/// `value`...). Equality ignores how the table is laid out: two tables are equal when their
/// rows are, trailing zero values aside.
#[derive(Clone, Debug, Default)]
pub struct CostTable {
    rows: usize,
    /// Rows of padding in the columns, where the packs of another table were moved in
    /// whole ([`CostTable::append_mapped`]), so that every pack still holds [`PACK`] rows:
    /// by row. Empty for a table filled row by row.
    gaps: Vec<Gap>,
    offsets: Column,
    symbols: Column,
    files: Column,
    lines: Column,
    /// One column per event.
    values: Vec<Column>,
}

/// Padding rows in a table's columns before row `row`: no column states a value there, and
/// every row from `row` on lies `padding` rows (this gap's and those before it) further down
/// the columns.
#[derive(Clone, Copy, Debug)]
struct Gap {
    row: usize,
    padding: usize,
}

impl CostTable {
    /// Where row `row` lies in the columns.
    #[inline]
    fn at(&self, row: usize) -> usize {
        match self.gaps.as_slice() {
            [] => row,
            gaps => match gaps.partition_point(|g| g.row <= row) {
                0 => row,
                k => row + gaps[k - 1].padding,
            },
        }
    }

    /// The packs that end in padding, each with the rows it holds before the padding (a gap
    /// always fills its pack up to the end).
    fn short_packs(&self) -> Vec<(usize, usize)> {
        let mut before = 0;
        self.gaps
            .iter()
            .map(|g| {
                let start = g.row + before;
                before = g.padding;
                (start / PACK, start % PACK)
            })
            .collect()
    }

    /// An empty table, no events wide.
    pub fn new() -> Self {
        CostTable::default()
    }

    /// A table of samples (an offset and one value per row, nothing else), `rows` long, packed
    /// on every core: `fill(first, offsets, values)` writes the offsets and values of rows
    /// `first..first + offsets.len()` (both slices as long, at most [`PACK`] rows); it is
    /// called once for each such part of the rows, from any thread.
    pub fn from_samples_with(rows: usize, fill: impl Fn(usize, &mut [u64], &mut [u64]) + Sync) -> CostTable {
        use rayon::prelude::*;
        /// Packs per task: about a million rows.
        const GROUP: usize = 4096;
        let full = rows / PACK;
        let groups: Vec<PackedSamples> = (0..full.div_ceil(GROUP))
            .into_par_iter()
            .map(|g| {
                let packs = g * GROUP..((g + 1) * GROUP).min(full);
                let (mut offsets, mut values) = ([0u64; PACK], [0u64; PACK]);
                // Room for the widest rows; what is not written is never touched, and is given
                // back at the end.
                let mut heads = Vec::with_capacity(packs.len());
                let mut offset_page = Vec::with_capacity(packs.len() * PACK * 8);
                let mut value_page = Vec::with_capacity(packs.len() * PACK * 8);
                for b in packs {
                    fill(b * PACK, &mut offsets, &mut values);
                    let ho = sample_head(&offsets, g as u32, offset_page.len());
                    let hv = sample_head(&values, g as u32, value_page.len());
                    pack(&offsets, ho.base, ho.width, &mut offset_page);
                    pack(&values, hv.base, hv.width, &mut value_page);
                    heads.push((ho, hv));
                }
                offset_page.shrink_to_fit();
                value_page.shrink_to_fit();
                let (ho, hv) = heads.into_iter().unzip();
                (ho, offset_page, hv, value_page)
            })
            .collect();
        let mut offsets = Column::default();
        let mut values = Column::default();
        for (ho, po, hv, pv) in groups {
            offsets.heads.extend(ho);
            offsets.pages.push(po);
            values.heads.extend(hv);
            values.pages.push(pv);
        }
        offsets.stated = full * PACK;
        values.stated = full * PACK;
        let rest = rows - full * PACK;
        let (mut o, mut v) = (vec![0; rest], vec![0; rest]);
        fill(full * PACK, &mut o, &mut v);
        offsets.extend(o.into_iter());
        values.extend(v.into_iter());
        CostTable {
            rows,
            gaps: Vec::new(),
            offsets,
            symbols: Column::default().with_none(full, rest),
            files: Column::default().with_none(full, rest),
            lines: Column::default().with_none(full, rest),
            values: vec![values],
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Values per row.
    pub fn width(&self) -> usize {
        self.values.len()
    }

    /// Removes every row.
    pub fn clear(&mut self) {
        *self = CostTable::default();
    }

    /// Makes room for `additional` more rows (only the pack list grows ahead: the packed
    /// bytes are sized by what the rows hold).
    pub fn reserve(&mut self, additional: usize) {
        let packs = additional / PACK;
        for c in self.columns_mut() {
            c.heads.reserve(packs);
        }
    }

    fn columns_mut(&mut self) -> impl Iterator<Item = &mut Column> {
        [&mut self.offsets, &mut self.symbols, &mut self.files, &mut self.lines]
            .into_iter()
            .chain(self.values.iter_mut())
    }

    /// Packs the tail when it is full, before a row is added: so the last row is always in the
    /// tail.
    #[inline(always)]
    fn make_room(&mut self) {
        if self.offsets.tail.len() == PACK {
            self.seal();
        }
    }

    #[cold]
    fn seal(&mut self) {
        for c in self.columns_mut() {
            c.seal();
        }
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
        if values.len() > self.values.len() {
            self.widen(values.len());
        }
        self.make_room();
        self.offsets.push(offset);
        self.symbols.push(symbol.map(u64::from));
        self.files.push(file.map(u64::from));
        self.lines.push(line.map(u64::from));
        for (e, column) in self.values.iter_mut().enumerate() {
            column.push(Some(values.get(e).copied().unwrap_or(0)));
        }
        self.rows += 1;
    }

    /// Appends `count` rows of one function and one file from columns: `offsets` and `lines`,
    /// when given, hold (at least) `count` entries, and `values` the values of the rows, row
    /// after row, as many for each. The same rows as [`CostTable::push_parts`] one by one, a
    /// pack at a time.
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
        if width > self.values.len() {
            self.widen(width);
        }
        let mut done = 0;
        while done < count {
            self.make_room();
            let n = (PACK - self.offsets.tail.len()).min(count - done);
            let rows = done..done + n;
            match offsets {
                Some(o) => self.offsets.extend(o[rows.clone()].iter().copied()),
                None => self.offsets.extend_same(None, n),
            }
            self.symbols.extend_same(symbol.map(u64::from), n);
            self.files.extend_same(file.map(u64::from), n);
            match lines {
                Some(l) => self.lines.extend(l[rows.clone()].iter().map(|&l| u64::from(l))),
                None => self.lines.extend_same(None, n),
            }
            for (e, column) in self.values.iter_mut().enumerate() {
                if e < width {
                    column.extend(
                        values[rows.start * width..rows.end * width].iter().skip(e).step_by(width).copied(),
                    );
                } else {
                    column.extend_same(Some(0), n);
                }
            }
            self.rows += n;
            done += n;
        }
    }

    /// Makes every row `width` values wide (no narrower than it is).
    pub fn widen(&mut self, width: usize) {
        let (packs, tail) = (self.offsets.heads.len(), self.offsets.tail.len());
        while self.values.len() < width {
            self.values.push(Column::zeros(packs, tail));
        }
    }

    /// The instruction address of a row, relative to the image's load address, when it states one.
    pub fn offset(&self, row: usize) -> Option<u64> {
        self.offsets.get(self.at(row))
    }

    /// The function of a row (index into the image's symbols), when it states one.
    pub fn symbol(&self, row: usize) -> Option<u32> {
        self.symbols.get(self.at(row)).map(|s| s as u32)
    }

    /// The source file of a row, when it states one.
    pub fn file(&self, row: usize) -> Option<FileId> {
        self.files.get(self.at(row)).map(|f| f as FileId)
    }

    /// The source line of a row, when it states one.
    pub fn line(&self, row: usize) -> Option<u32> {
        self.lines.get(self.at(row)).map(|l| l as u32)
    }

    /// The values of a row, `width` long.
    pub fn values(&self, row: usize) -> Values {
        let at = self.at(row);
        self.values.iter().map(|c| c.get(at).unwrap_or(0)).collect()
    }

    /// The value of one event in a row (0 when the row has none).
    pub fn value(&self, row: usize, event: usize) -> u64 {
        self.values.get(event).and_then(|c| c.get(self.at(row))).unwrap_or(0)
    }

    /// Adds `values` to those of the last row (saturating), widening the table when they are
    /// more. Panics on an empty table.
    pub fn add_to_last(&mut self, values: &[u64]) {
        assert!(self.rows > 0, "a table without rows has no last row");
        self.widen(values.len());
        for (column, &v) in self.values.iter_mut().zip(values) {
            let last = column.tail.last_mut().expect("the last row is in the tail");
            *last = last.saturating_add(v);
        }
    }

    /// The sum of one event over every row (saturating).
    pub fn total(&self, event: usize) -> u64 {
        let Some(column) = self.values.get(event) else { return 0 };
        // A pack at a time, unpacked as a cursor would: a pack of runs spelled out once rather
        // than searched for every row.
        let (mut rows, mut missing) = ([0u64; PACK], [0u64; MASK_WORDS]);
        let mut sum = 0u64;
        let mut pack = 0;
        while let Some(len) = column.unpack(pack, &mut rows, &mut missing) {
            sum = rows[..len]
                .iter()
                .enumerate()
                .filter(|&(i, _)| !missing_bit(&missing, i))
                .fold(sum, |s, (_, &v)| s.saturating_add(v));
            pack += 1;
        }
        sum
    }

    /// Whether any row has a value other than 0.
    pub fn any_value(&self) -> bool {
        self.values
            .iter()
            .any(|c| c.heads.iter().any(|h| h.base != 0 || h.width != 0) || c.tail.iter().any(|&v| v != 0))
    }

    /// One row as an owned [`Cost`].
    pub fn get(&self, row: usize) -> Cost {
        Cost {
            symbol: self.symbol(row),
            offset: self.offset(row),
            file: self.file(row),
            line: self.line(row),
            values: self.values(row),
        }
    }

    /// Every row, in order, as owned [`Cost`]s.
    pub fn iter(&self) -> Rows<'_> {
        Rows {
            offsets: ColumnIter::new(self, &self.offsets),
            symbols: ColumnIter::new(self, &self.symbols),
            files: ColumnIter::new(self, &self.files),
            lines: ColumnIter::new(self, &self.lines),
            values: self.values.iter().map(|c| ColumnIter::new(self, c)).collect(),
            left: self.rows,
        }
    }

    /// A reader of rows in any order (see [`Cursor`]).
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            table: self,
            offsets: CachedPack::new(),
            symbols: CachedPack::new(),
            files: CachedPack::new(),
            lines: CachedPack::new(),
            values: self.values.iter().map(|_| CachedPack::new()).collect(),
        }
    }

    /// The offset of every row, in order.
    pub fn offsets(&self) -> impl Iterator<Item = Option<u64>> + '_ {
        ColumnIter::new(self, &self.offsets)
    }

    /// `f(row, offset, function)` for every row that states both, in order: a pack of rows
    /// unpacked at a time, for a pass over every executed address.
    pub fn for_each_offset_and_symbol(&self, mut f: impl FnMut(usize, u64, u32)) {
        let (mut offsets, mut symbols) = ([0u64; PACK], [0u64; PACK]);
        let (mut no_offset, mut no_symbol) = ([0u64; MASK_WORDS], [0u64; MASK_WORDS]);
        // Padding rows state nothing: only the row numbers shift past them.
        let (mut gaps, mut shift) = (self.gaps.iter().peekable(), 0);
        let mut pack = 0;
        while let Some(len) = self.offsets.unpack(pack, &mut offsets, &mut no_offset) {
            // Columns are as long as the table: a pack of one is a pack of the other.
            if self.symbols.unpack(pack, &mut symbols, &mut no_symbol).is_none() {
                no_symbol = [u64::MAX; MASK_WORDS];
            }
            let first = pack * PACK;
            for i in 0..len {
                if !missing_bit(&no_offset, i) && !missing_bit(&no_symbol, i) {
                    while let Some(g) = gaps.next_if(|g| first + i >= g.row + g.padding) {
                        shift = g.padding;
                    }
                    f(first + i - shift, offsets[i], symbols[i] as u32);
                }
            }
            pack += 1;
        }
    }

    /// `f(row, offset, values)` for every row, in order, with its value of each event (0 when
    /// it states none): each column unpacked a pack at a time. Stops at the first error `f`
    /// returns.
    pub fn try_for_each_row_values<E>(
        &self,
        mut f: impl FnMut(usize, Option<u64>, &[u64]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut columns: Vec<_> = (0..self.width()).map(|e| self.event_values(e)).collect();
        let mut row = vec![0u64; columns.len()];
        for (k, offset) in self.offsets().enumerate() {
            for (v, column) in row.iter_mut().zip(&mut columns) {
                *v = column.next().unwrap_or(0);
            }
            f(k, offset, &row)?;
        }
        Ok(())
    }

    /// `f(offset, value)` for every row that states an offset, in order, with its value of
    /// `event` (0 when it states none): a pack of rows unpacked at a time, for a walk over
    /// millions of samples. Stops at the first error `f` returns.
    pub fn try_for_each_offset_and_value<E>(
        &self,
        event: usize,
        mut f: impl FnMut(u64, u64) -> Result<(), E>,
    ) -> Result<(), E> {
        let (mut offsets, mut values) = ([0u64; PACK], [0u64; PACK]);
        let (mut no_offset, mut no_value) = ([0u64; MASK_WORDS], [0u64; MASK_WORDS]);
        let column = self.values.get(event);
        let mut pack = 0;
        while let Some(len) = self.offsets.unpack(pack, &mut offsets, &mut no_offset) {
            // Padding rows state no offset: skipped like any such row.
            if column.and_then(|c| c.unpack(pack, &mut values, &mut no_value)).is_none() {
                no_value = [u64::MAX; MASK_WORDS];
            }
            for i in 0..len {
                if !missing_bit(&no_offset, i) {
                    f(offsets[i], if missing_bit(&no_value, i) { 0 } else { values[i] })?;
                }
            }
            pack += 1;
        }
        Ok(())
    }

    /// The line of every row, in order.
    pub fn lines(&self) -> impl Iterator<Item = Option<u32>> + '_ {
        ColumnIter::new(self, &self.lines).map(|l| l.map(|l| l as u32))
    }

    /// The value of one event in every row, in order (zeros for an event beyond the width).
    pub fn event_values(&self, event: usize) -> impl Iterator<Item = u64> + '_ {
        EventValues { column: self.values.get(event).map(|c| ColumnIter::new(self, c)), zeros: self.rows }
    }

    /// Whether any row states an offset (a line, a function, a file).
    pub fn has_offsets(&self) -> bool {
        self.offsets.any()
    }

    /// Whether any row states a source line.
    pub fn has_lines(&self) -> bool {
        self.lines.any()
    }

    /// Whether any row states its function.
    pub fn has_symbols(&self) -> bool {
        self.symbols.any()
    }

    /// Gives back the room the table holds beyond its rows.
    pub fn shrink_to_fit(&mut self) {
        for c in self.columns_mut() {
            c.heads.shrink_to_fit();
            c.tail.shrink_to_fit();
            c.pages.shrink_to_fit();
            // The last page, and those before packs moved in from another table
            // ([`CostTable::append_mapped`]), have room left.
            for page in c.pages.iter_mut().filter(|p| p.capacity() > p.len()) {
                page.shrink_to_fit();
            }
        }
        self.values.shrink_to_fit();
    }

    /// Heap bytes the table holds.
    pub(crate) fn heap_bytes(&self) -> u64 {
        let columns: usize = [&self.offsets, &self.symbols, &self.files, &self.lines]
            .into_iter()
            .chain(&self.values)
            .map(Column::heap_bytes)
            .sum();
        (columns + self.values.capacity() * std::mem::size_of::<Column>()) as u64
    }

    /// Appends every row of `other`, its functions and files renumbered by `symbol` and `file`
    /// (`file` may drop one): the rows a reader of a later part of a file gathered under its
    /// own numbering.
    ///
    /// The packs of addresses, lines and values are moved in whole, not packed again:
    /// the last pack of this table is first filled up with padding rows ([`Gap`]) when it is
    /// part full, so that `other`'s packs start at a pack boundary. Functions and files are
    /// renumbered a pack at a time.
    pub fn append_mapped(
        &mut self,
        mut other: CostTable,
        symbol: impl Fn(u32) -> u32 + Sync,
        file: impl Fn(FileId) -> Option<FileId> + Sync,
    ) {
        if other.rows == 0 {
            return;
        }
        if other.width() > self.width() {
            self.widen(other.width());
        }
        if !other.gaps.is_empty() {
            // Not a fresh table: its rows one by one.
            for c in other.iter() {
                self.push_parts(c.offset, c.symbol.map(&symbol), c.file.and_then(&file), c.line, &c.values);
            }
            return;
        }
        let tail = self.offsets.tail.len();
        if tail > 0 && tail < PACK {
            let before = self.gaps.last().map_or(0, |g| g.padding);
            self.gaps.push(Gap { row: self.rows, padding: before + PACK - tail });
            for c in self.columns_mut() {
                (tail..PACK).for_each(|_| c.push_missing());
            }
        }
        if tail > 0 {
            self.seal();
        }
        let rows = other.rows;
        self.offsets.take_packs(&mut other.offsets);
        self.lines.take_packs(&mut other.lines);
        for (e, column) in self.values.iter_mut().enumerate() {
            match other.values.get_mut(e) {
                Some(from) => column.take_packs(from),
                // Events the other table never had: zero, as a shorter row is padded.
                None => column.append_zeros(rows),
            }
        }
        // Functions and files are renumbered side by side.
        let (symbols, files) = (&mut self.symbols, &mut self.files);
        rayon::join(
            || symbols.append_from(&other.symbols, &|s| Some(u64::from(symbol(s as u32)))),
            || files.append_from(&other.files, &|f| file(f as FileId).map(u64::from)),
        );
        self.rows += rows;
    }

    /// Appends every row of `other`.
    pub fn append(&mut self, other: &CostTable) {
        self.widen(other.width());
        for c in other {
            self.push_parts(c.offset, c.symbol, c.file, c.line, &c.values);
        }
    }
}

impl Column {
    /// Appends the rows of `other`, each stated value passed through `map` (which may drop
    /// it), a pack of `other` at a time, packing packs as they fill. A run of one value
    /// (a function's rows) is mapped once.
    fn append_from(&mut self, other: &Column, map: &dyn Fn(u64) -> Option<u64>) {
        let (mut rows, mut missing) = ([0u64; PACK], [0u64; MASK_WORDS]);
        let mut pack = 0;
        while let Some(len) = other.unpack(pack, &mut rows, &mut missing) {
            pack += 1;
            let mut i = 0;
            while i < len {
                if self.tail.len() == PACK {
                    self.seal();
                }
                if missing_bit(&missing, i) {
                    self.push_missing();
                    i += 1;
                    continue;
                }
                // The run of one stated value from `i`, within room of the tail.
                let end = len.min(i + PACK - self.tail.len());
                let mut j = i + 1;
                while j < end && rows[j] == rows[i] && !missing_bit(&missing, j) {
                    j += 1;
                }
                self.extend_same(map(rows[i]), j - i);
                i = j;
            }
        }
    }

    /// Moves the packs and the tail of `other` to the end of this column, whose tail must be
    /// empty: no value is unpacked or packed again.
    fn take_packs(&mut self, other: &mut Column) {
        debug_assert!(self.tail.is_empty(), "packs are moved in at a pack boundary");
        let first_page = self.pages.len() as u32;
        self.heads.extend(other.heads.iter().map(|h| Head { page: h.page + first_page, ..*h }));
        self.pages.append(&mut other.pages);
        self.tail = std::mem::take(&mut other.tail);
        self.tail_missing = other.tail_missing;
        self.stated += other.stated;
    }

    /// Appends `rows` zeros, packing packs as they fill.
    fn append_zeros(&mut self, mut rows: usize) {
        while rows > 0 {
            if self.tail.len() == PACK {
                self.seal();
            }
            let n = (PACK - self.tail.len()).min(rows);
            self.extend_same(Some(0), n);
            rows -= n;
        }
    }

    /// This column, emptied, as `packs` packs and `tail` tail rows without a value.
    fn with_none(mut self, packs: usize, tail: usize) -> Column {
        let none = Head { base: 0, page: 0, at: 0, width: 0, presence: Presence::None, runs: 0 };
        self.heads = vec![none; packs];
        self.tail.clear();
        self.tail_missing = [0; MASK_WORDS];
        self.stated = 0;
        (0..tail).for_each(|_| self.push_missing());
        self
    }
}

/// The packs of a run of samples: heads and page of the offsets, then of the values.
type PackedSamples = (Vec<Head>, Vec<u8>, Vec<Head>, Vec<u8>);

/// The head of a pack of samples (every row stated) about to be packed at `at` of `page`.
fn sample_head(values: &[u64; PACK], page: u32, at: usize) -> Head {
    let (lo, hi) = values.iter().fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    Head { base: lo, page, at: at as u32, width: width_for(hi - lo), presence: Presence::All, runs: 0 }
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
                    && padded_eq(&self.values(r), &other.values(r))
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
    type IntoIter = Rows<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
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
    fn samples_take_a_few_bytes_a_row() {
        let mut t = CostTable::new();
        for i in 0..100_000 {
            t.push_parts(Some(4 * i), None, None, None, &[i % 200]);
        }
        assert_eq!((t.len(), t.width()), (100_000, 1));
        assert!(t.has_offsets() && !t.symbols.any() && !t.has_lines() && !t.files.any());
        assert_eq!(t.get(7), cost(Some(28), None, &[7]));
        assert_eq!(t.get(99_999), cost(Some(399_996), None, &[199]));
        // Offsets 4 apart (two bytes in a pack) and counts below 256 (one byte).
        t.shrink_to_fit();
        assert!(t.heap_bytes() < 100_000 * 4, "{} bytes", t.heap_bytes());
        assert_eq!(t.total(0), (0..100_000u64).map(|i| i % 200).sum::<u64>());
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
        wide.add_to_last(&[0, 0, 1]);
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

    /// Rows past several packs, with every column sometimes stated and values of every
    /// magnitude (so packs of every width and every presence).
    fn many_rows() -> impl Strategy<Value = Vec<Cost>> {
        let magnitude =
            prop_oneof![Just(0u64), 0u64..3, 0u64..300, 0u64..70_000, 0u64..1 << 33, any::<u64>()];
        let row = (
            (any::<bool>(), magnitude.clone()),
            (0u8..4, 0u32..5),
            (any::<bool>(), magnitude.clone()),
            proptest::collection::vec(magnitude, 0..3),
        );
        proptest::collection::vec(row, 0..1500).prop_map(|rows| {
            rows.into_iter()
                .enumerate()
                .map(|(i, ((has_offset, offset), (symbols, symbol), (has_line, line), values))| Cost {
                    offset: has_offset.then_some(offset),
                    // Runs with and without a function, as profiles have them.
                    symbol: (symbols != 0 && i % 512 < 300).then_some(symbol),
                    file: (i % 700 < 500).then_some(symbol),
                    line: has_line.then_some(line as u32),
                    values: values.into(),
                })
                .collect()
        })
    }

    #[test]
    fn the_last_row_changes_after_a_pack_is_packed_and_widening_pads_packed_rows() {
        let mut t = CostTable::new();
        for i in 0..PACK as u64 {
            t.push_parts(Some(i), Some(1), None, Some(3), &[i]);
        }
        t.add_to_last(&[5]);
        t.push_parts(Some(1000), None, None, None, &[1]);
        t.add_to_last(&[1, 2]);
        assert_eq!(
            t.get(PACK - 1),
            Cost { symbol: Some(1), ..cost(Some(PACK as u64 - 1), Some(3), &[PACK as u64 + 4, 0]) }
        );
        assert_eq!(t.get(PACK), cost(Some(1000), None, &[2, 2]));
        assert_eq!((t.total(0), t.total(1)), ((0..PACK as u64).sum::<u64>() + 5 + 2, 2));
    }

    #[test]
    fn samples_packed_on_every_core_are_the_rows_pushed() {
        for rows in [0, 5, PACK, 3 * PACK + 7, 4096 * PACK + 300] {
            let offset = |r: usize| (r as u64 / 64) * 320 + (r as u64 % 64) * 4;
            let value = |r: usize| (r as u64 * 2_654_435_761) >> 20 & 0x3ff;
            let packed = CostTable::from_samples_with(rows, |first, offsets, values| {
                for k in 0..offsets.len() {
                    (offsets[k], values[k]) = (offset(first + k), value(first + k));
                }
            });
            let mut pushed = CostTable::new();
            for r in 0..rows {
                pushed.push_parts(Some(offset(r)), None, None, None, &[value(r)]);
            }
            assert_eq!(packed.len(), rows);
            assert!(packed == pushed, "{rows} rows");
            assert_eq!(packed.total(0), pushed.total(0));
            let mut more = packed.clone();
            more.push_parts(Some(1), Some(2), Some(3), Some(4), &[5, 6]);
            assert_eq!(more.get(rows), cost(Some(1), Some(4), &[5, 6]).with_symbol_and_file(2, 3));
        }
    }

    impl Cost {
        fn with_symbol_and_file(mut self, symbol: u32, file: FileId) -> Cost {
            (self.symbol, self.file) = (Some(symbol), Some(file));
            self
        }
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

        /// Rows over several packs come back, by row and in order, with the totals
        /// they add up to; pushed one by one or by columns, the table is the same.
        #[test]
        fn packed_rows_come_back(costs in many_rows()) {
            let table = CostTable::from(costs.clone());
            prop_assert_eq!(table.len(), costs.len());
            let width = table.width();
            for (row, (c, got)) in costs.iter().zip(table.iter()).enumerate() {
                let padded: Vec<u64> = (0..width).map(|e| c.value(e)).collect();
                let want = Cost { values: Values::from_slice(&padded), ..c.clone() };
                prop_assert_eq!(&got, &want, "row {}", row);
                prop_assert_eq!(table.get(row), want);
            }
            for e in 0..width {
                let sum = costs.iter().fold(0u64, |s, c| s.saturating_add(c.value(e)));
                prop_assert_eq!(table.total(e), sum);
                prop_assert!(table.event_values(e).eq(costs.iter().map(|c| c.value(e))));
            }
            // A cursor reads rows in any order: here backwards, then every 37th.
            let mut cursor = table.cursor();
            for row in (0..costs.len()).rev().chain((0..costs.len()).step_by(37)) {
                let c = table.get(row);
                prop_assert_eq!(
                    (cursor.offset(row), cursor.symbol(row), cursor.file(row), cursor.line(row)),
                    (c.offset, c.symbol, c.file, c.line)
                );
                prop_assert!((0..width + 1).all(|e| cursor.value(row, e) == c.value(e)));
            }
            prop_assert!(table.offsets().eq(costs.iter().map(|c| c.offset)));
            prop_assert!(table.lines().eq(costs.iter().map(|c| c.line)));
            let mut stated = Vec::new();
            table.for_each_offset_and_symbol(|row, offset, symbol| stated.push((row, offset, symbol)));
            let want: Vec<(usize, u64, u32)> = costs
                .iter()
                .enumerate()
                .filter_map(|(row, c)| Some((row, c.offset?, c.symbol?)))
                .collect();
            prop_assert_eq!(stated, want);
            prop_assert_eq!(table.any_value(), costs.iter().any(|c| c.values.iter().any(|&v| v != 0)));
        }

    }

    proptest! {
        // Each case builds and compares five tables of up to 1,500 rows every way they read.
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Rows appended from other tables, renumbered, are the rows pushed one by one, and
        /// read back the same every way, wherever the first table's last pack ends, whichever
        /// is wider, and after several appends (a table with padding appended in turn).
        #[test]
        fn appended_rows_are_the_rows_pushed(
            first in many_rows(), second in many_rows(), third in many_rows(), cut in 0usize..600
        ) {
            let first = &first[..cut.min(first.len())];
            let symbol = |s: u32| s * 3 + 1;
            let file = |f: FileId| (!f.is_multiple_of(4)).then_some(f + 10);
            let mut joined: CostTable = first.iter().cloned().collect();
            joined.append_mapped(second.iter().cloned().collect(), symbol, file);
            let mut more: CostTable = third[..third.len() / 2].iter().cloned().collect();
            more.append_mapped(third[third.len() / 2..].iter().cloned().collect(), symbol, file);
            joined.append_mapped(more, symbol, file);
            let mut pushed: CostTable = first.iter().cloned().collect();
            let half = third.len() / 2;
            for (k, c) in second.iter().chain(&third).enumerate() {
                // The second half of the third table was renumbered twice.
                let twice = k >= second.len() + half;
                let s = c.symbol.map(symbol).map(|s| if twice { symbol(s) } else { s });
                let f = c.file.and_then(file).and_then(|f| if twice { file(f) } else { Some(f) });
                pushed.push_parts(c.offset, s, f, c.line, &c.values);
            }
            prop_assert_eq!(joined.len(), pushed.len());
            prop_assert!(joined.iter().eq(pushed.iter()));
            prop_assert!(joined == pushed);
            prop_assert!(joined.offsets().eq(pushed.offsets()));
            prop_assert!(joined.lines().eq(pushed.lines()));
            for e in 0..joined.width() + 1 {
                prop_assert!(joined.event_values(e).eq(pushed.event_values(e)));
                prop_assert_eq!(joined.total(e), pushed.total(e));
            }
            let stated = |t: &CostTable| {
                let mut v = Vec::new();
                t.for_each_offset_and_symbol(|row, offset, symbol| v.push((row, offset, symbol)));
                v
            };
            prop_assert_eq!(stated(&joined), stated(&pushed));
            let rows = |t: &CostTable| {
                let mut v = Vec::new();
                t.try_for_each_row_values(|k, o, values| {
                    v.push((k, o, values.to_vec()));
                    Ok::<(), ()>(())
                })
                .unwrap();
                v
            };
            let mut cursor = pushed.cursor();
            let expected: Vec<_> =
                pushed.iter().enumerate().map(|(k, c)| (k, c.offset, cursor.values(k).to_vec())).collect();
            prop_assert_eq!(rows(&joined), expected.clone());
            prop_assert_eq!(rows(&pushed), expected);
            for e in 0..joined.width() + 1 {
                // Every row with an offset, with its value (0 for none), as the iterators give them.
                let expected: Vec<(u64, u64)> =
                    pushed.offsets().zip(pushed.event_values(e)).filter_map(|(o, v)| Some((o?, v))).collect();
                for t in [&joined, &pushed] {
                    let mut got = Vec::new();
                    t.try_for_each_offset_and_value(e, |o, v| {
                        got.push((o, v));
                        Ok::<(), ()>(())
                    })
                    .unwrap();
                    prop_assert_eq!(&got, &expected);
                    // An error stops the walk where it is returned.
                    let mut calls = 0;
                    let stop = expected.len() / 2;
                    let result = t.try_for_each_offset_and_value(e, |_, _| {
                        calls += 1;
                        if calls > stop { Err(calls) } else { Ok(()) }
                    });
                    let stops = expected.len() > stop;
                    prop_assert_eq!(result, if stops { Err(stop + 1) } else { Ok(()) });
                    prop_assert_eq!(calls, if stops { stop + 1 } else { expected.len() });
                }
            }
            let (mut a, mut b) = (joined.cursor(), pushed.cursor());
            for row in (0..joined.len()).rev().step_by(3) {
                prop_assert_eq!(
                    (a.offset(row), a.symbol(row), a.file(row), a.line(row), a.values(row)),
                    (b.offset(row), b.symbol(row), b.file(row), b.line(row), b.values(row))
                );
            }
            prop_assert_eq!(joined.any_value(), pushed.any_value());
            if let Some(last) = pushed.len().checked_sub(1) {
                joined.add_to_last(&[1, 2, 3, 4]);
                pushed.add_to_last(&[1, 2, 3, 4]);
                prop_assert_eq!(joined.get(last), pushed.get(last));
            }
            let total = |t: &CostTable| (0..t.width()).map(|e| t.total(e)).collect::<Vec<_>>();
            prop_assert_eq!(total(&joined), total(&pushed));
        }
    }
}
