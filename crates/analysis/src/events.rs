//! Which events a writer or command takes: the one `--event` names, else what the caller takes
//! when none is named, said in one word at its call site ([`Unnamed`]). Every `--event` of every
//! command is resolved here, with one error that lists the profile's events.

use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{EventId, Profile, DEFAULT_SAMPLE_TYPE_KEY};

/// What a caller takes when `--event` names no event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unnamed {
    /// Every event, in the profile's order (formats with a column per event).
    All,
    /// The event the profile states as its default ([`stated_default`]).
    StatedDefault,
    /// The profile's first event (formats of one value per record).
    First,
    /// None: the caller has a measure of its own (a control-flow graph's heat by execution
    /// count).
    Neither,
}

/// The events chosen: the one `named`, else those `unnamed` says. A profile without events
/// gives none unless one is named, and a name the profile lacks is a usage error
/// ([`unknown_event`]).
pub fn chosen(profile: &Profile, named: Option<&str>, unnamed: Unnamed) -> Result<Vec<EventId>> {
    if let Some(name) = named {
        return Ok(vec![by_name(profile, name)?]);
    }
    let any = !profile.events.is_empty();
    Ok(match unnamed {
        Unnamed::All => (0..profile.events.len()).collect(),
        Unnamed::StatedDefault if any => vec![stated_default(profile)],
        Unnamed::First if any => vec![0],
        Unnamed::StatedDefault | Unnamed::First | Unnamed::Neither => Vec::new(),
    })
}

/// The event called `name` (or `name:`, perf's name of an event counted in samples, as a
/// BOLT or DCPI output reads a recording), or the usage error that lists the profile's events.
pub fn by_name(profile: &Profile, name: &str) -> Result<EventId> {
    profile
        .event_index(name)
        .or_else(|| profile.event_index(&format!("{name}:")))
        .ok_or_else(|| unknown_event(profile, name))
}

/// The one error for an event name the profile lacks, listing the events it has.
pub(crate) fn unknown_event(profile: &Profile, name: &str) -> Error {
    let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
    Error::usage(format!("the profile has no event '{name}'")).with_hint(if names.is_empty() {
        "the profile has no events".to_string()
    } else {
        format!("its events: {}", names.join(", "))
    })
}

/// The event the profile states as its default (pprof's `default_sample_type`, kept under
/// [`DEFAULT_SAMPLE_TYPE_KEY`]), else its first: the event a single measure shows when none is
/// named.
pub fn stated_default(profile: &Profile) -> EventId {
    profile
        .meta
        .headers
        .iter()
        .find(|(k, _)| k == DEFAULT_SAMPLE_TYPE_KEY)
        .and_then(|(_, name)| profile.event_index(name))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::Event;

    fn profile(events: &[&str], default: Option<&str>) -> Profile {
        let mut p = Profile { events: events.iter().map(|e| Event::new(*e)).collect(), ..Profile::default() };
        if let Some(d) = default {
            p.meta.headers.push((DEFAULT_SAMPLE_TYPE_KEY.to_string(), d.to_string()));
        }
        p
    }

    #[test]
    fn a_named_event_wins_whatever_the_caller_takes_unnamed() {
        let p = profile(&["samples", "cpu"], Some("cpu"));
        for unnamed in [Unnamed::All, Unnamed::StatedDefault, Unnamed::First, Unnamed::Neither] {
            assert_eq!(chosen(&p, Some("samples"), unnamed).unwrap(), [0]);
        }
        assert_eq!(chosen(&p, None, Unnamed::All).unwrap(), [0, 1]);
        assert_eq!(chosen(&p, None, Unnamed::StatedDefault).unwrap(), [1]);
        assert_eq!(chosen(&p, None, Unnamed::First).unwrap(), [0]);
        assert!(chosen(&p, None, Unnamed::Neither).unwrap().is_empty());
        assert_eq!(stated_default(&profile(&["a", "b"], Some("gone"))), 0);
    }

    #[test]
    fn an_unknown_name_is_one_error_that_lists_the_events() {
        let e = chosen(&profile(&["Ir", "Dr"], None), Some("cycles"), Unnamed::First).unwrap_err();
        assert_eq!(e.to_string().lines().next(), Some("the profile has no event 'cycles'"));
        assert!(format!("{e:?}").contains("its events: Ir, Dr"), "{e:?}");
        let none = by_name(&profile(&[], None), "Ir").unwrap_err();
        assert!(format!("{none:?}").contains("the profile has no events"), "{none:?}");
        assert!(chosen(&profile(&[], None), None, Unnamed::First).unwrap().is_empty());
    }
}
