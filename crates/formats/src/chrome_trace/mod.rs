//! Chrome's trace-event JSON: what Chrome's tracing (`chrome://tracing`, `--trace-startup`,
//! DevTools' Performance panel's "Save profile") and many other tools write, and what
//! Perfetto's UI, chrome://tracing, speedscope and the Firefox Profiler load ("Trace Event
//! Format", Google's document of the format). A JSON array of events, or an object whose
//! `traceEvents` holds them, plain or gzip-compressed ([`cfghub_model::io`] inflates it):
//!
//! ```text
//! {"traceEvents": [
//!   {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "CrRendererMain"}},
//!   {"ph": "X", "name": "FunctionCall", "pid": 7, "tid": 7, "ts": 1000, "dur": 250, "cat": "devtools.timeline"},
//!   {"ph": "B", "name": "parse", "pid": 7, "tid": 7, "ts": 1300}, {"ph": "E", "pid": 7, "tid": 7, "ts": 1400},
//!   {"ph": "P", "name": "Profile", "id": "0x1", "pid": 7, "tid": 7, "ts": 900, "args": {"data": {"startTime": 900}}},
//!   {"ph": "P", "name": "ProfileChunk", "id": "0x1", "pid": 7, "tid": 31, "ts": 2000,
//!    "args": {"data": {"cpuProfile": {"nodes": [...], "samples": [2, 2, 3]}, "timeDeltas": [120, 130, 125]}}}]}
//! ```
//!
//! Every event names its process (`pid`) and thread (`tid`); `ts` and `dur` are microseconds,
//! fractions allowed. `M` events name processes and threads. `X` events are complete
//! durations; `B` and `E` open and close one on their thread, nested. V8's sampling profiler
//! writes a `Profile` event on the thread it profiles, then `ProfileChunk` events (from its
//! own thread) with the same `id`: each holds the call-tree nodes new since the last chunk,
//! samples and their time deltas (see [`crate::v8_profile`]); the last, written when
//! profiling stops, its `endTime`. Other events (instants,
//! counters, flows, async events) hold no stacks and are left out.
//!
//! Model: a process per `pid` and a thread per `tid` in it, in order of appearance, their
//! names as the labels `process_name` and `thread_name` of their samples. A profile's samples
//! are on the thread of its `Profile` event with the values `samples` (1) and `time` (the
//! microseconds until the next sample, the last until `endTime`, or none without it); each duration event is a sample of its stack of
//! enclosing events on its thread, of value `duration`: its self time in microseconds. The
//! writer writes the model's stacks as a `Profile` and a `ProfileChunk` per thread. See
//! docs/formats/chrome-trace.md for the mapping.

mod read;
mod write;

use crate::format::{Format, Needs};

/// The label of a sample that names its process (`Renderer`), from the trace's
/// `process_name` metadata event.
pub const PROCESS_NAME_LABEL: &str = "process_name";
/// The label of a sample that names its thread (`CrRendererMain`), from the trace's
/// `thread_name` metadata event; the Firefox Profiler's format names its tracks by it too.
pub const THREAD_NAME_LABEL: &str = "thread_name";

/// The Chrome trace-event format.
pub static FORMAT: Format = Format {
    name: "chrome-trace",
    description: "Chrome trace-event JSON (Chrome tracing, DevTools traces, Perfetto's JSON), gzip or plain",
    // Traces are `.json` files, known by their content (`--to chrome-trace` names the output).
    sniffer: Some(sniff),
    reader: Some(read::read),
    writer: Some(write::write),
    needs: Needs::STACKS,
    ..Format::NONE
};

/// An object whose first bytes hold a `traceEvents` key, or an array whose first element
/// holds the keys every trace event has (`ph`, `pid`, `ts` or `name`).
fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    if t.starts_with('{') {
        return t.contains("\"traceEvents\"");
    }
    let Some(rest) = t.strip_prefix('[') else { return false };
    let rest = rest.trim_start();
    let first = &rest[..first_object_end(rest)];
    rest.starts_with('{') && first.contains("\"ph\"") && first.contains("\"pid\"")
}

/// Where the JSON object that `text` starts with ends (its length when the head ends first):
/// braces counted outside strings, so that an event's `args` (which tools write first, keys
/// in alphabetical order) do not end it.
fn first_object_end(text: &str) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_traces_as_objects_or_arrays() {
        assert!(sniff(b"{\"traceEvents\":[\n{\"args\":{\"name\":\"swapper\"},\"ph\":\"M\"}"));
        assert!(sniff(b" [ {\"name\":\"a\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":3}]"));
        assert!(!sniff(b"[1,2,3]"));
        assert!(!sniff(b"[{\"args\":{\"n\":\"}\"}},{\"ph\":\"M\",\"pid\":1}]"));
        // Keys in alphabetical order, `args` first (Chrome's DevTools saves traces so).
        assert!(sniff(b"[{\"args\":{\"name\":\"CrRendererMain\"},\"cat\":\"__metadata\",\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":7,\"ts\":0},"));
        assert!(!sniff(b"{\"nodes\":[{\"id\":1,\"callFrame\":{}}]}"));
        assert!(!sniff(b"{\"meta\":{\"preprocessedProfileVersion\":49}}"));
    }
}
