//! Call stacks as stack tools print them, shared by every format that reads or draws them.
//!
//! Folded stacks (`main;parse;read_line 31`) are what FlameGraph's and inferno's tools exchange:
//! the folded format reads and writes them as they are, the DTrace and perf readers collapse
//! their input into them with inferno's collapsers ([`collapse`]) and read the result
//! ([`folded::read_bytes`]), and the flame-graph writer draws them. What those formats share
//! lives here, so that none of them depends on another.

pub mod folded;

use std::io::BufRead;

use crate::error::{Error, Result};
use crate::ir::{EventId, Profile};

pub use folded::{default_event_names, DEFAULT_EVENT};

/// Runs one of inferno's collapsers (DTrace, perf) over an input and returns its folded
/// text. inferno asserts some of its own invariants on malformed input; such a panic is caught
/// and reported as bad input, never passed on.
pub fn collapse<C: inferno::collapse::Collapse>(
    folder: &mut C,
    input: &mut dyn BufRead,
    what: &str,
    hint: &str,
) -> Result<Vec<u8>> {
    let mut folded = Vec::new();
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| folder.collapse(input, &mut folded)));
    let bad = |detail: String| Error::input(format!("not {what}: {detail}")).with_hint(hint.to_string());
    match result {
        Ok(Ok(())) => Ok(folded),
        Ok(Err(e)) => Err(bad(e.to_string())),
        Err(_) => Err(bad("the collapser could not follow its records".to_string())),
    }
}

/// Which event columns to write: the one `--event` names, else all of them.
pub fn chosen_events(profile: &Profile, event: Option<&str>) -> Result<Vec<EventId>> {
    match event {
        Some(name) => profile.event_index(name).map(|i| vec![i]).ok_or_else(|| {
            let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
            Error::usage(format!("the profile has no event '{name}'"))
                .with_hint(format!("its events: {}", names.join(", ")))
        }),
        None => Ok((0..profile.events.len()).collect()),
    }
}
