//! Callgrind reader: one pass over the lines into costs and raw associations, then the
//! associations become edges.
//!
//! Lines are parsed where they lie in the input's buffer, without a `String` or an allocation
//! per line. Cost lines, nine in ten of a large file, come in runs under one `fn=`, broken only
//! by the calls and jumps of the function: such a run is read in one loop ([`Reader::run`]) that
//! scans each number once, gathers the cost rows and appends them to the image's cost columns
//! a few hundred at a time; any line it cannot read that way goes through [`Reader::line`],
//! which also names what is wrong with a bad line.
//!
//! What the reader fills (see docs/formats/callgrind.md for the whole table):
//! - `ob=` object -> [`Image`] (keyed by its name; the unnamed object `ob=` or no `ob=` at all is
//!   an image without a file). Addresses in a Callgrind file are relative to the object, so
//!   `load_addr` is 0 and offsets are the file's addresses.
//! - `fn=` function -> [`Symbol`] of the current object (recursion and caller-context names such
//!   as `fib'2` stay names of their own); its `file` is the `fl=` in effect where it first appears.
//! - cost line -> a row of [`cfghub_model::ir::CostTable`] with the function, address, `fi=`/`fe=`/`fl=` file, line and one value
//!   per event, in file order (repeated positions are not merged).
//! - `calls=` -> a `CALL` edge with its count and the callee's inclusive cost; `jump=` ->
//!   `UNCONDITIONAL_BRANCH`; `jcnd=followed/executed` -> `CONDITIONAL_BRANCH` (followed) plus a
//!   `FALL_THROUGH` (executed - followed).
//!
//! Edges are between functions ([`cfghub_model::ir::NodeRef::Symbol`], with [`cfghub_model::ir::Site`]
//! positions) unless the file has instruction addresses and jumps (`--dump-instr=yes
//! --collect-jumps=yes`): then the instructions are grouped into basic blocks and the edges join
//! blocks (see [`cfghub_analysis::blocks`]).
//!
//! The reader's methods are laid out by part of the grammar:
//! - this file: the [`Reader`]'s state, the loop over the input's lines ([`read_into`]), the
//!   dispatch of one line by its first bytes ([`Reader::line`]) and the end of the file
//!   ([`Reader::finish`]: warnings, then the edges);
//! - [`header`]: `key: value` lines (`events:`, `positions:`, `pid:`/`part:`/`thread:`,
//!   `totals:` and the rest);
//! - [`names`]: position lines that name an object, file or function (`ob=`, `fl=`/`fi=`/`fe=`,
//!   `fn=`, `cob=`/`cfi=`/`cfn=`, `jfi=`/`jfn=`) and the compressed-name tables behind them;
//! - [`costs`]: cost lines, one at a time, with an error that names what is wrong;
//! - [`arcs`]: calls and jumps (`calls=`, `jump=`, `jcnd=`) and the source line that completes them;
//! - [`runs`]: the fast way through a function's body, the same grammar read in one loop;
//! - [`chunks`]: a large file read in parts side by side, and the parts joined.

mod arcs;
mod chunks;
mod costs;
mod header;
mod names;
mod runs;

use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::io::BufRead;

use self::arcs::{ArcKind, Pending};
use self::costs::starts_cost_line;
use self::header::{check_totals, Column};
use self::names::{ForwardName, IdTable, Table};
use self::runs::{starts_run_line, RunRows};
use super::parse::{skip_space, trim_end, Bad};
use crate::format::ReadOptions;
use cfghub_analysis::blocks::{self, Transfer};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{FileId, Process, Profile, StringTable};

/// Rows at which a cost table (or the list of associations) reserves room for the rest of the
/// input, estimated from the bytes left: the fewest a cost line takes (`+2 1` and a line feed),
/// and the fewest an association and its source line take.
const RESERVE_AT: usize = 1 << 14;
const RESERVE_BYTES_PER_COST: u64 = 6;
const RESERVE_BYTES_PER_ARC: u64 = 24;
/// A reservation takes at most this many bytes of memory per byte of input left, whatever the
/// file says (a cost row of many events is wider than its line, whose trailing zeros may be
/// left out).
const RESERVE_PER_INPUT_BYTE: u64 = 4;
/// Bytes a cost row takes beside its values: offset, function, file and line.
const COST_ROW_BYTES: u64 = 20;

/// Most threads a `thread:` header may name (edge counts are indexed by thread).
const MAX_THREADS: u64 = 1 << 16;
/// Most events a profile may name (a call's inclusive cost is kept with its length in 16 bits).
const MAX_EVENTS: usize = u16::MAX as usize;

/// Reads a whole Callgrind file.
///
/// A large uncompressed file is mapped and read in parts side by side (see [`chunks`]);
/// anything else is read as a stream, line after line.
pub fn read(input: &mut Source<'_>, _options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let size = input.size_hint().unwrap_or(0) as usize;
    if size >= chunks::MIN_PARALLEL && input.is_file() && rayon::current_num_threads() > 1 {
        // One part per thread, none shorter than [`chunks::MIN_PART`].
        let parts = rayon::current_num_threads().min(size / chunks::MIN_PART).max(1);
        let reader = chunks::read_parts(input.bytes()?, findings, parts)?;
        // The input's pages leave the process before the control-flow rebuild, the peak of
        // the read.
        input.release();
        return reader.end(findings);
    }
    let mut r = Reader { input_size: input.size_hint().unwrap_or(0), ..Reader::default() };
    read_into(&mut r, input.limit_lines().stream(), findings)?;
    r.end(findings)
}

/// Reads the lines of `input` into `r`, which may already hold what came before them.
fn read_into(r: &mut Reader, input: &mut dyn BufRead, findings: &mut Findings) -> Result<()> {
    // Lines are parsed where they lie in the reader's buffer; only a line split across two
    // buffer fills is copied (into `partial`).
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let buf = input.fill_buf().map_err(|e| {
            let mut err = Error::io(String::new(), e);
            err.file = None;
            err.at_line(r.line_no + 1)
        })?;
        if buf.is_empty() {
            if !partial.is_empty() {
                r.line_no += 1;
                r.line(trim_end(&partial), findings).map_err(|e| e.at_line(r.line_no))?;
            }
            return Ok(());
        }
        let len = buf.len();
        r.input_size = r.input_size.max(r.consumed + len as u64);
        let mut start = 0;
        if !partial.is_empty() {
            match memchr::memchr(b'\n', buf) {
                Some(end) => {
                    partial.extend_from_slice(&buf[..end]);
                    r.line_no += 1;
                    r.line(trim_end(&partial), findings).map_err(|e| e.at_line(r.line_no))?;
                    partial.clear();
                    start = end + 1;
                }
                None => {
                    partial.extend_from_slice(buf);
                    input.consume(len);
                    r.consumed += len as u64;
                    continue;
                }
            }
        }
        loop {
            // Most lines are cost lines in runs: read those in one go.
            if buf.get(start).is_some_and(|&b| starts_run_line(b)) && r.run_allowed() {
                let n = r.run(&buf[start..]);
                if n > 0 {
                    start += n;
                    continue;
                }
            }
            let Some(pos) = memchr::memchr(b'\n', &buf[start..]) else { break };
            let end = start + pos;
            r.line_no += 1;
            r.line(trim_end(&buf[start..end]), findings).map_err(|e| e.at_line(r.line_no))?;
            start = end + 1;
        }
        partial.extend_from_slice(&buf[start..]);
        input.consume(len);
        r.consumed += len as u64;
    }
}

/// Per-process lookups from names to model indices.
#[derive(Default)]
struct ProcessState {
    images: FxHashMap<Option<FileId>, u32>,
    /// Functions by image, name and file: two static functions of one name in one object
    /// (ld.so's two `check_match`) are two functions, as Valgrind and KCachegrind tell them.
    symbols: FxHashMap<(u32, u32, Name), u32>,
    /// The first function of each image and name, whatever its file.
    by_name: FxHashMap<(u32, u32), u32>,
    /// The `calls=`/`jump=`/`jcnd=` lines as transfers between positions.
    arcs: Vec<Transfer>,
    /// The inclusive costs of the calls, one after the other.
    inclusive: Vec<u64>,
}

/// An object or file name: `None` for the empty name.
type Name = Option<u32>;

#[derive(Default)]
struct Reader {
    profile: Profile,
    line_no: u64,
    /// Function names, interned (a symbol is a function name in an image).
    fn_names: StringTable,
    objects: IdTable,
    files: IdTable,
    functions: IdTable,
    states: Vec<ProcessState>,
    pids: HashMap<u64, usize>,
    /// The `pid:` of the current part, when given.
    pid: Option<u64>,
    /// Index of the current process, once something needed it.
    process: Option<usize>,
    thread: u16,
    columns: Vec<Column>,
    instr_col: Option<usize>,
    line_col: Option<usize>,
    /// Parts whose positions lacked `instr` (block reconstruction needs it everywhere).
    part_without_instr: bool,
    /// Column -> index into `profile.events`.
    event_map: Vec<usize>,
    events_seen: bool,
    /// Running basis of each position column (subposition compression).
    last: [u64; 3],
    ob: Name,
    fl: Name,
    file: Name,
    image: Option<u32>,
    symbol: Option<u32>,
    cob: Option<Name>,
    cfi: Option<Name>,
    cfn: Option<u32>,
    jfi: Option<Name>,
    jfn: Option<u32>,
    pending: Option<Pending>,
    /// Sum of the self costs of the current part, per column, for the `totals:` check.
    part_totals: Vec<u64>,
    /// Whether any cost or association was read with `events_map` shorter than the final event
    /// list (events added by a later part): such values are padded at the end.
    events_grew: bool,
    warned_keys: Vec<Vec<u8>>,
    /// Cost lines with a `*` where a cost is expected, and the first one's line.
    star_costs: u64,
    star_line: u64,
    /// `jcnd=` lines whose followed count exceeds the executed count, and the first one's line.
    jcnd_over: u64,
    jcnd_over_line: u64,
    /// The values of the cost line being read, one per event.
    values: Vec<u64>,
    /// The cost rows [`Reader::run`] gathers (kept between runs for their memory).
    run_rows: Option<Box<RunRows>>,
    /// Bytes of input: the size hint, or as far as the reader has seen.
    input_size: u64,
    /// Bytes of input handed to the line parser so far.
    consumed: u64,
    /// Compressed names referred to before their definition, in the order met.
    forwards: Vec<ForwardName>,
    /// For a reader that starts in the middle of a file: what it stood in for the names and
    /// places defined before its start (see [`chunks`]).
    cont: Option<Box<chunks::Continuation>>,
}

fn bad(e: Bad) -> Error {
    Error::input(e.0)
}

impl Reader {
    /// Reads one line (without its line end), by what it starts with: a cost line, a comment
    /// or blank line, a position line `key=value` or a header line `key: value`.
    fn line(&mut self, line: &[u8], findings: &mut Findings) -> Result<()> {
        let Some(&first) = line.first() else { return Ok(()) };
        match first {
            b'0'..=b'9' | b'+' | b'-' | b'*' => return self.cost_line(line),
            b'#' => return Ok(()),
            b' ' | b'\t' if skip_space(line).is_empty() => return Ok(()),
            _ => {}
        }
        if let Some(p) = &self.pending {
            return Err(Error::input(format!(
                "expected the source position line of the {} at line {}{}, found '{}'",
                p.kind.what(),
                p.line_no,
                if p.kind == ArcKind::Call { " (position and inclusive cost)" } else { "" },
                String::from_utf8_lossy(&line[..line.len().min(60)])
            )));
        }
        let key_len = line.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        match line.get(key_len) {
            Some(b'=') => self.spec(&line[..key_len], &line[key_len + 1..], findings),
            Some(b':') => self.header(&line[..key_len], trim_end(skip_space(&line[key_len + 1..])), findings),
            _ => Err(Error::input(format!(
                "expected a header line 'key: value', a position 'fn=name', an association \
                 (calls=, jump=, jcnd=) or a cost line, found '{}'",
                String::from_utf8_lossy(&line[..line.len().min(60)])
            ))),
        }
    }

    /// The index of the current process (the one `pid:` names, else the only one), created
    /// when first needed.
    fn process(&mut self) -> usize {
        if let Some(p) = self.process {
            return p;
        }
        let pid = self.pid.unwrap_or(0);
        let p = *self.pids.entry(pid).or_insert_with(|| {
            self.profile.processes.push(Process { pid, ..Process::default() });
            self.states.push(ProcessState::default());
            self.profile.processes.len() - 1
        });
        self.process = Some(p);
        p
    }

    /// The profile, once every line is read.
    fn end(self, findings: &mut Findings) -> Result<Profile> {
        if let Some(p) = &self.pending {
            return Err(Error::input(format!(
                "the file ends after the {} line; expected a line with its source position{}",
                p.kind.what(),
                if p.kind == ArcKind::Call { " and inclusive cost" } else { "" }
            ))
            .at_line(p.line_no));
        }
        self.finish(findings)
    }

    /// The warnings of the whole file, the event columns made equal, then the calls and jumps
    /// made edges (between blocks where the file has addresses and jumps, else between
    /// functions).
    fn finish(mut self, findings: &mut Findings) -> Result<Profile> {
        if self.star_costs > 0 {
            findings.warn(
                Some(cfghub_model::error::Place::Line(self.star_line)),
                format!(
                    "{} cost line(s) hold '*' where a cost is expected (first here); read as KCachegrind \
                     does: the costs before it kept, it and those after it missing (zero)",
                    self.star_costs
                ),
            );
        }
        for f in self.forwards.iter().filter(|f| !f.defined) {
            findings.warn(
                Some(cfghub_model::error::Place::Line(f.line)),
                format!(
                    "name id ({}) is used here but never defined in the {} names; kept as '({})'",
                    f.id,
                    f.table.describe(),
                    f.id
                ),
            );
        }
        if self.forwards.iter().any(|f| f.defined && f.table == Table::Function) {
            // Symbols took their names when created, some before the definition came.
            for (p, state) in self.states.iter().enumerate() {
                let images = &mut self.profile.processes[p].images;
                for (&(image, name, _), &symbol) in &state.symbols {
                    images[image as usize].symbols[symbol as usize].name =
                        self.fn_names.get(name).to_string();
                }
            }
        }
        if self.jcnd_over > 0 {
            findings.warn(
                Some(cfghub_model::error::Place::Line(self.jcnd_over_line)),
                format!(
                    "{} jcnd= line(s) say the jump was followed more often than executed (first here); \
                     read as always followed, without a fall-through",
                    self.jcnd_over
                ),
            );
        }
        let nevents = self.profile.events.len();
        if self.events_grew {
            for p in &mut self.profile.processes {
                for i in &mut p.images {
                    i.costs.widen(nevents);
                }
            }
        }
        let pad_to = if self.events_grew { nevents } else { 0 };
        // "If not appearing, version 1 is assumed."
        self.profile.meta.format_version.get_or_insert((1, 0));
        let ir = self.profile.event_index("Ir");
        let has_instr = !self.part_without_instr && !self.columns.is_empty();
        // What the rebuild needs of the reader is the profile and the transfers: the name
        // tables go first (3 MB for the functions of a large C++ program).
        let mut profile = std::mem::take(&mut self.profile);
        let states = std::mem::take(&mut self.states);
        drop(self);
        for (p, state) in states.into_iter().enumerate() {
            let ProcessState { arcs, inclusive, images, symbols, by_name } = state;
            drop((images, symbols, by_name));
            let process = &mut profile.processes[p];
            let owners = cfghub_analysis::names::recursion_bases(process);
            let jumps = arcs.iter().any(|a| !a.kind.is_call());
            if has_instr && jumps {
                // Symbol extents are set on the way, from the sorted addresses.
                blocks::rebuild(process, arcs, &inclusive, pad_to, ir, &owners, true);
            } else {
                let costs = blocks::InclusiveCosts { values: &inclusive, pad_to };
                blocks::symbol_extents(process, &arcs, &owners);
                blocks::function_edges(process, &costs, &arcs, 1);
            }
        }
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(input: &mut dyn BufRead) -> Result<Profile> {
        read(&mut Source::new(input), &ReadOptions::default(), &mut Findings::default())
    }

    /// Cost lines are read in runs straight from the input buffer: a line cut by the end of a
    /// buffer, carriage returns and trailing blanks must read as they do line by line.
    #[test]
    fn buffer_boundaries_and_line_ends_do_not_change_the_profile() {
        let path =
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/callgrind/callgrind.out.recursion-loops");
        let text = std::fs::read(path).unwrap();
        let whole = read_text(&mut text.as_slice()).unwrap();
        assert!(whole.processes[0].images.iter().any(|i| i.costs.len() > 50));
        for capacity in [1, 7, 64, 4096] {
            let mut input = std::io::BufReader::with_capacity(capacity, text.as_slice());
            assert_eq!(read_text(&mut input).unwrap(), whole, "buffer of {capacity} bytes");
        }
        let mut crlf = Vec::new();
        let mut blanks = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            crlf.extend_from_slice(line);
            crlf.extend_from_slice(b"\r\n");
            blanks.extend_from_slice(line);
            blanks.extend_from_slice(if line.first().is_some_and(|&b| starts_cost_line(b)) {
                b" \t\n"
            } else {
                b"\n"
            });
        }
        assert_eq!(read_text(&mut crlf.as_slice()).unwrap(), whole);
        assert_eq!(read_text(&mut blanks.as_slice()).unwrap(), whole);
    }

    /// The lines of a function body in the forms [`Reader::run`] reads and in the rarer forms it
    /// leaves to [`Reader::line`] read alike: a one-byte buffer splits every line, so that
    /// every line goes the line-by-line way.
    #[test]
    fn runs_read_associations_as_the_line_parser_does() {
        let text = "events: Ir Dr\npositions: instr line\nfl=(1) a.c\nfn=(1) main\n\
            0x10 3 1 2\n+2 * 1\ncfn=(2) callee\ncalls=2 0x40 9\n* * 50 7\n+1 4 1\n\
            cfn=(1)\ncalls=0x3 +4 -1 \n+2 +1 9\ncfn= (2)\ncalls=1 0x40 9 extra\n+1 * 2\n\
            jcnd=1/3 -2 *\n* * \njcnd=4 1 0x12 3\n+2 * 1 1\njump=2 0x10 3\r\n+1 * 1\r\n\
            jcnd=5/2 0x10 3\n+1 0 1\ncob=(1) lib.so\ncfi=(2) b.c\ncfn=(3) other\n\
            calls=1 0x900 1\n+1 0 3\n+1 0 1 2\n";
        let whole = read_text(&mut text.as_bytes()).unwrap();
        let mut input = std::io::BufReader::with_capacity(1, text.as_bytes());
        assert_eq!(read_text(&mut input).unwrap(), whole);
        let p = &whole.processes[0];
        assert_eq!((p.images.len(), p.images[0].costs.len(), p.edges.len()), (2, 4, 10));
    }

    /// A malformed line inside a run of cost lines is reported at its own line, with what the
    /// line-by-line parser says of it.
    #[test]
    fn a_bad_line_in_a_run_names_its_line() {
        let head = "events: Ir\npositions: instr line\nfn=main\n";
        for (bad, expected) in [
            ("+2 3 4x", "expected a number"),
            ("+2 3 4 5", "more than 1 cost"),
            ("-99999 3 4", "below zero"),
            ("+2", "1 position(s)"),
            ("+2 5000000000 1", "line number 5000000000 is too large"),
            ("calls=1 0x10", "calls= target has"),
            ("jcnd=1/x 0x10 1", "jcnd= executed count"),
            ("cfn=(99 f", "expected '(id)' with a closing ')'"),
            ("jump=1 0x10 1\nfn=main", "expected the source position line of the jump= at line 6"),
        ] {
            let text = format!("{head}0x10 1 1\n+1 1 1\n{bad}\n+1 1 1\n");
            let err = read_text(&mut text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(":6") || err.contains("line 6"), "{bad}: {err}");
            assert!(err.contains(expected), "{bad}: {err}");
        }
        let text = format!("{head}0x10 1 1\n+1 1 1\n+1 +2 2\n");
        let p = read_text(&mut text.as_bytes()).unwrap();
        let costs = &p.processes[0].images[0].costs;
        assert_eq!(
            (costs.len(), costs.offset(2), costs.line(2), &costs.values(2)[..]),
            (3, Some(0x12), Some(3), &[2][..])
        );
    }

    /// A profile names at most 65,535 events, on one `events:` line or by `event:` lines; one
    /// more is an error at its line.
    #[test]
    fn at_most_65535_events() {
        let names = |n: usize| (0..n).map(|k| format!("e{k}")).collect::<Vec<_>>().join(" ");
        let text = format!(
            "events: {}
fn=main
1 1
",
            names(MAX_EVENTS)
        );
        assert_eq!(read_text(&mut text.as_bytes()).unwrap().events.len(), MAX_EVENTS);
        let text = format!(
            "events: {}
fn=main
1 1
",
            names(MAX_EVENTS + 1)
        );
        let err = read_text(&mut text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("'e65535' is one too many"), "{err}");
        let text = format!(
            "events: {}
event: more
fn=main
1 1
",
            names(MAX_EVENTS)
        );
        let err = read_text(&mut text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("'more' is one too many"), "{err}");
    }
}
