//! V8's `.cpuprofile`: what `node --cpu-prof` writes, what Chrome DevTools' JavaScript
//! profiler saves and loads, and what the Firefox Profiler and speedscope import. One JSON
//! object, one thread's samples (see [`crate::v8_profile`] for its fields):
//!
//! ```text
//! {"nodes": [{"id": 1, "callFrame": {"functionName": "(root)", ...}, "hitCount": 0, "children": [2]},
//!            {"id": 2, "callFrame": {"functionName": "fib", "url": "file:///app.js",
//!                                     "lineNumber": 17, "columnNumber": 12}, "hitCount": 5}],
//!  "startTime": 17060377393, "endTime": 17060686867,
//!  "samples": [2, 2, ...], "timeDeltas": [2406, 1160, ...]}
//! ```
//!
//! Model: one process; a sample per element of `samples`, in time order, at its node's call
//! path from `(root)`, with two values: `samples` (1) and `time`, the microseconds until the
//! next sample (the last: until `endTime`). A file without samples has one sample per node
//! with a `hitCount`, of `samples` alone. The writer writes the model's stacks back as one
//! thread. See docs/formats/cpuprofile.md for the mapping.

mod read;
mod write;

use crate::format::{Format, Needs};

/// The `.cpuprofile` format.
pub static FORMAT: Format = Format {
    name: "cpuprofile",
    description: "V8 CPU profile (node --cpu-prof, Chrome DevTools' JavaScript profiler)",
    extensions: &[".cpuprofile"],
    sniffer: Some(sniff),
    reader: Some(read::read),
    writer: Some(write::write),
    needs: Needs::STACKS,
    ..Format::NONE
};

/// A JSON object whose first bytes hold V8's node keys (`"nodes"` and `"callFrame"`) and not
/// those of a Chrome trace, which carries the same nodes inside its events.
fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    // The older tree form and heap profiles start with the root's node, `{"head": {...`.
    let tree = t.strip_prefix('{').is_some_and(|r| r.trim_start().starts_with("\"head\""))
        && (t.contains("\"functionName\""));
    t.starts_with('{')
        && ((t.contains("\"nodes\"") && t.contains("\"callFrame\"")) || tree)
        && !t.contains("\"traceEvents\"")
        && !t.contains("\"cpuProfile\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_node_and_devtools_profiles_and_not_traces() {
        assert!(sniff(b"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\""));
        assert!(sniff(b" {\n  \"startTime\": 1, \"nodes\": [ {\"callFrame\": {}} ]"));
        assert!(!sniff(
            b"{\"traceEvents\":[{\"args\":{\"data\":{\"cpuProfile\":{\"nodes\":[{\"callFrame\":{}"
        ));
        assert!(!sniff(b"[{\"args\":{\"data\":{\"cpuProfile\":{\"nodes\":[{\"callFrame\":{}}]}}}}]"));
        assert!(!sniff(b"{\"meta\":{\"preprocessedProfileVersion\":49}}"));
        assert!(sniff(b"{\"head\":{\"functionName\":\"(root)\",\"url\":\"\",\"id\":1,\"children\":["));
        assert!(sniff(b"{\"head\":{\"callFrame\":{\"functionName\":\"(root)\"},\"selfSize\":0"));
    }
}
