//! Header lines, `key: value`: the positions and events of the cost lines, the part, process
//! and thread they belong to, the `totals:` check, and what the model keeps as metadata
//! (`version:`, `creator:`, `cmd:`, `desc:` and any other key).

use super::super::parse::{self as parse, next_token, skip_space, trim_end};
use super::{Reader, MAX_EVENTS, MAX_THREADS};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::Event;

/// A position a cost line starts with, as `positions:` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Column {
    Instr,
    Bb,
    Line,
}

/// Warns when the costs `stated` by a `totals:` line at `line_no` differ from the sum of the
/// part's cost lines (missing values are zeros).
pub(super) fn check_totals(
    mut stated: Vec<u64>,
    mut computed: Vec<u64>,
    line_no: u64,
    findings: &mut Findings,
) {
    stated.resize(computed.len().max(stated.len()), 0);
    computed.resize(stated.len(), 0);
    if stated != computed {
        findings.warn(
            Some(cfghub_model::error::Place::Line(line_no)),
            format!("totals: {stated:?} differ from the sum of the cost lines {computed:?}"),
        );
    }
}

impl Reader {
    /// The positions in effect, as `positions:` names them (for messages).
    pub(super) fn describe_columns(&self) -> String {
        let names: Vec<&str> = self
            .columns
            .iter()
            .map(|c| match c {
                Column::Instr => "instr",
                Column::Bb => "bb",
                Column::Line => "line",
            })
            .collect();
        names.join(" ")
    }

    /// Starts a new part at the first header of a part after its `events:` line: positions
    /// count from zero again, and so do the part's totals.
    pub(super) fn new_part_if_needed(&mut self) {
        if self.events_seen {
            self.events_seen = false;
            self.last = [0; 3];
            self.part_totals.clear();
        }
    }

    /// Reads the header line `key: value` (`value` without its surrounding blanks).
    pub(super) fn header(&mut self, key: &[u8], value: &[u8], findings: &mut Findings) -> Result<()> {
        if self.cont.is_some() && !matches!(key, b"totals" | b"summary") {
            // A part read on its own holds function bodies only; one with a header is read
            // again where it stands (the error is not reported).
            return Err(Error::input("a header line inside a part"));
        }
        let text = || String::from_utf8_lossy(value).into_owned();
        let num = |what: &str| parse::number(value).map_err(|e| Error::input(format!("{what}: {}", e.0)));
        match key {
            b"version" => {
                let v = num("version:")?;
                if v > 1 {
                    findings.warn(
                        Some(cfghub_model::error::Place::Line(self.line_no)),
                        format!("format version {v}: cfghub knows version 1 and reads on"),
                    );
                }
                self.profile.meta.format_version = Some((v, 0));
            }
            b"creator" => self.profile.meta.creator = Some(text()),
            b"cmd" => self.profile.meta.command = Some(text()),
            b"pid" => {
                self.new_part_if_needed();
                let pid = num("pid:")?;
                if self.pid != Some(pid) {
                    self.pid = Some(pid);
                    self.process = None;
                    self.image = None;
                    self.symbol = None;
                }
            }
            b"part" => {
                self.new_part_if_needed();
                num("part:")?;
            }
            b"thread" => {
                self.new_part_if_needed();
                let t = num("thread:")?;
                if t > MAX_THREADS {
                    return Err(Error::input(format!(
                        "thread: {t} is too large; expected a thread number up to {MAX_THREADS}"
                    )));
                }
                self.thread = t.saturating_sub(1) as u16;
            }
            b"positions" => self.positions(value)?,
            b"event" => self.event(value)?,
            b"events" => self.events(value)?,
            b"summary" => {}
            b"totals" => self.totals(value, findings)?,
            b"desc" => self.profile.meta.headers.push(("desc".into(), text())),
            _ => self.profile.meta.headers.push((String::from_utf8_lossy(key).into_owned(), text())),
        }
        Ok(())
    }

    /// `positions: instr bb line` (any of them, in any order; `addr` is `instr`): the
    /// positions each cost line starts with, from here to the next `positions:`.
    fn positions(&mut self, value: &[u8]) -> Result<()> {
        self.new_part_if_needed();
        let mut columns = Vec::new();
        let mut rest = value;
        while !rest.is_empty() {
            let (t, r) = next_token(rest);
            let c = match t {
                b"instr" | b"addr" => Column::Instr,
                b"bb" => Column::Bb,
                b"line" => Column::Line,
                _ => {
                    return Err(Error::input(format!(
                        "positions: '{}' is not a position; expected instr, bb and/or line",
                        String::from_utf8_lossy(t)
                    )))
                }
            };
            if columns.contains(&c) || columns.len() == 3 {
                return Err(Error::input("positions: names a position twice"));
            }
            columns.push(c);
            rest = r;
        }
        self.set_columns(columns);
        Ok(())
    }

    /// `events: NAME...`: the events whose costs the cost lines give, in their order. An event
    /// not named before joins the profile's events (after a part with costs, the rows read so
    /// far are widened at the end).
    fn events(&mut self, value: &[u8]) -> Result<()> {
        self.new_part_if_needed();
        let mut map = Vec::new();
        let mut rest = value;
        while !rest.is_empty() {
            let (t, r) = next_token(rest);
            let name = String::from_utf8_lossy(t);
            let idx = match self.profile.event_index(&name) {
                Some(i) => i,
                None => {
                    if self.profile.processes.iter().any(|p| p.images.iter().any(|i| !i.costs.is_empty()))
                        || self.states.iter().any(|s| !s.arcs.is_empty())
                    {
                        self.events_grew = true;
                    }
                    self.add_event(Event::new(name.into_owned()))?
                }
            };
            if map.contains(&idx) {
                return Err(Error::input(format!("events: names '{}' twice", String::from_utf8_lossy(t))));
            }
            map.push(idx);
            rest = r;
        }
        if map.is_empty() {
            return Err(Error::input("events: names no event; expected at least one event name"));
        }
        self.event_map = map;
        self.events_seen = true;
        self.part_totals = vec![0; self.event_map.len()];
        if self.columns.is_empty() {
            self.set_columns(vec![Column::Line]);
        }
        Ok(())
    }

    /// `totals: COST...`: checked against the sum of the part's cost lines (a warning where
    /// they differ).
    fn totals(&mut self, value: &[u8], findings: &mut Findings) -> Result<()> {
        let mut rest = value;
        let mut stated = Vec::new();
        while !rest.is_empty() {
            let (t, r) = next_token(rest);
            stated.push(parse::number(t).map_err(|e| Error::input(format!("totals: {}", e.0)))?);
            rest = r;
        }
        match &mut self.cont {
            // The part began before this reader's start: checked when parts are joined.
            Some(c) => c.totals.push((stated, self.part_totals.clone(), self.line_no)),
            None => check_totals(stated, self.part_totals.clone(), self.line_no, findings),
        }
        Ok(())
    }

    /// The positions of the cost lines from here on.
    pub(super) fn set_columns(&mut self, columns: Vec<Column>) {
        self.instr_col = columns.iter().position(|&c| c == Column::Instr);
        self.line_col = columns.iter().position(|&c| c == Column::Line);
        if self.instr_col.is_none() {
            self.part_without_instr = true;
        }
        self.columns = columns;
    }

    /// `event: Name [= expression] [: long name]`.
    pub(super) fn event(&mut self, value: &[u8]) -> Result<()> {
        let name_len =
            value.iter().take_while(|b| !(parse::is_space(**b) || **b == b'=' || **b == b':')).count();
        if name_len == 0 {
            return Err(Error::input("event: without a name; expected 'event: NAME [: long name]'"));
        }
        let name = String::from_utf8_lossy(&value[..name_len]).into_owned();
        let rest = skip_space(&value[name_len..]);
        if rest.first() == Some(&b'=') {
            // A derived event: not a column; kept as a header for a Callgrind writer.
            self.profile.meta.headers.push(("event".into(), String::from_utf8_lossy(value).into_owned()));
            return Ok(());
        }
        let long = match rest.first() {
            Some(b':') => Some(String::from_utf8_lossy(trim_end(skip_space(&rest[1..]))).into_owned()),
            _ => None,
        };
        let idx = match self.profile.event_index(&name) {
            Some(i) => i,
            None => {
                if self.profile.processes.iter().any(|p| p.images.iter().any(|i| !i.costs.is_empty())) {
                    self.events_grew = true;
                }
                self.add_event(Event::new(name))?
            }
        };
        if long.as_deref().is_some_and(|l| !l.is_empty()) {
            self.profile.events[idx].description = long;
        }
        Ok(())
    }

    /// Names one more event; its index.
    pub(super) fn add_event(&mut self, event: Event) -> Result<usize> {
        if self.profile.events.len() >= MAX_EVENTS {
            return Err(Error::input(format!(
                "event '{}' is one too many; a profile names at most {MAX_EVENTS} events",
                event.name
            )));
        }
        self.profile.events.push(event);
        Ok(self.profile.events.len() - 1)
    }
}
