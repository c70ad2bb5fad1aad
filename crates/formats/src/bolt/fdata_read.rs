//! Reading `.fdata` (see the module documentation of [`super`]).

use std::collections::HashMap;
use std::io::BufRead;

use super::records::{fields, BinarySymbols};
use super::Options;
use crate::format::ReadOptions;
use cfghub_analysis::branch_records::{BranchRecords, CodeAddress as At};
use cfghub_model::error::{self, Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{CostTable, Event, Image, Process, Profile, Symbol};

/// Longest x86 instruction: a record from an address to one at most this far on in the same
/// function is a fall-through when it is the nearest such record of its source.
const MAX_INSTR_LEN: u64 = 15;

/// The first line is an LBR record (`1 main 1a 1 main 30 0 5`), `no_lbr`, or
/// `boltedcollection`.
pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let Some(first) = text.lines().next() else { return false };
    if first.starts_with("no_lbr") || first == "boltedcollection" {
        return true;
    }
    let f: Vec<&str> = first.split_ascii_whitespace().collect();
    f.len() == 8
        && matches!(f[0], "0" | "1" | "2")
        && matches!(f[3], "0" | "1" | "2")
        && [f[2], f[5]].iter().all(|h| u64::from_str_radix(h, 16).is_ok())
        && [f[6], f[7]].iter().all(|n| n.parse::<u64>().is_ok())
}

/// A place as a line names it: a symbol (interned) and an offset, or an address outside the
/// binary's symbols (`IS_SYM` 0).
#[derive(Clone, Copy)]
struct Place {
    symbol: Option<u32>,
    offset: u64,
}

/// Where a name or an offset was read, for errors found after the whole file is read.
#[derive(Clone, Copy)]
struct Pos {
    line: u64,
    column: usize,
}

struct Parsed {
    /// Names in order of first appearance, with where each first appears.
    names: Vec<(String, Pos)>,
    /// Branches (from, to, mispredicts, count) or samples (place, count) with positions of
    /// their offsets.
    branches: Vec<(Place, Place, u64, u64, [Pos; 2])>,
    samples: Vec<(Place, u64, Pos)>,
    /// `no_lbr` and its event, when the file is in sample form.
    no_lbr: Option<String>,
    outside: u64,
    memory_lines: u64,
}

/// Reads an `.fdata` file, in LBR or `no_lbr` sample form, into a profile.
pub fn read(input: &mut Source<'_>, options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let parsed = parse(input.limit_lines().stream())?;
    let options = options.formats.get::<Options>();
    if parsed.outside > 0 {
        findings.warn(
            None,
            format!("{} records name code outside the binary's symbols (IS_SYM 0): left out", parsed.outside),
        );
    }
    if parsed.memory_lines > 0 {
        findings.warn(None, format!("{} memory-event lines (IS_SYM 3 to 5) left out", parsed.memory_lines));
    }
    let mut profile = Profile::default();
    let mut image = Image::default();
    let symbols = match &options.binary {
        Some(path) => {
            image.file = Some(profile.files.intern(&path.display().to_string()));
            resolve(&parsed, &BinarySymbols::open(path)?)?
        }
        None => lay_out(&parsed),
    };
    // Every place as an address in the image.
    let addr = |p: &Place| -> Option<u64> {
        let (start, _) = symbols.places[p.symbol? as usize];
        Some(start + p.offset)
    };
    image.symbols = symbols.symbols;
    let mut process = Process::default();
    if let Some(event) = &parsed.no_lbr {
        profile.events.push(Event::new(event.clone()));
        let mut costs = CostTable::new();
        let mut rows: Vec<(u64, u32, u64)> = parsed
            .samples
            .iter()
            .filter_map(|(p, c, _)| Some((addr(p)?, symbols.index[p.symbol? as usize], *c)))
            .collect();
        rows.sort_unstable();
        for (a, s, c) in rows {
            costs.push_parts(Some(a), Some(s), None, None, &[c]);
        }
        image.costs = costs;
        process.images.push(image);
    } else {
        let branches: Vec<Branch> = {
            let mut v: Vec<Branch> = parsed
                .branches
                .iter()
                .filter_map(|(f, t, m, c, _)| {
                    let same_function = f.symbol.is_some() && f.symbol == t.symbol;
                    Some(Branch { from: addr(f)?, to: addr(t)?, mispredicts: *m, count: *c, same_function })
                })
                .collect();
            v.sort_unstable_by_key(|b| (b.from, b.to));
            v
        };
        let records = classify(&branches);
        process.images.push(image);
        let summary = records.to_model(&mut process);
        if summary.invalid_ranges > 0 {
            findings.warn(
                None,
                format!("{} fall-through records cross functions: left out", summary.invalid_ranges),
            );
        }
    }
    profile.processes.push(process);
    Ok(profile)
}

/// A record with its places resolved to addresses.
#[derive(Clone, Copy)]
struct Branch {
    from: u64,
    to: u64,
    mispredicts: u64,
    count: u64,
    same_function: bool,
}

/// Tells fall-throughs from taken branches (`branches` sorted by source). `.fdata` writes both
/// alike; a fall-through goes from a block's last instruction to the next instruction, so a
/// record is one when it goes forward in its function by at most the longest instruction
/// (15 bytes) and no other record names an address between its ends. A short jump over
/// nothing the profile names reads as a fall-through (only the binary's code could tell).
///
/// perf2bolt leaves out the fall-through from a conditional branch into an unconditional
/// jump right after it (BOLT sees `jcc A; jmp B` as one block's two exits): a source that no
/// record reaches, just after a conditional branch's source, is such a jump, and the
/// fall-through into it is put back with the jump's count.
fn classify(branches: &[Branch]) -> BranchRecords {
    let mut points: Vec<u64> = branches.iter().flat_map(|b| [b.from, b.to]).collect();
    points.sort_unstable();
    points.dedup();
    let mut targets: Vec<u64> = branches.iter().map(|b| b.to).collect();
    targets.sort_unstable();
    targets.dedup();
    let is_target = |a: u64| targets.binary_search(&a).is_ok();
    let nothing_between =
        |a: u64, b: u64| points.partition_point(|&p| p <= a) == points.partition_point(|&p| p < b);
    let fall_through = |b: &Branch| {
        b.same_function && b.to > b.from && b.to - b.from <= MAX_INSTR_LEN && nothing_between(b.from, b.to)
    };
    // Sources of branches inside their function (a conditional branch whose fall-through
    // perf2bolt left out looks like any other).
    let mut branch_sources: Vec<u64> =
        branches.iter().filter(|b| b.same_function && !fall_through(b)).map(|b| b.from).collect();
    branch_sources.dedup();
    // The jump of a `jcc; jmp` pair: a source no record reaches, just after a branch's source
    // (a call's return site is no such place: calls are not branches here).
    let paired_jump = |from: u64| -> Option<u64> {
        if is_target(from) {
            return None;
        }
        let before = *points[..points.partition_point(|&p| p < from)].last()?;
        (from - before <= MAX_INSTR_LEN && branch_sources.binary_search(&before).is_ok()).then_some(before)
    };
    let mut records = BranchRecords::new();
    let mut k = 0;
    while k < branches.len() {
        let from = branches[k].from;
        let run = &branches[k..k + branches[k..].iter().take_while(|b| b.from == from).count()];
        k += run.len();
        let pair = paired_jump(from);
        if let Some(before) = pair {
            let count = run.iter().fold(0u64, |a, b| a.saturating_add(b.count));
            records.add_block_fall_through(At::new(0, before), At::new(0, from), count);
        }
        for b in run {
            if pair.is_none() && fall_through(b) {
                records.add_block_fall_through(At::new(0, b.from), At::new(0, b.to), b.count);
            } else {
                records.add_taken(At::new(0, b.from), At::new(0, b.to), b.count, b.mispredicts);
            }
        }
    }
    records
}

/// The image's symbols and where each interned name starts and how long it is.
struct Symbols {
    symbols: Vec<Symbol>,
    /// Per interned name: its symbol's start and size.
    places: Vec<(u64, u64)>,
    /// Per interned name: its symbol's index in `symbols`.
    index: Vec<u32>,
}

/// Names resolved to the binary's symbols; a name it lacks or an offset past its function's
/// end is an error at the line and column it was read.
fn resolve(parsed: &Parsed, binary: &BinarySymbols) -> Result<Symbols> {
    let mut places = Vec::with_capacity(parsed.names.len());
    let mut index = Vec::with_capacity(parsed.names.len());
    for (name, pos) in &parsed.names {
        let Some(s) = binary.find(name) else {
            return Err(at(
                *pos,
                format!("unknown symbol '{name}': the binary has no function of that name"),
            )
            .with_hint("is the profile of this binary? local functions are named name/1"));
        };
        let sym = &binary.symbols[s as usize];
        places.push((sym.offset.unwrap_or(0), sym.size.unwrap_or(0)));
        index.push(s);
    }
    let check = |p: &Place, pos: Pos| -> Result<()> {
        let Some(s) = p.symbol else { return Ok(()) };
        let (_, size) = places[s as usize];
        if size > 0 && p.offset >= size {
            return Err(at(
                pos,
                format!(
                    "offset 0x{:x} is past the end of '{}' ({size} bytes)",
                    p.offset, parsed.names[s as usize].0
                ),
            ));
        }
        Ok(())
    };
    for (f, t, _, _, pos) in &parsed.branches {
        check(f, pos[0])?;
        check(t, pos[1])?;
    }
    for (p, _, pos) in &parsed.samples {
        check(p, *pos)?;
    }
    Ok(Symbols { symbols: binary.symbols.clone(), places, index })
}

/// Without the binary: each function placed after the one before, in the order they first
/// appear, 16-byte aligned and as long as the highest offset named in it plus the longest
/// instruction.
fn lay_out(parsed: &Parsed) -> Symbols {
    let mut highest = vec![0u64; parsed.names.len()];
    let mut see = |p: &Place| {
        if let Some(s) = p.symbol {
            highest[s as usize] = highest[s as usize].max(p.offset);
        }
    };
    for (f, t, ..) in &parsed.branches {
        see(f);
        see(t);
    }
    for (p, ..) in &parsed.samples {
        see(p);
    }
    let mut next = 0u64;
    let mut symbols = Vec::with_capacity(parsed.names.len());
    let mut places = Vec::with_capacity(parsed.names.len());
    for ((name, _), high) in parsed.names.iter().zip(highest) {
        let size = high.saturating_add(MAX_INSTR_LEN + 1).next_multiple_of(16);
        symbols.push(Symbol { name: name.clone(), offset: Some(next), size: Some(size), file: None });
        places.push((next, size));
        next = next.saturating_add(size);
    }
    let index = (0..symbols.len() as u32).collect();
    Symbols { symbols, places, index }
}

fn at(pos: Pos, message: String) -> Error {
    Error::input(format!("column {}: {message}", pos.column)).at(error::Place::Line(pos.line))
}

fn parse(input: &mut dyn BufRead) -> Result<Parsed> {
    let mut parsed = Parsed {
        names: Vec::new(),
        branches: Vec::new(),
        samples: Vec::new(),
        no_lbr: None,
        outside: 0,
        memory_lines: 0,
    };
    let mut interned: HashMap<String, u32> = HashMap::new();
    let (mut line, mut bytes) = (String::new(), Vec::new());
    let mut n = 0u64;
    loop {
        let read = super::read_text_line(input, &mut bytes, &mut line, n + 1)?;
        if read == 0 {
            break;
        }
        n += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        if n == 1 && text.starts_with("no_lbr") {
            let event = text["no_lbr".len()..].trim();
            parsed.no_lbr = Some(if event.is_empty() { "samples".to_string() } else { event.to_string() });
            continue;
        }
        if n == 1 && text == "boltedcollection" {
            continue;
        }
        let fields = fields(text);
        if matches!(fields[0].1, "3" | "4" | "5") {
            parsed.memory_lines += 1;
            continue;
        }
        let mut place = |k: usize| -> Result<(Place, Pos)> {
            let (col, kind) = fields[k];
            let (name_col, name) = fields[k + 1];
            let (off_col, off) = fields[k + 2];
            let offset = u64::from_str_radix(off, 16).map_err(|_| {
                at(Pos { line: n, column: off_col }, format!("expected a hex offset, found '{off}'"))
            })?;
            let symbol = match kind {
                "1" | "2" => {
                    let next = interned.len() as u32;
                    let id = *interned.entry(name.to_string()).or_insert_with(|| {
                        parsed.names.push((name.to_string(), Pos { line: n, column: name_col }));
                        next
                    });
                    Some(id)
                }
                "0" => None,
                _ => {
                    return Err(at(
                        Pos { line: n, column: col },
                        format!("expected 0, 1 or 2 (IS_SYM), found '{kind}'"),
                    ))
                }
            };
            Ok((Place { symbol, offset }, Pos { line: n, column: off_col }))
        };
        let number = |k: usize, what: &str| -> Result<u64> {
            let (col, s) = fields[k];
            s.parse::<u64>()
                .map_err(|_| at(Pos { line: n, column: col }, format!("expected {what}, found '{s}'")))
        };
        if parsed.no_lbr.is_some() {
            if fields.len() != 4 {
                return Err(shape(n, &fields, "IS_SYM NAME OFFSET COUNT"));
            }
            let (p, pos) = place(0)?;
            let count = number(3, "a count")?;
            if p.symbol.is_none() {
                parsed.outside += 1;
                continue;
            }
            parsed.samples.push((p, count, pos));
        } else {
            if fields.len() != 8 {
                return Err(shape(n, &fields, "IS_SYM NAME OFFSET IS_SYM NAME OFFSET MISPREDS COUNT"));
            }
            let (from, from_pos) = place(0)?;
            let (to, to_pos) = place(3)?;
            let mispredicts = number(6, "a count of mispredictions")?;
            let count = number(7, "a count")?;
            if from.symbol.is_none() || to.symbol.is_none() {
                parsed.outside += 1;
                continue;
            }
            parsed.branches.push((from, to, mispredicts, count, [from_pos, to_pos]));
        }
    }
    Ok(parsed)
}

fn shape(line: u64, fields: &[(usize, &str)], expected: &str) -> Error {
    let column = fields.get(fields.len().min(8)).or(fields.last()).map_or(1, |f| f.0);
    Error::input(format!("column {column}: expected {expected}, found {} fields", fields.len()))
        .at(error::Place::Line(line))
}
