//! A streaming JSON deserializer for serde, built for the large JSON profiles of this field
//! (DCFGs of hundreds of megabytes, DCFG-traces of gigabytes).
//!
//! `serde_json` offers two ways in: a slice, which needs the whole (decompressed) text in memory
//! beside the model it becomes, and a reader, which pulls one byte at a time through
//! `std::io::Read`. This one reads the input in 1 MiB chunks and parses straight from the chunk,
//! so memory for the input stays constant and the hot path (small integers, short strings,
//! table punctuation) is a few instructions per byte. The typed visitors of each format are
//! unchanged: this is an ordinary [`serde::Deserializer`].
//!
//! What it saves, measured on the whole command (`cfghub info` of a 232 MB Pin-style DCFG
//! made by `cfghub synth --pretty --images 4 --routines 14000 --blocks 24 --threads 2 --steps
//! 28000000`, interleaved rounds, 2-core machine under load): 1.03 s of processor time (2.62 s
//! wall) against 1.93 s (4.91 s wall) with `serde_json::Deserializer::from_reader` on a
//! `BufReader`, the same visitors reading integers through `deserialize_any`.
//!
//! It accepts exactly RFC 8259 JSON. Nesting deeper than [`MAX_DEPTH`] is an error, not a stack
//! overflow. Errors carry the line and column where they were found.

use std::fmt;
use std::io::Read;

use serde::de::{self, DeserializeSeed, Visitor};

/// Deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: u32 = 128;
const CHUNK: usize = 1 << 20;
/// Longest string (key or value) held: a longer one is refused, not collected (1 GB of one
/// string compresses to a few MB of gzip).
pub(crate) const MAX_STRING: usize = crate::io::MAX_LINE;

/// A JSON syntax or type error, or an I/O error of the underlying reader, with its position.
///
/// Boxed, so that every `Result` the parser returns fits in registers: the hot path returns
/// millions of them.
#[derive(Debug)]
pub struct JsonError(Box<ErrorInfo>);

/// What [`JsonError`] holds.
#[derive(Debug)]
pub struct ErrorInfo {
    /// What was wrong or expected, without the position.
    pub message: String,
    /// 1-based line and column; 0 when the error was raised outside the parser (a visitor's
    /// custom error) and not yet placed.
    pub line: u64,
    /// 1-based byte column in `line`; 0 when `line` is.
    pub column: u64,
    /// The reader failed (e.g. decompression), as opposed to the text being wrong.
    pub io: bool,
    /// The input ended before the JSON value did.
    pub eof: bool,
}

impl std::ops::Deref for JsonError {
    type Target = ErrorInfo;
    fn deref(&self) -> &ErrorInfo {
        &self.0
    }
}

impl JsonError {
    fn new(message: String, line: u64, column: u64, io: bool, eof: bool) -> Self {
        JsonError(Box::new(ErrorInfo { message, line, column, io, eof }))
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{} at line {} column {}", self.message, self.line, self.column)
        } else {
            f.write_str(&self.message)
        }
    }
}

impl std::error::Error for JsonError {}

impl de::Error for JsonError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        JsonError::new(msg.to_string(), 0, 0, false, false)
    }
}

type Result<T> = std::result::Result<T, JsonError>;

/// The deserializer: a chunk buffer over any reader.
pub struct JsonReader<R> {
    src: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Newlines in the chunks already consumed, for error positions.
    lines_before: u64,
    /// Column of the first byte of the current chunk (line continues across chunks).
    column_before: u64,
    depth: u32,
    scratch: Vec<u8>,
    src_done: bool,
}

impl<R: Read> JsonReader<R> {
    /// A deserializer reading the JSON text of `src` a 1 MiB chunk at a time.
    pub fn new(src: R) -> Self {
        JsonReader {
            src,
            buf: vec![0u8; CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            lines_before: 0,
            column_before: 0,
            depth: 0,
            scratch: Vec::new(),
            src_done: false,
        }
    }

    /// Checks that only white space follows the value just read.
    pub fn end(&mut self) -> Result<()> {
        match self.peek()? {
            None => Ok(()),
            Some(b) => Err(self.error(format!("unexpected {} after the end of the JSON value", show(b)))),
        }
    }

    /// Places an error raised by a visitor at the current position.
    pub fn place(&self, mut e: JsonError) -> JsonError {
        if e.line == 0 && !e.io {
            let (line, column) = self.position();
            e.0.line = line;
            e.0.column = column;
        }
        e
    }

    fn position(&self) -> (u64, u64) {
        let done = &self.buf[..self.pos.min(self.end)];
        let newlines = memchr::memchr_iter(b'\n', done).count() as u64;
        let column = match memchr::memrchr(b'\n', done) {
            Some(nl) => (self.pos - nl) as u64,
            None => self.column_before + self.pos as u64 + 1,
        };
        (self.lines_before + newlines + 1, column)
    }

    #[cold]
    fn error(&self, message: impl Into<String>) -> JsonError {
        let (line, column) = self.position();
        JsonError::new(message.into(), line, column, false, false)
    }

    #[cold]
    fn eof_error(&self, what: &str) -> JsonError {
        let mut e = self.error(format!("EOF while parsing {what}"));
        e.0.eof = true;
        e
    }

    /// Loads the next chunk; false at the end of the input.
    #[cold]
    fn refill(&mut self) -> Result<bool> {
        if self.src_done {
            return Ok(false);
        }
        let done = &self.buf[..self.end];
        let newlines = memchr::memchr_iter(b'\n', done).count() as u64;
        self.column_before = match memchr::memrchr(b'\n', done) {
            Some(nl) => (self.end - nl - 1) as u64,
            None => self.column_before + self.end as u64,
        };
        self.lines_before += newlines;
        self.pos = 0;
        self.end = 0;
        loop {
            match self.src.read(&mut self.buf) {
                Ok(0) => {
                    self.src_done = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end = n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(JsonError::new(e.to_string(), 0, 0, true, false));
                }
            }
        }
    }

    /// The next byte that is not white space, without consuming it.
    #[inline(always)]
    fn peek(&mut self) -> Result<Option<u8>> {
        match self.peek_near() {
            Some(b) => Ok(Some(b)),
            None => self.peek_slow(),
        }
    }

    /// The common cases of [`Self::peek`], inline: the next token right here, or after one
    /// white-space byte: the space that pretty printers (Pin's among them) put after `,`, `[`
    /// and `:`, or the newline between the rows of a compact table.
    #[inline(always)]
    fn peek_near(&mut self) -> Option<u8> {
        // Every JSON white-space byte is at most b' ': anything above is the next token.
        let here = *self.buf[..self.end].get(self.pos)?;
        if here > b' ' {
            return Some(here);
        }
        let next = *self.buf[..self.end].get(self.pos + 1)?;
        if next > b' ' && matches!(here, b' ' | b'\n' | b'\t' | b'\r') {
            self.pos += 1;
            return Some(next);
        }
        None
    }

    /// Skips white space of any length, across chunks. Indentation comes as runs of spaces
    /// (two fifths of a pretty-printed DCFG), skipped eight bytes at a time.
    #[inline(never)]
    fn peek_slow(&mut self) -> Result<Option<u8>> {
        const SPACES: u64 = u64::from_le_bytes([b' '; 8]);
        loop {
            while self.pos < self.end {
                if let Some(word) = self.buf[self.pos..self.end].first_chunk::<8>() {
                    let differs = u64::from_le_bytes(*word) ^ SPACES;
                    if differs == 0 {
                        self.pos += 8;
                        continue;
                    }
                    // Little-endian: the lowest non-zero byte is the first that is not a space.
                    self.pos += (differs.trailing_zeros() / 8) as usize;
                }
                let b = self.buf[self.pos];
                match b {
                    b' ' | b'\n' | b'\t' | b'\r' => self.pos += 1,
                    _ => return Ok(Some(b)),
                }
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    #[inline(always)]
    fn peek_or_eof(&mut self, what: &str) -> Result<u8> {
        match self.peek_near() {
            Some(b) => Ok(b),
            None => self.peek_or_eof_slow(what),
        }
    }

    #[inline(never)]
    fn peek_or_eof_slow(&mut self, what: &str) -> Result<u8> {
        match self.peek_slow()? {
            Some(b) => Ok(b),
            None => Err(self.eof_error(what)),
        }
    }

    /// Consumes `word` (after its first byte was seen), e.g. `true`.
    fn literal(&mut self, word: &[u8]) -> Result<()> {
        for &expected in word {
            if self.pos >= self.end && !self.refill()? {
                return Err(self.eof_error("a value"));
            }
            if self.buf[self.pos] != expected {
                return Err(self.error(format!("expected `{}`", String::from_utf8_lossy(word))));
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// Parses a number; integers without fraction or exponent stay exact.
    #[inline(always)]
    fn number<'de, V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        // Fast path: an unsigned integer of up to 8 digits (counts, ids, sizes: nearly every
        // number of a profile) followed by a delimiter inside the chunk, read as one word.
        if let Some(word) = self.buf[self.pos..self.end].first_chunk::<9>() {
            let (n, value) = leading_digits(u64::from_le_bytes([
                word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
            ]));
            let after = word[n.min(8)];
            if n > 0 && !matches!(after, b'0'..=b'9' | b'.' | b'e' | b'E') {
                self.pos += n;
                return visitor.visit_u64(value);
            }
        }
        self.number_slow(visitor)
    }

    #[inline(never)]
    fn number_slow<'de, V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let negative = self.buf[self.pos] == b'-';
        if negative {
            self.pos += 1;
        }
        let mut value: u64 = 0;
        let mut digits = 0usize;
        let mut overflow = false;
        loop {
            if self.pos >= self.end && !self.refill()? {
                break;
            }
            let b = self.buf[self.pos];
            if b.is_ascii_digit() {
                match value.checked_mul(10).and_then(|v| v.checked_add(u64::from(b - b'0'))) {
                    Some(v) => value = v,
                    None => overflow = true,
                }
                digits += 1;
                self.pos += 1;
            } else {
                break;
            }
        }
        if digits == 0 {
            return Err(self.error("expected a digit"));
        }
        let next = if self.pos < self.end { Some(self.buf[self.pos]) } else { None };
        if overflow || matches!(next, Some(b'.' | b'e' | b'E')) {
            return self.float(negative, value, overflow, visitor);
        }
        if negative {
            match i64::try_from(value) {
                Ok(v) => visitor.visit_i64(-v),
                Err(_) => visitor.visit_f64(-(value as f64)),
            }
        } else {
            visitor.visit_u64(value)
        }
    }

    /// The rest of a number with a fraction or exponent (rare in profiles: parsed via `str`).
    #[cold]
    fn float<'de, V: Visitor<'de>>(
        &mut self,
        negative: bool,
        int: u64,
        overflow: bool,
        visitor: V,
    ) -> Result<V::Value> {
        let mut text = String::new();
        if negative {
            text.push('-');
        }
        if !overflow {
            text.push_str(&int.to_string());
        } else {
            return Err(self.error("integer too large (more than 64 bits)"));
        }
        loop {
            if self.pos >= self.end && !self.refill()? {
                break;
            }
            let b = self.buf[self.pos];
            if b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-') {
                text.push(b as char);
                self.pos += 1;
            } else {
                break;
            }
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => visitor.visit_f64(v),
            _ => Err(self.error(format!("invalid number {text}"))),
        }
    }

    /// Parses a string (the opening quote is at `pos`) and hands it to the visitor.
    fn string<'de, V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        self.pos += 1;
        // Fast path: the whole string, without escapes, inside the current chunk.
        let rest = &self.buf[self.pos..self.end];
        if let Some(i) = memchr::memchr2(b'"', b'\\', rest) {
            if rest[i] == b'"' && !rest[..i].iter().any(|&b| b < 0x20) {
                let start = self.pos;
                self.pos += i + 1;
                return match std::str::from_utf8(&self.buf[start..start + i]) {
                    Ok(s) => visitor.visit_str(s),
                    Err(_) => Err(self.error("invalid UTF-8 in a string")),
                };
            }
        }
        self.string_slow()?;
        let scratch = std::mem::take(&mut self.scratch);
        let result = match std::str::from_utf8(&scratch) {
            Ok(s) => visitor.visit_str(s),
            Err(_) => Err(self.error("invalid UTF-8 in a string")),
        };
        self.scratch = scratch;
        self.scratch.clear();
        result
    }

    /// Reads a string with escapes or across chunks into `scratch`.
    #[cold]
    fn string_slow(&mut self) -> Result<()> {
        self.scratch.clear();
        loop {
            if self.scratch.len() > MAX_STRING {
                return Err(self.error(format!("a string longer than {} MiB", MAX_STRING >> 20)));
            }
            if self.pos >= self.end && !self.refill()? {
                return Err(self.eof_error("a string"));
            }
            let rest = &self.buf[self.pos..self.end];
            match memchr::memchr2(b'"', b'\\', rest) {
                None => {
                    if rest.iter().any(|&b| b < 0x20) {
                        return Err(self.error("control character in a string"));
                    }
                    self.scratch.extend_from_slice(rest);
                    self.pos = self.end;
                }
                Some(i) => {
                    if rest[..i].iter().any(|&b| b < 0x20) {
                        return Err(self.error("control character in a string"));
                    }
                    self.scratch.extend_from_slice(&rest[..i]);
                    let quote = rest[i] == b'"';
                    self.pos += i + 1;
                    if quote {
                        return Ok(());
                    }
                    self.escape()?;
                }
            }
        }
    }

    fn next_raw(&mut self, what: &str) -> Result<u8> {
        if self.pos >= self.end && !self.refill()? {
            return Err(self.eof_error(what));
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }

    fn escape(&mut self) -> Result<()> {
        let b = self.next_raw("a string escape")?;
        let c = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let mut code = self.hex4()?;
                if (0xd800..0xdc00).contains(&code) {
                    if self.next_raw("a string")? != b'\\' || self.next_raw("a string")? != b'u' {
                        return Err(self.error("unpaired surrogate in a \\u escape"));
                    }
                    let low = self.hex4()?;
                    if !(0xdc00..0xe000).contains(&low) {
                        return Err(self.error("invalid low surrogate in a \\u escape"));
                    }
                    code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                }
                let ch = char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))?;
                let mut tmp = [0u8; 4];
                self.scratch.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                return Ok(());
            }
            other => return Err(self.error(format!("invalid escape \\{}", other as char))),
        };
        self.scratch.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            let b = self.next_raw("a \\u escape")?;
            let d = (b as char).to_digit(16).ok_or_else(|| self.error("invalid \\u escape"))?;
            v = v * 16 + d;
        }
        Ok(v)
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(format!(
                "recursion limit exceeded: arrays and objects nested deeper than {MAX_DEPTH}"
            )));
        }
        Ok(())
    }

    /// The byte at `pos`, refilling first at the end of a chunk; `None` at the end of the input.
    fn byte_here(&mut self) -> Result<Option<u8>> {
        if self.pos >= self.end && !self.refill()? {
            return Ok(None);
        }
        Ok(Some(self.buf[self.pos]))
    }

    /// Consumes decimal digits; how many there were.
    fn skip_digits(&mut self) -> Result<usize> {
        let mut n = 0;
        while let Some(b'0'..=b'9') = self.byte_here()? {
            self.pos += 1;
            n += 1;
        }
        Ok(n)
    }

    /// Skips a number, its form checked but its value not computed: skipped columns of
    /// fractions (the sample times of a profile) are millions of numbers.
    fn skip_number(&mut self) -> Result<()> {
        if self.byte_here()? == Some(b'-') {
            self.pos += 1;
        }
        if self.skip_digits()? == 0 {
            return Err(self.error("expected a digit"));
        }
        if self.byte_here()? == Some(b'.') {
            self.pos += 1;
            if self.skip_digits()? == 0 {
                return Err(self.error("expected a digit after `.`"));
            }
        }
        if let Some(b'e' | b'E') = self.byte_here()? {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.byte_here()? {
                self.pos += 1;
            }
            if self.skip_digits()? == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
        }
        Ok(())
    }

    /// Skips one value of any kind without building it (and without recursion).
    fn skip(&mut self) -> Result<()> {
        let mut depth = 0u32;
        loop {
            let b = self.peek_or_eof("a value")?;
            match b {
                b'[' | b'{' => {
                    self.pos += 1;
                    depth += 1;
                    if self.depth + depth > MAX_DEPTH {
                        return Err(self.error(format!(
                            "recursion limit exceeded: arrays and objects nested deeper than {MAX_DEPTH}"
                        )));
                    }
                    continue;
                }
                b']' | b'}' if depth > 0 => {
                    self.pos += 1;
                    depth -= 1;
                }
                b',' | b':' if depth > 0 => {
                    self.pos += 1;
                    continue;
                }
                b'"' => {
                    self.pos += 1;
                    self.string_slow()?;
                    self.scratch.clear();
                }
                b'-' | b'0'..=b'9' => self.skip_number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                other => return Err(self.error(format!("expected a value, found {}", show(other)))),
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }
}

/// The number of decimal digits at the start of 8 bytes read little-endian (8 when all are),
/// and their value. SIMD within a register: no branch depends on the number's length.
#[inline(always)]
fn leading_digits(word: u64) -> (usize, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Each digit byte becomes 0..=9. A byte below `0` wraps to 0x80 or more (its borrow only
    // disturbs the bytes after it); a byte above `9` reaches 0x80 once 0x76 is added.
    let values = word.wrapping_sub(ONES * u64::from(b'0'));
    let not_digit = (values | values.wrapping_add(ONES * 0x76)) & (ONES * 0x80);
    let n = (not_digit.trailing_zeros() / 8) as usize;
    if n == 0 {
        return (0, 0);
    }
    // Keep the n digits, moved to the top bytes: the bytes below become leading zeros.
    let mut v = values << (8 * (8 - n));
    // Combine neighbours: pairs of digits, then groups of four, then the eight.
    v = ((v & 0x0f0f_0f0f_0f0f_0f0f).wrapping_mul(10 * 256 + 1)) >> 8;
    v = ((v & 0x00ff_00ff_00ff_00ff).wrapping_mul(100 * 65536 + 1)) >> 16;
    v = ((v & 0x0000_ffff_0000_ffff).wrapping_mul(10000 * (1 << 32) + 1)) >> 32;
    (n, v)
}

/// An integer as profile formats spell it in text: decimal, or hexadecimal after `0x`
/// (`"0x400000"`, `"17"`), surrounding white space allowed; `None` unless it fits 64 bits.
pub fn parse_int(text: &str) -> Option<u64> {
    parse_u64_text(text.trim().as_bytes())
}

/// A decimal or `0x` hexadecimal integer spelled in ASCII, if it is one and fits 64 bits.
pub(crate) fn parse_u64_text(text: &[u8]) -> Option<u64> {
    match text {
        [b'0', b'x' | b'X', digits @ ..] => parse_hex(digits),
        _ => parse_decimal(text),
    }
}

/// Hexadecimal digits (no prefix): addresses and offsets, written by Pin as strings. Up to 16
/// digits always fit; leading zeros beyond that are allowed.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    let significant =
        digits.iter().position(|&b| b != b'0').map_or(&digits[digits.len()..], |i| &digits[i..]);
    if digits.is_empty() || significant.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in significant {
        let d = HEX_VALUE[b as usize];
        if d > 15 {
            return None;
        }
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

/// Decimal digits: up to 19 always fit, a 20th is checked.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for (i, &b) in digits.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = if i < 19 { v * 10 + u64::from(d) } else { v.checked_mul(10)?.checked_add(u64::from(d))? };
    }
    Some(v)
}

/// The value of each byte as a hexadecimal digit, 255 when it is not one.
const HEX_VALUE: [u8; 256] = {
    let mut table = [255u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => 255,
        };
        b += 1;
    }
    table
};

fn show(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("`{}`", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

impl<'de, R: Read> de::Deserializer<'de> for &mut JsonReader<R> {
    type Error = JsonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let b = self.peek_or_eof("a value")?;
        let result = match b {
            b'[' => {
                self.pos += 1;
                self.enter()?;
                let value = visitor.visit_seq(Seq { de: &mut *self, first: true });
                self.depth -= 1;
                let value = value?;
                match self.peek_or_eof("an array")? {
                    b']' => {
                        self.pos += 1;
                        Ok(value)
                    }
                    other => Err(self.error(format!("expected `,` or `]`, found {}", show(other)))),
                }
            }
            b'{' => {
                self.pos += 1;
                self.enter()?;
                let value = visitor.visit_map(Map { de: &mut *self, first: true });
                self.depth -= 1;
                let value = value?;
                match self.peek_or_eof("an object")? {
                    b'}' => {
                        self.pos += 1;
                        Ok(value)
                    }
                    other => Err(self.error(format!("expected `,` or `}}`, found {}", show(other)))),
                }
            }
            b'"' => self.string(visitor),
            b'-' | b'0'..=b'9' => self.number(visitor),
            b't' => {
                self.literal(b"true")?;
                visitor.visit_bool(true)
            }
            b'f' => {
                self.literal(b"false")?;
                visitor.visit_bool(false)
            }
            b'n' => {
                self.literal(b"null")?;
                visitor.visit_unit()
            }
            other => Err(self.error(format!("expected a value, found {}", show(other)))),
        };
        result.map_err(|e| self.place(e))
    }

    /// `null` is `None`; any other value is `Some` of it (so that `Option<i64>` and the like
    /// read numbers).
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.peek_or_eof("a value")? == b'n' {
            self.literal(b"null").map_err(|e| self.place(e))?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.skip()?;
        visitor.visit_unit()
    }

    /// Integers, and integers written as strings (`"0x400000"`, `"17"`, as profile formats
    /// do): a string holding a whole decimal or `0x` hex number that fits 64 bits reaches the
    /// visitor as `visit_u64`; any other value goes to the visitor as it is.
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek_or_eof("a value")? {
            b'0'..=b'9' => self.number(visitor).map_err(|e| self.place(e)),
            b'"' => {
                let rest = &self.buf[self.pos + 1..self.end];
                if let Some(close) = memchr::memchr(b'"', &rest[..rest.len().min(40)]) {
                    if let Some(v) = parse_u64_text(&rest[..close]) {
                        self.pos += close + 2;
                        return visitor.visit_u64(v).map_err(|e| self.place(e));
                    }
                }
                self.deserialize_any(visitor)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

struct Seq<'a, R> {
    de: &'a mut JsonReader<R>,
    first: bool,
}

impl<'de, R: Read> de::SeqAccess<'de> for Seq<'_, R> {
    type Error = JsonError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let b = self.de.peek_or_eof("an array")?;
        if b == b']' {
            return Ok(None);
        }
        if self.first {
            self.first = false;
        } else if b == b',' {
            self.de.pos += 1;
            if self.de.peek_or_eof("an array")? == b']' {
                return Err(self.de.error("trailing comma in an array"));
            }
        } else {
            return Err(self.de.error(format!("expected `,` or `]`, found {}", show(b))));
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}

struct Map<'a, R> {
    de: &'a mut JsonReader<R>,
    first: bool,
}

impl<'de, R: Read> de::MapAccess<'de> for Map<'_, R> {
    type Error = JsonError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let mut b = self.de.peek_or_eof("an object")?;
        if b == b'}' {
            return Ok(None);
        }
        if self.first {
            self.first = false;
        } else if b == b',' {
            self.de.pos += 1;
            b = self.de.peek_or_eof("an object")?;
        } else {
            return Err(self.de.error(format!("expected `,` or `}}`, found {}", show(b))));
        }
        if b != b'"' {
            return Err(self.de.error(format!("expected a string key, found {}", show(b))));
        }
        let key = seed.deserialize(&mut *self.de)?;
        match self.de.peek_or_eof("an object")? {
            b':' => {
                self.de.pos += 1;
                Ok(Some(key))
            }
            other => Err(self.de.error(format!("expected `:`, found {}", show(other)))),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(&mut *self.de)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn parse<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T> {
        let mut r = JsonReader::new(text.as_bytes());
        let v = T::deserialize(&mut r)?;
        r.end()?;
        Ok(v)
    }

    #[test]
    fn agrees_with_serde_json_on_values() {
        let text = r#"{"a": [1, -2, 3.5, 1e3, true, false, null, "x\"y\\z\u00e9\ud83d\ude00", {}, []],
                        "b": {"c": [[[]]], "d": "", "e": 18446744073709551615}}"#;
        let ours: serde_json::Value = parse(text).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn strings_and_numbers_across_chunk_boundaries() {
        // Values straddle the 1 MiB chunk edge somewhere in this array.
        let items: Vec<String> = (0..120_000).map(|i| format!("[{i}, \"0x{i:x}\", \"a\\nb{i}\"]")).collect();
        let text = format!("[{}]", items.join(","));
        let ours: serde_json::Value = parse(&text).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn integers_as_profile_formats_spell_them() {
        assert_eq!(parse_int("0x400000"), Some(4194304));
        assert_eq!(parse_int("0X1F"), Some(31));
        assert_eq!(parse_int(" 17 "), Some(17));
        assert_eq!(parse_int("0xffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_int("0x10000000000000000"), None);
        assert_eq!(parse_int("x12"), None);
        assert_eq!(parse_int("0x"), None);
        assert_eq!(parse_int("-1"), None);
        assert_eq!(parse_int("0x00000000000000000000000000007fAb"), Some(0x7fab));
        assert_eq!(parse_int("0x12g4"), None);
        assert_eq!(parse_int("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_int("18446744073709551616"), None);
        assert_eq!(parse_int("99999999999999999999"), None);
        assert_eq!(parse_int("1a"), None);
        assert_eq!(parse_int(""), None);
    }

    #[test]
    fn leading_digits_of_a_word() {
        let word = |s: &[u8]| {
            let mut b = [b'x'; 8];
            b[..s.len()].copy_from_slice(s);
            u64::from_le_bytes(b)
        };
        assert_eq!(leading_digits(word(b"12345678")), (8, 12345678));
        assert_eq!(leading_digits(word(b"0")), (1, 0));
        assert_eq!(leading_digits(word(b"907,")), (3, 907));
        assert_eq!(leading_digits(word(b"1\x002")), (1, 1));
        assert_eq!(leading_digits(word(b"99999999")), (8, 99_999_999));
        assert_eq!(leading_digits(word(b"/")), (0, 0));
        assert_eq!(leading_digits(word(b":")), (0, 0));
        assert_eq!(leading_digits(word(b"0000012]")), (7, 12));
        // Every byte after a digit, each possible stop.
        for stop in 0..=255u8 {
            let (n, v) = leading_digits(word(&[b'4', b'2', stop]));
            if stop.is_ascii_digit() {
                assert_eq!((n, v), (3, 420 + u64::from(stop - b'0')));
            } else {
                assert_eq!((n, v), (2, 42), "stop byte {stop}");
            }
        }
    }

    #[test]
    fn white_space_of_any_shape_between_tokens() {
        // Runs of spaces longer and shorter than a word, tabs and newlines inside them, and
        // single spaces, as pretty printers write them.
        let text = "[ 1,\n                2 ,\t\r\n 3,  4,\n       \t     5 ,   \n\n\n   6 ]   ";
        assert_eq!(parse::<Vec<u64>>(text).unwrap(), vec![1, 2, 3, 4, 5, 6]);
        // Long enough (over 1 MiB) that runs of spaces straddle the edge of a chunk.
        let n = 60_000;
        let indented = format!(
            "[{}]",
            (0..n).map(|i| format!("\n{}{i}", " ".repeat(i as usize % 37))).collect::<Vec<_>>().join(",")
        );
        assert!(indented.len() > CHUNK);
        assert_eq!(parse::<Vec<u64>>(&indented).unwrap(), (0..n).collect::<Vec<u64>>());
    }

    #[test]
    fn options_and_skipped_numbers() {
        let v: Vec<Option<i64>> = parse("[null, 3, -1, null]").unwrap();
        assert_eq!(v, [None, Some(3), Some(-1), None]);
        let v: Option<Vec<u64>> = parse("null").unwrap();
        assert_eq!(v, None);
        // Skipped numbers of every form, across the edge of a chunk; malformed ones refused.
        let times: Vec<String> = (0..200_000).map(|i| format!("{}.{:03}", i, i % 1000)).collect();
        let text = format!("[[{}, -1e-5, 2E+7, 0.5], 7]", times.join(","));
        let v: (de::IgnoredAny, u64) = parse(&text).unwrap();
        assert_eq!(v.1, 7);
        for bad in ["[1.]", "[-]", "[1e]", "[1.e5]", "[--1]"] {
            assert!(parse::<de::IgnoredAny>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_have_positions_and_limits_hold() {
        let e = parse::<serde_json::Value>("[1,\n 2,,3]").unwrap_err();
        assert_eq!((e.line, e.column), (2, 4), "{e}");
        let e = parse::<serde_json::Value>("[1, 2").unwrap_err();
        assert!(e.eof, "{e}");
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        let e = parse::<serde_json::Value>(&deep).unwrap_err();
        assert!(e.message.contains("recursion limit"), "{e}");
        let e = parse::<de::IgnoredAny>(&deep).unwrap_err();
        assert!(e.message.contains("recursion limit"), "{e}");
        assert!(parse::<serde_json::Value>("[1,]").is_err());
        assert!(parse::<serde_json::Value>("{\"a\":1} x").is_err());
        assert!(parse::<serde_json::Value>("\"a\u{1}b\"").is_err());
    }
}
