//! `perf script` records made ready for inferno's collapse: one text per event, every sample
//! kept.
//!
//! The collapse (FlameGraph's rules) keeps only the first event it meets; it reads a sample's
//! period only where one space separates it from the event's name, while perf pads the names
//! of two or more events to one width (`250000  cpu-clock:`); and it leaves out every frame
//! whose function starts with `(`, a rule for the process names old perf versions printed
//! among the frames. In perf's output today such a name is a function's, C++'s
//! `(anonymous namespace)::parse` above all: leaving it out drops a sample whose only frame it
//! is and gives a deeper sample's cost to the caller. So each record goes into the text of its
//! event with a header the collapse reads alike whatever perf's fields and padding
//! (`comm pid/tid 0.0: PERIOD e0:`, the collapse run once per event tag), the parentheses
//! around such a function's first group go through as control bytes that come back as
//! themselves ([`OPEN`], [`CLOSE`]), and a record without frames gets the frame `[unknown]`,
//! so that every sample lands in a stack of its event.

use crate::folded_stacks::{CLOSE, OPEN};

/// One event's records.
pub(super) struct EventRecords {
    /// The event's name as perf prints it, without the colon that ends it (`cycles:u`).
    pub name: String,
    /// The name its records go through the collapse with (`e0`, `e1`, ...).
    pub tag: String,
    pub samples: u64,
    /// How many samples state a period.
    pub with_period: u64,
    /// What the collapse is to add up: each sample's period, or 1 where it states none.
    pub total: u128,
}

/// `perf script` text (escaped for the collapse) made ready for it: every header rewritten
/// `comm pid/tid 0.0: PERIOD TAG:` (the tag naming its event), parentheses around the first
/// group of a function that starts with `(` made [`OPEN`] and [`CLOSE`], `[unknown]` added to a
/// record without frames, records whose header is not one left out. The text is changed in
/// place where every change fits (a header is rarely shorter than its rewrite; spaces fill
/// the rest, where the collapse skips them: after the pid), else copied from the first change
/// that does not. Returns the text, the events in
/// the order they first appear, and the number of records left out.
pub(super) fn prepare(mut text: Vec<u8>) -> (Vec<u8>, Vec<EventRecords>, u64) {
    let mut events: Vec<EventRecords> = Vec::new();
    let mut unreadable = 0;
    // The copy, once a change did not fit in place.
    let mut copy: Option<Vec<u8>> = None;
    // Inside a record: whether its header is one.
    let mut record: Option<bool> = None;
    let mut start = 0;
    let mut header = Vec::new();
    while start <= text.len() {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        let line = start..end;
        let next = end + 1;
        let blank = |line: &[u8]| line.iter().all(u8::is_ascii_whitespace);
        match record {
            _ if blank(&text[line.clone()]) => record = None,
            None if text[start..].starts_with(b"#") => {}
            None => {
                let Some(parsed) = Header::parse(&text[line.clone()]) else {
                    // Left out: blanked in place, not copied.
                    unreadable += 1;
                    record = Some(false);
                    if copy.is_none() {
                        text[line].fill(b' ');
                    }
                    start = next;
                    continue;
                };
                let e = event_of(&mut events, parsed.event);
                let event = &mut events[e];
                event.samples += 1;
                event.with_period += u64::from(parsed.period.is_some());
                event.total += u128::from(parsed.period.as_ref().map_or(1, |(p, _)| *p));
                // The header's rewrite after its `comm pid/tid ` part: `0.0: PERIOD TAG:`,
                // then `[unknown]` for a record without frames (on the header's line, as perf
                // prints a sample's only frame); in place it ends where the line ends or one
                // space before the frame on the header's line, spaces before it.
                header.clear();
                header.extend_from_slice(b"0.0: ");
                if let Some((_, digits)) = parsed.period {
                    header.extend_from_slice(&text[start + digits.start..start + digits.end]);
                    header.push(b' ');
                }
                header.extend_from_slice(event.tag.as_bytes());
                header.push(b':');
                let following = next.min(text.len());
                let following = following
                    ..memchr::memchr(b'\n', &text[following..]).map_or(text.len(), |i| following + i);
                let frameless = parsed.frame.is_none() && blank(&text[following]);
                if frameless {
                    header.extend_from_slice(b"  0 [unknown] ([unknown])");
                }
                let frame = parsed.frame.map(|f| start + f);
                let ids_end = start + parsed.comm_and_ids;
                let room = frame.map_or(end, |f| f - 1);
                match &mut copy {
                    None if ids_end + header.len() <= room => {
                        text[ids_end..room - header.len()].fill(b' ');
                        text[room - header.len()..room].copy_from_slice(&header);
                    }
                    _ => {
                        let out = copy.get_or_insert_with(|| text[..start].to_vec());
                        out.extend_from_slice(&text[start..ids_end]);
                        out.extend_from_slice(&header);
                        if let Some(f) = frame {
                            out.extend_from_slice(b"  ");
                            out.extend_from_slice(&text[f..end]);
                        }
                        out.push(b'\n');
                    }
                }
                if let Some(f) = frame {
                    let at = copy.as_ref().map(|out| out.len() - 1 - (end - f));
                    let trimmed = f + text[f..end].trim_ascii_end().len();
                    protect(&mut text[f..trimmed], at, &mut copy);
                }
                // A frame on the header's line ends the record (perf prints no blank line
                // after it).
                record = (frame.is_none() && !frameless).then_some(true);
                start = next;
                continue;
            }
            Some(false) => {
                if copy.is_none() {
                    text[line].fill(b' ');
                }
                start = next;
                continue;
            }
            Some(true) => {
                let at = copy.as_ref().map(|out| out.len());
                if let Some(out) = &mut copy {
                    out.extend_from_slice(&text[line.clone()]);
                    out.push(b'\n');
                }
                protect(&mut text[line], at, &mut copy);
                start = next;
                continue;
            }
        }
        if let Some(out) = &mut copy {
            out.extend_from_slice(&text[line]);
            if next <= text.len() {
                out.push(b'\n');
            }
        }
        start = next;
    }
    (copy.unwrap_or(text), events, unreadable)
}

/// The index of the event named `name`, added if new.
fn event_of(events: &mut Vec<EventRecords>, name: &[u8]) -> usize {
    if let Some(e) = events.iter().position(|e| e.name.as_bytes() == name) {
        return e;
    }
    events.push(EventRecords {
        name: String::from_utf8_lossy(name).into_owned(),
        tag: format!("e{}", events.len()),
        samples: 0,
        with_period: 0,
        total: 0,
    });
    events.len() - 1
}

/// Makes the parentheses around the first group of a frame line's function [`OPEN`] and
/// [`CLOSE`] where the function starts with `(`: in `line`, or in the copy where the line was
/// copied to (from `at`).
fn protect(line: &mut [u8], at: Option<usize>, copy: &mut Option<Vec<u8>>) {
    let Some((open, close)) = first_group(line) else { return };
    let target: &mut [u8] = match (at, copy) {
        (Some(at), Some(out)) => &mut out[at..at + line.len()],
        _ => line,
    };
    target[open] = OPEN;
    if let Some(close) = close {
        target[close] = CLOSE;
    }
}

/// A sample's header line: `comm pid/tid [cpu] time: period event: [frame]`.
pub(super) struct Header<'a> {
    /// The length of its `comm pid/tid ` part.
    pub comm_and_ids: usize,
    /// The period, and where its digits lie in the line.
    pub period: Option<(u64, std::ops::Range<usize>)>,
    pub event: &'a [u8],
    /// Where a frame on the header's line starts (perf prints a sample's only frame there).
    pub frame: Option<usize>,
}

impl<'a> Header<'a> {
    /// The header of a record, as the collapse finds its `comm pid/tid ` part (the first word
    /// of digits followed by a space); then an optional `[cpu]`, time and period, and the
    /// event's name with its colon. `None` where there is no such part, or no event after it.
    pub(super) fn parse(line: &'a [u8]) -> Option<Self> {
        let comm_and_ids = super::sample_header_end(line)?;
        // A sample of a task perf lost track of (`:-1    -1 [001] ...`): no pid or tid the
        // collapse can read, so its root would be the whole header; left out, and counted.
        let head = &line[..comm_and_ids];
        if head.windows(4).any(|w| w == b" -1 " || w == b" -1/") || head.windows(4).any(|w| w == b"/-1 ") {
            return None;
        }
        let mut rest = &line[comm_and_ids..];
        let mut period = None;
        loop {
            let (word, after) = next_word(rest)?;
            rest = after;
            let is_cpu = word.starts_with(b"[") && word.ends_with(b"]");
            let is_time = word.ends_with(b":")
                && word.len() > 1
                && word[..word.len() - 1].iter().all(|b| b.is_ascii_digit() || *b == b'.');
            if is_cpu || is_time {
                continue;
            }
            if period.is_none() && word.iter().all(u8::is_ascii_digit) {
                let value = std::str::from_utf8(word).ok()?.parse().ok();
                if let Some(value) = value {
                    let at = line.len() - after.len() - word.len();
                    period = Some((value, at..at + word.len()));
                    continue;
                }
            }
            let event = word.strip_suffix(b":").unwrap_or(word);
            let frame =
                rest.iter().position(|b| !b.is_ascii_whitespace()).map(|f| line.len() - rest.len() + f);
            let frame = frame.filter(|_| !rest.trim_ascii_end().is_empty());
            return Some(Header { comm_and_ids, period, event, frame });
        }
    }
}

/// The first word of `text` (white space before it skipped) and what follows it.
fn next_word(text: &[u8]) -> Option<(&[u8], &[u8])> {
    let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
    let text = &text[start..];
    let end = text.iter().position(u8::is_ascii_whitespace).unwrap_or(text.len());
    Some((&text[..end], &text[end..]))
}

/// Where the parentheses around the first group of a frame line's function lie
/// (`ADDRESS FUNCTION (FILE)`, split as the collapse splits it: the address up to the first
/// space, the file after the last), where the function starts with `(`.
fn first_group(line: &[u8]) -> Option<(usize, Option<usize>)> {
    // Most lines: no `(` where a function's name starts, after the address.
    let lead = line.iter().position(|b| !b.is_ascii_whitespace())?;
    let address = lead + line[lead..].iter().position(|&b| b == b' ')?;
    if line[address..].iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'(') {
        return None;
    }
    let (open, end) = frame_function(line)?;
    if open >= end || line[open] != b'(' {
        return None;
    }
    let mut depth = 0usize;
    for (i, &b) in line.iter().enumerate().take(end).skip(open) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((open, Some(i)));
                }
            }
            _ => {}
        }
    }
    Some((open, None))
}

/// Where the function's name lies in a frame line, as the collapse splits it: after the
/// address (up to the first space of the line without its leading white space), before the
/// file (the last space-separated word, in parentheses), white space trimmed.
fn frame_function(line: &[u8]) -> Option<(usize, usize)> {
    let lead = line.iter().position(|b| !b.is_ascii_whitespace())?;
    let after_address = lead + line[lead..].iter().position(|&b| b == b' ')? + 1;
    let before_file = after_address + line[after_address..].iter().rposition(|&b| b == b' ')?;
    let file = &line[before_file + 1..];
    if !(file.starts_with(b"(") && file.ends_with(b")")) {
        return None;
    }
    let region = &line[after_address..before_file];
    let start = after_address + region.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = after_address + region.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prepared text, and each event's name, samples, samples with a period and total.
    fn prepared(text: &str) -> (String, Vec<(String, u64, u64, u128)>) {
        let (out, events, _) = prepare(text.as_bytes().to_vec());
        let events = events.into_iter().map(|e| (e.name, e.samples, e.with_period, e.total)).collect();
        (String::from_utf8(out).unwrap(), events)
    }

    #[test]
    fn each_event_is_tagged_and_its_periods_read_whatever_the_padding() {
        let text = "a 1/2 5.0:     250000  cpu-clock: \n\tf1 main (/x)\n\n\
                    a 1/2 5.1:          7 task-clock: \n\tf1 main (/x)\n\n";
        let (out, events) = prepared(text);
        assert_eq!(
            out,
            "a 1/2              0.0: 250000 e0:\n\tf1 main (/x)\n\n\
             a 1/2                   0.0: 7 e1:\n\tf1 main (/x)\n\n"
        );
        assert_eq!(events, [("cpu-clock".into(), 1, 1, 250000), ("task-clock".into(), 1, 1, 7)]);
    }

    #[test]
    fn a_header_without_period_counts_one_and_keeps_its_frame() {
        let (out, events) = prepared("java 12688 [002] 6544038.708352: cycles:u:  ffff f (/x)\n");
        assert_eq!(out, "java 12688                         0.0: e0: ffff f (/x)\n");
        assert_eq!(events, [("cycles:u".into(), 1, 0, 1)]);
        // Records of one line each, no blank line between them.
        let (out, _) = prepared("a 1 1.0: 2 c: 1 f (/x)\na 1 1.0: 3 c: 1 g (/x)\n");
        assert_eq!(out, "a 1 0.0: 2 e0:  1 f (/x)\na 1 0.0: 3 e0:  1 g (/x)\n");
    }

    #[test]
    fn a_header_its_rewrite_does_not_fit_is_copied() {
        let (out, events) =
            prepared("a 1 2 c:\n\tf main (/x)\n\na 1 1.0: 3 c:\n\t1 (anonymous namespace)::g (/x)\n");
        assert_eq!(
            out,
            "a 1 0.0: 2 e0:\n\tf main (/x)\n\na 1 0.0: 3 e0:\n\t1 \u{2}anonymous namespace\u{3}::g (/x)\n"
        );
        assert_eq!(events, [("c".into(), 2, 2, 5)]);
    }

    #[test]
    fn a_record_without_frames_gets_unknown() {
        let (out, _) = prepared("a 1 5.0: 3 cpu-clock:\n\na 1 5.0: 3 cpu-clock:\n");
        assert_eq!(
            out,
            "a 1 0.0: 3 e0:  0 [unknown] ([unknown])\n\na 1 0.0: 3 e0:  0 [unknown] ([unknown])\n"
        );
    }

    #[test]
    fn a_record_whose_header_is_not_one_is_left_out() {
        let (out, events) = prepared("not a header\n\tf main (/x)\n\na 1 5.0: 3 c:\n\tf main (/x)\n");
        assert_eq!(out, "            \n            \n\na 1 0.0: 3 e0:\n\tf main (/x)\n");
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn a_sample_of_a_task_perf_lost_track_of_is_left_out_and_counted() {
        let (out, events) = prepared(":-1    -1 [001] 15159.7: 100000 cpu-clock:\n\tf main (/x)\n\n");
        assert!(events.is_empty() && out.trim().is_empty(), "{out:?}");
        assert_eq!(prepare(b":-1 -1/2067 0.0: 1 e:\n\t0 t1 (m)\n".to_vec()).2, 1);
    }

    #[test]
    fn a_function_that_starts_with_a_parenthesis_has_its_first_group_marked() {
        let line = b"\t  1139 (anonymous namespace)::spin_a(long) (/tmp/a)";
        assert_eq!(first_group(line), Some((8, Some(28))));
        assert_eq!(first_group(b"\t1139 ns::(anonymous namespace)::f (/a)"), None);
        assert_eq!(first_group(b"\t1139  (/a)"), None);
    }
}
