//! DCFG writer (in progress).
use crate::error::{Error, Findings, Result};
use crate::ir::Profile;
use std::io::Write;
pub fn write(
    _profile: &Profile,
    _out: &mut dyn Write,
    _pretty: bool,
    _findings: &mut Findings,
) -> Result<()> {
    Err(Error::unsupported("DCFG writing is being written"))
}
