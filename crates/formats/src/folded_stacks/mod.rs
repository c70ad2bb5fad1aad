//! Call stacks as stack tools print them, shared by every format that reads or draws them.
//!
//! Folded stacks (`main;parse;read_line 31`) are what FlameGraph's and inferno's tools exchange:
//! the folded format reads and writes them as they are, the DTrace and perf readers collapse
//! their input into them with inferno's collapsers ([`collapse`]) and read the result
//! ([`folded::read_bytes`]), and the flame-graph writer draws them. What those formats share
//! lives here, so that none of them depends on another.

pub mod folded;

use std::io::{BufRead, Read};

use cfghub_analysis::events::{self, Unnamed};
use cfghub_analysis::stacks::WrittenStacks;
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{EventId, Profile};

pub use folded::{unnamed_column_names, UNNAMED_COLUMN};

/// Reads a whole input for a collapser, refusing a line longer than [`cfghub_model::io::MAX_LINE`].
pub fn read_all(input: &mut dyn BufRead) -> Result<Vec<u8>> {
    let mut raw = Vec::new();
    cfghub_model::io::LineLimit::new(input, cfghub_model::io::MAX_LINE)
        .read_to_end(&mut raw)
        .map_err(|e| Error::io("-", e))?;
    Ok(raw)
}

/// Runs one of inferno's collapsers (DTrace, perf) over an input and returns its folded text
/// (see [`collapse_bytes`]).
pub fn collapse<C: inferno::collapse::Collapse>(
    folder: &mut C,
    input: &mut dyn BufRead,
    what: &str,
    hint: &str,
) -> Result<Vec<u8>> {
    let raw = read_all(input)?;
    collapse_bytes(folder, &raw, what, hint)
}

/// Runs one of inferno's collapsers over `raw` and returns its folded text, giving inferno only
/// what it handles. inferno takes text as ASCII: it cuts symbols at byte offsets that may fall
/// inside a character of several bytes (or inside the U+FFFD it makes of a byte that is not
/// UTF-8) and panics. So every byte past ASCII, and [`ESCAPE`] itself, goes in as `ESCAPE` and
/// two hex digits, and comes back out as itself. inferno also asserts some of its own
/// invariants on malformed input; such a panic is caught, kept off standard error, and reported
/// as bad input.
pub(crate) fn collapse_bytes<C: inferno::collapse::Collapse>(
    folder: &mut C,
    raw: &[u8],
    what: &str,
    hint: &str,
) -> Result<Vec<u8>> {
    collapse_escaped(folder, &escape(raw), what, hint)
}

/// Runs one of inferno's collapsers over text escaped as [`collapse_bytes`] escapes it, and
/// returns its folded text unescaped.
pub(crate) fn collapse_escaped<C: inferno::collapse::Collapse>(
    folder: &mut C,
    escaped: &[u8],
    what: &str,
    hint: &str,
) -> Result<Vec<u8>> {
    let mut folded = Vec::new();
    let result = quietly(|| folder.collapse(escaped, &mut folded));
    let bad = |detail: String| Error::input(format!("not {what}: {detail}")).with_hint(hint.to_string());
    match result {
        Ok(Ok(())) => Ok(unescape(folded)),
        Ok(Err(e)) => Err(bad(e.to_string())),
        Err(_) => Err(bad("the collapser could not follow its records".to_string())),
    }
}

/// The byte that starts an escaped byte on its way through inferno: a control character no
/// collapser gives a meaning to (it is not white space, not a digit, not punctuation).
pub(crate) const ESCAPE: u8 = 0x01;

/// Bytes that stand for `(` and `)` on their way through inferno where a collapser must not
/// see parentheses (see the perf reader's records), control characters as [`ESCAPE`] is;
/// where the input holds them, they go through escaped.
pub(crate) const OPEN: u8 = 0x02;
pub(crate) const CLOSE: u8 = 0x03;

/// Whether a byte goes through inferno as itself.
fn passes(b: u8) -> bool {
    b.is_ascii() && !matches!(b, ESCAPE | OPEN | CLOSE)
}

/// Whether every byte of `text` goes through inferno as itself.
fn all_pass(text: &[u8]) -> bool {
    text.is_ascii() && memchr::memchr3(ESCAPE, OPEN, CLOSE, text).is_none()
}

pub(crate) fn escape(raw: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if all_pass(raw) {
        return std::borrow::Cow::Borrowed(raw);
    }
    std::borrow::Cow::Owned(escaped(raw))
}

/// [`escape`] of text the caller gives up: the same buffer where nothing needs escaping.
pub(crate) fn escape_owned(raw: Vec<u8>) -> Vec<u8> {
    if all_pass(&raw) {
        return raw;
    }
    escaped(&raw)
}

fn escaped(raw: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 8);
    for &b in raw {
        if passes(b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[ESCAPE, HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
    out
}

fn unescape(folded: Vec<u8>) -> Vec<u8> {
    // inferno's output holds no byte past ASCII: only the bytes it was given.
    if memchr::memchr3(ESCAPE, OPEN, CLOSE, &folded).is_none() {
        return folded;
    }
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(folded.len());
    let mut from = 0;
    for i in memchr::memchr3_iter(ESCAPE, OPEN, CLOSE, &folded) {
        if i < from {
            continue;
        }
        out.extend_from_slice(&folded[from..i]);
        from = i + 1;
        match folded[i] {
            OPEN => out.push(b'('),
            CLOSE => out.push(b')'),
            _ => match (folded.get(i + 1).and_then(|&c| hex(c)), folded.get(i + 2).and_then(|&c| hex(c))) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    from = i + 3;
                }
                _ => out.push(ESCAPE),
            },
        }
    }
    out.extend_from_slice(&folded[from..]);
    out
}

/// Runs `f`, catching a panic without letting the panic hook print it (inferno's worker threads
/// panic too, so the hook stays quiet while any collapse runs).
fn quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUNNING: AtomicUsize = AtomicUsize::new(0);
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if RUNNING.load(Ordering::SeqCst) == 0 {
                default(info)
            }
        }));
    });
    RUNNING.fetch_add(1, Ordering::SeqCst);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    result
}

/// What a writer of stacks writes: the profile's own stacks, or (with a warning) stacks derived
/// from its call graph or its flat costs, those named as they are written
/// ([`cfghub_analysis::stacks::stacks_to_write`]), and the events to write (every event unless `--event` names one).
/// Refused when there is no event; `what` names the output in that message ("speedscope
/// profiles").
pub(crate) fn stacks_for_writing<'a>(
    profile: &'a Profile,
    event: Option<&str>,
    findings: &mut cfghub_model::error::Findings,
    what: &str,
) -> Result<(WrittenStacks<'a>, Vec<EventId>)> {
    let stacks = cfghub_analysis::stacks::stacks_to_write(profile, findings)?;
    let events = written_events(stacks.profile(), event, what)?;
    Ok((stacks, events))
}

fn written_events(profile: &Profile, event: Option<&str>, what: &str) -> Result<Vec<EventId>> {
    let events = events::chosen(profile, event, Unnamed::All)?;
    if events.is_empty() {
        return Err(Error::unsupported(format!("{what} need at least one event, the profile has none")));
    }
    Ok(events)
}

/// Whether the events are sample types of one sampler, each in its unit (pprof's
/// `samples/count` and `cpu/nanoseconds`): different measures of the same samples, never a
/// before/after pair, which is what flame-graph tools make of two count columns.
pub(crate) fn events_are_sample_types(profile: &Profile) -> bool {
    profile.events.len() > 1
        && profile.events.iter().all(|e| cfghub_model::ir::event_unit(&profile.meta, &e.name).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_past_ascii_go_through_escaped_and_come_back() {
        let raw: Vec<u8> = (0..=255u8).collect();
        let escaped = escape(&raw);
        assert!(escaped.iter().all(|b| b.is_ascii()));
        assert_eq!(unescape(escaped.into_owned()), raw);
        assert!(matches!(escape(b"plain text"), std::borrow::Cow::Borrowed(_)));
        // A lone escape byte that inferno cut short stays as it is.
        assert_eq!(unescape(vec![b'a', ESCAPE, b'z']), vec![b'a', ESCAPE, b'z']);
    }
}
