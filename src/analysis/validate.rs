//! Model-level checks behind `cfghub validate` (in progress).
use crate::error::Findings;
use crate::ir::Profile;
pub fn check(_profile: &Profile) -> Findings {
    Findings::default()
}
