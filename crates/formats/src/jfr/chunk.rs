//! A JFR chunk's header and the encoding of the values in it.
//!
//! A recording is one or more chunks, one after another; each starts with a 68-byte header,
//! big-endian:
//!
//! ```text
//! offset  size  field
//!      0     4  magic "FLR\0"
//!      4     2  major version (2 since JDK 11; 1 was JDK 9 and 10)
//!      6     2  minor version
//!      8     8  chunk size in bytes, this header included
//!     16     8  offset of the last constant-pool (checkpoint) event, from the chunk's start
//!     24     8  offset of the metadata event, from the chunk's start
//!     32     8  start time, nanoseconds since the epoch
//!     40     8  duration, nanoseconds
//!     48     8  start time in ticks
//!     56     8  ticks per second
//!     64     1  generation: 0 once the chunk is complete, 255 while it is written
//!     65     2  (padding)
//!     67     1  flags: 1 = integers compressed, 2 = the recording's final chunk
//! ```
//!
//! Integers of a chunk whose flag says so (every JDK since 11 sets it) are unsigned LEB128:
//! seven bits a byte, low bits first, the top bit set while more bytes follow, except that the
//! ninth byte holds eight bits; a negative `long` is its two's complement, nine bytes long.
//! `short`, `int`, `long` and `char` are written so; `byte` and `boolean` are one byte,
//! `float` and `double` four and eight bytes, big-endian, in either case. Without the flag,
//! every integer has its fixed big-endian width.
//!
//! A string starts with a byte that says how it is written: 0 null, 1 empty, 2 a reference
//! (a `long`) to the chunk's pool of strings, 3 UTF-8 bytes, 4 UTF-16 code units (each an
//! integer), 5 Latin-1 bytes; 3 to 5 are preceded by their length (an `int`).

use cfghub_model::error::{Error, Result};

/// The first four bytes of every chunk.
pub(crate) const MAGIC: &[u8; 4] = b"FLR\0";

/// The size of a chunk's header.
pub(crate) const HEADER_SIZE: u64 = 68;

/// Where a recording that is not one is told what to give instead.
pub(crate) const HINT: &str = "expected a Java Flight Recorder file (.jfr, JDK 11 or later), as \
                               `java -XX:StartFlightRecording=filename=rec.jfr` or `jcmd PID JFR.dump` writes it";

/// A chunk's header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    /// Where the chunk starts in the file.
    pub start: u64,
    /// Where the chunk ends (its start plus its size), within the file.
    pub end: u64,
    /// Where its last constant-pool event is, in the file.
    pub constant_pool: u64,
    /// Where its metadata event is, in the file.
    pub metadata: u64,
    /// How many ticks (the unit of events' times and durations) a second has.
    pub ticks_per_second: u64,
    /// Whether its integers are LEB128-compressed.
    pub compressed: bool,
}

impl Header {
    /// The header of the chunk at `start` in `file`, its offsets checked to lie in the chunk.
    pub(crate) fn read(file: &[u8], start: u64) -> Result<Header> {
        let mut at = Cursor { bytes: file, pos: start, compressed: false };
        if at.take(4)? != MAGIC {
            return Err(Error::input("not a JFR chunk: it does not start with \"FLR\\0\"")
                .at_byte(start)
                .with_hint(HINT));
        }
        let major = at.u16()?;
        let minor = at.u16()?;
        if major != 2 {
            return Err(Error::unsupported(format!(
                "JFR version {major}.{minor}: cfghub reads version 2 (JDK 11 and later)"
            ))
            .at_byte(start + 4)
            .with_hint("open the recording with the `jfr` tool of a JDK of its version, or record it again with JDK 11 or later"));
        }
        let size = at.u64()?;
        let available = file.len() as u64 - start;
        if size < HEADER_SIZE || size > available {
            return Err(Error::input(format!(
                "the chunk's size is {size} bytes, and {available} bytes are left in the file (truncated file?)"
            ))
            .at_byte(start + 8)
            .with_hint(HINT));
        }
        let end = start + size;
        let offset = |at: &mut Cursor<'_>, what: &str| -> Result<u64> {
            let place = at.pos;
            let offset = at.u64()?;
            if offset < HEADER_SIZE || offset >= size {
                return Err(Error::input(format!(
                    "the {what} event is said to be at offset {offset}, outside the chunk of {size} bytes"
                ))
                .at_byte(place));
            }
            Ok(start + offset)
        };
        let constant_pool = offset(&mut at, "constant-pool")?;
        let metadata = offset(&mut at, "metadata")?;
        at.pos = start + 56;
        let ticks_per_second = at.u64()?;
        let generation = at.u8()?;
        if generation == 255 {
            return Err(Error::input("the chunk is still being written (its generation is 255)")
                .at_byte(start + 64)
                .with_hint("dump the recording (`jcmd PID JFR.dump`) or stop it before reading"));
        }
        at.pos = start + 67;
        let flags = at.u8()?;
        Ok(Header { start, end, constant_pool, metadata, ticks_per_second, compressed: flags & 1 != 0 })
    }
}

/// A position in the file, reading the values of one chunk: every read checks that the bytes
/// are there, and errors name the byte offset where the value starts.
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    /// The bytes this cursor may read: the file up to the end of its chunk or event.
    pub bytes: &'a [u8],
    /// The offset of the next byte in the file.
    pub pos: u64,
    /// Whether integers are LEB128-compressed.
    pub compressed: bool,
}

/// A string as a value holds it: inline, or a reference to the chunk's pool of strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Text {
    Null,
    Inline(String),
    Pooled(u64),
}

impl<'a> Cursor<'a> {
    /// A cursor at `pos` reading no further than `end`.
    pub(crate) fn new(file: &'a [u8], pos: u64, end: u64, compressed: bool) -> Cursor<'a> {
        let end = end.min(file.len() as u64) as usize;
        Cursor { bytes: &file[..end], pos, compressed }
    }

    /// The bytes left before the cursor's end.
    pub(crate) fn left(&self) -> u64 {
        (self.bytes.len() as u64).saturating_sub(self.pos)
    }

    /// The error of a value that should start at `place` and is cut short by the end of its
    /// chunk or event.
    fn short(&self, place: u64, what: &str) -> Error {
        Error::input(format!("{what} runs past the end of its event or chunk (truncated file?)"))
            .at_byte(place)
            .with_hint(HINT)
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        // A cursor may start past its end (an event whose size is smaller than its own header).
        if n > self.left() || self.pos > self.bytes.len() as u64 {
            return Err(self.short(self.pos, &format!("a value of {n} bytes")));
        }
        let from = self.pos as usize;
        self.pos += n;
        Ok(&self.bytes[from..self.pos as usize])
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    /// An unsigned LEB128 integer of at most nine bytes (the ninth holding eight bits).
    fn leb128(&mut self) -> Result<u64> {
        let place = self.pos;
        let mut value = 0u64;
        for i in 0..9 {
            let Some(&byte) = self.bytes.get(self.pos as usize) else {
                return Err(self.short(place, "an integer"));
            };
            self.pos += 1;
            if i == 8 {
                return Ok(value | (u64::from(byte) << 56));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Ok(value)
    }

    /// An integer of `width` bytes when uncompressed (2 `short`/`char`, 4 `int`, 8 `long`),
    /// sign-extended.
    pub(crate) fn integer(&mut self, width: u8) -> Result<i64> {
        if self.compressed {
            let v = self.leb128()?;
            // A compressed `int` or `short` holds its two's complement in its width.
            return Ok(match width {
                2 => i64::from(v as u16 as i16),
                4 => i64::from(v as u32 as i32),
                _ => v as i64,
            });
        }
        let bytes = self.take(u64::from(width))?;
        Ok(match width {
            2 => i64::from(i16::from_be_bytes(bytes.try_into().expect("2 bytes"))),
            4 => i64::from(i32::from_be_bytes(bytes.try_into().expect("4 bytes"))),
            _ => i64::from_be_bytes(bytes.try_into().expect("8 bytes")),
        })
    }

    /// An `int`.
    pub(crate) fn int(&mut self) -> Result<i64> {
        self.integer(4)
    }

    /// A `long`.
    pub(crate) fn long(&mut self) -> Result<i64> {
        self.integer(8)
    }

    /// A count of things that follow, each taking at least a byte: refused when negative or
    /// when the bytes left could not hold them, so that nothing is allocated or looped over
    /// from a count the input states beyond what it can back.
    pub(crate) fn count(&mut self, what: &str) -> Result<usize> {
        let place = self.pos;
        let n = self.int()?;
        let left = self.left();
        if n < 0 || n as u64 > left {
            return Err(Error::input(format!("{n} {what}, and {left} bytes left to hold them"))
                .at_byte(place)
                .with_hint(HINT));
        }
        Ok(n as usize)
    }

    /// A string ([`Text`]).
    pub(crate) fn text(&mut self) -> Result<Text> {
        let place = self.pos;
        match self.u8()? {
            0 => Ok(Text::Null),
            1 => Ok(Text::Inline(String::new())),
            2 => Ok(Text::Pooled(self.long()? as u64)),
            3 => {
                let n = self.count("bytes of a UTF-8 string")?;
                Ok(Text::Inline(String::from_utf8_lossy(self.take(n as u64)?).into_owned()))
            }
            4 => {
                let n = self.count("characters of a string")?;
                let mut units = Vec::with_capacity(n);
                for _ in 0..n {
                    units.push(self.integer(2)? as u16);
                }
                Ok(Text::Inline(String::from_utf16_lossy(&units)))
            }
            5 => {
                let n = self.count("bytes of a Latin-1 string")?;
                Ok(Text::Inline(self.take(n as u64)?.iter().map(|&b| char::from(b)).collect()))
            }
            other => Err(Error::input(format!(
                "a string written in encoding {other}, which JFR does not have (0 to 5)"
            ))
            .at_byte(place)
            .with_hint(HINT)),
        }
    }

    /// Skips a string.
    pub(crate) fn skip_text(&mut self) -> Result<()> {
        let place = self.pos;
        match self.u8()? {
            0 | 1 => Ok(()),
            2 => self.long().map(drop),
            3 | 5 => {
                let n = self.count("bytes of a string")?;
                self.take(n as u64).map(drop)
            }
            4 => {
                let n = self.count("characters of a string")?;
                (0..n).try_for_each(|_| self.integer(2).map(drop))
            }
            other => Err(Error::input(format!(
                "a string written in encoding {other}, which JFR does not have (0 to 5)"
            ))
            .at_byte(place)
            .with_hint(HINT)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(bytes: &[u8], compressed: bool) -> Cursor<'_> {
        Cursor { bytes, pos: 0, compressed }
    }

    #[test]
    fn leb128_integers_take_seven_bits_a_byte_and_eight_in_the_ninth() {
        assert_eq!(cursor(&[0x05], true).long().unwrap(), 5);
        assert_eq!(cursor(&[0x85, 0xb0, 0x03], true).long().unwrap(), 55301);
        let minus_one = [0xff; 9];
        assert_eq!(cursor(&minus_one, true).long().unwrap(), -1);
        assert_eq!(cursor(&[0xff, 0xff, 0xff, 0xff, 0x0f], true).int().unwrap(), -1);
        assert_eq!(cursor(&[0, 0, 0, 7], false).int().unwrap(), 7);
        let mut past = Cursor { bytes: &[1, 2], pos: 3, compressed: true };
        assert!(past.take(0).is_err() && past.u8().is_err() && past.long().is_err());
        let e = cursor(&[0x85, 0xb0], true).long().unwrap_err();
        assert!(e.to_string().contains("byte 0") && e.to_string().contains("truncated"), "{e}");
    }

    #[test]
    fn strings_in_every_encoding() {
        assert_eq!(cursor(&[0], true).text().unwrap(), Text::Null);
        assert_eq!(cursor(&[1], true).text().unwrap(), Text::Inline(String::new()));
        assert_eq!(cursor(&[2, 9], true).text().unwrap(), Text::Pooled(9));
        assert_eq!(cursor(&[3, 2, b'h', b'i'], true).text().unwrap(), Text::Inline("hi".into()));
        assert_eq!(cursor(&[4, 2, 0xe9, 0x01, b'a'], true).text().unwrap(), Text::Inline("éa".into()));
        assert_eq!(cursor(&[5, 1, 0xe9], true).text().unwrap(), Text::Inline("é".into()));
        let e = cursor(&[3, 0xff, 0xff, 0xff, 0xff, 0x07, b'h'], true).text().unwrap_err().to_string();
        assert!(e.contains("2147483647 bytes of a UTF-8 string") && e.contains("byte 1"), "{e}");
        let e = cursor(&[7], true).text().unwrap_err().to_string();
        assert!(e.contains("encoding 7"), "{e}");
    }
}
