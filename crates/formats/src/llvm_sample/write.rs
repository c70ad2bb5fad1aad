//! The text sample profile (see [`super`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use super::dwarf::{DebugInfo, Frame};
use super::Options;
use crate::format::WriteOptions;
use cfghub_analysis::addresses::ElfLayout;
use cfghub_analysis::events::{self, Unnamed};
pub use cfghub_analysis::names::require_code_addresses as refuse_without_addresses;
use cfghub_analysis::names::{choose_binary, ChosenBinary};
use cfghub_analysis::sample_profile::{FunctionSamples as Samples, SampleProfile};
use cfghub_analysis::symbolize::elf::ElfFile;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{Image, NodeRef, Profile};

/// The binary of `image` and where its segments go: `--symbols` when given, else the image's
/// own file when it can be read.
pub(crate) fn binary_of(
    profile: &Profile,
    image: &Image,
    options: &WriteOptions,
) -> Option<(PathBuf, ElfLayout)> {
    let path = options
        .formats
        .get::<Options>()
        .binary
        .or_else(|| image.file.map(|f| PathBuf::from(profile.file_name(f))))
        .filter(|p| p.is_file())?;
    let elf = ElfFile::open(&path).ok()?;
    Some((path, ElfLayout::of(&elf)))
}

/// The event whose samples count executions, for profiles without blocks.
pub(crate) fn event_of(profile: &Profile, options: &WriteOptions) -> Result<usize> {
    Ok(events::chosen(profile, options.event.as_deref(), Unnamed::First)?.first().copied().unwrap_or(0))
}

/// Writes the chosen binary's text sample profile; needs the binary's DWARF line table, unless
/// the profile's samples carry symbols and lines themselves.
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    print_all(out, &sample_profile(profile, options, findings)?.functions)
}

/// The sample profile [`write`] writes for `profile`: the chosen binary's functions, from its
/// DWARF line table, or from the lines the profile's samples carry themselves.
pub fn sample_profile(
    profile: &Profile,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<SampleProfile> {
    if let Some(top) = without_addresses(profile, options, findings)? {
        return Ok(SampleProfile { functions: top, ..SampleProfile::default() });
    }
    refuse_without_addresses(profile, "llvm-sample")?;
    cfghub_analysis::totals::note_no_events(
        findings,
        "llvm-sample",
        profile,
        "a sample profile holds executions or samples per function and source line, not the events' costs",
    );
    let opts = options.formats.get::<Options>();
    let Some(chosen) = choose_binary(profile, opts.image.as_deref(), opts.binary.as_deref())? else {
        return Ok(SampleProfile::default());
    };
    let (p, i) = chosen.places[0];
    let image = &profile.processes[p].images[i as usize];
    let Some((path, _)) = binary_of(profile, image, options) else {
        if image.blocks.is_empty() && image.costs.iter().any(|c| c.line.is_some() && c.symbol.is_some()) {
            let top = from_profile_lines(profile, &chosen, options, findings)?;
            return Ok(SampleProfile { functions: top, ..SampleProfile::default() });
        }
        return Err(Error::input(format!(
            "llvm-sample: the binary of {} with its DWARF is needed (line numbers)",
            profile.image_name(image)
        ))
        .with_hint("name it with --symbols BINARY"));
    };
    let debug = DebugInfo::open(&path)?;
    let event = event_of(profile, options)?;
    let mut top: HashMap<String, Samples> = HashMap::new();
    let mut unnamed = 0u64;
    for &(p, i) in &chosen.places {
        unnamed += add_image(&mut top, &debug, &profile.processes[p], i, event);
    }
    if unnamed > 0 {
        findings.warn(None, format!("{unnamed} code ranges without DWARF functions left out"));
    }
    warn_other_images(profile, &chosen, findings);
    Ok(SampleProfile { functions: top, ..SampleProfile::default() })
}

/// Names, in a warning, the images with samples or blocks that are not the binary written.
fn warn_other_images(profile: &Profile, chosen: &ChosenBinary, findings: &mut Findings) {
    if !chosen.others.is_empty() {
        let (p, i) = chosen.places[0];
        let name = profile.image_name(&profile.processes[p].images[i as usize]);
        findings.detail(
            None,
            format!(
                "code of images other than {name} left out (a sample profile is of one binary): {}",
                chosen.left_out_note()
            ),
        );
    }
}

/// Adds the blocks (else the samples of `event`) and calls of one process's image of the
/// binary; returns the code ranges DWARF names no function for.
fn add_image(
    top: &mut HashMap<String, Samples>,
    debug: &DebugInfo,
    process: &cfghub_model::ir::Process,
    image_index: u32,
    event: usize,
) -> u64 {
    let image = &process.images[image_index as usize];
    let address = |offset: u64| debug.layout.address(image, offset);
    let mut unnamed = 0u64;
    // Each block's bytes, a line-table row at a time: a row's code has one line and one chain
    // of inlined functions.
    for b in image.blocks.iter().filter(|b| b.count.unwrap_or(0) > 0) {
        let count = b.count.unwrap_or(0);
        // The block's last instruction's length, where the profile had to guess it (a jump or
        // return followed by padding), from the binary's code.
        let start = address(b.offset);
        let last = address(b.last_instr());
        let end = match debug.branch_length(last) {
            Some(len) => last.saturating_add(len),
            None => start.saturating_add(u64::from(b.size.max(1))),
        };
        let mut a = start;
        while a < end {
            let next = debug.next_row(a).clamp(a + 1, end);
            let frames = debug.frames(a);
            if frames.is_empty() {
                unnamed += 1;
            } else {
                add_body(top, &frames, count, count.saturating_mul(next - a));
            }
            a = next;
        }
    }
    if image.blocks.is_empty() {
        // Samples at addresses: each counts once, where it was taken.
        for cost in &image.costs {
            let (Some(offset), value) = (cost.offset, cost.value(event)) else { continue };
            let frames = debug.frames(address(offset));
            if value > 0 && !frames.is_empty() {
                add_body(top, &frames, value, value);
            }
        }
    }
    for e in process.edges.iter().filter(|e| e.kind.is_call() && e.total() > 0) {
        let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else { continue };
        if s.image != image_index || t.image != image_index {
            continue;
        }
        let Some(callee) = debug.function_at(address(process.block(t).offset)) else { continue };
        let frames = debug.frames(address(process.block(s).last_instr()));
        if frames.is_empty() {
            continue;
        }
        let callee = callee.to_string();
        let leaf = leaf(top, &frames, 0);
        let entry = leaf.body.entry(location(&frames[frames.len() - 1])).or_default();
        *entry.1.entry(callee.clone()).or_default() += e.total();
        let head = &mut top.entry(callee).or_default().head;
        *head = head.saturating_add(e.total());
    }
    unnamed
}

/// Samples at addresses whose profile names their function and line (pprof), without the
/// binary: each function by the profile's own name, its lines as offsets from the first line
/// the profile states for it (pprof `Function.start_line`; the line itself when none).
/// Inlined code counts as its own function's, as the profile's leaf frames count it.
fn from_profile_lines(
    profile: &Profile,
    chosen: &ChosenBinary,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<HashMap<String, Samples>> {
    let places = chosen.places.iter().map(|&(p, i)| &profile.processes[p].images[i as usize]);
    let (top, unplaced, without_line) = by_lines(profile, places, options)?;
    // One line for what the missing binary costs: the inline chains, samples on no line
    // (functions whose first line the profile does not state: pprof's `start_line`, written
    // by Go 1.20 on) and samples at addresses without a function and line.
    let mut lost = vec!["no inline chains".to_string()];
    if unplaced > 0 {
        lost.push(format!("{unplaced} samples on no line (their function's first line is unknown)"));
    }
    if without_line > 0 {
        lost.push(format!("{without_line} samples left out (no function and line at their address)"));
    }
    findings.warn(
        None,
        format!("llvm-sample: no binary found (--symbols BINARY names one): {}", lost.join(", ")),
    );
    warn_other_images(profile, chosen, findings);
    Ok(top)
}

/// A profile without code addresses whose samples name their function and line (one read
/// from a sample profile): its functions from those lines, with a warning for samples on no
/// line; `None` for any other profile.
fn without_addresses(
    profile: &Profile,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<Option<HashMap<String, Samples>>> {
    let images = || profile.processes.iter().flat_map(|p| p.images.iter());
    let has_addresses = images().any(|i| (!i.no_addresses && !i.blocks.is_empty()) || i.costs.has_offsets());
    let lines = |i: &&Image| {
        i.no_addresses
            && i.blocks.is_empty()
            && i.costs.iter().any(|c| c.line.is_some() && c.symbol.is_some())
    };
    if has_addresses || !images().any(|i| lines(&i)) {
        return Ok(None);
    }
    let (top, unplaced, without_line) = by_lines(profile, images().filter(lines), options)?;
    let mut lost = Vec::new();
    if unplaced > 0 {
        lost.push(format!("{unplaced} samples on no line (their function's first line is unknown)"));
    }
    if without_line > 0 {
        lost.push(format!("{without_line} samples left out (no function and line)"));
    }
    if !lost.is_empty() {
        findings.warn(None, format!("llvm-sample: {}", lost.join(", ")));
    }
    Ok(Some(top))
}

/// The functions of the samples of `images` that name their function and line, each by the
/// profile's own name, its lines as offsets from the function's first line as the profile
/// states it; with the samples on no line (their function's first line unknown) and those
/// without a function and line.
fn by_lines<'a>(
    profile: &Profile,
    places: impl Iterator<Item = &'a Image>,
    options: &WriteOptions,
) -> Result<(HashMap<String, Samples>, u64, u64)> {
    let event = event_of(profile, options)?;
    let mut top: HashMap<String, Samples> = HashMap::new();
    let (mut without_line, mut unplaced) = (0u64, 0u64);
    for (image, cost) in places.flat_map(|image| image.costs.iter().map(move |c| (image, c))) {
        let value = cost.value(event);
        let name = cost.symbol.map(|s| &image.symbols[s as usize].name);
        // (A name with a line break or other control character cannot be written.)
        let (Some(name), Some(line), true) =
            (name.filter(|n| !n.is_empty() && !n.contains(char::is_control)), cost.line, value > 0)
        else {
            without_line = without_line.saturating_add(value);
            continue;
        };
        let first = profile.frames.lookup(name).and_then(|f| profile.frame_source(f)).and_then(|s| s.line);
        match first.filter(|&f| f <= line) {
            Some(decl_line) => {
                let frame = Frame { function: name.clone(), line, decl_line, ..Frame::default() };
                add_body(&mut top, std::slice::from_ref(&frame), value, value);
            }
            None => {
                // Lines are offsets from the function's first line: without it, the function's
                // total alone.
                let s = top.entry(name.clone()).or_default();
                s.total = s.total.saturating_add(value);
                unplaced = unplaced.saturating_add(value);
            }
        }
    }
    Ok((top, unplaced, without_line))
}

/// Writes the functions, the busiest first.
fn print_all(out: &mut dyn Write, top: &HashMap<String, Samples>) -> Result<()> {
    let mut functions: Vec<(&String, &Samples)> =
        top.iter().filter(|(_, s)| s.total > 0 || s.head > 0).collect();
    functions.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(b.0)));
    let mut text = String::new();
    for (name, samples) in functions {
        print(&mut text, name, samples, 0);
    }
    out.write_all(text.as_bytes()).map_err(|e| Error::io("output", e))
}

/// A frame's place in its function: (line offset from the function's first line, base
/// discriminator), as LLVM keys samples.
fn location(frame: &Frame) -> (u32, u32) {
    (frame.line.wrapping_sub(frame.decl_line) & 0xffff, base_discriminator(frame.discriminator))
}

/// The base discriminator of a DWARF discriminator: its first component.
fn base_discriminator(d: u32) -> u32 {
    discriminator_component(d)
}

/// How many copies of its line's code the compiler made where a discriminator is (a loop
/// unrolled or vectorised, clang's `-fdebug-info-for-profiling`): its second component, 1
/// when none. Each copy runs a share of the line's executions, so a line's count, the largest
/// of its instructions', is that count times the factor (as llvm-profgen counts it).
fn duplication_factor(d: u32) -> u32 {
    discriminator_component(next_discriminator_component(d)).max(1)
}

/// The first component of a discriminator in LLVM's prefix encoding: the low bit set means
/// none (0); else 5 bits, or 12 when the sixth is set.
fn discriminator_component(d: u32) -> u32 {
    if d & 1 != 0 {
        return 0;
    }
    let u = d >> 1;
    if u & 0x20 != 0 {
        ((u >> 1) & 0xfe0) | (u & 0x1f)
    } else {
        u & 0x1f
    }
}

/// A discriminator without its first component (1 bit when it was none, else 7 or 14).
fn next_discriminator_component(d: u32) -> u32 {
    if d & 1 == 0 {
        d >> if d & 0x40 != 0 { 14 } else { 7 }
    } else {
        d >> 1
    }
}

/// The samples of the innermost frame, every frame's total raised by `bytes_count`.
fn leaf<'a>(top: &'a mut HashMap<String, Samples>, frames: &[Frame], bytes_count: u64) -> &'a mut Samples {
    let mut s = top.entry(frames[0].function.clone()).or_default();
    s.total = s.total.saturating_add(bytes_count);
    for pair in frames.windows(2) {
        let site = location(&pair[0]);
        s = s.inlined.entry(site).or_default().entry(pair[1].function.clone()).or_default();
        s.total = s.total.saturating_add(bytes_count);
    }
    s
}

/// Code run `count` times: the innermost function's line takes the largest count of its
/// instructions times its duplication factor; every function on the chain counts the bytes run.
fn add_body(top: &mut HashMap<String, Samples>, frames: &[Frame], count: u64, bytes_count: u64) {
    let innermost = &frames[frames.len() - 1];
    let count = count.saturating_mul(u64::from(duplication_factor(innermost.discriminator)));
    let loc = location(innermost);
    let s = leaf(top, frames, bytes_count);
    let entry = s.body.entry(loc).or_default();
    entry.0 = entry.0.max(count);
}

fn print(text: &mut String, name: &str, s: &Samples, indent: usize) {
    use std::fmt::Write as _;
    if indent == 0 {
        let _ = writeln!(text, "{name}:{}:{}", s.total, s.head);
    } else {
        let _ = writeln!(text, "{name}:{}", s.total);
    }
    let loc = |(offset, d): (u32, u32)| if d == 0 { format!("{offset}") } else { format!("{offset}.{d}") };
    for (&at, (count, targets)) in &s.body {
        let _ = write!(text, "{:indent$}{}: {count}", "", loc(at), indent = indent + 1);
        let mut sorted: Vec<(&String, &u64)> = targets.iter().collect();
        sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (callee, n) in sorted {
            let _ = write!(text, " {callee}:{n}");
        }
        text.push('\n');
    }
    for (&at, callees) in &s.inlined {
        for (callee, samples) in callees {
            let _ = write!(text, "{:indent$}{}: ", "", loc(at), indent = indent + 1);
            print(text, callee, samples, indent + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Discriminators as LLVM encodes them: base 0 with factor 20 (81, what clang 19 writes
    /// for a loop unrolled 20 times with `-fdebug-info-for-profiling`), a base of 1 (2), a
    /// base of 40 (the 12-bit form), none (1), and base 3 with factor 4 (7 bits each).
    #[test]
    fn discriminators_decode_to_llvms_base_and_duplication_factor() {
        assert_eq!((base_discriminator(81), duplication_factor(81)), (0, 20));
        assert_eq!((base_discriminator(2), duplication_factor(2)), (1, 1));
        let forty = ((((40 & 0xfe0) << 1) | (40 & 0x1f) | 0x20) << 1) as u32;
        assert_eq!(base_discriminator(forty), 40);
        assert_eq!((base_discriminator(1), duplication_factor(1)), (0, 1));
        let d = (3 << 1) | ((4 << 1) << 7);
        assert_eq!((base_discriminator(d), duplication_factor(d)), (3, 4));
    }
}
