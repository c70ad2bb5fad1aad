//! The one error type, and the findings readers and writers report without failing.
//!
//! Every error says *where* (a file, and a line, a byte offset or a JSON path in it) and *what*
//! was expected. The command-line tool exits with status 2 for every [`Error`].

use std::fmt;
use std::io;

/// Where in an input something was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// 1-based line number of a text format.
    Line(u64),
    /// Byte offset from the start of a (decompressed) binary format.
    Byte(u64),
    /// Path into a JSON document, e.g. `PROCESSES[0].IMAGES[2].BASIC_BLOCKS row 17`.
    Path(String),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Line(n) => write!(f, "line {n}"),
            Place::Byte(n) => write!(f, "byte {n}"),
            Place::Path(p) => write_escaped(f, p),
        }
    }
}

/// Writes `text` with control characters (NUL, escape, carriage return, ...; input bytes that
/// messages quote) shown as escapes (`\0`, `\x1b`, `\r`), so that a message never carries
/// raw control bytes to the terminal.
pub fn write_escaped(f: &mut impl fmt::Write, text: &str) -> fmt::Result {
    let mut rest = text;
    while let Some(i) = rest.find(char::is_control) {
        f.write_str(&rest[..i])?;
        let c = rest[i..].chars().next().unwrap_or('\0');
        match c {
            '\0' => f.write_str("\\0")?,
            '\t' => f.write_str("\\t")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            c if (c as u32) < 0x100 => write!(f, "\\x{:02x}", c as u32)?,
            c => write!(f, "\\u{{{:x}}}", c as u32)?,
        }
        rest = &rest[i + c.len_utf8()..];
    }
    f.write_str(rest)
}

/// What went wrong, broadly: decides the wording of the message's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is not valid in its format.
    Input,
    /// The command line asks for something impossible (unknown format, same input and output).
    Usage,
    /// The operating system refused a read or write.
    Io,
    /// A format cannot express what was asked of it.
    Unsupported,
}

/// The error every fallible cfghub function returns.
#[derive(Debug)]
pub struct Error {
    /// What went wrong, broadly; decides the prefix of the message.
    pub kind: ErrorKind,
    /// The input or output the error concerns (a path, or `-` for standard input).
    pub file: Option<String>,
    /// Where in `file` the error was found; `None` when the error concerns the file as a whole.
    pub place: Option<Place>,
    /// What was wrong or expected, without the file and place (the display adds them).
    pub message: String,
    /// What the user can do about it, when there is something to say.
    pub hint: Option<String>,
}

/// The result every fallible cfghub function returns, with [`Error`] by default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The most bytes of a message: one that quotes its input (a line, a name) is cut there,
/// so that a line of 64 MB is not printed whole.
pub const MESSAGE_BYTES: usize = 1024;

/// `message` cut to [`MESSAGE_BYTES`] (at a character boundary), saying how much was left out.
fn shortened(mut message: String) -> String {
    if message.len() > MESSAGE_BYTES {
        let mut cut = MESSAGE_BYTES;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        let left = message.len() - cut;
        message.truncate(cut);
        message.push_str(&format!("... ({left} bytes more)"));
    }
    message
}

impl Error {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, file: None, place: None, message: shortened(message.into()), hint: None }
    }

    /// Bad input: the data does not follow its format.
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Input, message)
    }

    /// A request that cannot be carried out as asked.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }

    /// Something a format or command cannot do.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    /// An operating-system error while reading or writing `path`.
    pub fn io(path: impl Into<String>, err: io::Error) -> Self {
        // Decompressors and our own readers carry `Error`s through `io::Error`; unwrap them.
        if err.get_ref().is_some_and(|e| e.is::<Error>()) {
            let inner = err.into_inner().expect("checked above").downcast::<Error>();
            let mut e = *inner.expect("checked above");
            // Readers that do not know their file's name pass `-`; the caller names it later.
            let path = path.into();
            if e.file.is_none() && path != "-" {
                e.file = Some(path);
            }
            return e;
        }
        // The bzip2 decoder names the compressed byte where its input goes wrong.
        if let Some(bz) = err.get_ref().and_then(|e| e.downcast_ref::<bzip2_parallel::DecodeError>()) {
            let path = path.into();
            let mut e = Error::input(bz.message.clone());
            if path != "-" {
                e = e.in_file(path);
            }
            if let Some(offset) = bz.offset {
                e = e.at(Place::Byte(offset));
            }
            if let Some(hint) = &bz.hint {
                e = e.with_hint(hint.clone());
            }
            return e;
        }
        let kind = match err.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => ErrorKind::Input,
            _ => ErrorKind::Io,
        };
        Error { file: Some(path.into()), ..Self::new(kind, err.to_string()) }
    }

    /// Sets where in the input the error was found, replacing any place set before.
    pub fn at(mut self, place: Place) -> Self {
        self.place = Some(place);
        self
    }

    /// Sets the 1-based line of a text format the error was found at.
    pub fn at_line(self, line: u64) -> Self {
        self.at(Place::Line(line))
    }

    /// Sets the byte offset (from the start of the decompressed input) the error was found at.
    pub fn at_byte(self, offset: u64) -> Self {
        self.at(Place::Byte(offset))
    }

    /// Sets the path into a JSON document the error was found at.
    pub fn at_path(self, path: impl Into<String>) -> Self {
        self.at(Place::Path(path.into()))
    }

    /// Names the file, unless a more precise one was named already.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into());
        }
        self
    }

    /// Adds what the user can do about the error, replacing any hint set before.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Wraps the error into an `io::Error`, for readers that sit behind `std::io::Read`.
    pub(crate) fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write_escaped(f, file)?;
            match &self.place {
                Some(Place::Line(n)) => write!(f, ":{n}: ")?,
                Some(loc) => write!(f, ": {loc}: ")?,
                None => f.write_str(": ")?,
            }
        } else if let Some(loc) = &self.place {
            write!(f, "{loc}: ")?;
        }
        write_escaped(f, &self.message)?;
        if let Some(hint) = &self.hint {
            f.write_str("\n  hint: ")?;
            write_escaped(f, hint)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// How serious a [`Finding`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// What the chosen output cannot hold by its nature (a flame graph draws one event, a
    /// folded file has no threads), or how a result was made: told only when asked
    /// (`cfghub -v`), documented on the format's page.
    Detail,
    /// Worth knowing; the data is usable (real producers are slightly off in places), or a
    /// loss the user did not ask for.
    Warning,
    /// Breaks a rule of the format; conversions refuse such input, `validate` lists them all.
    Violation,
}

/// Something a reader noticed, or something a writer could not express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Whether the data stays usable (a warning) or breaks a rule of the format (a violation).
    pub severity: Severity,
    /// Where in the input the finding was made; `None` when it concerns the profile as a whole.
    pub place: Option<Place>,
    /// What was noticed, in one sentence.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self.severity {
            Severity::Detail => "note",
            Severity::Warning => "warning",
            Severity::Violation => "violation",
        };
        match &self.place {
            Some(loc) => write!(f, "{word}: {loc}: ")?,
            None => write!(f, "{word}: ")?,
        }
        write_escaped(f, &self.message)
    }
}

/// Findings collected while reading, checking or writing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// The findings in the order they were made.
    pub items: Vec<Finding>,
}

impl Findings {
    /// Records a [`Severity::Warning`]: worth knowing, the data stays usable.
    pub fn warn(&mut self, place: Option<Place>, message: impl Into<String>) {
        self.push(Severity::Warning, place, message);
    }

    /// Records a [`Severity::Detail`]: what the output cannot hold by its nature, or how a
    /// result was made; shown only when asked for.
    pub fn detail(&mut self, place: Option<Place>, message: impl Into<String>) {
        self.push(Severity::Detail, place, message);
    }

    /// Records a [`Severity::Violation`]: a rule of the format is broken.
    pub fn violation(&mut self, place: Option<Place>, message: impl Into<String>) {
        self.push(Severity::Violation, place, message);
    }

    fn push(&mut self, severity: Severity, place: Option<Place>, message: impl Into<String>) {
        self.items.push(Finding { severity, place, message: message.into() });
    }

    /// Whether any finding is a violation (conversions refuse such input).
    pub fn has_violations(&self) -> bool {
        self.items.iter().any(|f| f.severity == Severity::Violation)
    }

    /// The violations, in the order they were made.
    pub fn violations(&self) -> impl Iterator<Item = &Finding> {
        self.items.iter().filter(|f| f.severity == Severity::Violation)
    }

    /// The warnings, in the order they were made.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.items.iter().filter(|f| f.severity == Severity::Warning)
    }

    /// The details, in the order they were made.
    pub fn details(&self) -> impl Iterator<Item = &Finding> {
        self.items.iter().filter(|f| f.severity == Severity::Detail)
    }

    /// Appends the findings of `other` after these.
    pub fn extend(&mut self, other: Findings) {
        self.items.extend(other.items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_in_messages_are_escaped() {
        let e = Error::input("unexpected 'a\0b\x1b[31m\r'")
            .in_file("in\x07.txt")
            .at_line(3)
            .with_hint("x\u{85}y");
        assert_eq!(e.to_string(), "in\\x07.txt:3: unexpected 'a\\0b\\x1b[31m\\r'\n  hint: x\\x85y");
        let mut findings = Findings::default();
        findings.warn(Some(Place::Path("A\0".into())), "b\tc");
        assert_eq!(findings.items[0].to_string(), "warning: A\\0: b\\tc");
    }
}
