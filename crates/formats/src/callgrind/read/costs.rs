//! Cost lines, one at a time: positions (absolute, `+N`/`-N` relative to the line before, or
//! `*` for the same) and one value per event, as rows of the image's cost table. A well-formed
//! line is scanned once; any other is parsed token by token to say what is wrong with it.

use super::super::parse::{self as parse, next_token, subposition};
use super::{bad, Reader, COST_ROW_BYTES, RESERVE_AT, RESERVE_BYTES_PER_COST, RESERVE_PER_INPUT_BYTE};
use cfghub_model::error::{Error, Result};

/// Whether a line starting with `b` is a cost line (its first position).
#[inline]
pub(super) fn starts_cost_line(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'+' | b'-' | b'*')
}

impl Reader {
    /// The common case of a cost line in one pass over its bytes: positions and values that are
    /// well-formed numbers. `None` for anything else; [`Reader::parse_cost_line`] then says
    /// what is wrong.
    ///
    /// The positions go to `self.last` in place (as single words: a copy of a freshly written
    /// array stalls the processor); on `None` they are partly overwritten.
    #[inline]
    pub(super) fn scan_cost_line(&mut self, line: &[u8], values: &mut [u64]) -> Option<()> {
        let mut i = 0;
        for c in 0..self.columns.len().min(3) {
            i = parse::skip_space_at(line, i);
            self.last[c] = parse::scan_subposition(line, &mut i, self.last[c])?;
        }
        for &idx in &self.event_map {
            i = parse::skip_space_at(line, i);
            if i == line.len() {
                return Some(());
            }
            values[idx] = parse::scan_number(line, &mut i)?;
        }
        (parse::skip_space_at(line, i) == line.len()).then_some(())
    }

    /// Parses a cost line token by token, with an error naming what is wrong.
    #[cold]
    pub(super) fn parse_cost_line(&mut self, line: &[u8], values: &mut [u64]) -> Result<[u64; 3]> {
        let mut pos = [0u64; 3];
        let mut rest = line;
        let npos = self.columns.len();
        for (c, slot) in pos.iter_mut().enumerate().take(npos) {
            let (t, r) = next_token(rest);
            if t.is_empty() {
                return Err(Error::input(format!(
                    "cost line has {c} position(s); expected {npos} ({}) before the costs",
                    self.describe_columns()
                )));
            }
            *slot = subposition(t, self.last[c]).map_err(bad)?;
            rest = r;
        }
        let mut col = 0;
        while !rest.is_empty() {
            let (t, r) = next_token(rest);
            if t == b"*" {
                // Written by some converters where a cost is expected. KCachegrind reads the
                // values before it and none from it on; so does cfghub, with a warning.
                self.star_costs += 1;
                if self.star_costs == 1 {
                    self.star_line = self.line_no;
                }
                break;
            }
            let Some(&idx) = self.event_map.get(col) else {
                return Err(Error::input(format!(
                    "cost line has more than {} cost(s); expected at most one per event ({})",
                    self.event_map.len(),
                    self.event_names()
                )));
            };
            values[idx] = parse::number(t)
                .map_err(|e| Error::input(format!("cost of {}: {}", self.profile.events[idx].name, e.0)))?;
            col += 1;
            rest = r;
        }
        Ok(pos)
    }

    /// At most how many more lines of `bytes_per_line` bytes the input holds: what a table that
    /// has grown large reserves at once, so that it neither grows by doubling (copying itself
    /// each time) nor outgrows the input.
    pub(super) fn lines_left(&self, bytes_per_line: u64) -> usize {
        (self.input_size.saturating_sub(self.consumed) / bytes_per_line).min(1 << 28) as usize
    }

    /// How many more cost rows a large cost table reserves: as many lines as the input can
    /// still hold, within [`RESERVE_PER_INPUT_BYTE`] of memory per input byte.
    pub(super) fn cost_rows_left(&self) -> usize {
        let row = COST_ROW_BYTES + 8 * self.profile.events.len() as u64;
        let memory = self.input_size.saturating_sub(self.consumed).saturating_mul(RESERVE_PER_INPUT_BYTE);
        self.lines_left(RESERVE_BYTES_PER_COST).min((memory / row) as usize)
    }

    /// Parses positions and costs of a cost line (or an association's source line).
    #[inline]
    pub(super) fn cost_line(&mut self, line: &[u8]) -> Result<()> {
        if !self.events_seen && self.event_map.is_empty() {
            return Err(Error::input("cost line before the events: header; expected 'events: NAMES' first"));
        }
        // One buffer for the values of every line: no allocation or copy per cost line.
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        values.resize(self.profile.events.len(), 0);
        let bases = self.last;
        let done = match self.scan_cost_line(line, &mut values) {
            Some(()) => self.cost_at(&values),
            None => {
                self.last = bases;
                self.parse_cost_line(line, &mut values).and_then(|pos| {
                    self.last = pos;
                    self.cost_at(&values)
                })
            }
        };
        self.values = values;
        done
    }

    /// Records a cost line (or an association's source line) at positions `pos`.
    #[inline]
    pub(super) fn cost_at(&mut self, values: &[u64]) -> Result<()> {
        let instr = self.instr_col.map(|c| self.last[c]);
        let line_no = self.line_col.map(|c| line_number(self.last[c])).transpose()?;
        if let Some(p) = self.pending.take() {
            let Some(symbol) = self.symbol else {
                return Err(Error::input("association without a function; expected fn=NAME before it"));
            };
            let image = self.image.unwrap_or(0);
            let tgt_line = self.line_col.map(|c| line_number(p.target[c])).transpose()?;
            if let Some(e) = self.site_error(&p, instr, line_no, tgt_line) {
                return Err(e);
            }
            self.push_arc(p, image, symbol, instr, line_no, tgt_line, values);
            return Ok(());
        }
        let Some(symbol) = self.symbol else {
            return Err(Error::input(
                "cost line before any fn= line; expected fn=NAME to say which function the cost belongs to",
            ));
        };
        for (t, &idx) in self.part_totals.iter_mut().zip(&self.event_map) {
            *t = t.wrapping_add(values[idx]);
        }
        let proc = self.process.unwrap_or(0);
        let image = self.image.unwrap_or(0);
        let left = self.cost_rows_left();
        let costs = &mut self.profile.processes[proc].images[image as usize].costs;
        if costs.len() == RESERVE_AT {
            costs.reserve(left);
        }
        costs.push_parts(instr, Some(symbol), self.file, line_no, values);
        Ok(())
    }

    /// The events the cost lines give, in their order (for messages).
    pub(super) fn event_names(&self) -> String {
        let names: Vec<&str> = self.event_map.iter().map(|&i| self.profile.events[i].name.as_str()).collect();
        names.join(" ")
    }
}

/// A line position as the model keeps it (32 bits).
fn line_number(value: u64) -> Result<u32> {
    u32::try_from(value)
        .map_err(|_| Error::input(format!("line number {value} is too large; expected at most {}", u32::MAX)))
}
