//! Reads the text sample profile (see [`super`]) as LLVM 19's `SampleProfileReaderText` reads
//! it, and refuses its binary forms by their magic, naming them.
//!
//! Lines are `NAME:TOTAL:HEAD` at the left margin, and below it, indented by spaces (the
//! depth is the number of spaces): body lines ` OFFSET[.DISC]: COUNT [CALLEE:COUNT ...]`,
//! inlined call sites ` OFFSET[.DISC]: CALLEE:TOTAL` whose own lines are one space deeper,
//! and metadata (`!CFGChecksum: N`, `!Attributes: N`, `!Flat`) after a function's lines.
//! Blank lines and lines starting with `#` are skipped. As in LLVM, a name repeated at the top
//! level or at one call site adds to the first, an offset without a discriminator has 16 bits,
//! a call target's name runs to the `:` followed by an integer (names may hold `:` and
//! spaces), and counts are decimal integers of 64 bits whose sums must fit too.

use std::collections::{BTreeMap, HashMap};

use cfghub_analysis::sample_profile::{FunctionSamples, Location, SampleProfile};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{Cost, Event, FrameSource, Image, Process, Profile, Stacks, Symbol, NO_INDEX};

use crate::format::ReadOptions;

/// Inlined call sites nest at most this deep (LLVM's inliner stops far below it); deeper input
/// is refused rather than walked.
pub const MAX_DEPTH: usize = 1000;

/// The command that turns any sample profile LLVM reads into the text form.
const TO_TEXT: &str = "llvm-profdata-19 merge --sample --text FILE -o FILE.txt";

/// Reads a text sample profile into the model (see docs/formats/llvm-sample.md).
pub fn read(input: &mut Source<'_>, _: &ReadOptions, _: &mut Findings) -> Result<Profile> {
    Ok(into_model(&parse(input.bytes()?)?))
}

/// What a binary sample profile's first bytes say it is, when they do.
pub fn binary_kind(head: &[u8]) -> Option<&'static str> {
    const GCOV: [&[u8]; 4] = [b"gcno", b"gcda", b"oncg", b"adcg"];
    if GCOV.iter().any(|m| head.starts_with(m)) {
        return Some("a GCC AutoFDO (gcov) sample profile");
    }
    // `SPROF42` and a format byte (LLVM's `SampleProfileFormat`), as one ULEB128 number.
    let magic = |format: u8| -> Vec<u8> {
        let mut v = u64::from_be_bytes([b'S', b'P', b'R', b'O', b'F', b'4', b'2', format]);
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    };
    [
        (0xff, "a binary sample profile"),
        (0x04, "an extbinary sample profile"),
        (0x02, "a compact binary sample profile"),
    ]
    .into_iter()
    .find(|&(format, _)| head.starts_with(&magic(format)))
    .map(|(_, what)| what)
}

/// Whether the head is a text sample profile: its first line that is neither blank nor a `#`
/// comment is `NAME:TOTAL:HEAD`, and the next one is indented (a body line, a call site or
/// metadata), or there is none. Folded stacks (`a;b 12`), perf script and the other text
/// formats have no such pair.
pub fn sniff(head: &[u8]) -> bool {
    if binary_kind(head).is_some() {
        return true;
    }
    let complete = match memchr::memrchr(b'\n', head) {
        // (A head of 64 KiB may end inside a line: that line is left out.)
        Some(i) if head.len() >= 64 * 1024 => &head[..=i],
        _ => head,
    };
    let mut lines = complete
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| l.iter().any(|&b| b != b' ') && l.iter().find(|&&b| b != b' ') != Some(&b'#'));
    let Some(first) = lines.next() else { return false };
    if head_line(first).is_none() || first.contains(&b'\t') {
        return false;
    }
    match lines.next() {
        None => true,
        Some(next) => {
            let body = next.trim_ascii_start();
            next.starts_with(b" ")
                && (body.starts_with(b"!") || body.first().is_some_and(u8::is_ascii_digit))
                && body.contains(&b':')
        }
    }
}

/// A decimal integer of LLVM's `getAsInteger(10)`: digits only, within the type.
fn number<T: TryFrom<u64>>(text: &[u8]) -> Option<T> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in text {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    T::try_from(v).ok()
}

/// `NAME:TOTAL:HEAD`: the name runs to the second `:` from the end.
fn head_line(line: &[u8]) -> Option<(&[u8], u64, u64)> {
    if line.first() == Some(&b' ') {
        return None;
    }
    let n2 = memchr::memrchr(b':', line)?;
    let n1 = memchr::memrchr(b':', &line[..n2])?;
    Some((&line[..n1], number(&line[n1 + 1..n2])?, number(&line[n2 + 1..])?))
}

/// One line below a function's header.
enum Line<'a> {
    Body { at: Location, count: u64, targets: BTreeMap<&'a [u8], u64> },
    CallSite { at: Location, callee: &'a [u8], total: u64 },
    Metadata { checksum: Option<u64>, attributes: u32 },
}

/// What a line below a header failed to be, for the message.
enum Expected {
    Metadata,
    Line,
}

fn body_line(line: &[u8], depth: usize) -> std::result::Result<Line<'_>, Expected> {
    let rest = &line[depth..];
    if rest.first() == Some(&b'!') {
        if line == b" !Flat" {
            return Ok(Line::Metadata { checksum: None, attributes: 0 });
        }
        let value = |key: &[u8]| rest.strip_prefix(key).map(|v| v.trim_ascii());
        if let Some(v) = value(b"!CFGChecksum:") {
            return number::<u64>(v)
                .map(|c| Line::Metadata { checksum: Some(c), attributes: 0 })
                .ok_or(Expected::Metadata);
        }
        if let Some(v) = value(b"!Attributes:") {
            return number::<u32>(v)
                .map(|a| Line::Metadata { checksum: None, attributes: a })
                .ok_or(Expected::Metadata);
        }
        return Err(Expected::Metadata);
    }
    let n1 = memchr::memchr(b':', line).ok_or(Expected::Line)?;
    let loc = line.get(depth..n1).ok_or(Expected::Line)?;
    let at = match memchr::memchr(b'.', loc) {
        None => (number::<u32>(loc).filter(|&o| o <= 0xffff).ok_or(Expected::Line)?, 0),
        Some(dot) => {
            (number(&loc[..dot]).ok_or(Expected::Line)?, number(&loc[dot + 1..]).ok_or(Expected::Line)?)
        }
    };
    // The `: ` after the location is skipped whatever its second byte is, as LLVM does.
    let rest = line.get(n1 + 2..).filter(|r| !r.is_empty()).ok_or(Expected::Line)?;
    if !rest[0].is_ascii_digit() {
        let n3 = memchr::memrchr(b':', rest).ok_or(Expected::Line)?;
        let total = number(&rest[n3 + 1..]).ok_or(Expected::Line)?;
        return Ok(Line::CallSite { at, callee: &rest[..n3], total });
    }
    let mut n3 = memchr::memchr(b' ', rest);
    let count = number(&rest[..n3.unwrap_or(rest.len())]).ok_or(Expected::Line)?;
    let mut targets = BTreeMap::new();
    let mut rest = rest;
    // Call targets: `NAME:COUNT` pairs, a name ending at the first `:` followed by an integer
    // (up to the next blank). The colons and the blanks after them are each looked for once,
    // so a long line costs its length.
    while let Some(at_space) = n3 {
        let start = at_space + rest[at_space..].iter().position(|&b| b != b' ').ok_or(Expected::Line)?;
        rest = &rest[start..];
        let mut colon = memchr::memchr(b':', rest).filter(|&c| c > 0).ok_or(Expected::Line)?;
        let mut blank = 0;
        let (count, end) = loop {
            if blank <= colon {
                blank = memchr::memchr(b' ', &rest[colon + 1..]).map_or(rest.len(), |s| colon + 1 + s);
            }
            if let Some(c) = number::<u64>(&rest[colon + 1..blank]) {
                break (c, blank);
            }
            colon += 1 + memchr::memchr(b':', &rest[colon + 1..]).ok_or(Expected::Line)?;
        };
        // A name twice on a line: the last count, as LLVM's map keeps it.
        targets.insert(&rest[..colon], count);
        n3 = (end < rest.len()).then_some(end);
    }
    Ok(Line::Body { at, count, targets })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn overflow(line: u64) -> Error {
    Error::input("the counts add up past 2^64 - 1").at_line(line)
}

/// The function an inline stack leads to: the top-level function, then each call site's callee
/// (each made when its line was read).
fn at_path<'a>(
    functions: &'a mut HashMap<String, FunctionSamples>,
    top: &str,
    path: &[(Location, String)],
) -> Option<&'a mut FunctionSamples> {
    let mut f = functions.get_mut(top)?;
    for (at, callee) in path {
        f = f.inlined.get_mut(at)?.get_mut(callee)?;
    }
    Some(f)
}

/// Parses a text sample profile as LLVM does; a binary one is refused, naming its kind.
pub fn parse(bytes: &[u8]) -> Result<SampleProfile> {
    if let Some(what) = binary_kind(bytes) {
        return Err(Error::unsupported(format!("this is {what}; cfghub reads the text form"))
            .at_byte(0)
            .with_hint(format!("convert it: {TO_TEXT}")));
    }
    let mut profile = SampleProfile::default();
    let mut top: Option<String> = None;
    let mut path: Vec<(Location, String)> = Vec::new();
    // The depth of the last metadata line of the current function (0: none yet).
    let mut metadata_depth = 0usize;
    let mut line_no = 0u64;
    for raw in bytes.split(|&b| b == b'\n') {
        line_no += 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        match line.iter().position(|&b| b != b' ') {
            None => continue,
            Some(p) if line[p] == b'#' => continue,
            _ => {}
        }
        if line[0] != b' ' {
            let (name, total, head) = head_line(line).ok_or_else(|| {
                Error::input(format!("expected 'NAME:TOTAL:HEAD', found `{}`", text(line))).at_line(line_no)
            })?;
            let name = text(name);
            profile.context_sensitive |= name.starts_with('[');
            let f = profile.functions.entry(name.clone()).or_default();
            f.total = f.total.checked_add(total).ok_or_else(|| overflow(line_no))?;
            f.head = f.head.checked_add(head).ok_or_else(|| overflow(line_no))?;
            top = Some(name);
            path.clear();
            metadata_depth = 0;
            continue;
        }
        let depth = line.iter().take_while(|&&b| b == b' ').count();
        let parsed = body_line(line, depth).map_err(|e| {
            let what = match e {
                Expected::Metadata => "'!CFGChecksum: NUM' or '!Attributes: NUM'",
                Expected::Line => "'NUM[.NUM]: NUM[ NAME:NUM]*' or 'NUM[.NUM]: NAME:NUM'",
            };
            Error::input(format!("expected {what}, found `{}`", text(line))).at_line(line_no)
        })?;
        let Some(name) = &top else {
            return Err(Error::input(format!("`{}` comes before any 'NAME:TOTAL:HEAD'", text(line)))
                .at_line(line_no)
                .with_hint("a sample profile starts with a function's header at the left margin"));
        };
        if !matches!(parsed, Line::Metadata { .. }) && depth == metadata_depth {
            return Err(Error::input(format!("`{}` follows the function's metadata", text(line)))
                .at_line(line_no)
                .with_hint("metadata (!CFGChecksum, !Attributes) ends a function's lines"));
        }
        // The stack holds the top function and each call site's callee: depth d is below the
        // d-th of them.
        path.truncate(depth.saturating_sub(1));
        let f = at_path(&mut profile.functions, name, &path)
            .ok_or_else(|| Error::input("the inline stack names a function not read").at_line(line_no))?;
        match parsed {
            Line::Body { at, count, targets } => {
                let entry = f.body.entry(at).or_default();
                for (callee, calls) in targets {
                    let c = entry.1.entry(text(callee)).or_default();
                    *c = c.checked_add(calls).ok_or_else(|| overflow(line_no))?;
                }
                entry.0 = entry.0.checked_add(count).ok_or_else(|| overflow(line_no))?;
            }
            Line::CallSite { at, callee, total } => {
                if path.len() + 1 >= MAX_DEPTH {
                    return Err(Error::input(format!("inlined call sites nest past {MAX_DEPTH} levels"))
                        .at_line(line_no));
                }
                let callee = text(callee);
                let inlined = f.inlined.entry(at).or_default().entry(callee.clone()).or_default();
                inlined.total = inlined.total.checked_add(total).ok_or_else(|| overflow(line_no))?;
                path.push((at, callee));
                metadata_depth = 0;
            }
            Line::Metadata { checksum, attributes } => {
                // Each metadata line sets the attributes, 0 when it states none, as LLVM does.
                f.attributes = attributes;
                if checksum.is_some_and(|c| c != 0) && depth == 1 {
                    profile.probe_based = true;
                }
                metadata_depth = depth;
            }
        }
    }
    Ok(profile)
}

/// The model of a sample profile (docs/formats/llvm-sample.md): one process, one image without
/// addresses, the event `samples`; each function a symbol, each body line's count a cost at
/// the innermost function's line offset (discriminators added up) and a stack sample on the
/// path of inlined functions, the costs being the stacks' leaf samples.
pub fn into_model(samples: &SampleProfile) -> Profile {
    let mut profile = Profile::default();
    profile.events.push(Event::new("samples"));
    profile.meta.headers.push((cfghub_model::ir::EVENT_UNIT_KEY.into(), "samples samples".into()));
    let mut image = Image { no_addresses: true, leaf_samples: true, ..Image::default() };
    let mut stacks = Stacks::with_width(1);
    let mut symbols: HashMap<String, u32> = HashMap::new();
    let mut rows: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    let mut names: Vec<&String> = samples.functions.keys().collect();
    names.sort_unstable();
    // (function, its name, the stack node of its caller) still to walk.
    let mut todo: Vec<(&FunctionSamples, &str, u32)> =
        names.iter().rev().map(|n| (&samples.functions[*n], n.as_str(), NO_INDEX)).collect();
    while let Some((f, name, parent)) = todo.pop() {
        let frame = profile.frames.intern(name);
        if profile.frame_sources.len() <= frame as usize {
            profile.frame_sources.resize(frame as usize + 1, FrameSource::default());
        }
        profile.frame_sources[frame as usize].line = Some(0);
        let node = stacks.node(parent, frame);
        let symbol = *symbols.entry(name.to_string()).or_insert_with(|| {
            image.symbols.push(Symbol { name: name.to_string(), offset: None, size: None, file: None });
            image.symbols.len() as u32 - 1
        });
        let mut here: u64 = 0;
        for (&(offset, _), (count, _)) in &f.body {
            let row = rows.entry((symbol, offset)).or_default();
            *row = row.saturating_add(*count);
            here = here.saturating_add(*count);
        }
        if here > 0 {
            stacks.push_sample(node, None, &[i128::from(here)]);
        }
        for callees in f.inlined.values().rev() {
            for (callee, s) in callees.iter().rev() {
                todo.push((s, callee.as_str(), node));
            }
        }
    }
    for ((symbol, line), value) in rows {
        image.costs.push(Cost {
            symbol: Some(symbol),
            offset: None,
            file: None,
            line: Some(line),
            values: [value].into_iter().collect(),
        });
    }
    profile.processes.push(Process { images: vec![image], stacks, ..Process::default() });
    profile
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_llvm_reads_them() {
        let p = parse(b"main:300:2\n 1: 100\n 2.3: 50 foo:20 a:b:7\n 4: inl:40\n  0: 40\n !CFGChecksum: 0\nfoo:20:20\n 0: 20\n")
            .unwrap();
        let main = &p.functions["main"];
        assert_eq!((main.total, main.head), (300, 2));
        assert_eq!(main.body[&(2, 3)].0, 50);
        assert_eq!(main.body[&(2, 3)].1.get("a:b"), Some(&7));
        assert_eq!(main.inlined[&(4, 0)]["inl"].body[&(0, 0)].0, 40);
        assert!(!p.probe_based);
        // Names with blanks and colons end at the `:` an integer follows.
        let p =
            parse(b"f:1:0\n 1: 9 _M_construct<char *>:1000 string_view<std::allocator<char> >:437 a::b:3\n")
                .unwrap();
        let targets = &p.functions["f"].body[&(1, 0)].1;
        assert_eq!(targets.get("_M_construct<char *>"), Some(&1000));
        assert_eq!(targets.get("string_view<std::allocator<char> >"), Some(&437));
        assert_eq!(targets.get("a::b"), Some(&3));
    }

    #[test]
    fn the_sniffer_takes_sample_profiles_and_not_folded_stacks() {
        assert!(sniff(b"main:10:1\n 1: 10\n"));
        assert!(sniff(b"# c\nmain:10:1\n"));
        assert!(!sniff(b"a;b 12\n"));
        assert!(!sniff(b"main:10:1\nother:3:4\n"));
        assert!(!sniff(b"prog 123 [000] 1.5: cycles:\n"));
    }

    #[test]
    fn binary_forms_are_named() {
        let ext = [0x84, 0xe4, 0xd0, 0xb1, 0xf4, 0xc9, 0x94, 0xa8, 0x53];
        assert_eq!(binary_kind(&ext), Some("an extbinary sample profile"));
        assert!(parse(&ext).unwrap_err().to_string().contains("merge --sample --text"));
    }
}
