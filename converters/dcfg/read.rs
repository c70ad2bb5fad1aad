//! DCFG reader (in progress).
use crate::error::{Error, Findings, Result};
use crate::ir::Profile;
use std::io::BufRead;
pub fn read(_input: &mut dyn BufRead, _findings: &mut Findings) -> Result<Profile> {
    Err(Error::unsupported("DCFG reading is being written"))
}
