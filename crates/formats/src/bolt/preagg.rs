//! BOLT's pre-aggregated branch records (format `bolt-pa`): `B FROM TO COUNT MISPREDS`,
//! `F START END COUNT`, `f START END COUNT`, locations `[BUILDID:]HEXADDR`.

use std::io::{BufRead, Write};

use super::records::{add_fall_throughs_inside_blocks, fields, model_records, BinarySymbols, Namer};
use super::Options;
use std::collections::BTreeMap;
use std::path::Path;

use crate::format::{ReadOptions, WriteOptions};
use cfghub_analysis::branch_records::{BranchRecords, CodeAddress as At};
use cfghub_analysis::machine_code::{BinaryCode, FunctionCode};
use cfghub_model::error::{Error, Findings, Place, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{Image, Process, Profile};

/// The first line is a `B`, `F` or `f` record.
pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let Some(first) = text.lines().next() else { return false };
    let f: Vec<&str> = first.split_ascii_whitespace().collect();
    let addr = |s: &str| u64::from_str_radix(s.rsplit(':').next().unwrap_or(s), 16).is_ok();
    match f.first().copied() {
        Some("B") => f.len() == 5 && addr(f[1]) && addr(f[2]),
        Some("F" | "f") => f.len() == 4 && addr(f[1]) && addr(f[2]),
        _ => false,
    }
}

/// Reads a pre-aggregated file into a profile of one image, its branches and fall-through
/// ranges added up.
pub fn read(input: &mut Source<'_>, options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let (mut records, entered_from_elsewhere) = parse(input.limit_lines().stream())?;
    let options = options.formats.get::<Options>();
    let mut profile = Profile::default();
    let mut image = Image::default();
    match &options.binary {
        Some(path) => {
            image.file = Some(profile.files.intern(&path.display().to_string()));
            image.symbols = BinarySymbols::open(path)?.symbols;
            add_over_calls(&mut records, &entered_from_elsewhere, &image, path);
        }
        None => findings.warn(
            None,
            "without the binary (--symbols BINARY) functions are not known: calls and returns are \
             not told apart from jumps",
        ),
    }
    let mut process = Process { images: vec![image], ..Process::default() };
    let summary = records.to_model(&mut process);
    if summary.invalid_ranges > 0 {
        findings.warn(
            None,
            format!(
                "{} fall-through ranges run backwards or across functions ({} executions): left out",
                summary.invalid_ranges, summary.invalid_range_count
            ),
        );
    }
    profile.processes.push(process);
    Ok(profile)
}

/// The runs on from a call that perf2bolt reads from `f` ranges (entered from another
/// function) that start just after a call, where the binary's code can be decoded
/// ([`FunctionCode::call_before`]).
fn add_over_calls(records: &mut BranchRecords, ranges: &[Range], image: &Image, binary: &Path) {
    if ranges.is_empty() {
        return;
    }
    let Some(code) = BinaryCode::open(binary) else { return };
    let mut functions: Vec<(u64, u64)> =
        image.symbols.iter().filter_map(|s| Some((s.offset?, s.size.filter(|&n| n > 0)?))).collect();
    functions.sort_unstable();
    let mut decoded: BTreeMap<u64, Option<FunctionCode>> = BTreeMap::new();
    for &(start, end, count) in ranges {
        let k = functions.partition_point(|f| f.0 <= start);
        let Some(&(at, size)) = k.checked_sub(1).map(|k| &functions[k]) else { continue };
        if start > end || end - at >= size {
            continue;
        }
        let function = decoded.entry(at).or_insert_with(|| code.function_at_address(at, size));
        let Some(function) = function.as_ref() else { continue };
        if let Some(call) = function.call_before(start) {
            if function.fall_throughs(start, end).is_some() {
                records.add_over_call(At::new(0, call), At::new(0, start), count);
            }
        }
    }
}

/// `(start, end, count)` of an `F` or `f` record.
type Range = (u64, u64, u64);

/// Longest x86 instruction.
const MAX_INSTR_LEN: u64 = 15;

/// The records of a file. An `F` range is a trace from a branch's target to the next
/// branch's source, as perf2bolt makes them; one that starts where no branch goes and ends
/// at most one instruction on is a fall-through from a block's last instruction into the
/// next block, as cfghub writes them (and `.fdata` states them), which also says where
/// blocks end. Also returns the `f` ranges: those entered from another function.
fn parse(input: &mut dyn BufRead) -> Result<(BranchRecords, Vec<Range>)> {
    let mut entered_from_elsewhere = Vec::new();
    let mut records = BranchRecords::new();
    let mut ranges: Vec<(u64, u64, u64)> = Vec::new();
    let (mut line, mut bytes) = (String::new(), Vec::new());
    let mut n = 0u64;
    loop {
        if super::read_text_line(input, &mut bytes, &mut line, n + 1)? == 0 {
            break;
        }
        n += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        let fields = fields(text);
        let err = |column: usize, message: String| {
            Error::input(format!("column {column}: {message}")).at(Place::Line(n))
        };
        let addr = |k: usize| -> Result<u64> {
            let (col, s) = fields[k];
            let hex = s.rsplit_once(':').map_or(s, |(_, a)| a);
            u64::from_str_radix(hex.trim_start_matches("0x"), 16)
                .map_err(|_| err(col, format!("expected [BUILDID:]HEXADDR, found '{s}'")))
        };
        let number = |k: usize, what: &str| -> Result<u64> {
            let (col, s) = fields[k];
            s.parse::<u64>().map_err(|_| err(col, format!("expected {what}, found '{s}'")))
        };
        let shape = |expected: &str| {
            let column = fields.last().map_or(1, |f| f.0);
            err(column, format!("expected {expected}, found {} fields", fields.len()))
        };
        match fields[0].1 {
            "B" => {
                if fields.len() != 5 {
                    return Err(shape("B FROM TO COUNT MISPREDS"));
                }
                let (from, to) = (addr(1)?, addr(2)?);
                let (count, mispredicts) = (number(3, "a count")?, number(4, "a count of mispredictions")?);
                records.add_taken(At::new(0, from), At::new(0, to), count, mispredicts);
            }
            "F" | "f" => {
                if fields.len() != 4 {
                    return Err(shape("F START END COUNT"));
                }
                let (start, end) = (addr(1)?, addr(2)?);
                let count = number(3, "a count")?;
                ranges.push((start, end, count));
                if fields[0].1 == "f" {
                    entered_from_elsewhere.push((start, end, count));
                }
            }
            other => {
                return Err(err(fields[0].0, format!("expected a record type B, F or f, found '{other}'")));
            }
        }
    }
    let mut targets: Vec<u64> = records.taken.iter().map(|b| b.to.offset).collect();
    targets.sort_unstable();
    for (start, end, count) in ranges {
        let between_blocks =
            end > start && end - start <= MAX_INSTR_LEN && targets.binary_search(&start).is_err();
        if between_blocks {
            records.add_block_fall_through(At::new(0, start), At::new(0, end), count);
        } else {
            records.add_fall_through(At::new(0, start), At::new(0, end), count);
        }
    }
    Ok((records, entered_from_elsewhere))
}

/// `B` for every taken branch (calls and returns too) and `F` for every fall-through (from the
/// last instruction of a block to the first of the next, BOLT's blocks inside the model's
/// included where the binary's code can be read), at the image's addresses.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    cfghub_analysis::names::require_code_addresses(profile, "bolt-pa")?;
    let opts = options.formats.get::<super::Options>();
    let Some(chosen) =
        cfghub_analysis::names::choose_binary(profile, opts.image.as_deref(), opts.binary.as_deref())?
    else {
        return Ok(());
    };
    let mut records = model_records(profile, &chosen, false, findings);
    let (p, i) = chosen.places[0];
    let namer = Namer::new(profile, &profile.processes[p].images[i as usize], opts.binary.as_deref());
    add_fall_throughs_inside_blocks(profile, &chosen, &namer, &mut records);
    if records.is_empty() {
        return Err(Error::input("bolt-pa: the profile has no edges between blocks")
            .with_hint("samples without branches go to BOLT as fdata's no_lbr form: --to fdata"));
    }
    cfghub_analysis::totals::note_no_events(
        findings,
        "bolt-pa",
        profile,
        "a BOLT profile holds branch and fall-through counts, not the events' costs",
    );
    let base = profile.processes[p].images[i as usize].load_addr;
    let io = |e: std::io::Error| Error::io("output", e);
    for r in &records {
        let (from, to) = (base.wrapping_add(r.from), base.wrapping_add(r.to));
        if r.fall_through {
            writeln!(out, "F {from:x} {to:x} {}", r.count).map_err(io)?;
        } else {
            writeln!(out, "B {from:x} {to:x} {} {}", r.count, r.mispredicts).map_err(io)?;
        }
    }
    Ok(())
}
