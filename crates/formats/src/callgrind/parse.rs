//! Byte-level pieces of the Callgrind grammar: numbers, subpositions and tokens.
//!
//! Every function works on a borrowed line (`&[u8]`) and allocates nothing; the caller turns
//! a [`Bad`] into an error carrying the file and line.

/// What was wrong with a token: the message names what was expected.
#[derive(Debug)]
pub struct Bad(pub String);

pub(crate) type Parsed<T> = std::result::Result<T, Bad>;

#[inline]
pub(crate) fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Skips spaces and tabs.
#[inline]
pub(crate) fn skip_space(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_space(b)).count();
    &s[n..]
}

/// Splits off the next token (up to a space or tab) and the rest after its spaces.
#[inline]
pub(crate) fn next_token(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().position(|&b| is_space(b)).unwrap_or(s.len());
    (&s[..n], skip_space(&s[n..]))
}

fn show(token: &[u8]) -> String {
    let t = String::from_utf8_lossy(&token[..token.len().min(40)]).into_owned();
    if token.len() > 40 {
        format!("{t}...")
    } else {
        t
    }
}

/// A number: decimal digits, or `0x` followed by hex digits.
#[inline]
pub fn number(token: &[u8]) -> Parsed<u64> {
    let bad = || Bad(format!("expected a number (decimal, or hex with 0x), found '{}'", show(token)));
    if token.len() > 2 && token[0] == b'0' && (token[1] == b'x' || token[1] == b'X') {
        let mut v: u64 = 0;
        for &b in &token[2..] {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return Err(bad()),
            };
            if v >> 60 != 0 {
                return Err(Bad(format!("number '{}' does not fit in 64 bits", show(token))));
            }
            v = (v << 4) | d as u64;
        }
        return Ok(v);
    }
    if token.is_empty() {
        return Err(bad());
    }
    let mut v: u64 = 0;
    for &b in token {
        if !b.is_ascii_digit() {
            return Err(bad());
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((b - b'0') as u64))
            .ok_or_else(|| Bad(format!("number '{}' does not fit in 64 bits", show(token))))?;
    }
    Ok(v)
}

/// The index of the first byte at or after `i` that is not a space or tab.
#[inline(always)]
pub(crate) fn skip_space_at(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    i
}

/// Whether a byte ends a token for [`scan_number`]: a space, a tab or the end of a line.
#[inline]
fn ends_token(b: u8) -> bool {
    is_space(b) || b == b'\n' || b == b'\r'
}

/// Scans the number token at `s[*i..]` (decimal, or `0x` and hex digits) that ends at a space,
/// a tab, a line end or the end of `s`, and moves `*i` past it. `None`, with `*i` anywhere, for any other
/// token and for numbers too long to be sure they fit 64 bits without a check: [`number`]
/// then parses the token and names what is wrong with it. One pass over the bytes, for the
/// millions of numbers of a cost-line body.
#[inline(always)]
pub(crate) fn scan_number(s: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut v: u64 = 0;
    if s.get(start) == Some(&b'0') && matches!(s.get(start + 1), Some(b'x' | b'X')) {
        let mut j = start + 2;
        while j < s.len() {
            let d = match s[j] {
                b @ b'0'..=b'9' => b - b'0',
                b @ b'a'..=b'f' => b - b'a' + 10,
                b @ b'A'..=b'F' => b - b'A' + 10,
                _ => break,
            };
            v = (v << 4) | d as u64;
            j += 1;
        }
        if j == start + 2 || j - (start + 2) > 16 {
            return None;
        }
        *i = j;
    } else {
        v = scan_decimal(s, i)?;
    }
    match s.get(*i) {
        None => Some(v),
        Some(&b) if ends_token(b) => Some(v),
        _ => None,
    }
}

/// Scans the decimal digits at `s[*i..]`, whatever follows them, and moves `*i` past them;
/// `None` without a digit or with more than 19 (which might not fit 64 bits).
#[inline(always)]
pub(crate) fn scan_decimal(s: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut v: u64 = 0;
    let mut j = start;
    while let Some(&b) = s.get(j) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        j += 1;
    }
    if j == start || j - start > 19 {
        return None;
    }
    *i = j;
    Some(v)
}

/// Scans the subposition token at `s[*i..]` as [`subposition`] reads it and moves `*i` past
/// it; `None` where [`scan_number`] gives up, or when the position leaves the 64-bit range.
#[inline(always)]
pub(crate) fn scan_subposition(s: &[u8], i: &mut usize, base: u64) -> Option<u64> {
    match s.get(*i)? {
        b'*' => {
            *i += 1;
            match s.get(*i) {
                None => Some(base),
                Some(&b) if ends_token(b) => Some(base),
                _ => None,
            }
        }
        b'+' => {
            *i += 1;
            base.checked_add(scan_number(s, i)?)
        }
        b'-' => {
            *i += 1;
            base.checked_sub(scan_number(s, i)?)
        }
        _ => scan_number(s, i),
    }
}

/// A subposition: absolute (`1234`, `0x4f0`), relative to `base` (`+3`, `-2`) or the same
/// as `base` (`*`).
#[inline]
pub(crate) fn subposition(token: &[u8], base: u64) -> Parsed<u64> {
    match token.first() {
        Some(b'*') if token.len() == 1 => Ok(base),
        Some(b'+') => base
            .checked_add(number(&token[1..])?)
            .ok_or_else(|| Bad(format!("position '{}' overflows 64 bits", show(token)))),
        Some(b'-') => base
            .checked_sub(number(&token[1..])?)
            .ok_or_else(|| Bad(format!("position '{}' is below zero", show(token)))),
        _ => number(token).map_err(|_| {
            Bad(format!("expected a position (number, 0x hex, +N, -N or *), found '{}'", show(token)))
        }),
    }
}

/// A name specification's value: `(id) name` defines id, `(id)` refers to it, `name` is plain.
pub(crate) enum NameSpec<'a> {
    Plain(&'a [u8]),
    Define(u64, &'a [u8]),
    Refer(u64),
}

pub(crate) fn name_spec(value: &[u8]) -> Parsed<NameSpec<'_>> {
    let value = skip_space(value);
    if value.first() == Some(&b'(') && value.get(1).is_some_and(|b| b.is_ascii_digit()) {
        let close = value
            .iter()
            .position(|&b| b == b')')
            .ok_or_else(|| Bad(format!("expected '(id)' with a closing ')', found '{}'", show(value))))?;
        let id = number(&value[1..close])
            .map_err(|_| Bad(format!("expected a decimal name id in '{}'", show(value))))?;
        let name = trim_end(skip_space(&value[close + 1..]));
        if name.is_empty() {
            Ok(NameSpec::Refer(id))
        } else {
            Ok(NameSpec::Define(id, name))
        }
    } else {
        Ok(NameSpec::Plain(trim_end(value)))
    }
}

/// Strips trailing spaces, tabs, a carriage return and the line feed.
#[inline]
pub fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rposition(|&b| !(is_space(b) || b == b'\r' || b == b'\n')).map_or(0, |p| p + 1);
    &s[..n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_subpositions() {
        assert_eq!(number(b"1234").unwrap(), 1234);
        assert_eq!(number(b"0x4F0").unwrap(), 0x4f0);
        assert_eq!(number(b"18446744073709551615").unwrap(), u64::MAX);
        assert!(number(b"18446744073709551616").is_err());
        assert!(number(b"0x1ffffffffffffffff").is_err());
        assert!(number(b"12a").is_err());
        assert!(number(b"").is_err());
        assert_eq!(subposition(b"+3", 10).unwrap(), 13);
        assert_eq!(subposition(b"-3", 10).unwrap(), 7);
        assert_eq!(subposition(b"*", 10).unwrap(), 10);
        assert_eq!(subposition(b"0x10", 10).unwrap(), 16);
        assert!(subposition(b"-11", 10).is_err());
        assert!(subposition(b"x", 10).is_err());
    }

    #[test]
    fn scanning_agrees_with_token_parsing() {
        let tokens: &[&[u8]] = &[
            b"0",
            b"1234",
            b"0x4F0",
            b"0X1f",
            b"0x",
            b"0x1ffffffffffffffff",
            b"0xffffffffffffffff",
            b"12a",
            b"",
            b"+3",
            b"-3",
            b"-11",
            b"*",
            b"**",
            b"+",
            b"-",
            b"x",
            b"1x",
            b"9999999999999999999",
            b"18446744073709551615",
            b"18446744073709551616",
            b"+0x10",
            b"*3",
        ];
        for &t in tokens {
            for tail in [&b""[..], b" 7", b"\t7", b" 7 12345678\n", b"\n+3 0 1\n"] {
                let line = [t, tail].concat();
                let mut i = 0;
                if let Some(v) = scan_subposition(&line, &mut i, 10) {
                    assert_eq!(subposition(t, 10).ok(), Some(v), "{}", String::from_utf8_lossy(t));
                    assert_eq!(i, t.len());
                }
                let mut i = 0;
                if let Some(v) = scan_number(&line, &mut i) {
                    assert_eq!(number(t).ok(), Some(v), "{}", String::from_utf8_lossy(t));
                    assert_eq!(i, t.len());
                }
            }
        }
        let mut i = 0;
        assert_eq!(scan_number(b"0x4F0 5", &mut i), Some(0x4f0));
        assert_eq!(scan_subposition(b"-3", &mut 0, 10), Some(7));
        assert_eq!(scan_subposition(b"* 2", &mut 0, 10), Some(10));
        assert_eq!(scan_subposition(b"+2\n", &mut 0, 10), Some(12));
        assert_eq!(scan_number(b"7\r\n", &mut 0), Some(7));
        assert_eq!(scan_number(b"9999999999999999999", &mut 0), Some(9_999_999_999_999_999_999));
        assert_eq!(scan_number(b"18446744073709551615", &mut 0), None);
        assert_eq!(scan_number(b"12a", &mut 0), None);
        assert_eq!(scan_subposition(b"-11", &mut 0, 10), None);
        // Numbers of every length from 1 to 20 digits, at the end of the input and before more.
        for len in 1..=20usize {
            for lead in [b'1', b'9', b'0'] {
                let digits: Vec<u8> =
                    std::iter::once(lead).chain((1..len).map(|k| b"7305918264"[k % 10])).collect();
                for tail in [&b" 1 2 3 4 5 6 7 8"[..], b"\n", b"", b"y1234567"] {
                    let line = [&digits[..], tail].concat();
                    let mut i = 0;
                    let scanned = scan_number(&line, &mut i);
                    let parsed = if tail.first() == Some(&b'y') { None } else { number(&digits).ok() };
                    assert_eq!(
                        scanned.is_some(),
                        parsed.is_some() && len <= 19,
                        "{}",
                        String::from_utf8_lossy(&line)
                    );
                    if let Some(v) = scanned {
                        assert_eq!((Some(v), i), (parsed, len), "{}", String::from_utf8_lossy(&line));
                    }
                }
            }
        }
        let mut i = 1;
        assert_eq!(scan_decimal(b"(123)", &mut i), Some(123));
        assert_eq!(i, 4);
        assert_eq!(scan_decimal(b"12/3", &mut 0), Some(12));
        assert_eq!(scan_decimal(b"/3", &mut 0), None);
        assert_eq!(scan_decimal(b"99999999999999999999", &mut 0), None);
    }

    #[test]
    fn name_specs() {
        assert!(matches!(name_spec(b"(3) main").unwrap(), NameSpec::Define(3, b"main")));
        assert!(matches!(name_spec(b"(3)").unwrap(), NameSpec::Refer(3)));
        assert!(matches!(name_spec(b"main\r").unwrap(), NameSpec::Plain(b"main")));
        assert!(matches!(name_spec(b"(anonymous)").unwrap(), NameSpec::Plain(b"(anonymous)")));
        assert!(name_spec(b"(3 main").is_err());
    }
}
