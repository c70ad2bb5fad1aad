//! Writing folded stacks: one line per model stack, root first, frames joined by `;`, then
//! the counts. Models without stacks get them from `cfghub_analysis::stacks`.

use std::io::Write;

use crate::format::WriteOptions;
use cfghub_analysis::stacks::WrittenStacks;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::write_error;
use cfghub_model::ir::{decimal_text, Profile};

use crate::folded_stacks::folded::{COMMENT_KEY, EVENTS_PREFIX, UNNAMED_COLUMN};
use crate::folded_stacks::stacks_for_writing;

/// Writes the profile's stacks (or stacks derived from its call graph or its flat costs, with
/// a warning).
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let (stacks, mut events) =
        stacks_for_writing(profile, options.event.as_deref(), findings, "folded stacks")?;
    let profile = stacks.profile();
    if options.event.is_none() && crate::folded_stacks::events_are_sample_types(profile) {
        events = vec![default_sample_type(profile, findings)];
    }
    let err = write_error("folded output");
    for (key, value) in &profile.meta.headers {
        if key == COMMENT_KEY && !value.starts_with(EVENTS_PREFIX) && !value.contains('\n') {
            writeln!(out, "# {value}").map_err(&err)?;
        }
    }
    let names = column_names(profile, &events, findings);
    if names.len() != 1 || names[0] != UNNAMED_COLUMN || first_line_is_ambiguous(&stacks) {
        writeln!(out, "# {EVENTS_PREFIX} {}", names.join(" ")).map_err(&err)?;
    }
    if profile.processes.len() > 1 {
        findings.detail(
            None,
            format!(
                "folded: the stacks of {} processes are written as one (folded stacks have no processes)",
                profile.processes.len()
            ),
        );
    }
    if stacks.any_thread() {
        findings.detail(None, "folded: threads of stacks are not written (folded stacks have no threads)");
    }
    let mut renamed = 0usize;
    let mut empty = 0usize;
    let mut line = Vec::with_capacity(1024);
    let decimals: Vec<u8> = events.iter().map(|&e| stacks.decimals(e)).collect();
    // With some events chosen (`--event`), a stack that took none of them (a sample of
    // another event) is not theirs: left out rather than written with 0.
    let subset = events.len() < profile.events.len();
    stacks.try_for_each(|frames, values| {
        if frames.is_empty() {
            empty += 1;
            return Ok(());
        }
        if subset && events.iter().all(|&e| values.get(e).is_none_or(|&v| v == 0)) {
            return Ok(());
        }
        line.clear();
        for (i, &f) in frames.iter().enumerate() {
            if i > 0 {
                line.push(b';');
            }
            let start = line.len();
            stacks.push_name(f, &mut line);
            if replace_separators(&mut line[start..]) {
                renamed += 1;
            }
        }
        let frames_end = line.len();
        for (&e, &places) in events.iter().zip(&decimals) {
            line.push(b' ');
            let v = values.get(e).copied().unwrap_or(0);
            if v < 0 {
                let mut text = Vec::new();
                decimal_text(v, places, &mut text);
                let frames = String::from_utf8_lossy(&line[..frames_end]).into_owned();
                return Err(Error::unsupported(format!(
                    "folded stacks hold non-negative counts; the stack {frames} has {} for '{}' (a difference profile)",
                    String::from_utf8_lossy(&text),
                    profile.events[e].name
                )));
            }
            decimal_text(v, places, &mut line);
        }
        line.push(b'\n');
        out.write_all(&line).map_err(&err)
    })?;
    if empty > 0 {
        findings.warn(None, format!("folded: {empty} stack(s) without frames not written"));
    }
    if renamed > 0 {
        findings.warn(
            None,
            format!("folded: ';' and line breaks in {renamed} frame name(s) written as ':' and ' '"),
        );
    }
    Ok(())
}

/// The one sample type written when the events are sample types and none was chosen: the
/// default one (two count columns are a before/after pair to flame-graph tools), with a
/// warning of what is left out.
fn default_sample_type(profile: &Profile, findings: &mut Findings) -> usize {
    let written = cfghub_analysis::events::stated_default(profile);
    let totals = cfghub_analysis::totals::event_totals(profile);
    let name = &profile.events[written].name;
    let kept: Vec<(String, f64)> = totals.iter().filter(|t| &t.0 == name).cloned().collect();
    let why = format!(
        "wrote '{name}' alone: folded stacks hold one measure, and flame-graph tools read two \
         columns as a before/after pair; choose another with --event"
    );
    cfghub_analysis::totals::note_left_out(findings, "folded", &totals, &kept, &why);
    written
}

/// The name of each written event's count column: its name, white space replaced by `_`
/// (`eventN` when nothing is left), with a warning for each name changed.
fn column_names(profile: &Profile, events: &[usize], findings: &mut Findings) -> Vec<String> {
    events
        .iter()
        .map(|&e| {
            let name = &profile.events[e].name;
            if name.is_empty() || name.contains(char::is_whitespace) {
                let fixed: String = name.split_whitespace().collect::<Vec<_>>().join("_");
                let fixed = if fixed.is_empty() { format!("event{e}") } else { fixed };
                findings.warn(None, format!("folded: event name '{name}' written as '{fixed}'"));
                fixed
            } else {
                name.clone()
            }
        })
        .collect()
}

/// Replaces the `;` of a frame name written into a line by `:` and its line breaks by ` `
/// (they would end the frame or the line); whether there were any.
#[inline]
fn replace_separators(name: &mut [u8]) -> bool {
    if !name.iter().any(|&b| b == b';' || b == b'\n' || b == b'\r') {
        return false;
    }
    for b in name {
        match *b {
            b';' => *b = b':',
            b'\n' | b'\r' => *b = b' ',
            _ => {}
        }
    }
    true
}

/// Whether a reader would take the end of the first stack's leaf frame for a count column
/// (a leaf named `main 7`), so that the columns must be named in a header.
fn first_line_is_ambiguous(stacks: &WrittenStacks) -> bool {
    // The walk stops at the first stack with frames, with its leaf.
    let Err(leaf) = stacks.try_for_each(|frames, _| frames.last().map_or(Ok(()), |&leaf| Err(leaf))) else {
        return false;
    };
    let mut name = Vec::new();
    stacks.push_name(leaf, &mut name);
    let name = String::from_utf8_lossy(&name);
    match name.trim_end().rfind([' ', '\t']) {
        Some(i) => cfghub_model::ir::parse_decimal(&name.trim_end().as_bytes()[i + 1..]).is_some(),
        None => false,
    }
}
