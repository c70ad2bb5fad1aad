//! Reading a `.cpuprofile` into the model: the call tree's nodes become stack nodes (each
//! node's caller from `parent` or from the node listing it in `children`), then the samples
//! are pushed at their nodes in time order, each with its time until the next.

use std::io::Read;

use serde::Deserialize;

use crate::format::ReadOptions;
use crate::v8_profile::{sample_times, Columns, Node, NodeTree, WrittenEvents};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{Meta, Process, Profile, StackValue};
use cfghub_model::json::JsonReader;

const HINT: &str = "expected a V8 CPU profile (JSON with nodes, samples and timeDeltas), as \
                    `node --cpu-prof` or Chrome DevTools writes it";

/// The file's top level; what else it holds is skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    nodes: Option<Vec<Node>>,
    start_time: Option<i64>,
    end_time: Option<i64>,
    samples: Option<Vec<u64>>,
    time_deltas: Option<Vec<i64>>,
    /// The model's events, in a file cfghub wrote.
    cfghub: Option<WrittenEvents>,
}

/// Reads a whole `.cpuprofile` as it arrives.
pub(crate) fn read(
    input: &mut Source<'_>,
    _options: &ReadOptions,
    findings: &mut Findings,
) -> Result<Profile> {
    read_from(input.stream(), findings)
}

fn bad(path: impl Into<String>, message: impl Into<String>) -> Error {
    Error::input(message).at_path(path).with_hint(HINT)
}

fn parse(input: impl Read) -> Result<File> {
    let mut json = JsonReader::new(input);
    let parsed = File::deserialize(&mut json).and_then(|file| json.end().map(|()| file));
    parsed.map_err(|e| {
        let e = json.place(e);
        if e.io {
            return Error::input(e.message.clone());
        }
        let what = if e.eof { "the JSON ends too early (truncated file?)" } else { "not a V8 CPU profile" };
        Error::input(format!("{what}: {e}")).at_line(e.line).with_hint(HINT)
    })
}

fn read_from(input: impl Read, findings: &mut Findings) -> Result<Profile> {
    let file = parse(input)?;
    let Some(nodes) = file.nodes else {
        return Err(bad("nodes", "the profile has no nodes"));
    };
    let mut tree = NodeTree::default();
    for (i, node) in nodes.into_iter().enumerate() {
        tree.add(node, format!("nodes[{i}]"))?;
    }
    let mut profile = Profile {
        meta: Meta { creator: Some("V8".into()), ..Meta::default() },
        processes: vec![Process::default()],
        ..Profile::default()
    };
    let made = tree.model_nodes(&mut profile, 0)?;
    let Some(samples) = file.samples else {
        // Counts per node alone (older V8, and tools that keep only the tree).
        Columns::of(None, false).add_to(&mut profile);
        let stacks = &mut profile.processes[0].stacks;
        for (i, node) in tree.nodes().iter().enumerate() {
            if let Some(hits) = node.hit_count.filter(|&h| h > 0) {
                stacks.push_sample(made[i], None, &[StackValue::from(hits)]);
            }
        }
        return Ok(profile);
    };
    let leaves: Vec<u32> = samples
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            tree.find(id)
                .map(|n| made[n])
                .ok_or_else(|| bad(format!("samples[{i}]"), format!("node {id} is no node's id")))
        })
        .collect::<Result<_>>()?;
    let columns = Columns::of(file.cfghub.as_ref(), file.time_deltas.is_some());
    let (count, time) = columns.add_to(&mut profile);
    let mut values: Vec<StackValue> = vec![0; profile.events.len()];
    if let Some(c) = count {
        values[c] = 1;
    }
    let Some(deltas) = file.time_deltas else {
        let stacks = &mut profile.processes[0].stacks;
        for &leaf in &leaves {
            stacks.push_sample(leaf, None, &values);
        }
        return Ok(profile);
    };
    if deltas.len() != leaves.len() {
        return Err(bad("timeDeltas", format!("{} time deltas for {} samples", deltas.len(), leaves.len())));
    }
    let times = sample_times(file.start_time.unwrap_or(0), &deltas, file.end_time).map_err(|i| {
        bad(
            format!("timeDeltas[{i}]"),
            "the sample's time, startTime plus the deltas so far, is past 2^63 µs",
        )
    })?;
    if times.reordered > 0 {
        findings.warn(
            None,
            format!("cpuprofile: {} sample(s) earlier than the one before put in time order, as Chrome DevTools does", times.reordered),
        );
    }
    let stacks = &mut profile.processes[0].stacks;
    if let Some(t) = time {
        stacks.widen(values.len());
        stacks.set_decimals(t, columns.time_decimals());
    }
    for (&i, &weight) in times.order.iter().zip(&times.weights) {
        if let Some(t) = time {
            values[t] = columns.time_value(weight);
        }
        stacks.push_sample(leaves[i], None, &values);
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Profile> {
        read_from(text.as_bytes(), &mut Findings::default())
    }

    fn listed(profile: &Profile) -> Vec<(String, Vec<StackValue>)> {
        profile.processes[0]
            .stacks
            .listed()
            .into_iter()
            .map(|s| {
                let names: Vec<&str> = s.frames.iter().map(|&f| profile.frames.get(f)).collect();
                (names.join(";"), s.values)
            })
            .collect()
    }

    const SMALL: &str = r#"{"nodes":[
        {"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":0,"children":[2,3]},
        {"id":2,"callFrame":{"functionName":"(program)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":1},
        {"id":3,"callFrame":{"functionName":"","scriptId":"5","url":"file:///app.js","lineNumber":0,"columnNumber":0},"hitCount":0,"children":[4]},
        {"id":4,"callFrame":{"functionName":"fib","scriptId":"5","url":"file:///app.js","lineNumber":17,"columnNumber":12},"hitCount":2}],
        "startTime":1000,"endTime":1100,"samples":[4,2,4],"timeDeltas":[10,30,20]}"#;

    #[test]
    fn samples_weigh_the_time_to_the_next() {
        let profile = read_text(SMALL).unwrap();
        assert_eq!(
            listed(&profile),
            [
                ("(root);(anonymous);fib".to_string(), vec![1, 30]),
                ("(root);(program)".to_string(), vec![1, 20]),
                ("(root);(anonymous);fib".to_string(), vec![1, 40]),
            ]
        );
        let fib = profile.frames.lookup("fib").unwrap();
        let source = profile.frame_source(fib).unwrap();
        assert_eq!(profile.file_name(source.file.unwrap()), "file:///app.js");
        assert_eq!(source.line, Some(18));
        assert_eq!(cfghub_model::ir::event_unit(&profile.meta, "time"), Some("microseconds"));
    }

    #[test]
    fn without_samples_hit_counts_are_the_samples() {
        let text = SMALL.replace(r#","samples":[4,2,4],"timeDeltas":[10,30,20]"#, "");
        let profile = read_text(&text).unwrap();
        assert_eq!(profile.events.len(), 1);
        assert_eq!(
            listed(&profile),
            [("(root);(program)".to_string(), vec![1]), ("(root);(anonymous);fib".to_string(), vec![2])]
        );
    }

    #[test]
    fn bad_references_and_deltas_are_placed() {
        let e = read_text(&SMALL.replace("[4,2,4]", "[4,9,4]")).unwrap_err().to_string();
        assert!(e.contains("samples[1]") && e.contains("node 9"), "{e}");
        let e = read_text(&SMALL.replace("[10,30,20]", "[10,30]")).unwrap_err().to_string();
        assert!(e.contains("timeDeltas") && e.contains("2 time deltas for 3 samples"), "{e}");
        let e =
            read_text(&SMALL.replace("[10,30,20]", "[10,9223372036854775807,20]")).unwrap_err().to_string();
        assert!(e.contains("timeDeltas[1]"), "{e}");
        let e = read_text(&SMALL[..200]).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }
}
