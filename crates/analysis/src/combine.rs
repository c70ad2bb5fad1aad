//! Combining sample profiles: several DCPI files (one per event, or one per image) become one
//! model with one event column per distinct event name and one image per distinct image.
//!
//! Images are the same when they have the same path, or (without paths) the same DCPI
//! `image` identifier. Costs at the same offset of the same image are summed into one cost
//! with a value per event. The first input's header lines are kept; every event a later input
//! adds brings its `event` line (and its `period` line), so that the k-th `event` line keeps
//! describing the k-th event (see `converters/dcpi/model.rs`).

use std::collections::HashMap;

use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::{CostTable, FileId, Image, Process, Profile, StringTable};

fn header<'p>(profile: &'p Profile, key: &str) -> impl Iterator<Item = &'p str> + 'p {
    let key = key.to_string();
    profile.meta.headers.iter().filter(move |(k, _)| *k == key).map(|(_, v)| v.as_str())
}

/// What identifies an image across inputs: its path, else the DCPI image id of a one-image
/// profile, else nothing (never combined with another).
fn image_key(profile: &Profile, image: &Image, images_in_profile: usize) -> Option<String> {
    if let Some(f) = image.file {
        return Some(format!("path {}", profile.file_name(f)));
    }
    if images_in_profile == 1 {
        if let Some(id) = header(profile, "image").next() {
            return Some(format!("id {id}"));
        }
    }
    None
}

fn remap(files: &mut StringTable, from: &Profile, id: Option<FileId>) -> Option<FileId> {
    id.map(|f| files.intern(from.file_name(f)))
}

/// Combines `inputs` into one profile (see the module documentation). One input is returned
/// unchanged.
pub fn combine(mut inputs: Vec<Profile>, findings: &mut Findings) -> Result<Profile> {
    if inputs.len() <= 1 {
        return Ok(inputs.pop().unwrap_or_default());
    }
    let first = &inputs[0];
    let mut out = Profile { meta: first.meta.clone(), ..Profile::default() };
    out.meta.headers.clear();
    let mut process = Process::default();
    let mut keys: HashMap<String, usize> = HashMap::new();
    // (image, event) pairs already given by an input: a second one is summed, with a warning.
    let mut given: HashMap<(usize, usize), usize> = HashMap::new();
    for (n, input) in inputs.iter().enumerate() {
        let event_map = map_events(&mut out, input, n);
        if n == 0 {
            out.meta.headers = input.meta.headers.clone();
        }
        let count = input.processes.iter().map(|p| p.images.len()).sum();
        for p in &input.processes {
            for image in &p.images {
                let key = image_key(input, image, count);
                let existing = key.as_ref().and_then(|k| keys.get(k).copied());
                let target = match existing {
                    Some(t) => {
                        let have = &process.images[t];
                        if have.load_addr != image.load_addr {
                            findings.warn(
                                None,
                                format!(
                                    "{}: text starts at {:#x} in one input and {:#x} in another; offsets from the text start are combined",
                                    input.image_name(image),
                                    have.load_addr,
                                    image.load_addr
                                ),
                            );
                        }
                        t
                    }
                    None => {
                        process.images.push(image_without_costs(&mut out.files, input, image));
                        let t = process.images.len() - 1;
                        if let Some(k) = key {
                            keys.insert(k, t);
                        }
                        t
                    }
                };
                for &e in &event_map {
                    if let Some(prev) = given.insert((target, e), n) {
                        if prev != n {
                            findings.warn(
                                None,
                                format!(
                                    "{}: two inputs give '{}' samples for the same image; they are summed",
                                    input.image_name(image),
                                    out.events[e].name
                                ),
                            );
                        }
                    }
                }
                append_costs(&mut process.images[target].costs, &mut out.files, input, image, &event_map);
            }
        }
    }
    let events = out.events.len();
    for image in &mut process.images {
        sum_equal_offsets(&mut image.costs, events);
    }
    out.processes.push(process);
    Ok(out)
}

/// The event column of `out` each event of `input` (the `n`-th input) goes to. Events new to
/// `out` are added; after the first input, with the header lines that describe them (the
/// `event` line, and the `period` line of a binary profile's event).
fn map_events(out: &mut Profile, input: &Profile, n: usize) -> Vec<usize> {
    let event_lines: Vec<&str> = header(input, "event").collect();
    let mut periods = header(input, "period");
    let mut event_map = Vec::with_capacity(input.events.len());
    for (j, event) in input.events.iter().enumerate() {
        let line = event_lines.get(j).copied();
        let binary_style = line.is_some_and(|l| split_spec(l).is_none());
        let period = if binary_style { periods.next() } else { None };
        match out.event_index(&event.name) {
            Some(e) => event_map.push(e),
            None => {
                event_map.push(out.events.len());
                out.events.push(event.clone());
                if n > 0 {
                    if let Some(l) = line {
                        out.meta.headers.push(("event".into(), l.to_string()));
                    }
                    if let Some(p) = period {
                        out.meta.headers.push(("period".into(), p.to_string()));
                    }
                }
            }
        }
    }
    event_map
}

/// A copy of `image` of `input` without its costs, its file names interned in `files`.
fn image_without_costs(files: &mut StringTable, input: &Profile, image: &Image) -> Image {
    let mut copy = Image { costs: CostTable::new(), ..image.clone() };
    copy.file = remap(files, input, image.file);
    for s in &mut copy.symbols {
        s.file = remap(files, input, s.file);
    }
    for l in &mut copy.source_lines {
        l.file = remap(files, input, l.file);
    }
    copy
}

/// Appends the costs of `image` of `input` to `costs`, each value in the event column
/// `event_map` gives its event (values of one column summed), file names interned in `files`.
fn append_costs(
    costs: &mut CostTable,
    files: &mut StringTable,
    input: &Profile,
    image: &Image,
    event_map: &[usize],
) {
    let width = event_map.iter().max().map_or(0, |m| m + 1);
    costs.reserve(image.costs.len());
    let mut values = vec![0u64; width];
    for row in 0..image.costs.len() {
        values.fill(0);
        for (j, &v) in image.costs.values(row).iter().enumerate() {
            if let Some(&e) = event_map.get(j) {
                values[e] = values[e].saturating_add(v);
            }
        }
        let file = remap(files, input, image.costs.file(row));
        costs.push_parts(
            image.costs.offset(row),
            image.costs.symbol(row),
            file,
            image.costs.line(row),
            &values,
        );
    }
}

/// Sorts costs by offset and sums those at the same offset (with the same symbol, file and
/// line) into one, every value vector at least `events` long. Costs without an offset stay as
/// they are, after the others. Costs already in order with distinct offsets (samples usually
/// are) are left in place.
pub(crate) fn sum_equal_offsets(costs: &mut CostTable, events: usize) {
    costs.widen(events);
    let key = |row: usize| (costs.offset(row).is_none(), costs.offset(row));
    let same_place = |a: usize, b: usize| {
        costs.offset(a).is_some()
            && costs.offset(a) == costs.offset(b)
            && costs.symbol(a) == costs.symbol(b)
            && costs.file(a) == costs.file(b)
            && costs.line(a) == costs.line(b)
    };
    let in_order = (1..costs.len())
        .all(|row| key(row - 1) < key(row) || (key(row - 1) == key(row) && !same_place(row - 1, row)));
    if in_order {
        return;
    }
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|&row| key(row));
    let mut merged = CostTable::new();
    merged.widen(costs.width());
    merged.reserve(costs.len());
    let mut last: Option<usize> = None;
    for row in order {
        if let Some(prev) = last.filter(|&prev| same_place(prev, row)) {
            merged.add_to_last(&costs.values(row));
            last = Some(prev);
            continue;
        }
        merged.push_parts(
            costs.offset(row),
            costs.symbol(row),
            costs.file(row),
            costs.line(row),
            &costs.values(row),
        );
        last = Some(row);
    }
    *costs = merged;
}

/// Splits a dcpicat event spec `NAME[:COUNTER]:PERIOD:FRACTION`; `None` when the last two
/// fields are not numbers.
pub fn split_spec(spec: &str) -> Option<(&str, u64, u64)> {
    let (rest, fraction) = spec.rsplit_once(':')?;
    let (name, period) = rest.rsplit_once(':')?;
    let num = |s: &str| -> Option<u64> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    if name.is_empty() {
        return None;
    }
    Some((name, num(period)?, num(fraction)?))
}
