//! The totals a model states, per event, and what a writer says of the part it leaves out.
//!
//! Every output of a profile must hold the same total of every event as its source, or say
//! how much of which event it leaves out. The totals are the model's own:
//! - a process with stacks: the sum of its stacks' values;
//! - else one with cost rows: the sum of the rows (Callgrind's cost lines, DCPI's samples);
//! - else its blocks' executions, `num_instrs × count`, as the event `instructions`
//!   ([`crate::stacks::ESTIMATED_EVENT`]), which is what a DCFG counts.

use crate::stacks::ESTIMATED_EVENT;
use cfghub_model::error::Findings;
use cfghub_model::ir::{to_f64, Profile, StackValue};

/// The model's total of every event it states, by event name, in the model's event order
/// (then `instructions` when some process counts by blocks alone). Events that sum to zero
/// are listed too.
pub fn event_totals(profile: &Profile) -> Vec<(String, f64)> {
    let mut totals: Vec<(String, f64)> = profile.events.iter().map(|e| (e.name.clone(), 0.0)).collect();
    let mut by_blocks = None::<f64>;
    for process in &profile.processes {
        if !process.stacks.is_empty() {
            let mut sums = vec![0 as StackValue; process.stacks.width()];
            for s in process.stacks.samples() {
                for (slot, v) in sums.iter_mut().zip(s.values) {
                    *slot += v;
                }
            }
            for (e, (slot, sum)) in totals.iter_mut().zip(sums).enumerate() {
                slot.1 += to_f64(sum, process.stacks.decimals_of(e));
            }
        } else if process.images.iter().any(|i| !i.costs.is_empty()) {
            for image in &process.images {
                for (e, slot) in totals.iter_mut().enumerate() {
                    if e < image.costs.width() {
                        slot.1 += image.costs.event_values(e).map(|v| v as f64).sum::<f64>();
                    }
                }
            }
        } else if process.images.iter().any(|i| !i.blocks.is_empty()) {
            let n = crate::executions::executed_instructions(process) as f64;
            *by_blocks.get_or_insert(0.0) += n;
        }
    }
    if let Some(n) = by_blocks {
        match totals.iter_mut().find(|t| t.0 == ESTIMATED_EVENT) {
            Some(slot) => slot.1 += n,
            None => totals.push((ESTIMATED_EVENT.to_string(), n)),
        }
    }
    totals
}

/// A number as the warnings write it: whole numbers without a fraction, others to at most six
/// decimals.
pub fn amount(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Warns, once, how much of each event the output `format` leaves out: the source's totals
/// less what the output keeps (`kept`: by event name; an event not named is left out whole),
/// with `why`. Nothing when nothing is left out. For a loss the user did not ask for.
pub fn warn_left_out(
    findings: &mut Findings,
    format: &str,
    source: &[(String, f64)],
    kept: &[(String, f64)],
    why: &str,
) {
    if let Some(text) = left_out_text(format, source, kept, why) {
        findings.warn(None, text);
    }
}

/// [`warn_left_out`] as a note (shown under `-v`): for what the output cannot hold by its
/// nature (a flame graph draws one event, a DCPI file holds one image).
pub fn note_left_out(
    findings: &mut Findings,
    format: &str,
    source: &[(String, f64)],
    kept: &[(String, f64)],
    why: &str,
) {
    if let Some(text) = left_out_text(format, source, kept, why) {
        findings.detail(None, text);
    }
}

fn left_out_text(
    format: &str,
    source: &[(String, f64)],
    kept: &[(String, f64)],
    why: &str,
) -> Option<String> {
    let parts: Vec<String> = source
        .iter()
        .filter_map(|(name, total)| {
            let k = kept.iter().find(|k| &k.0 == name).map_or(0.0, |k| k.1);
            let left = total - k;
            (left.abs() > 1e-9 * total.abs().max(1.0) && amount(left) != "0" && amount(left) != "-0")
                .then(|| format!("{} {name}", amount(left)))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("{format}: left out {} ({why})", parts.join(", ")))
}

/// [`warn_left_out`] for an output of `profile` that keeps `kept` of the events it names (by
/// name), the rest of the profile's totals left out.
pub fn warn_kept<'a>(
    findings: &mut Findings,
    format: &str,
    profile: &Profile,
    kept: impl IntoIterator<Item = (&'a str, f64)>,
    why: &str,
) {
    let kept: Vec<(String, f64)> = kept.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    warn_left_out(findings, format, &event_totals(profile), &kept, why);
}

/// [`warn_kept`] as a note: for an output that holds some events by its nature.
pub fn note_kept<'a>(
    findings: &mut Findings,
    format: &str,
    profile: &Profile,
    kept: impl IntoIterator<Item = (&'a str, f64)>,
    why: &str,
) {
    let kept: Vec<(String, f64)> = kept.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    note_left_out(findings, format, &event_totals(profile), &kept, why);
}

/// Notes, once, that the output `format` carries none of the profile's events by its nature
/// (a BOLT profile holds branch counts, CSI metadata no costs): their whole totals are left out.
pub fn note_no_events(findings: &mut Findings, format: &str, profile: &Profile, why: &str) {
    note_left_out(findings, format, &event_totals(profile), &[], why);
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Event, Process, Stacks};

    #[test]
    fn stacks_are_summed_per_event_and_left_out_parts_named_once() {
        let mut p = Profile { events: vec![Event::new("Ir"), Event::new("Dr")], ..Profile::default() };
        let f = p.frames.intern("main");
        let mut stacks = Stacks::with_width(2);
        stacks.push(&[f], None, &[3, 1]);
        stacks.push(&[f], None, &[4, 0]);
        p.processes.push(Process { stacks, ..Process::default() });
        let totals = event_totals(&p);
        assert_eq!(totals, [("Ir".to_string(), 7.0), ("Dr".to_string(), 1.0)]);
        let mut findings = Findings::default();
        warn_left_out(&mut findings, "svg", &totals, &[("Ir".into(), 7.0)], "one event drawn");
        warn_left_out(&mut findings, "svg", &totals, &totals, "nothing");
        let text: Vec<String> = findings.warnings().map(|w| w.message.clone()).collect();
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("svg: left out 1 Dr (one event drawn)"), "{text:?}");
    }
}
