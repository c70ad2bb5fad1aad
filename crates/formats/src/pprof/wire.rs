//! The protocol-buffer wire format, as far as profile.proto needs it: varints, 64-bit and
//! 32-bit fixed fields (skipped), and length-delimited fields (strings, nested messages and
//! packed repeated varints).
//!
//! A field starts with a key, the varint `field_number << 3 | wire_type`; wire type 0 is a
//! varint, 1 eight bytes, 2 a varint length then that many bytes, 5 four bytes. Repeated
//! scalars come either one key per value or packed (one length-delimited run of varints);
//! a reader must accept both.
//!
//! [`Cursor`] reads one message's bytes and knows their offset in the whole input, so every
//! error names the byte where the damage is. Nothing is allocated here: lengths are checked
//! against the bytes left before a slice is taken.

use cfghub_model::error::{Error, Result};

pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const FIXED32: u8 = 5;

/// Reading position in one message.
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf[0]` in the whole input.
    base: u64,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        Cursor { buf, pos: 0, base }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Offset of the next byte in the whole input.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn error(&self, at: u64, what: &str) -> Error {
        Error::input(what.to_string()).at_byte(at)
    }

    /// One varint (at most ten bytes).
    #[inline]
    pub fn varint(&mut self) -> Result<u64> {
        let start = self.pos;
        if let Some(&b) = self.buf.get(start) {
            if b < 0x80 {
                self.pos = start + 1;
                return Ok(b as u64);
            }
        }
        let mut v = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(start + i) else {
                return Err(self.error(self.base + start as u64, "a varint runs past the end of its message"));
            };
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                self.pos = start + i + 1;
                return Ok(v);
            }
        }
        Err(self.error(self.base + start as u64, "a varint longer than ten bytes"))
    }

    /// A field key: (field number, wire type).
    #[inline]
    pub fn key(&mut self) -> Result<(u64, u8)> {
        let at = self.offset();
        let k = self.varint()?;
        let wire = (k & 7) as u8;
        let field = k >> 3;
        if field == 0 || !matches!(wire, VARINT | FIXED64 | LEN | FIXED32) {
            return Err(
                self.error(at, &format!("not a protocol-buffer field key (field {field}, wire type {wire})"))
            );
        }
        Ok((field, wire))
    }

    /// A length-delimited field's bytes and their offset in the whole input.
    #[inline]
    pub fn bytes(&mut self) -> Result<(&'a [u8], u64)> {
        let at = self.offset();
        let len = self.varint()?;
        let left = (self.buf.len() - self.pos) as u64;
        if len > left {
            return Err(self.error(
                at,
                &format!("a field of {len} bytes where its message has only {left} left (truncated input?)"),
            ));
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok((&self.buf[start..self.pos], self.base + start as u64))
    }

    /// Skips a field's value of the given wire type.
    pub fn skip(&mut self, wire: u8) -> Result<()> {
        let at = self.offset();
        let n = match wire {
            VARINT => return self.varint().map(drop),
            LEN => return self.bytes().map(drop),
            FIXED64 => 8,
            _ => 4,
        };
        if self.buf.len() - self.pos < n {
            return Err(self.error(at, "a fixed-size field runs past the end of its message"));
        }
        self.pos += n;
        Ok(())
    }

    /// A varint field's value; other wire types are an error naming `what`.
    #[inline]
    pub fn uint(&mut self, wire: u8, what: &str) -> Result<u64> {
        if wire != VARINT {
            return Err(
                self.error(self.offset(), &format!("{what}: expected a varint, found wire type {wire}"))
            );
        }
        self.varint()
    }

    /// A repeated varint field, packed or not: calls `each` with every value.
    #[inline]
    pub fn repeated(&mut self, wire: u8, what: &str, mut each: impl FnMut(u64)) -> Result<()> {
        match wire {
            VARINT => {
                each(self.varint()?);
                Ok(())
            }
            LEN => {
                let (bytes, at) = self.bytes()?;
                let mut inner = Cursor::new(bytes, at);
                while !inner.is_empty() {
                    each(inner.varint()?);
                }
                Ok(())
            }
            _ => Err(self.error(self.offset(), &format!("{what}: expected varints, found wire type {wire}"))),
        }
    }

    /// A length-delimited field's bytes; other wire types are an error naming `what`.
    #[inline]
    pub fn message(&mut self, wire: u8, what: &str) -> Result<Cursor<'a>> {
        if wire != LEN {
            return Err(self.error(
                self.offset(),
                &format!("{what}: expected a length-delimited field, found wire type {wire}"),
            ));
        }
        let (bytes, at) = self.bytes()?;
        Ok(Cursor::new(bytes, at))
    }
}

/// Writing: protocol-buffer fields appended to a byte vector.
pub mod put {
    #[inline]
    pub fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    #[inline]
    pub fn key(out: &mut Vec<u8>, field: u64, wire: u8) {
        varint(out, field << 3 | wire as u64);
    }

    /// A varint field, left out when 0 (proto3's default).
    #[inline]
    pub fn uint(out: &mut Vec<u8>, field: u64, v: u64) {
        if v != 0 {
            key(out, field, super::VARINT);
            varint(out, v);
        }
    }

    /// A bool field, left out when false.
    pub fn flag(out: &mut Vec<u8>, field: u64, v: bool) {
        uint(out, field, v as u64);
    }

    /// A length-delimited field.
    #[inline]
    pub fn bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
        key(out, field, super::LEN);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }

    /// A packed repeated varint field, left out when empty.
    pub fn packed(
        out: &mut Vec<u8>,
        field: u64,
        values: impl Iterator<Item = u64> + Clone,
        scratch: &mut Vec<u8>,
    ) {
        scratch.clear();
        for v in values {
            varint(scratch, v);
        }
        if !scratch.is_empty() {
            bytes(out, field, scratch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_back_and_errors_name_the_byte() {
        let mut out = Vec::new();
        for v in [0u64, 1, 127, 128, 300, u64::MAX, (-5i64) as u64] {
            put::varint(&mut out, v);
        }
        let mut c = Cursor::new(&out, 100);
        for v in [0u64, 1, 127, 128, 300, u64::MAX, (-5i64) as u64] {
            assert_eq!(c.varint().unwrap(), v);
        }
        assert!(c.is_empty());
        let mut c = Cursor::new(&[0x80, 0x80], 7);
        let e = c.varint().unwrap_err();
        assert_eq!(e.place, Some(cfghub_model::error::Place::Byte(7)));
        let mut c = Cursor::new(&[0x0a, 0x05, 1, 2], 0);
        let (f, w) = c.key().unwrap();
        assert_eq!((f, w), (1, LEN));
        assert!(c.bytes().unwrap_err().message.contains("truncated"));
    }

    #[test]
    fn repeated_fields_are_read_packed_and_unpacked() {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        put::packed(&mut out, 1, [1u64, 300, 2].into_iter(), &mut scratch);
        put::key(&mut out, 1, VARINT);
        put::varint(&mut out, 9);
        let mut c = Cursor::new(&out, 0);
        let mut got = Vec::new();
        while !c.is_empty() {
            let (_, w) = c.key().unwrap();
            c.repeated(w, "x", |v| got.push(v)).unwrap();
        }
        assert_eq!(got, [1, 300, 2, 9]);
    }
}
