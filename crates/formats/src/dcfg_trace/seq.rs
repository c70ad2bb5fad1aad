//! Edge-id sequence strings (spec section 3.7.1) compiled into bit programs, and a streaming bit
//! reader over them.
//!
//! An `EDGE_ID_SEQUENCE` (and every `STRING_DICTIONARY` value) is text over three constructs:
//!
//! - modified Base64 characters `A`..`Z`, `a`..`z`, `0`..`9`, `+`, `-`: six bits each, most
//!   significant first (`A` = 0b000000, `-` = 0b111111; `-` stands where Base64 has `/`);
//! - `(M*...)`: the characters up to the matching `)` repeated `M` times (decimal `M`, nesting
//!   allowed);
//! - `<key>`: the value of `key` in the process's string dictionary (nesting allowed, cycles not).
//!
//! The spec describes these as textual substitutions. Done literally, `(99999999999*A)` would
//! expand into a hundred gigabytes. Here nothing is ever expanded: a string compiles into a
//! small program of [`Op`]s (literal bit runs, repeats, dictionary references) in preorder, and a
//! [`BitReader`] walks it with a stack whose depth is the nesting depth of the text, handing out
//! bits only as the edge decoder asks for them. A repeat whose body is short (at most
//! [`PERIODIC_MAX_BITS`] bits) becomes a periodic bit pattern that the reader serves in constant
//! time per refill, however large its count.

use std::collections::HashMap;

use cfghub_model::error::{Error, Result};

/// Repeats whose body holds at most this many bits are served from a periodic pattern.
pub(crate) const PERIODIC_MAX_BITS: u64 = 4096;

/// Value of a modified Base64 character, or `None`.
#[inline]
pub(crate) fn base64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'-' => Some(63),
        _ => None,
    }
}

/// The modified Base64 character for a six-bit value.
#[inline]
pub(crate) fn base64_char(v: u8) -> u8 {
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-"[(v & 63) as usize]
}

/// Whether `key` is a legal dictionary key: one or more characters of the Base64 alphabet.
pub(crate) fn is_valid_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|c| base64_value(c).is_some())
}

/// One instruction of a compiled sequence, in preorder: a repeat's body is the `body` ops that
/// follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `bits` bits stored from bit `start` of the program's words.
    Lit {
        /// First bit, counted from the most significant bit of `words[0]`.
        start: u64,
        /// Number of bits.
        bits: u64,
    },
    /// `total` bits of a pattern with period `period` bits, stored from bit `start` (the stored
    /// copy is long enough to read 64 bits from any phase). Replaces a short repeat; the
    /// `skip` ops that follow are the original body and are not executed.
    Periodic {
        /// First bit of the stored copy in the program's words.
        start: u64,
        /// Length of one period, in bits.
        period: u64,
        /// Bits the op produces in all.
        total: u64,
        /// Ops of the original body that follow and are skipped.
        skip: u32,
    },
    /// The next `body` ops, `count` times; `body_bits` is the size of one pass.
    Rep {
        /// Times the body runs: the `M` of `(M*...)`.
        count: u64,
        /// Number of ops that follow and form the body.
        body: u32,
        /// Bits produced by one pass of the body (saturating).
        body_bits: u64,
    },
    /// The dictionary entry with this index.
    Ref {
        /// Index into [`Dictionary::entries`].
        entry: u32,
    },
}

/// A compiled sequence string: ops and the literal bits they point into.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// The ops, in preorder.
    pub ops: Vec<Op>,
    /// Bits, most significant first; always followed by one spare word so two-word reads at
    /// any stored bit stay in bounds.
    pub words: Vec<u64>,
    /// Bits produced by the whole program (saturating).
    pub bits: u64,
}

/// The compiled string dictionary of one process: one program per entry, stored as op ranges
/// in a single program.
#[derive(Clone, Debug, Default)]
pub struct Dictionary {
    /// All entries' ops and literal bits, one after the other.
    pub code: Program,

    /// Op range and bit count of each entry, by index.
    pub entries: Vec<(u32, u32, u64)>,
    /// Entry index of each key.
    pub keys: HashMap<String, u32>,
    /// Keys by index, for messages.
    pub names: Vec<String>,
}

/// A place in the text, for error messages: which string and where.
fn syntax(what: &str, at: usize, message: impl std::fmt::Display) -> Error {
    Error::input(format!("{what}, character {at}: {message}"))
}

/// Writes `bits` bits (right-aligned in `value`, at most 57) at bit position `pos` of `words`.
fn put_bits(words: &mut Vec<u64>, pos: u64, value: u64, bits: u32) {
    if bits == 0 {
        return;
    }
    let end = pos + bits as u64;
    let need = end.div_ceil(64) as usize;
    if words.len() < need {
        words.resize(need, 0);
    }
    let w = (pos / 64) as usize;
    let o = (pos % 64) as u32;
    let v = value & (u64::MAX >> (64 - bits));
    if o + bits <= 64 {
        words[w] |= v << (64 - o - bits);
    } else {
        let hi = 64 - o;
        let lo = bits - hi;
        words[w] |= v >> lo;
        words[w + 1] |= v << (64 - lo);
    }
}

/// Reads `k` bits (1..=57) at bit `pos`, right-aligned.
#[inline(always)]
fn get_bits(words: &[u64], pos: u64, k: u32) -> u64 {
    let w = (pos / 64) as usize;
    let o = (pos % 64) as u32;
    let hi = words[w] << o;
    let lo = if o == 0 { 0 } else { words[w + 1] >> (64 - o) };
    (hi | lo) >> (64 - k)
}

/// Parses sequence text into a program. `lookup` resolves a dictionary key to an entry index
/// (an unknown key is an error); `what` names the string in messages.
fn parse(text: &[u8], what: &str, lookup: &dyn Fn(&str) -> Option<u32>, code: &mut Program) -> Result<()> {
    let mut open: Vec<(usize, usize)> = Vec::new(); // (op index of the Rep, text position)
    let mut lit: Option<(usize, u64)> = None; // (op index, bit position where it started)
    let mut bitpos: u64 = code.words.len() as u64 * 64;
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if let Some(v) = base64_value(c) {
            if lit.is_none() {
                // Literals start on a word boundary.
                bitpos = bitpos.div_ceil(64) * 64;
                code.ops.push(Op::Lit { start: bitpos, bits: 0 });
                lit = Some((code.ops.len() - 1, bitpos));
            }
            put_bits(&mut code.words, bitpos, v as u64, 6);
            bitpos += 6;
            i += 1;
            continue;
        }
        if let Some((op, start)) = lit.take() {
            code.ops[op] = Op::Lit { start, bits: bitpos - start };
        }
        match c {
            b'(' => {
                let digits_start = i + 1;
                let mut j = digits_start;
                let mut count: u64 = 0;
                while j < text.len() && text[j].is_ascii_digit() {
                    count = count
                        .checked_mul(10)
                        .and_then(|c| c.checked_add((text[j] - b'0') as u64))
                        .ok_or_else(|| syntax(what, i, "repeat count does not fit in 64 bits"))?;
                    j += 1;
                }
                if j == digits_start {
                    return Err(syntax(what, i, "expected a decimal repeat count after '('"));
                }
                if j >= text.len() || text[j] != b'*' {
                    return Err(syntax(what, j, "expected '*' after the repeat count"));
                }
                code.ops.push(Op::Rep { count, body: 0, body_bits: 0 });
                open.push((code.ops.len() - 1, i));
                i = j + 1;
            }
            b')' => {
                let (op, _) = open.pop().ok_or_else(|| syntax(what, i, "')' without a matching '('"))?;
                let body = (code.ops.len() - op - 1) as u32;
                if let Op::Rep { count, .. } = code.ops[op] {
                    code.ops[op] = Op::Rep { count, body, body_bits: 0 };
                }
                i += 1;
            }
            b'<' => {
                let end = text[i + 1..]
                    .iter()
                    .position(|&c| c == b'>')
                    .map(|p| i + 1 + p)
                    .ok_or_else(|| syntax(what, i, "'<' without a closing '>'"))?;
                let key = std::str::from_utf8(&text[i + 1..end]).unwrap_or("");
                if !is_valid_key(key) {
                    return Err(syntax(what, i, "a dictionary key is one or more of A-Z a-z 0-9 + -"));
                }
                let entry = lookup(key).ok_or_else(|| {
                    syntax(what, i, format!("unknown dictionary key <{key}> (not in STRING_DICTIONARY)"))
                })?;
                code.ops.push(Op::Ref { entry });
                i = end + 1;
            }
            _ => {
                let shown =
                    if c.is_ascii_graphic() { format!("'{}'", c as char) } else { format!("byte {c:#04x}") };
                return Err(syntax(
                    what,
                    i,
                    format!("unexpected {shown}; expected Base64 (A-Z a-z 0-9 + -), '(', ')' or '<'"),
                ));
            }
        }
    }
    if let Some((op, start)) = lit.take() {
        code.ops[op] = Op::Lit { start, bits: bitpos - start };
    }
    if let Some(&(_, at)) = open.last() {
        return Err(syntax(what, at, "'(' without a matching ')'"));
    }
    let need = bitpos.div_ceil(64) as usize;
    if code.words.len() < need {
        code.words.resize(need, 0);
    }
    Ok(())
}

/// Bits produced by ops `range` (saturating); `entry_bits` gives each dictionary entry's size.
/// Also fills in every `Rep`'s `body_bits`.
fn measure(ops: &mut [Op], entry_bits: &dyn Fn(u32) -> u64) -> u64 {
    // Preorder with explicit stack: (index of the Rep, end of its body, bits so far outside).
    let mut total: u64 = 0;
    let mut stack: Vec<(usize, usize, u64)> = Vec::new();
    let mut i = 0;
    loop {
        while let Some(&(rep, end, outer)) = stack.last() {
            if i < end {
                break;
            }
            stack.pop();
            let body_bits = total;
            let count = match &mut ops[rep] {
                Op::Rep { count, body_bits: b, .. } => {
                    *b = body_bits;
                    *count
                }
                _ => 1,
            };
            total = outer.saturating_add(body_bits.saturating_mul(count));
        }
        if i >= ops.len() {
            break;
        }
        match ops[i] {
            Op::Lit { bits, .. } => total = total.saturating_add(bits),
            Op::Periodic { total: t, skip, .. } => {
                total = total.saturating_add(t);
                i += skip as usize;
            }
            Op::Ref { entry } => total = total.saturating_add(entry_bits(entry)),
            Op::Rep { body, .. } => {
                stack.push((i, i + 1 + body as usize, total));
                total = 0;
            }
        }
        i += 1;
    }
    total
}

impl Dictionary {
    /// Compiles a `STRING_DICTIONARY` object. Every key must be legal, every reference must
    /// name a key of the same dictionary, and references must not form a cycle.
    pub fn compile(entries: &[(String, String)], what: &str) -> Result<Dictionary> {
        let mut dict = Dictionary::default();
        for (i, (key, _)) in entries.iter().enumerate() {
            if !is_valid_key(key) {
                return Err(Error::input(format!(
                    "{what}: key \"{key}\" is not a legal dictionary key (one or more of A-Z a-z 0-9 + -)"
                )));
            }
            if dict.keys.insert(key.clone(), i as u32).is_some() {
                return Err(Error::input(format!("{what}: key \"{key}\" appears twice")));
            }
            dict.names.push(key.clone());
        }
        let keys = dict.keys.clone();
        let lookup = |k: &str| keys.get(k).copied();
        let mut refs: Vec<Vec<u32>> = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let start = dict.code.ops.len() as u32;
            parse(value.as_bytes(), &format!("{what} entry \"{key}\""), &lookup, &mut dict.code)?;
            let end = dict.code.ops.len() as u32;
            dict.entries.push((start, end, 0));
            refs.push(
                dict.code.ops[start as usize..end as usize]
                    .iter()
                    .filter_map(|op| match op {
                        Op::Ref { entry } => Some(*entry),
                        _ => None,
                    })
                    .collect(),
            );
        }
        dict.code.words.push(0);
        // Cycle check and sizes, depth first in post order (iteratively: chains may be long).
        let n = entries.len();
        let mut state = vec![0u8; n]; // 0 new, 1 on the path, 2 done
        let mut order = Vec::with_capacity(n);
        for root in 0..n {
            if state[root] != 0 {
                continue;
            }
            let mut path: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            while let Some(top) = path.len().checked_sub(1) {
                let (node, next) = path[top];
                if next < refs[node].len() {
                    path[top].1 += 1;
                    let child = refs[node][next] as usize;
                    match state[child] {
                        0 => {
                            state[child] = 1;
                            path.push((child, 0));
                        }
                        1 => {
                            let from = path.iter().position(|&(p, _)| p == child).unwrap_or(0);
                            let mut cycle: Vec<&str> =
                                path[from..].iter().map(|&(p, _)| dict.names[p].as_str()).collect();
                            cycle.push(&dict.names[child]);
                            return Err(Error::input(format!(
                                "{what}: entries refer to each other in a cycle: <{}>",
                                cycle.join("> -> <")
                            )));
                        }
                        _ => {}
                    }
                } else {
                    state[node] = 2;
                    order.push(node);
                    path.pop();
                }
            }
        }
        let mut sizes = vec![0u64; n];
        for e in order {
            let (start, end, _) = dict.entries[e];
            let bits = measure(&mut dict.code.ops[start as usize..end as usize], &|r| sizes[r as usize]);
            sizes[e] = bits;
            dict.entries[e].2 = bits;
        }
        // Short repeats inside entries become periodic patterns.
        for e in 0..n {
            let (start, end, _) = dict.entries[e];
            let replacements = periodic_replacements(&dict.code, start as usize, end as usize, &dict);
            apply_replacements(&mut dict.code, replacements);
        }
        dict.code.bits = dict.entries.iter().fold(0u64, |a, e| a.saturating_add(e.2));
        Ok(dict)
    }

    /// An empty dictionary.
    pub fn empty() -> Dictionary {
        let mut d = Dictionary::default();
        d.code.words.push(0);
        d
    }
}

/// For every outermost repeat in `code.ops[start..end]` whose body is short, the pattern that
/// replaces it: (op index, pattern bits, period).
fn periodic_replacements(
    code: &Program,
    start: usize,
    end: usize,
    dict: &Dictionary,
) -> Vec<(usize, Vec<u64>, u64)> {
    let mut out = Vec::new();
    let mut i = start;
    while i < end {
        match code.ops[i] {
            Op::Rep { count, body, body_bits } => {
                if body_bits > 0 && body_bits <= PERIODIC_MAX_BITS && count > 1 {
                    let body_end = i + 1 + body as usize;
                    let mut reader = BitReader::over(code, dict, i + 1, body_end);
                    // The pattern: the body repeated until it is at least period + 64 bits long.
                    let copies = (64 / body_bits + 2).min(count.max(2)) as usize;
                    let mut words: Vec<u64> = Vec::new();
                    let mut pos = 0u64;
                    while pos < body_bits {
                        let (v, k) = reader.take_up_to(32);
                        if k == 0 {
                            break;
                        }
                        put_bits(&mut words, pos, v, k);
                        pos += k as u64;
                    }
                    debug_assert_eq!(pos, body_bits);
                    let one = words.clone();
                    for c in 1..copies {
                        let base = c as u64 * body_bits;
                        let mut p = 0u64;
                        while p < body_bits {
                            let k = (body_bits - p).min(32) as u32;
                            put_bits(&mut words, base + p, get_bits_padded(&one, p, k), k);
                            p += k as u64;
                        }
                    }
                    out.push((i, words, body_bits));
                    i = body_end;
                    continue;
                }
                i += 1;
            }
            Op::Periodic { skip, .. } => i += 1 + skip as usize,
            _ => i += 1,
        }
    }
    out
}

fn get_bits_padded(words: &[u64], pos: u64, k: u32) -> u64 {
    let w = (pos / 64) as usize;
    let o = (pos % 64) as u32;
    let hi = words.get(w).copied().unwrap_or(0) << o;
    let lo = if o == 0 { 0 } else { words.get(w + 1).copied().unwrap_or(0) >> (64 - o) };
    (hi | lo) >> (64 - k)
}

fn apply_replacements(code: &mut Program, replacements: Vec<(usize, Vec<u64>, u64)>) {
    for (op, pattern, period) in replacements {
        let Op::Rep { count, body, .. } = code.ops[op] else { continue };
        // Drop the spare word, append the pattern on a word boundary, put the spare back.
        code.words.pop();
        let start = code.words.len() as u64 * 64;
        code.words.extend_from_slice(&pattern);
        code.words.push(0);
        code.ops[op] = Op::Periodic { start, period, total: count.saturating_mul(period), skip: body };
    }
}

impl Program {
    /// Compiles one `EDGE_ID_SEQUENCE`; `what` names it in messages.
    pub fn compile(text: &str, dict: &Dictionary, what: &str) -> Result<Program> {
        let mut code = Program::default();
        let lookup = |k: &str| dict.keys.get(k).copied();
        parse(text.as_bytes(), what, &lookup, &mut code)?;
        code.words.push(0);
        let n = code.ops.len();
        code.bits = measure(&mut code.ops, &|e| dict.entries[e as usize].2);
        let replacements = periodic_replacements(&code, 0, n, dict);
        apply_replacements(&mut code, replacements);
        Ok(code)
    }

    /// Approximate heap size in bytes.
    pub(crate) fn heap_size(&self) -> usize {
        self.ops.len() * std::mem::size_of::<Op>() + self.words.len() * 8
    }
}

/// A frame of the reader's stack: ops `pos..end` of one program still to run, then
/// `remaining` more passes over `start..end`.
#[derive(Clone, Copy, Debug)]
struct Frame {
    in_dict: bool,
    pos: u32,
    end: u32,
    start: u32,
    remaining: u64,
}

/// The leaf the reader is taking bits from.
#[derive(Clone, Copy, Debug, Default)]
struct Leaf {
    in_dict: bool,
    /// Bit position in the words of the current bit (for periodic leaves: of phase 0).
    start: u64,
    /// Literal: bits consumed; periodic: phase within the period.
    pos: u64,
    /// Bits left in this leaf.
    left: u64,
    /// 0 for literals.
    period: u64,
}

/// Streams the bits of a compiled sequence, 57 at a time at most, without expanding repeats or
/// dictionary references. Memory: one stack frame per level of nesting.
pub(crate) struct BitReader<'a> {
    code: &'a Program,
    dict: &'a Dictionary,
    stack: Vec<Frame>,
    leaf: Leaf,
}

impl<'a> BitReader<'a> {
    /// A reader over a whole program.
    pub fn new(code: &'a Program, dict: &'a Dictionary) -> Self {
        Self::over(code, dict, 0, code.ops.len())
    }

    fn over(code: &'a Program, dict: &'a Dictionary, start: usize, end: usize) -> Self {
        let frame =
            Frame { in_dict: false, pos: start as u32, end: end as u32, start: start as u32, remaining: 0 };
        BitReader { code, dict, stack: vec![frame], leaf: Leaf::default() }
    }

    /// Advances to the next leaf with bits; false when the program is exhausted.
    #[inline(never)]
    fn next_leaf(&mut self) -> bool {
        loop {
            let Some(f) = self.stack.last_mut() else { return false };
            if f.pos >= f.end {
                if f.remaining > 0 {
                    f.remaining -= 1;
                    f.pos = f.start;
                } else {
                    self.stack.pop();
                }
                continue;
            }
            let in_dict = f.in_dict;
            let code = if in_dict { &self.dict.code } else { self.code };
            let op = code.ops[f.pos as usize];
            f.pos += 1;
            match op {
                Op::Lit { start, bits } => {
                    if bits > 0 {
                        self.leaf = Leaf { in_dict, start, pos: 0, left: bits, period: 0 };
                        return true;
                    }
                }
                Op::Periodic { start, period, total, skip } => {
                    f.pos += skip;
                    if total > 0 {
                        self.leaf = Leaf { in_dict, start, pos: 0, left: total, period };
                        return true;
                    }
                }
                Op::Rep { count, body, body_bits } => {
                    let body_start = f.pos;
                    f.pos += body;
                    if count > 0 && body_bits > 0 {
                        self.stack.push(Frame {
                            in_dict,
                            pos: body_start,
                            end: body_start + body,
                            start: body_start,
                            remaining: count - 1,
                        });
                    }
                }
                Op::Ref { entry } => {
                    let (s, e, bits) = self.dict.entries[entry as usize];
                    if bits > 0 {
                        self.stack.push(Frame { in_dict: true, pos: s, end: e, start: s, remaining: 0 });
                    }
                }
            }
        }
    }

    /// Takes up to `k` (1..=57) bits from the current leaf (moving to the next leaf when the
    /// current one is spent): returns them right-aligned with their number, 0 bits at the end.
    #[inline]
    pub(crate) fn take_up_to(&mut self, k: u32) -> (u64, u32) {
        if self.leaf.left == 0 && !self.next_leaf() {
            return (0, 0);
        }
        let n = (self.leaf.left.min(k as u64)) as u32;
        let words = if self.leaf.in_dict { &self.dict.code.words } else { &self.code.words };
        let v = get_bits(words, self.leaf.start + self.leaf.pos, n);
        self.leaf.left -= n as u64;
        self.leaf.pos += n as u64;
        if self.leaf.period != 0 && self.leaf.pos >= self.leaf.period {
            self.leaf.pos %= self.leaf.period;
        }
        (v, n)
    }
}

/// A 64-bit window over a [`BitReader`]: the edge decoder peeks up to 32 bits and consumes
/// what the matched code used.
pub(crate) struct BitWindow<'a> {
    reader: BitReader<'a>,
    /// Valid bits, most significant first (bits past `have` are zero).
    pub acc: u64,
    pub have: u32,
    /// Bits taken from the reader so far.
    read: u64,
    exhausted: bool,
}

impl<'a> BitWindow<'a> {
    pub fn new(reader: BitReader<'a>) -> Self {
        BitWindow { reader, acc: 0, have: 0, read: 0, exhausted: false }
    }

    /// Bits consumed so far (for error positions).
    pub fn consumed(&self) -> u64 {
        self.read - self.have as u64
    }

    /// Fills the window to more than 32 bits when the sequence has them.
    #[inline]
    pub fn refill(&mut self) {
        while self.have <= 32 && !self.exhausted {
            let room = 64 - self.have;
            let (v, n) = self.reader.take_up_to(room.min(57));
            if n == 0 {
                self.exhausted = true;
                break;
            }
            self.acc |= v << (64 - self.have - n);
            self.have += n;
            self.read += n as u64;
        }
    }

    /// The next `n` (1..=32) bits, zero-padded past the end of the sequence.
    #[inline(always)]
    pub fn peek(&mut self, n: u32) -> u64 {
        if self.have < n {
            self.refill();
        }
        self.acc >> (64 - n)
    }

    /// Bits available without refilling further (after a `peek`, all that remain if fewer than
    /// were asked for).
    #[inline(always)]
    pub fn available(&self) -> u32 {
        self.have
    }

    #[inline(always)]
    pub fn consume(&mut self, n: u32) {
        debug_assert!(n <= self.have);
        self.acc = if n >= 64 { 0 } else { self.acc << n };
        self.have -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All bits of a program as a '0'/'1' string, up to `limit` bits.
    fn bits_of(code: &Program, dict: &Dictionary, limit: usize) -> String {
        let mut r = BitReader::new(code, dict);
        let mut s = String::new();
        while s.len() < limit {
            let (v, n) = r.take_up_to(1);
            if n == 0 {
                break;
            }
            s.push(if v == 1 { '1' } else { '0' });
        }
        s
    }

    fn plain_bits(text: &str) -> String {
        text.bytes().map(|c| format!("{:06b}", base64_value(c).unwrap())).collect()
    }

    #[test]
    fn spec_examples_expand_as_the_spec_says() {
        let d = Dictionary::empty();
        let c = Program::compile("C+", &d, "t").unwrap();
        assert_eq!(bits_of(&c, &d, 100), "000010111110");
        let c = Program::compile("A(4*BC)D", &d, "t").unwrap();
        assert_eq!(bits_of(&c, &d, 1000), plain_bits("ABCBCBCBCD"));
        let c = Program::compile("123(2*(6*a)b)456", &d, "t").unwrap();
        assert_eq!(bits_of(&c, &d, 1000), plain_bits("123aaaaaabaaaaaab456"));
    }

    #[test]
    fn spec_dictionary_examples_expand_as_the_spec_says() {
        let entries = vec![
            ("a".to_string(), "bks2hD7kB+KDk87(6*AB)Aw3ABD9".to_string()),
            ("b".to_string(), "KkDk123(42*(25*a))45690D<a>7Fjdkpm".to_string()),
        ];
        let d = Dictionary::compile(&entries, "STRING_DICTIONARY").unwrap();
        let a = "bks2hD7kB+KDk87ABABABABABABAw3ABD9";
        let c = Program::compile("A<a>B", &d, "t").unwrap();
        assert_eq!(bits_of(&c, &d, 100_000), plain_bits(&format!("A{a}B")));
        let c = Program::compile("(2*A<a>B)", &d, "t").unwrap();
        assert_eq!(bits_of(&c, &d, 100_000), plain_bits(&format!("A{a}BA{a}B")));
        let c = Program::compile("A<b>B", &d, "t").unwrap();
        let b = format!("KkDk123{}45690D{a}7Fjdkpm", "a".repeat(42 * 25));
        assert_eq!(bits_of(&c, &d, 100_000), plain_bits(&format!("A{b}B")));
    }

    #[test]
    fn huge_repeats_are_never_expanded() {
        let d = Dictionary::empty();
        let c = Program::compile("(99999999999*A)(1000000000000*(1000000000000*B))", &d, "t").unwrap();
        assert!(c.heap_size() < 4096);
        assert_eq!(bits_of(&c, &d, 12), "000000000000");
        // An empty body repeated forever produces nothing and ends at once.
        let c = Program::compile("(1000000000000*(1000000000000*))C", &d, "t").unwrap();
        assert_eq!(bits_of(&c, &d, 100), "000010");
    }

    #[test]
    fn long_bodies_stay_repeats_and_read_correctly() {
        let d = Dictionary::empty();
        let body: String = (0..1000).map(|i| base64_char((i * 7 % 64) as u8) as char).collect();
        let text = format!("B(3*{body})C");
        let c = Program::compile(&text, &d, "t").unwrap();
        assert!(c.ops.iter().any(|op| matches!(op, Op::Rep { .. })));
        assert_eq!(bits_of(&c, &d, 1_000_000), plain_bits(&format!("B{0}{0}{0}C", body)));
    }

    #[test]
    fn bad_text_is_an_error_with_its_position() {
        let d = Dictionary::empty();
        for (text, needle) in [
            ("AB(3AB)", "character 4: expected '*'"),
            ("AB(*A)", "character 2: expected a decimal"),
            ("A)B", "character 1: ')' without"),
            ("(2*A", "character 0: '(' without"),
            ("A<zz>", "character 1: unknown dictionary key <zz>"),
            ("A<z", "'<' without"),
            ("A/B", "character 1: unexpected '/'"),
            ("(99999999999999999999999*A)", "does not fit"),
        ] {
            let e = Program::compile(text, &d, "seq").unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn dictionary_cycles_and_unknown_keys_are_errors() {
        let e = Dictionary::compile(
            &[("a".into(), "A<b>".into()), ("b".into(), "(2*<c>)".into()), ("c".into(), "<a>".into())],
            "D",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cycle: <a> -> <b> -> <c> -> <a>"), "{e}");
        let e = Dictionary::compile(&[("a".into(), "<a>".into())], "D").unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
        let e = Dictionary::compile(&[("a".into(), "A<q>".into())], "D").unwrap_err().to_string();
        assert!(e.contains("entry \"a\", character 1: unknown dictionary key <q>"), "{e}");
        let e = Dictionary::compile(&[("a b".into(), "A".into())], "D").unwrap_err().to_string();
        assert!(e.contains("not a legal dictionary key"), "{e}");
    }

    #[test]
    fn window_peeks_and_consumes_across_leaves() {
        let d = Dictionary::empty();
        let c = Program::compile("C+(5*A)--", &d, "t").unwrap();
        let mut w = BitWindow::new(BitReader::new(&c, &d));
        assert_eq!(w.peek(12), 0b000010111110);
        w.consume(12);
        assert_eq!(w.peek(30), 0);
        w.consume(30);
        assert_eq!(w.peek(12), 0xfff);
        w.consume(12);
        assert_eq!(w.peek(5), 0);
        assert_eq!(w.available(), 0);
    }
}
