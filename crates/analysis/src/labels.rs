//! Sample labels given on the command line: `--label key=value`, `--label-from-path PATTERN`
//! (`hosts/{host}/{service}.pb.gz` takes `host` and `service` from each input's path), and
//! `--split-by KEY`, which puts the samples of each value of a label in a process of their own.
//!
//! A label given for an input goes on every sample of it, in place of a label of the same key
//! the input carried (pprof's own sample labels are kept otherwise).

use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{Label, Process, Profile, Stacks, NO_INDEX};

/// Parses `key=value`.
pub fn parse(text: &str) -> Result<Label> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok(Label::text(key, value)),
        _ => Err(Error::usage(format!("--label {text:?}: expected KEY=VALUE"))
            .with_hint("for example --label service=web")),
    }
}

/// Gives every sample of `profile` the `labels` (replacing the labels of those keys it has).
/// The number of samples labelled.
pub fn apply(profile: &mut Profile, labels: &[Label]) -> usize {
    if labels.is_empty() {
        return 0;
    }
    let mut labelled = 0;
    for process in &mut profile.processes {
        labelled += process.stacks.len();
        process.stacks.map_label_sets(|old| {
            let mut set: Vec<Label> =
                old.iter().filter(|l| !labels.iter().any(|n| n.key == l.key)).cloned().collect();
            set.extend_from_slice(labels);
            set
        });
    }
    labelled
}

/// A pattern of paths with `{key}` fields, each matching a non-empty part of one path
/// component: `hosts/{host}.pb.gz`, `{service}/{day}/cpu.pprof`.
#[derive(Clone, Debug)]
pub struct PathPattern {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug)]
enum Part {
    Literal(String),
    Field(String),
}

impl PathPattern {
    /// Parses a pattern; `{` and `}` must pair around a key, and two fields must have text
    /// between them (`{a}{b}` could split any way).
    pub fn parse(text: &str) -> Result<PathPattern> {
        let bad = |why: &str| {
            Error::usage(format!("--label-from-path {text:?}: {why}"))
                .with_hint("name each label in braces: 'hosts/{host}/{service}.pb.gz'")
        };
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}').ok_or_else(|| bad("a '{' without its '}'"))?;
                    let key = &rest[1..end];
                    if key.is_empty() || key.contains(['{', '/']) {
                        return Err(bad(&format!("{{{key}}} is not a label key")));
                    }
                    if matches!(parts.last(), Some(Part::Field(_))) {
                        return Err(bad("two fields with nothing between them"));
                    }
                    parts.push(Part::Field(key.to_string()));
                    rest = &rest[end + 1..];
                }
                found => {
                    let end = found.unwrap_or(rest.len());
                    if rest[..end].contains('}') {
                        return Err(bad("a '}' without its '{'"));
                    }
                    parts.push(Part::Literal(rest[..end].to_string()));
                    rest = &rest[end..];
                }
            }
        }
        if !parts.iter().any(|p| matches!(p, Part::Field(_))) {
            return Err(bad("no {key} in it"));
        }
        Ok(PathPattern { text: text.to_string(), parts })
    }

    /// The labels `path` gives: the pattern matched against the whole path, or against its
    /// end from a `/` (a pattern `hosts/{host}.pb.gz` matches `/data/hosts/web-1.pb.gz`).
    pub fn labels(&self, path: &str) -> Result<Vec<Label>> {
        let path = path.replace('\\', "/");
        let starts = std::iter::once(0).chain(path.match_indices('/').map(|(i, _)| i + 1));
        for start in starts {
            let mut found = Vec::new();
            if matches(&self.parts, &path[start..], &mut found) {
                found.reverse();
                return Ok(found.into_iter().map(|(k, v)| Label::text(&k, &v)).collect());
            }
        }
        Err(Error::usage(format!("{path}: its path does not match --label-from-path {:?}", self.text))
            .with_hint("the pattern must match the end of every input's path"))
    }
}

/// Whether `parts` match all of `text`, the fields' values pushed into `found` (last first).
fn matches(parts: &[Part], text: &str, found: &mut Vec<(String, String)>) -> bool {
    match parts.split_first() {
        None => text.is_empty(),
        Some((Part::Literal(l), rest)) => {
            text.strip_prefix(l.as_str()).is_some_and(|t| matches(rest, t, found))
        }
        Some((Part::Field(key), rest)) => {
            // A field takes at least one character and stays within a path component; the
            // shortest value that lets the rest match wins.
            let limit = text.find('/').unwrap_or(text.len());
            for end in 1..=limit {
                if !text.is_char_boundary(end) {
                    continue;
                }
                if matches(rest, &text[end..], found) {
                    found.push((key.clone(), text[..end].to_string()));
                    return true;
                }
            }
            false
        }
    }
}

/// The labels every sample of `stacks` has.
fn shared(stacks: &Stacks) -> Vec<Label> {
    if !stacks.has_labels() || stacks.label_set_of(0) == NO_INDEX {
        return Vec::new();
    }
    let mut used = vec![false; stacks.label_sets().len()];
    for i in 0..stacks.len() {
        match stacks.label_set_of(i) {
            NO_INDEX => return Vec::new(),
            l => used[l as usize] = true,
        }
    }
    stacks.label_sets()[stacks.label_set_of(0) as usize]
        .iter()
        .filter(|l| stacks.label_sets().iter().zip(&used).all(|(set, &u)| !u || set.contains(l)))
        .cloned()
        .collect()
}

/// What tells process `p` apart from the profile's others: the labels every sample of it has
/// and not every sample of every process has, as `key=value` words (`service=web`). Writers
/// that show processes apart name them so after [`split_by`]. `None` when there is none (a
/// profile of one process, or labels all processes share).
pub fn process_label_text(profile: &Profile, p: usize) -> Option<String> {
    if profile.processes.len() < 2 {
        return None;
    }
    let mine = shared(&profile.processes[p].stacks);
    if mine.is_empty() {
        return None;
    }
    let others: Vec<Vec<Label>> = profile
        .processes
        .iter()
        .enumerate()
        .filter(|&(q, _)| q != p)
        .map(|(_, q)| shared(&q.stacks))
        .collect();
    let words: Vec<String> = mine
        .iter()
        .filter(|l| !others.iter().all(|o| o.contains(l)))
        .map(|l| format!("{}={}", l.key, l.value))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The value of each of `keys` in a label set (`None` where it has no such key).
fn values_of(set: &[Label], keys: &[String]) -> Vec<Option<String>> {
    keys.iter().map(|k| set.iter().find(|l| &*l.key == k.as_str()).map(|l| l.value.to_string())).collect()
}

/// `process` with `stacks` in place of its own, and without its control flow and costs
/// (which stay with the first part of a split): its images keep their names and addresses.
fn with_stacks_only(process: &Process, stacks: Stacks) -> Process {
    Process {
        pid: process.pid,
        images: process
            .images
            .iter()
            .map(|im| cfghub_model::ir::Image {
                blocks: Vec::new(),
                costs: Default::default(),
                routines: None,
                ..im.clone()
            })
            .collect(),
        stacks,
        ..Process::default()
    }
}

/// The samples of `stacks` that `keep` selects (by index), in a tree of their own.
fn stacks_of(stacks: &Stacks, mut keep: impl FnMut(usize) -> bool) -> Stacks {
    let mut out = Stacks::with_width(stacks.width());
    for c in 0..stacks.width() {
        out.set_decimals(c, stacks.decimals_of(c));
    }
    let mut frames = Vec::new();
    for (_, s) in stacks.samples().enumerate().filter(|&(i, _)| keep(i)) {
        stacks.path(s.node, &mut frames);
        let node = out.path_node(&frames);
        let labels = out.label_set(s.labels.to_vec());
        out.push_labelled_sample(node, s.thread, labels, s.values);
    }
    out
}

/// The profile split by the values of label `keys`: one part per combination of values its
/// samples have (`None` for a key a sample lacks), in the order first met. The first part
/// keeps everything but the other parts' samples; the others hold their samples alone. A
/// profile whose samples all have one combination is one part, itself.
pub fn partition<'a>(
    profile: &'a Profile,
    keys: &[String],
) -> Vec<(Vec<Option<String>>, std::borrow::Cow<'a, Profile>)> {
    // Each process's part of each label set, and the parts in order met.
    let mut parts: Vec<Vec<Option<String>>> = Vec::new();
    let mut part_of_sample: Vec<Vec<usize>> = Vec::new();
    for process in &profile.processes {
        let stacks = &process.stacks;
        let mut of_set: Vec<Option<usize>> = vec![None; stacks.label_sets().len()];
        let mut of_unlabelled = None;
        let mut index = |values: Vec<Option<String>>| match parts.iter().position(|p| *p == values) {
            Some(k) => k,
            None => {
                parts.push(values);
                parts.len() - 1
            }
        };
        let mut list = Vec::with_capacity(stacks.len());
        for s in stacks.samples() {
            let k = match s.label_set {
                NO_INDEX => *of_unlabelled.get_or_insert_with(|| index(vec![None; keys.len()])),
                l => *of_set[l as usize].get_or_insert_with(|| index(values_of(s.labels, keys))),
            };
            list.push(k);
        }
        part_of_sample.push(list);
    }
    if parts.len() <= 1 {
        let values = parts.pop().unwrap_or_else(|| vec![None; keys.len()]);
        return vec![(values, std::borrow::Cow::Borrowed(profile))];
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(k, values)| {
            let processes = profile
                .processes
                .iter()
                .zip(&part_of_sample)
                .map(|(process, list)| {
                    let stacks = stacks_of(&process.stacks, |i| list[i] == k);
                    if k == 0 {
                        Process { stacks, ..process.clone() }
                    } else {
                        with_stacks_only(process, stacks)
                    }
                })
                .collect();
            let part = Profile {
                meta: profile.meta.clone(),
                events: profile.events.clone(),
                files: profile.files.clone(),
                frames: profile.frames.clone(),
                frame_sources: profile.frame_sources.clone(),
                processes,
            };
            (values, std::borrow::Cow::Owned(part))
        })
        .collect()
}

/// Splits every process by the value of label `key`: the samples of each value go to a process
/// of their own (the same pid and images, the stacks of that value alone), in the order the
/// values are first met; samples without the key stay in the first. The number of processes
/// made.
pub fn split_by(profile: &mut Profile, key: &str) -> usize {
    let keys = [key.to_string()];
    let mut out: Vec<Process> = Vec::new();
    let mut made = 0;
    for process in std::mem::take(&mut profile.processes) {
        let stacks = &process.stacks;
        let mut values: Vec<Option<String>> = Vec::new();
        let mut part_of_sample = Vec::with_capacity(stacks.len());
        for s in stacks.samples() {
            let v = values_of(s.labels, &keys).pop().flatten();
            // Samples without the key go with the first part.
            let part = match v {
                None => 0,
                Some(v) => match values.iter().position(|x| x.as_deref() == Some(v.as_str())) {
                    Some(i) => i,
                    None => {
                        values.push(Some(v));
                        values.len() - 1
                    }
                },
            };
            part_of_sample.push(part);
        }
        if values.len() <= 1 {
            out.push(process);
            continue;
        }
        made += values.len() - 1;
        for k in 0..values.len() {
            let stacks = stacks_of(&process.stacks, |i| part_of_sample[i] == k);
            out.push(if k == 0 {
                Process { stacks, ..process.clone() }
            } else {
                with_stacks_only(&process, stacks)
            });
        }
    }
    profile.processes = out;
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_pattern_takes_each_field_from_its_place() {
        let p = PathPattern::parse("hosts/{host}/{service}.pb.gz").unwrap();
        let labels = p.labels("/data/hosts/web-17/api.pb.gz").unwrap();
        assert_eq!(labels, vec![Label::text("host", "web-17"), Label::text("service", "api")]);
        assert!(p.labels("/data/other/web-17/api.pb.gz").is_err());
        let day = PathPattern::parse("{day}.{kind}.pb.gz").unwrap();
        assert_eq!(
            day.labels("runs/2026-12-07.cpu.pb.gz").unwrap(),
            vec![Label::text("day", "2026-12-07"), Label::text("kind", "cpu")]
        );
    }

    #[test]
    fn patterns_that_cannot_match_one_way_are_refused() {
        for bad in ["{a}{b}.pb", "no-fields.pb", "{unclosed", "x}", "{}"] {
            assert!(PathPattern::parse(bad).is_err(), "{bad}");
        }
        assert!(parse("novalue").is_err());
        assert_eq!(parse("k=v=w").unwrap(), Label::text("k", "v=w"));
    }

    #[test]
    fn labels_replace_those_of_the_same_key_and_split_by_puts_each_value_in_its_process() {
        let mut profile = Profile::default();
        let f = profile.frames.intern("f");
        let mut stacks = Stacks::with_width(1);
        let node = stacks.path_node(&[f]);
        // The same labels in another order are the same set.
        let web = stacks.label_set(vec![Label::text("zone", "a"), Label::text("service", "web")]);
        let db = stacks.label_set(vec![Label::text("service", "db")]);
        assert_eq!(web, stacks.label_set(vec![Label::text("service", "web"), Label::text("zone", "a")]));
        stacks.push_labelled_sample(node, None, web, &[5]);
        stacks.push_labelled_sample(node, None, db, &[7]);
        stacks.push_labelled_sample(node, None, web, &[1]);
        profile.processes.push(Process { stacks, ..Process::default() });

        assert_eq!(split_by(&mut profile, "service"), 1);
        assert_eq!(profile.processes.len(), 2);
        let totals: Vec<i128> =
            profile.processes.iter().map(|p| p.stacks.samples().map(|s| s.values[0]).sum()).collect();
        assert_eq!(totals, vec![6, 7]);

        apply(&mut profile, &[Label::text("service", "all"), Label::text("day", "1")]);
        let s = profile.processes[0].stacks.sample(0);
        assert_eq!(
            s.labels,
            &[Label::text("day", "1"), Label::text("service", "all"), Label::text("zone", "a")]
        );
    }
}
