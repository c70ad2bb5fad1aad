//! Calls and jumps: a `calls=`, `jump=` or `jcnd=` line gives counts and the target position;
//! the line after it gives the source position (and for a call the callee's inclusive cost).
//! Together they become a [`Transfer`], an edge once the file is read.

use super::super::parse::{self as parse, next_token, skip_space, subposition, Bad};
use super::{bad, Reader, RESERVE_AT, RESERVE_BYTES_PER_ARC};
use cfghub_analysis::blocks::Transfer;
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{EdgeKind, Site};

/// Which association line: `calls=`, `jump=` or `jcnd=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ArcKind {
    Call,
    Jump,
    Jcnd,
}

/// A `calls=`/`jump=`/`jcnd=` line waiting for its source position line.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) kind: ArcKind,
    pub(super) count: u64,
    pub(super) executed: u64,
    pub(super) target: [u64; 3],
    pub(super) target_image: u32,
    pub(super) target_symbol: u32,
    pub(super) line_no: u64,
}

impl ArcKind {
    /// The key of the lines of this kind, as messages name them.
    pub(super) fn what(self) -> &'static str {
        match self {
            ArcKind::Call => "calls=",
            ArcKind::Jump => "jump=",
            ArcKind::Jcnd => "jcnd=",
        }
    }
}

impl ArcKind {
    /// The kind of edge the line states: calls=, jump= (unconditional), jcnd= (conditional).
    pub(super) fn edge_kind(self) -> EdgeKind {
        match self {
            ArcKind::Call => EdgeKind::Call,
            ArcKind::Jump => EdgeKind::UnconditionalBranch,
            ArcKind::Jcnd => EdgeKind::ConditionalBranch,
        }
    }
}

impl Reader {
    /// Reads the value of a `calls=`/`jump=`/`jcnd=` line (what follows the `=`), with `last`
    /// the positions its relative target positions build on: its counts and target, which then
    /// wait in [`Reader::pending`] for the source position line. The one parser of these lines:
    /// the run loop ([`Reader::run_line`]) hands its association lines here too.
    pub(super) fn association(&mut self, kind: ArcKind, value: &[u8], last: [u64; 3]) -> Result<()> {
        let key = kind.what();
        let Some(symbol) = self.symbol else {
            return Err(Error::input(format!(
                "{key} before any fn= line; expected fn=NAME to say which function it belongs to"
            )));
        };
        let value = skip_space(value);
        // Usually well-formed numbers, read in one pass; else token by token for the error.
        let mut j = 0;
        let scanned = match kind {
            // What Callgrind writes: followed/executed.
            ArcKind::Jcnd => parse::scan_decimal(value, &mut j).and_then(|f| {
                (value.get(j) == Some(&b'/')).then_some(())?;
                j += 1;
                Some((f, parse::scan_number(value, &mut j)?))
            }),
            _ => parse::scan_number(value, &mut j).map(|n| (n, n)),
        };
        let (count, executed, rest) = match scanned {
            Some((count, executed)) => (count, executed, &value[j..]),
            None => {
                let (t, rest) = next_token(value);
                let number = |t: &[u8], what: &str| {
                    parse::number(t).map_err(|e| bad(Bad(format!("{key} {what}: {}", e.0))))
                };
                match kind {
                    ArcKind::Jcnd => match t.iter().position(|&b| b == b'/') {
                        Some(slash) => {
                            let f = number(&t[..slash], "followed count")?;
                            (f, number(&t[slash + 1..], "executed count")?, rest)
                        }
                        None => {
                            // The documented grammar: executed followed.
                            let x = number(t, "executed count")?;
                            let (t2, rest) = next_token(rest);
                            (number(t2, "followed count")?, x, rest)
                        }
                    },
                    _ => {
                        let n = number(t, "count")?;
                        (n, n, rest)
                    }
                }
            }
        };
        let mut target = [0u64; 3];
        let mut j = 0;
        let scanned = (0..self.columns.len().min(3)).all(|c| {
            j = parse::skip_space_at(rest, j);
            parse::scan_subposition(rest, &mut j, last[c]).map(|v| target[c] = v).is_some()
        });
        let mut rest = if scanned { &[][..] } else { rest };
        for (c, slot) in target.iter_mut().enumerate().take(if scanned { 0 } else { self.columns.len() }) {
            let (t, r) = next_token(rest);
            if t.is_empty() {
                return Err(Error::input(format!(
                    "{key} target has {c} position(s); expected {} ({})",
                    self.columns.len(),
                    self.describe_columns()
                )));
            }
            *slot = subposition(t, last[c]).map_err(bad)?;
            rest = r;
        }
        let Some((target_image, target_symbol)) = self.association_target(kind, symbol) else {
            return Err(Error::input(
                "calls= without a cfn= line before it; expected cfn=NAME naming the called function",
            ));
        };
        self.note_jcnd(kind, count, executed);
        self.pending = Some(Pending {
            kind,
            count,
            executed,
            target,
            target_image,
            target_symbol,
            line_no: self.line_no,
        });
        Ok(())
    }

    /// The image and symbol an association of `kind` in function `symbol` goes to: for calls the
    /// `cfn=` function in the `cob=` object, for jumps the `jfn=` function or `symbol` itself.
    /// `None` for a call without a `cfn=`.
    pub(super) fn association_target(&mut self, kind: ArcKind, symbol: u32) -> Option<(u32, u32)> {
        Some(match kind {
            ArcKind::Call => {
                let cfn = self.cfn?;
                let ob = self.cob.unwrap_or(self.ob);
                // Valgrind writes cfi= when the callee's file differs from the current one
                // (which fi=/fe= change).
                let file = self.cfi.unwrap_or(self.file);
                let image = self.image_of(ob);
                (image, self.symbol_of(image, cfn, file))
            }
            _ => {
                let image = self.image.unwrap_or(0);
                let symbol = match self.jfn {
                    Some(name) => {
                        // jfi= names the target position's file, not always its function's:
                        // a function of that name and file, else any of that name.
                        let file = self.jfi.unwrap_or(self.file);
                        let p = self.process();
                        let state = &self.states[p];
                        match state.symbols.get(&(image, name, file)) {
                            Some(&s) => s,
                            None => match state.by_name.get(&(image, name)) {
                                Some(&s) => s,
                                None => self.symbol_of(image, name, file),
                            },
                        }
                    }
                    None => symbol,
                };
                (image, symbol)
            }
        })
    }

    /// Counts a `jcnd=` line whose followed count exceeds its executed count.
    pub(super) fn note_jcnd(&mut self, kind: ArcKind, count: u64, executed: u64) {
        if kind == ArcKind::Jcnd && count > executed {
            // Valgrind writes such counts when collection was toggled in the middle of a run.
            self.jcnd_over += 1;
            if self.jcnd_over == 1 {
                self.jcnd_over_line = self.line_no;
            }
        }
    }

    /// What keeps a call's or jump's positions out of the model's [`Site`]: an address or a
    /// line past the largest it holds (the values above are how it says "unknown").
    pub(super) fn site_error(
        &self,
        p: &Pending,
        instr: Option<u64>,
        line: Option<u32>,
        tgt_line: Option<u32>,
    ) -> Option<Error> {
        let tgt_addr = self.instr_col.map(|c| p.target[c]);
        if let Some(a) = [instr, tgt_addr].into_iter().flatten().find(|&a| a > Site::MAX_OFFSET) {
            return Some(Error::input(format!(
                "address {a:#x} of a call or jump is too large; expected at most {:#x}",
                Site::MAX_OFFSET
            )));
        }
        let l = [line, tgt_line].into_iter().flatten().find(|&l| l > Site::MAX_LINE)?;
        Some(Error::input(format!(
            "line number {l} of a call or jump is too large; expected at most {}",
            Site::MAX_LINE
        )))
    }

    /// Records the association `p` now that its source line gave its position (`instr`,
    /// `line_no`) in `symbol` of `image`, and for a call the callee's inclusive cost `values`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_arc(
        &mut self,
        p: Pending,
        image: u32,
        symbol: u32,
        instr: Option<u64>,
        line_no: Option<u32>,
        tgt_line: Option<u32>,
        values: &[u64],
    ) {
        let proc = self.process();
        if self.states[proc].arcs.len() == RESERVE_AT {
            let left = self.lines_left(RESERVE_BYTES_PER_ARC);
            self.states[proc].arcs.reserve(left);
        }
        let state = &mut self.states[proc];
        let incl_start = state.inclusive.len();
        if p.kind == ArcKind::Call {
            // One to four values: pushed, not copied by a call to memcpy.
            for &v in values {
                state.inclusive.push(v);
            }
        }
        state.arcs.push(Transfer {
            kind: p.kind.edge_kind(),
            has_addr: self.instr_col.is_some(),
            has_line: line_no.is_some(),
            thread: self.thread,
            incl_len: (state.inclusive.len() - incl_start) as u16,
            src_image: image,
            src_symbol: symbol,
            src_line: line_no.unwrap_or(0),
            tgt_image: p.target_image,
            tgt_symbol: p.target_symbol,
            tgt_line: tgt_line.unwrap_or(0),
            src_addr: instr.unwrap_or(0),
            tgt_addr: self.instr_col.map_or(0, |c| p.target[c]),
            count: p.count,
            detail: if p.kind == ArcKind::Call { incl_start as u64 } else { p.executed },
        });
        if p.kind == ArcKind::Call {
            self.cob = None;
            self.cfi = None;
        } else {
            self.jfi = None;
            self.jfn = None;
        }
    }
}
