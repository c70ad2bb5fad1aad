//! Reading a `.cpuprofile` into the model: the call tree's nodes become stack nodes (each
//! node's caller from `parent` or from the node listing it in `children`), then the samples
//! are pushed at their nodes in time order, each with its time until the next.

use std::io::Read;

use serde::Deserialize;

use crate::format::ReadOptions;
use crate::v8_profile::{sample_times, CallFrame, Columns, Node, NodeTree, WrittenEvents};
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
    /// Microseconds (in the older tree form: seconds).
    start_time: Option<serde_json::Number>,
    end_time: Option<serde_json::Number>,
    /// Node ids (a heap profile's are objects, of which the nodes' `selfSize` are the sums).
    samples: Option<Vec<serde_json::Value>>,
    time_deltas: Option<Vec<i64>>,
    /// The older tree form (V8's C++ API, v8-profiler-node8) and heap profiles: the nodes as
    /// a tree from the root.
    head: Option<TreeNode>,
    /// The older form's sample times, absolute microseconds.
    timestamps: Option<Vec<i64>>,
    /// The model's events, in a file cfghub wrote.
    cfghub: Option<WrittenEvents>,
}

/// A node of the tree form: its call frame stated inside it (older CPU profiles) or as a
/// `callFrame` (heap profiles), its callees nested.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TreeNode {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    call_frame: Option<CallFrame>,
    #[serde(default)]
    function_name: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    line_number: Option<i64>,
    #[serde(default)]
    hit_count: Option<u64>,
    /// Bytes allocated here and still live (heap profiles).
    #[serde(default)]
    self_size: Option<u64>,
    #[serde(default)]
    children: Vec<TreeNode>,
}

/// The nodes of a tree form, flat as the newer form lists them (ids made where a heap profile
/// has none), with each node's `selfSize`.
fn flatten(head: TreeNode) -> (Vec<Node>, Vec<Option<u64>>) {
    let (mut nodes, mut sizes) = (Vec::new(), Vec::new());
    let mut next_id = 1u64 << 62;
    let mut id_of = |node: &TreeNode| {
        node.id.unwrap_or_else(|| {
            next_id += 1;
            next_id
        })
    };
    let head_id = id_of(&head);
    let mut stack = vec![(head, head_id)];
    while let Some((node, id)) = stack.pop() {
        let children: Vec<(TreeNode, u64)> = node
            .children
            .into_iter()
            .map(|c| {
                let id = id_of(&c);
                (c, id)
            })
            .collect();
        let call_frame = node.call_frame.unwrap_or(CallFrame {
            function_name: node.function_name.unwrap_or_default(),
            url: node.url,
            line_number: node.line_number,
        });
        nodes.push(Node {
            id,
            call_frame,
            hit_count: node.hit_count,
            children: Some(children.iter().map(|(_, id)| *id).collect()),
            parent: None,
        });
        sizes.push(node.self_size);
        stack.extend(children.into_iter().rev());
    }
    (nodes, sizes)
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
    let mut file = parse(input)?;
    // The tree form: its times are absolute (`timestamps`, and start and end in seconds).
    let mut sizes = Vec::new();
    let (nodes, at) = match (file.nodes.take(), file.head.take()) {
        (Some(nodes), _) => (nodes, "nodes"),
        (None, Some(head)) => {
            let (nodes, self_sizes) = flatten(head);
            sizes = self_sizes;
            if let Some(stamps) = file.timestamps.take() {
                let seconds = |n: &Option<serde_json::Number>| {
                    n.as_ref().and_then(serde_json::Number::as_f64).map(|s| (s * 1e6).round() as i64)
                };
                let start = seconds(&file.start_time).or(stamps.first().copied()).unwrap_or(0);
                let count = file.samples.as_ref().map_or(0, Vec::len).min(stamps.len());
                let mut deltas = Vec::with_capacity(count);
                let mut last = start;
                for (i, &t) in stamps.iter().take(count).enumerate() {
                    deltas.push(
                        t.checked_sub(last)
                            .ok_or_else(|| bad(format!("timestamps[{i}]"), "a time past 2^63 µs"))?,
                    );
                    last = t;
                }
                if let Some(samples) = file.samples.as_mut() {
                    samples.truncate(count);
                }
                file.time_deltas = Some(deltas);
                file.start_time = Some(start.into());
                file.end_time = seconds(&file.end_time).map(Into::into);
            }
            (nodes, "head")
        }
        (None, None) => return Err(bad("nodes", "the profile has no nodes")),
    };
    let mut tree = NodeTree::default();
    for (i, node) in nodes.into_iter().enumerate() {
        tree.add(node, format!("{at}[{i}]"))?;
    }
    let mut profile = Profile {
        meta: Meta { creator: Some("V8".into()), ..Meta::default() },
        processes: vec![Process::default()],
        ..Profile::default()
    };
    let made = tree.model_nodes(&mut profile, 0, findings)?;
    if sizes.iter().any(Option::is_some) {
        // A heap profile (DevTools' allocation sampling, `node --heap-prof`): the bytes
        // allocated at each call path and still live, as Go's heap profiles count them.
        profile.events.push(cfghub_model::ir::Event::new("inuse_space"));
        profile.meta.headers.push((cfghub_model::ir::EVENT_UNIT_KEY.into(), "inuse_space bytes".into()));
        let stacks = &mut profile.processes[0].stacks;
        stacks.widen(1);
        for (i, size) in sizes.iter().enumerate() {
            if let Some(bytes) = size.filter(|&b| b > 0) {
                stacks.push_sample(made[i], None, &[StackValue::from(bytes)]);
            }
        }
        return Ok(profile);
    }
    let samples: Option<Vec<u64>> = match file.samples {
        None => None,
        Some(list) => Some(
            list.iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_u64().ok_or_else(|| bad(format!("samples[{i}]"), format!("{v} is not a node id")))
                })
                .collect::<Result<_>>()?,
        ),
    };
    let Some(samples) = samples else {
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
    // A sample at an id no node has is left out, as speedscope leaves it.
    let leaves: Vec<Option<u32>> = samples.iter().map(|&id| tree.find(id).map(|n| made[n])).collect();
    crate::v8_profile::warn_unknown_samples(&leaves, findings);
    let columns = Columns::of(file.cfghub.as_ref(), file.time_deltas.is_some());
    let (count, time) = columns.add_to(&mut profile);
    let mut values: Vec<StackValue> = vec![0; profile.events.len()];
    if let Some(c) = count {
        values[c] = 1;
    }
    let Some(deltas) = file.time_deltas else {
        let stacks = &mut profile.processes[0].stacks;
        for &leaf in leaves.iter().flatten() {
            stacks.push_sample(leaf, None, &values);
        }
        return Ok(profile);
    };
    if deltas.len() != leaves.len() {
        return Err(bad("timeDeltas", format!("{} time deltas for {} samples", deltas.len(), leaves.len())));
    }
    let micros = |n: &Option<serde_json::Number>| n.as_ref().and_then(serde_json::Number::as_i64);
    let times = sample_times(micros(&file.start_time).unwrap_or(0), &deltas, micros(&file.end_time))
        .map_err(|i| {
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
        if let Some(leaf) = leaves[i] {
            stacks.push_sample(leaf, None, &values);
        }
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
    fn the_older_tree_form_reads_with_absolute_timestamps() {
        // V8's C++ API (v8-profiler-node8): nodes nested from `head`, frames inside them,
        // start and end in seconds, each sample's absolute time in microseconds.
        let text = r#"{"head":{"functionName":"(root)","url":"","lineNumber":-1,"id":1,"hitCount":0,
            "children":[{"functionName":"","url":"app.js","lineNumber":0,"id":2,"hitCount":0,
              "children":[{"functionName":"fib","url":"app.js","lineNumber":4,"id":3,"hitCount":2,"children":[]}]}]},
            "startTime":10,"endTime":11,"samples":[3,2,3],"timestamps":[10000100,10000130,10000150,10000999]}"#;
        let profile = read_text(text).unwrap();
        assert_eq!(
            listed(&profile),
            [
                ("(root);(anonymous);fib".to_string(), vec![1, 30]),
                ("(root);(anonymous)".to_string(), vec![1, 20]),
                ("(root);(anonymous);fib".to_string(), vec![1, 999_850]),
            ]
        );
    }

    #[test]
    fn a_heap_profile_is_the_bytes_live_at_each_path() {
        let text = r#"{"head":{"callFrame":{"functionName":"(root)","url":"","lineNumber":-1},"selfSize":0,
            "children":[{"callFrame":{"functionName":"alloc","url":"a.js","lineNumber":2},"selfSize":4096,"children":[]},
                        {"callFrame":{"functionName":"idle","url":"a.js","lineNumber":9},"selfSize":0,"children":[]}]}}"#;
        let profile = read_text(text).unwrap();
        assert_eq!(profile.events[0].name, "inuse_space");
        assert_eq!(listed(&profile), [("(root);alloc".to_string(), vec![4096])]);
        assert_eq!(cfghub_model::ir::event_unit(&profile.meta, "inuse_space"), Some("bytes"));
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
        let e = read_text(&SMALL.replace("[10,30,20]", "[10,30]")).unwrap_err().to_string();
        assert!(e.contains("timeDeltas") && e.contains("2 time deltas for 3 samples"), "{e}");
        let e =
            read_text(&SMALL.replace("[10,30,20]", "[10,9223372036854775807,20]")).unwrap_err().to_string();
        assert!(e.contains("timeDeltas[1]"), "{e}");
        let e = read_text(&SMALL[..200]).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }
}
