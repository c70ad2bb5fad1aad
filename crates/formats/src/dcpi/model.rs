//! What the DCPI binary profile and the dcpicat text dump share: how a profile's events are
//! described in [`Meta::headers`](cfghub_model::ir::Meta::headers), which image a per-image file
//! holds, and the slot step.
//!
//! Event descriptions live in the header lines, keyed `event`, and the k-th `event` line
//! describes `Profile::events[k]`:
//! - from a binary profile, `event NAME`, with the sampling period in a `period` line (the k-th
//!   `period` line belongs to the k-th such `event` line);
//! - from a dcpicat dump, `event NAME:PERIOD:FRACTION` (the dump's total in front is dropped:
//!   it follows from the samples and is recomputed on writing).

use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{Image, Meta, Profile};

/// An event as DCPI describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// The `NAME` of the `event` header line.
    pub name: String,

    /// Events per sample.
    pub period: Option<u64>,
    /// 10000 times the fraction of the time the event was monitored (multiplexing).
    pub fraction: Option<u64>,
}

pub use cfghub_analysis::combine::split_spec;

/// Whether the header lines are a DCPI profile's (binary or dcpicat): other formats' header
/// lines are never written into a DCPI file.
pub(crate) fn is_dcpi_family(meta: &Meta) -> bool {
    meta.headers.iter().any(|(k, _)| k == "image" || k == "epoch" || k == "event")
}

/// The DCPI description of every event of `profile`, in event order.
pub fn event_specs(profile: &Profile) -> Vec<EventSpec> {
    let headers: &[(String, String)] =
        if is_dcpi_family(&profile.meta) { &profile.meta.headers } else { &[] };
    let events: Vec<&str> = headers.iter().filter(|(k, _)| k == "event").map(|(_, v)| v.as_str()).collect();
    let mut periods = headers.iter().filter(|(k, _)| k == "period").map(|(_, v)| v.parse::<u64>().ok());
    let mut described: Vec<EventSpec> = Vec::new();
    for value in events {
        match split_spec(value) {
            Some((name, period, fraction)) => described.push(EventSpec {
                name: name.to_string(),
                period: Some(period),
                fraction: Some(fraction),
            }),
            None => described.push(EventSpec {
                name: value.to_string(),
                period: periods.next().flatten(),
                fraction: None,
            }),
        }
    }
    profile
        .events
        .iter()
        .enumerate()
        .map(|(k, e)| match described.get(k) {
            Some(d) if d.name == e.name => d.clone(),
            // perf's name of an event counted in samples (`cpu-clock:`, as `perf script`
            // prints it) without the colon: a DCPI file counts samples whatever its event.
            _ => EventSpec {
                name: e.name.strip_suffix(':').filter(|n| !n.is_empty()).unwrap_or(&e.name).to_string(),
                period: None,
                fraction: None,
            },
        })
        .collect()
}

/// The index of the event a one-event file should hold: the one named, else the only one,
/// else the first (with a warning naming the others).
pub(crate) fn choose_event(
    profile: &Profile,
    wanted: Option<&str>,
    findings: &mut Findings,
    format: &str,
) -> Result<usize> {
    let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
    if let Some(w) = wanted {
        return cfghub_analysis::events::by_name(profile, w);
    }
    match names.len() {
        0 => Err(Error::unsupported(format!(
            "{format}: the profile has no events (nothing was sampled or counted)"
        ))),
        1 => Ok(0),
        _ => {
            findings.detail(
                None,
                format!(
                    "{format}: a file holds one event; wrote '{}', not {} (choose with --event NAME)",
                    names[0],
                    names[1..].join(", ")
                ),
            );
            Ok(0)
        }
    }
}

/// The image a per-image file should hold: the one with the most cost for `events` (all
/// events when empty); other images with costs are named in a warning.
pub(crate) fn choose_image<'p>(
    profile: &'p Profile,
    events: &[usize],
    findings: &mut Findings,
    format: &str,
) -> Result<&'p Image> {
    // Each event's column summed a block at a time (saturating), not a row at a time.
    let total = |image: &Image| -> u64 {
        let costs = &image.costs;
        let all: Vec<usize> = if events.is_empty() { (0..costs.width()).collect() } else { events.to_vec() };
        all.iter().map(|&e| costs.total(e)).fold(0, u64::saturating_add)
    };
    let mut with_costs: Vec<(&Image, u64)> = profile
        .processes
        .iter()
        .flat_map(|p| &p.images)
        .filter(|i| !i.costs.is_empty())
        .map(|i| (i, total(i)))
        .collect();
    if with_costs.is_empty() {
        // No samples anywhere: an empty profile of the first image.
        return profile.processes.iter().flat_map(|p| &p.images).next().ok_or_else(|| {
            Error::unsupported(format!("{format}: the profile has no image to write samples of"))
        });
    }
    // Stable: the first of equally hot images wins.
    let best = with_costs
        .iter()
        .enumerate()
        .max_by(|a, b| a.1 .1.cmp(&b.1 .1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let chosen = with_costs.swap_remove(best).0;
    let others: Vec<String> =
        with_costs.iter().filter(|(_, t)| *t > 0).map(|(i, _)| profile.image_name(i)).collect();
    if !others.is_empty() {
        findings.detail(
            None,
            format!(
                "{format}: a file holds one image; wrote {} and left out the samples of {}",
                profile.image_name(chosen),
                others.join(", ")
            ),
        );
    }
    Ok(chosen)
}

pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The distance between sample slots, given the greatest common divisor of the gaps between
/// consecutive sampled addresses (0 when there is at most one): 4 bytes (DCPI's own, Alpha
/// instructions) unless the gaps say the slots are closer or not 4-aligned.
pub(crate) fn step_of_gaps(gcd_of_gaps: u64) -> u64 {
    if gcd_of_gaps == 0 || gcd_of_gaps.is_multiple_of(4) {
        4
    } else {
        gcd_of_gaps
    }
}

/// The final component of a path.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
