//! Loading inputs into the model and saving the model, with format detection: the library
//! face of `cfghub convert`.

use std::io::BufRead;

use crate::error::{Findings, Result};
use crate::io::{write_output, Input};
use crate::ir::Profile;
use crate::registry::{detect_input, detect_output, Format, ReadOptions, WriteOptions};

/// A profile read from a file, with its format and what the reader noticed.
pub struct Loaded {
    pub profile: Profile,
    pub format: &'static Format,
    pub findings: Findings,
}

/// Opens `path` (`-` for standard input), detects its format unless `from` names one, and reads it.
pub fn load(path: &str, from: Option<&str>, options: &ReadOptions) -> Result<Loaded> {
    let input = Input::open(path)?;
    let format = detect_input(&input, from)?;
    if !format.can_read() {
        return Err(format.unsupported("read"));
    }
    let mut findings = Findings::default();
    let profile =
        format.read_source(&mut input.source(), options, &mut findings).map_err(|e| e.in_file(path))?;
    Ok(Loaded { profile, format, findings })
}

/// Reads a profile from any byte source in a known format (tests and embedding).
pub fn read_with(format: &Format, input: &mut dyn BufRead) -> Result<(Profile, Findings)> {
    let mut findings = Findings::default();
    let profile = format.read(input, &ReadOptions::default(), &mut findings)?;
    Ok((profile, findings))
}

/// Writes a profile to memory in a known format (tests and embedding).
pub fn write_to_vec(
    format: &Format,
    profile: &Profile,
    options: &WriteOptions,
) -> Result<(Vec<u8>, Findings)> {
    let mut out = Vec::new();
    let mut findings = Findings::default();
    format.write(profile, &mut out, options, &mut findings)?;
    Ok((out, findings))
}

/// Writes `profile` to `path` (`-` for standard output) in the format `to` or the one its name
/// asks for, atomically, refusing to overwrite any of `inputs`.
pub fn save(
    profile: &Profile,
    path: &str,
    to: Option<&str>,
    inputs: &[&str],
    options: &WriteOptions,
) -> Result<Findings> {
    let format = detect_output(path, to)?;
    if !format.can_write() {
        return Err(format.unsupported("write"));
    }
    let mut findings = Findings::default();
    if let Some(folder) = format.folder {
        crate::io::write_output_folder(path, inputs, folder.holds, |dir, target| {
            (folder.write)(profile, dir, target, options, &mut findings).map_err(|e| e.in_file(path))
        })?;
        return Ok(findings);
    }
    write_output(path, inputs, |out| {
        format.write(profile, out, options, &mut findings).map_err(|e| e.in_file(path))
    })?;
    Ok(findings)
}
