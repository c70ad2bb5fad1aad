//! The folded-stacks text, byte by byte: the lingua franca of stack tools. The folded reader
//! reads it, and the DTrace and perf readers read what inferno's collapsers make of their input.
//!
//! Each data line is `FRAME;FRAME;...;FRAME COUNT [COUNT ...]`: frames root first, joined by
//! `;`, then one count per event, separated by spaces or tabs. The counts are found from the end
//! of the line, so frame names may contain spaces (Python's `<frozen importlib._bootstrap>`).
//! Lines starting with `#` are comments (`# austin: 3.3.0`); `# events: NAME ...` names the
//! count columns. Without it one column is the event `samples`, and `k` columns are
//! `samples1` ... `samplesk` (two columns are the before and after of a differential profile).
//!
//! The line splitter works on the raw bytes of a reused buffer (memchr); frames are interned
//! into [`Profile::frames`], and the frames a line shares with the previous one (sorted folded
//! files share long prefixes) are reused without hashing them again.

use std::io::BufRead;

use memchr::{memchr_iter, memrchr2};
use rustc_hash::FxHashMap;

use cfghub_model::error::{Error, Findings, Place, Result};
use cfghub_model::ir::{
    parse_decimal, power_of_ten, Event, FrameId, Process, Profile, StackValue, Stacks, NO_INDEX,
};

/// The key of a comment line kept in [`cfghub_model::ir::Meta::headers`]; the writer puts them back.
pub(crate) const COMMENT_KEY: &str = "comment";

/// The comment that names the count columns.
pub(crate) const EVENTS_PREFIX: &str = "events:";

/// The name of a count column the input does not name (`samples`; `samples1`, `samples2` for
/// several).
pub const UNNAMED_COLUMN: &str = "samples";

/// Event names for `columns` unnamed count columns.
pub fn unnamed_column_names(columns: usize) -> Vec<String> {
    if columns == 1 {
        vec![UNNAMED_COLUMN.to_string()]
    } else {
        (1..=columns).map(|i| format!("{UNNAMED_COLUMN}{i}")).collect()
    }
}

/// Reads a whole folded-stacks input into one process (pid 0) of stacks, in input order
/// (equal stacks are not merged: a flame chart needs the order).
pub fn read(input: &mut dyn BufRead, findings: &mut Findings) -> Result<Profile> {
    let mut parser = Parser::default();
    // Lines are parsed in place in the reader's buffer; only a line that straddles two
    // buffers is copied.
    let mut carry: Vec<u8> = Vec::new();
    let mut line_no = 0u64;
    loop {
        let buf = input.fill_buf().map_err(|e| Error::io("-", e))?;
        if buf.is_empty() {
            if !carry.is_empty() {
                line_no += 1;
                parser.line(&carry, line_no, findings)?;
            }
            break;
        }
        let len = buf.len();
        let mut start = 0;
        for end in memchr_iter(b'\n', buf) {
            line_no += 1;
            if carry.is_empty() {
                parser.line(&buf[start..end], line_no, findings)?;
            } else {
                carry.extend_from_slice(&buf[start..end]);
                parser.line(&carry, line_no, findings)?;
                carry.clear();
            }
            start = end + 1;
        }
        carry.extend_from_slice(&buf[start..]);
        input.consume(len);
    }
    Ok(parser.finish())
}

/// Parses folded stacks already in memory (what the DTrace and perf collapsers produce).
pub fn read_bytes(bytes: &[u8], findings: &mut Findings) -> Result<Profile> {
    let mut parser = Parser::default();
    let mut start = 0;
    let mut line_no = 0u64;
    for end in memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len())) {
        if start < end || end < bytes.len() {
            line_no += 1;
            parser.line(&bytes[start..end], line_no, findings)?;
        }
        start = end + 1;
    }
    Ok(parser.finish())
}

#[derive(Default)]
struct Parser {
    profile: Profile,
    stacks: Stacks,
    /// The values of the line being read.
    values: Vec<StackValue>,
    /// Count columns per line, fixed by `# events:` or by the first data line.
    columns: Option<usize>,
    /// Names from `# events:`, when given.
    names: Option<Vec<String>>,
    /// The previous line's stack text and, for each of its frames, its id, the node of the
    /// path up to it and the end offset of its name in that text.
    prev_text: Vec<u8>,
    prev_frames: Vec<(FrameId, u32, usize)>,
    /// Frame ids by the raw bytes of their names, hashed with rustc's FxHash: fast on short
    /// keys, and frame names come from the profile, not from an adversary choosing collisions.
    ids: FxHashMap<Box<[u8]>, FrameId>,
    warned_utf8: bool,
}

/// Length of the common prefix of two byte strings, compared eight bytes at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_le_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]);
        let y = u64::from_le_bytes([y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]]);
        let diff = x ^ y;
        if diff != 0 {
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

impl Parser {
    fn line(&mut self, raw: &[u8], line_no: u64, findings: &mut Findings) -> Result<()> {
        let line = trim(raw);
        if line.is_empty() {
            return Ok(());
        }
        if line[0] == b'#' {
            return self.comment(line, line_no);
        }
        let columns = match self.columns {
            Some(c) => c,
            None => {
                let c = count_trailing_numbers(line);
                if c == 0 {
                    return Err(bad_line(line_no, line));
                }
                self.columns = Some(c);
                c
            }
        };
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        let mut rest = line;
        for column in (0..columns).rev() {
            let split = match memrchr2(b' ', b'\t', rest) {
                Some(i) => i,
                None => return Err(bad_line(line_no, line)),
            };
            let token = &rest[split + 1..];
            let (value, decimals) = parse_decimal(token).ok_or_else(|| {
                Error::input(format!(
                    "expected {columns} count(s) at the end of the line, found `{}`",
                    String::from_utf8_lossy(token)
                ))
                .at_line(line_no)
            })?;
            values.push(self.scaled(column, value, decimals).ok_or_else(|| {
                Error::input(format!("the count `{}` is too large to add up", String::from_utf8_lossy(token)))
                    .at_line(line_no)
            })?);
            rest = trim_end(&rest[..split]);
        }
        values.reverse();
        if rest.is_empty() {
            return Err(Error::input("expected a stack of frames before the count")
                .at_line(line_no)
                .with_hint("a folded line is `root;caller;leaf COUNT`"));
        }
        let node = self.frames(rest, line_no, findings);
        if self.stacks.width() < columns {
            self.stacks.widen(columns);
        }
        self.stacks.push_sample(node, None, &values);
        self.values = values;
        Ok(())
    }

    /// A count of `decimals` places as a value of column `column`, whose values get finer
    /// places when the count has more (exact: `0.1` is 1 tenth); `None` past the value range.
    fn scaled(&mut self, column: usize, value: StackValue, decimals: u8) -> Option<StackValue> {
        if decimals > self.stacks.decimals_of(column) {
            if self.stacks.width() <= column {
                self.stacks.widen(column + 1);
            }
            if !self.stacks.set_decimals(column, decimals) {
                return None;
            }
        }
        value.checked_mul(power_of_ten(self.stacks.decimals_of(column) - decimals))
    }

    fn comment(&mut self, line: &[u8], line_no: u64) -> Result<()> {
        let text = String::from_utf8_lossy(&line[1..]);
        let text = text.strip_prefix(' ').unwrap_or(&text);
        if let Some(names) = text.strip_prefix(EVENTS_PREFIX) {
            if self.names.is_some() || self.columns.is_some() {
                return Err(
                    Error::input("`# events:` must come once, before the first stack").at_line(line_no)
                );
            }
            let names: Vec<String> = names.split_whitespace().map(str::to_string).collect();
            if names.is_empty() {
                return Err(Error::input("expected event names after `# events:`").at_line(line_no));
            }
            self.columns = Some(names.len());
            self.names = Some(names);
        } else {
            self.profile.meta.headers.push((COMMENT_KEY.to_string(), text.to_string()));
        }
        Ok(())
    }

    /// Interns the frames of one stack, reusing the previous line's ids for a shared prefix,
    /// and returns the node of its path.
    fn frames(&mut self, text: &[u8], line_no: u64, findings: &mut Findings) -> u32 {
        // Length of the common prefix, cut back to a frame boundary of both lines.
        let common = common_prefix(text, &self.prev_text);
        let reused = self
            .prev_frames
            .iter()
            .take_while(|&&(_, _, end)| end <= common && (end == text.len() || text.get(end) == Some(&b';')))
            .count();
        self.prev_frames.truncate(reused);
        let (mut start, mut node) = match self.prev_frames.last() {
            Some(&(_, node, end)) => (end + 1, node),
            None => (0, NO_INDEX),
        };
        while start <= text.len() {
            let end = memchr::memchr(b';', &text[start..]).map_or(text.len(), |i| start + i);
            let id = self.intern(&text[start..end], line_no, findings);
            node = self.stacks.node(node, id);
            self.prev_frames.push((id, node, end));
            start = end + 1;
        }
        self.prev_text.clear();
        self.prev_text.extend_from_slice(text);
        node
    }

    /// The id of a frame name: looked up by its bytes with a fast hash first, interned into
    /// [`Profile::frames`] when new.
    fn intern(&mut self, name: &[u8], line_no: u64, findings: &mut Findings) -> FrameId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = match std::str::from_utf8(name) {
            Ok(s) => self.profile.frames.intern(s),
            Err(_) => {
                if !self.warned_utf8 {
                    self.warned_utf8 = true;
                    findings.warn(
                        Some(Place::Line(line_no)),
                        "frame names that are not UTF-8 were read with U+FFFD for the bad bytes",
                    );
                }
                self.profile.frames.intern(&String::from_utf8_lossy(name))
            }
        };
        self.ids.insert(name.into(), id);
        id
    }

    fn finish(mut self) -> Profile {
        let names = self.names.unwrap_or_else(|| unnamed_column_names(self.columns.unwrap_or(1)));
        self.stacks.widen(names.len());
        self.profile.events = names.into_iter().map(Event::new).collect();
        self.profile.processes = vec![Process { stacks: self.stacks, ..Process::default() }];
        self.profile
    }
}

fn bad_line(line_no: u64, line: &[u8]) -> Error {
    let shown: String = String::from_utf8_lossy(line).chars().take(80).collect();
    Error::input(format!("expected `frame;frame;... COUNT`, found `{shown}`"))
        .at_line(line_no)
        .with_hint("folded stacks end every line with a space and a count")
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c')
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_space(*first) {
            break;
        }
        s = rest;
    }
    trim_end(s)
}

fn trim_end(mut s: &[u8]) -> &[u8] {
    while let [rest @ .., last] = s {
        if !is_space(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// How many whitespace-separated counts end the line, leaving a non-empty stack before them.
fn count_trailing_numbers(line: &[u8]) -> usize {
    let mut rest = line;
    let mut n = 0;
    while let Some(split) = memrchr2(b' ', b'\t', rest) {
        if parse_decimal(&rest[split + 1..]).is_none() {
            break;
        }
        let before = trim_end(&rest[..split]);
        if before.is_empty() {
            break;
        }
        n += 1;
        rest = before;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Profile> {
        read_bytes(text.as_bytes(), &mut Findings::default())
    }

    /// Every line's frames and values, the values as they read (`2.5`).
    fn lines(p: &Profile) -> Vec<(Vec<&str>, Vec<f64>)> {
        let stacks = &p.processes[0].stacks;
        stacks
            .samples()
            .map(|s| {
                let frames = stacks.frames(s.node).iter().map(|&f| p.frames.get(f)).collect();
                let values = s
                    .values
                    .iter()
                    .enumerate()
                    .map(|(e, &v)| cfghub_model::ir::to_f64(v, stacks.decimals_of(e)));
                (frames, values.collect())
            })
            .collect()
    }

    #[test]
    fn counts_frames_and_prefix_reuse() {
        let p = parse("a;b;c 3\na;b;d 2.5\na;bb 1\na 4\n").unwrap();
        assert_eq!(p.events, vec![Event::new("samples")]);
        assert_eq!(
            lines(&p),
            vec![
                (vec!["a", "b", "c"], vec![3.0]),
                (vec!["a", "b", "d"], vec![2.5]),
                (vec!["a", "bb"], vec![1.0]),
                (vec!["a"], vec![4.0]),
            ]
        );
        let names: Vec<&str> = p.frames.iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["a", "b", "c", "d", "bb"]);
    }

    #[test]
    fn spaces_in_names_columns_and_headers() {
        let p = parse("# austin: 3.3.0\nP1;<frozen x>:f:1 105\n").unwrap();
        assert_eq!(p.meta.headers, vec![("comment".into(), "austin: 3.3.0".into())]);
        assert_eq!(lines(&p), vec![(vec!["P1", "<frozen x>:f:1"], vec![105.0])]);
        let p = parse("a;b 31 56\nc 6 2\n").unwrap();
        assert_eq!(p.events, vec![Event::new("samples1"), Event::new("samples2")]);
        assert_eq!(lines(&p)[1], (vec!["c"], vec![6.0, 2.0]));
        let p = parse("# events: cycles\nmain 7 9\n").unwrap();
        assert_eq!(lines(&p), vec![(vec!["main 7"], vec![9.0])]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("a 1\nb x\n").unwrap_err();
        assert_eq!(e.place, Some(Place::Line(2)));
        let e = parse("a 1 2\nb 3\n").unwrap_err();
        assert_eq!(e.place, Some(Place::Line(2)));
        assert!(parse("justaword\n").is_err());
        assert!(parse("a -3\n").is_err());
        assert!(parse("# events:\na 1\n").is_err());
    }

    #[test]
    fn lines_straddling_buffers_read_like_bytes_in_memory() {
        let text = "# events: a b\nroot;x;y 1 2\nroot;x;z 3.5 4\nroot;w 5 6\nother 7 8";
        let expected = parse(text).unwrap();
        for capacity in [1, 2, 3, 7, 16] {
            let mut input = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            assert_eq!(read(&mut input, &mut Findings::default()).unwrap(), expected, "{capacity}");
        }
        let err =
            read(&mut std::io::BufReader::with_capacity(4, &b"a 1\nb 2\nc\n"[..]), &mut Findings::default());
        assert_eq!(err.unwrap_err().place, Some(Place::Line(3)));
    }

    #[test]
    fn common_prefixes() {
        assert_eq!(common_prefix(b"", b"abc"), 0);
        assert_eq!(common_prefix(b"abcdefghij", b"abcdefghij"), 10);
        assert_eq!(common_prefix(b"abcdefghij", b"abcdefgXij"), 7);
        assert_eq!(common_prefix(b"abcdefghijklmnopq", b"abcdefghijklmnopZ"), 16);
        assert_eq!(common_prefix(b"abcdefghijk", b"abcdefghi"), 9);
        assert_eq!(common_prefix(b"Xbc", b"abc"), 0);
    }

    #[test]
    fn big_and_fractional_counts() {
        assert_eq!(parse_decimal(b"18446744073709551615"), Some((StackValue::from(u64::MAX), 0)));
        assert_eq!(parse_decimal(b"99999999999999999999999"), Some((99_999_999_999_999_999_999_999, 0)));
        assert_eq!(parse_decimal(b"0.1"), Some((1, 1)));
        assert_eq!(parse_decimal(b"3."), Some((3, 0)));
        assert_eq!(parse_decimal(b".5"), None);
        assert_eq!(parse_decimal(b"1e5"), None);
    }

    #[test]
    fn values_stay_exact_integers_of_decimal_places() {
        let p = parse("a 9007199254740993\nb 18446744073709551615\nc 0.5\nd 2\n").unwrap();
        let stacks = &p.processes[0].stacks;
        assert_eq!(stacks.decimals_of(0), 1);
        let values: Vec<StackValue> = stacks.samples().map(|s| s.values[0]).collect();
        assert_eq!(values, [90071992547409930, 184467440737095516150, 5, 20]);
        // A count beyond any sum is refused where it stands.
        let e = parse("a 1\nb 999999999999999999999999999999999999999999\n").unwrap_err();
        assert_eq!(e.place, Some(Place::Line(2)));
    }
}
