//! Runs: the lines of a function's body (cost lines, calls and jumps, `cfn=(id)`) read in one
//! loop straight from the input's buffer, without the dispatch of [`Reader::line`] per line.
//! The same grammar as [`super::costs`] and [`super::arcs`], for nine lines in ten of a large
//! file; any line the loop cannot read in one pass is left to [`Reader::line`].
//!
//! What it saves, measured on the whole command (`cfghub convert` of the 21 MB Valgrind
//! profile of `cc1plus` to Callgrind, a build whose runs could be turned off, interleaved
//! rounds on an idle 2-core machine, medians of 7): on one core 0.73 s wall (0.71 s of
//! processor time) against 1.06 s (1.03 s) with every line read by [`Reader::line`], 31% of
//! the command; on two, 0.62 s against 0.81 s wall.

use super::super::parse::{self as parse, trim_end};
use super::{starts_cost_line, ArcKind, Pending, Reader, RESERVE_AT};

/// Whether a line starting with `b` may be one that [`Reader::run`] reads: a cost line, an
/// association or a `cfn=`.
#[inline]
pub(super) fn starts_run_line(b: u8) -> bool {
    starts_cost_line(b) || b == b'c' || b == b'j'
}

/// Most events [`Reader::run`] reads; files with more take the line-by-line way.
pub(super) const RUN_EVENTS: usize = 4;
/// Cost rows a run gathers before it appends them to the image's cost table.
pub(super) const RUN_ROWS: usize = 512;

/// The cost rows of a run not yet appended to the cost table, by column: offsets and lines (0
/// where the file has no such position) and one value per event for each of the `len` rows.
pub(super) struct RunRows {
    len: usize,
    offsets: [u64; RUN_ROWS],
    lines: [u32; RUN_ROWS],
    values: [u64; RUN_ROWS * RUN_EVENTS],
}

impl RunRows {
    pub(super) fn new() -> Box<RunRows> {
        Box::new(RunRows {
            len: 0,
            offsets: [0; RUN_ROWS],
            lines: [0; RUN_ROWS],
            values: [0; RUN_ROWS * RUN_EVENTS],
        })
    }
}

/// Scans the cost line at `buf[i..]`: `NCOLS` positions (relative to `last`), then at most
/// `NEV` values, one per event in order. The positions and the index past the line feed; `None`
/// for a line that [`Reader::line`] must read.
#[inline(always)]
pub(super) fn scan_run_line<const NCOLS: usize, const NEV: usize>(
    buf: &[u8],
    i: usize,
    last: &[u64; 3],
    values: &mut [u64; NEV],
) -> Option<([u64; 3], usize)> {
    let mut j = i;
    let mut pos = *last;
    // Unrolled, so that the positions stay in registers.
    pos[0] = parse::scan_subposition(buf, &mut j, pos[0])?;
    if NCOLS > 1 {
        j = parse::skip_space_at(buf, j);
        pos[1] = parse::scan_subposition(buf, &mut j, pos[1])?;
    }
    if NCOLS > 2 {
        j = parse::skip_space_at(buf, j);
        pos[2] = parse::scan_subposition(buf, &mut j, pos[2])?;
    }
    for v in values.iter_mut() {
        j = parse::skip_space_at(buf, j);
        if let Some(end) = line_end(buf, j) {
            return Some((pos, end));
        }
        *v = parse::scan_number(buf, &mut j)?;
    }
    line_end(buf, parse::skip_space_at(buf, j)).map(|end| (pos, end))
}

/// Position `c` (0, 1 or 2) of `pos`, picked without indexing (so that the positions can stay
/// in registers).
#[inline(always)]
pub(super) fn pick(pos: &[u64; 3], c: usize) -> u64 {
    match c {
        0 => pos[0],
        1 => pos[1],
        _ => pos[2],
    }
}

/// The index past the line end at `buf[j..]` (a line feed, or a carriage return and a line
/// feed), if one is there.
#[inline(always)]
pub(super) fn line_end(buf: &[u8], j: usize) -> Option<usize> {
    match buf.get(j) {
        Some(b'\n') => Some(j + 1),
        Some(b'\r') if buf.get(j + 1) == Some(&b'\n') => Some(j + 2),
        _ => None,
    }
}

impl Reader {
    /// Whether [`Reader::run`] may read the next lines: a function is set, there are one to
    /// three positions and few events, and the cost lines give every event in order (as all but
    /// the parts of a file that name fewer events or another order do).
    #[inline]
    pub(super) fn run_allowed(&self) -> bool {
        self.symbol.is_some()
            && !self.event_map.is_empty()
            && self.event_map.len() <= RUN_EVENTS
            && self.event_map.len() == self.profile.events.len()
            && self.event_map.iter().enumerate().all(|(k, &e)| k == e)
            && (1..=3).contains(&self.columns.len())
    }

    /// Reads the lines at the start of `buf` that make up the body of a function, as
    /// [`Reader::line`] would one by one, and returns the bytes they took (whole lines only):
    /// cost lines, `calls=`/`jump=`/`jcnd=` lines with their source position lines, and
    /// `cfn=(id)` lines. Stops before the first line that is anything else, or that it cannot
    /// read in one pass (a malformed number, a line split by the end of `buf`...): [`Reader::line`]
    /// reads that one and says what is wrong with it, if anything.
    pub(super) fn run(&mut self, buf: &[u8]) -> usize {
        macro_rules! sized {
            ($($c:literal $e:literal),*) => {
                match (self.columns.len(), self.profile.events.len()) {
                    $(($c, $e) => self.run_sized::<$c, $e>(buf),)*
                    _ => 0,
                }
            };
        }
        sized!(1 1, 1 2, 1 3, 1 4, 2 1, 2 2, 2 3, 2 4, 3 1, 3 2, 3 3, 3 4)
    }

    /// [`Reader::run`] for `NCOLS` positions and `NEV` events: the loop over cost lines, kept
    /// small; the other lines of a body are read by [`Reader::run_line`].
    #[inline(never)]
    pub(super) fn run_sized<const NCOLS: usize, const NEV: usize>(&mut self, buf: &[u8]) -> usize {
        let Some(symbol) = self.symbol else { return 0 };
        let (instr_col, line_col) = (self.instr_col, self.line_col);
        let (ic, lc) = (instr_col.unwrap_or(0), line_col.unwrap_or(0));
        let mut rows = self.run_rows.take().unwrap_or_else(RunRows::new);
        let mut pending = self.pending.take();
        let mut last = self.last;
        let mut totals = [0u64; NEV];
        let mut lines = 0u64;
        let mut i = 0;
        while let Some(&first) = buf.get(i) {
            if !starts_cost_line(first) {
                if pending.is_some() {
                    // Only a position line may follow an association.
                    break;
                }
                self.line_no += lines;
                lines = 0;
                match self.run_line(buf, i, &last, &mut pending) {
                    Some(end) => {
                        i = end;
                        continue;
                    }
                    None => break,
                }
            }
            let mut values = [0u64; NEV];
            let Some((pos, end)) = scan_run_line::<NCOLS, NEV>(buf, i, &last, &mut values) else { break };
            let line = pick(&pos, lc);
            if line_col.is_some() && line > u64::from(u32::MAX) {
                break;
            }
            let line_no = line_col.map(|_| line as u32);
            let instr = instr_col.map(|_| pick(&pos, ic));
            if pending.is_some() {
                if !self.run_arc(&mut pending, symbol, instr, line_no, &values) {
                    break;
                }
            } else {
                if rows.len >= RUN_ROWS {
                    self.append_rows(&mut rows, symbol, NEV);
                }
                let n = rows.len;
                rows.offsets[n] = instr.unwrap_or(0);
                rows.lines[n] = line_no.unwrap_or(0);
                rows.values[n * NEV..(n + 1) * NEV].copy_from_slice(&values);
                rows.len = n + 1;
                for (t, v) in totals.iter_mut().zip(values) {
                    *t = t.wrapping_add(v);
                }
            }
            last = pos;
            lines += 1;
            i = end;
        }
        self.line_no += lines;
        self.append_rows(&mut rows, symbol, NEV);
        self.run_rows = Some(rows);
        self.pending = pending;
        self.last = last;
        for (t, add) in self.part_totals.iter_mut().zip(totals) {
            *t = t.wrapping_add(add);
        }
        i
    }

    /// Records the association `pending` in a run, now that its source line gave its position
    /// (`instr`, `line_no`) and for a call the callee's inclusive cost `values`. `false`, with
    /// nothing done, when the line parser must read the line.
    #[inline(never)]
    pub(super) fn run_arc(
        &mut self,
        pending: &mut Option<Pending>,
        symbol: u32,
        instr: Option<u64>,
        line_no: Option<u32>,
        values: &[u64],
    ) -> bool {
        let Some(p) = pending.as_ref() else { return false };
        let tgt_line = match self.line_col.map(|c| u32::try_from(p.target[c])) {
            Some(Ok(l)) => Some(l),
            Some(Err(_)) => return false,
            None => None,
        };
        if self.site_error(p, instr, line_no, tgt_line).is_some() {
            return false;
        }
        let Some(p) = pending.take() else { return false };
        let image = self.image.unwrap_or(0);
        self.push_arc(p, image, symbol, instr, line_no, tgt_line, values);
        true
    }

    /// Reads the line at `buf[i..]` in a run, when it is a `cfn=(id)` line or an association
    /// (which then waits in `pending` for its source line), with `last` the current positions.
    /// The index past the line; `None`, with nothing done, for any other line.
    #[inline(never)]
    pub(super) fn run_line(
        &mut self,
        buf: &[u8],
        i: usize,
        last: &[u64; 3],
        pending: &mut Option<Pending>,
    ) -> Option<usize> {
        let line = &buf[i..];
        if line.starts_with(b"cfn=(") {
            // A compressed function name referred to by its id.
            let mut j = i + 5;
            let id = parse::scan_decimal(buf, &mut j)?;
            if buf.get(j) != Some(&b')') {
                return None;
            }
            let end = line_end(buf, parse::skip_space_at(buf, j + 1))?;
            self.cfn = Some(self.functions.get(id)?);
            self.line_no += 1;
            return Some(end);
        }
        let (kind, key) = if line.starts_with(b"calls=") {
            (ArcKind::Call, 6)
        } else if line.starts_with(b"jump=") {
            (ArcKind::Jump, 5)
        } else if line.starts_with(b"jcnd=") {
            (ArcKind::Jcnd, 5)
        } else {
            return None;
        };
        // The line's end: a line the buffer holds only part of is left to [`Reader::line`].
        let end = i + memchr::memchr(b'\n', line)?;
        self.line_no += 1;
        match self.association(kind, trim_end(&buf[i + key..end]), *last) {
            Ok(()) => {
                *pending = self.pending.take();
                Some(end + 1)
            }
            Err(_) => {
                // Nothing was recorded: the line parser reads the line again and reports it.
                self.line_no -= 1;
                None
            }
        }
    }

    /// Appends the cost rows a run gathered (`width` values each) to the current image's cost
    /// table, and empties `rows`.
    pub(super) fn append_rows(&mut self, rows: &mut RunRows, symbol: u32, width: usize) {
        let n = rows.len;
        if n == 0 {
            return;
        }
        let proc = self.process.unwrap_or(0);
        let image = self.image.unwrap_or(0) as usize;
        let len = self.profile.processes[proc].images[image].costs.len();
        if len <= RESERVE_AT && len + n > RESERVE_AT {
            let left = self.cost_rows_left();
            self.profile.processes[proc].images[image].costs.reserve(left);
        }
        let costs = &mut self.profile.processes[proc].images[image].costs;
        costs.extend_columns(
            n,
            self.instr_col.map(|_| &rows.offsets[..n]),
            Some(symbol),
            self.file,
            self.line_col.map(|_| &rows.lines[..n]),
            &rows.values[..n * width],
        );
        rows.len = 0;
    }
}
