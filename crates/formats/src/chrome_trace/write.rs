//! Writing the model's stacks as a trace: per process and thread, a `Profile` event and one
//! `ProfileChunk` holding the thread's call tree, samples and time deltas, with `M` events
//! that name the processes and threads their labels name.
//!
//! Why samples and not `X` events: speedscope and the Firefox Profiler import a trace's V8
//! profile as sampled stacks, each sample in its thread, weighed by its time; `X` events they
//! import otherwise (speedscope as an evented profile of one thread; the Firefox Profiler as
//! markers, not in its call tree), and stacks of samples in no time order would have to be
//! laid out end to end as invented durations. The `Profile` events are what Chrome's own
//! tracing writes (category `disabled-by-default-v8.cpu_profiler`).

use std::collections::BTreeSet;
use std::io::Write;

use super::{PROCESS_NAME_LABEL, THREAD_NAME_LABEL};
use crate::folded_stacks::stacks_for_writing;
use crate::format::WriteOptions;
use crate::v8_profile::{json_string, Weighing, Written};
use cfghub_model::error::{Findings, Result};
use cfghub_model::io::write_error;
use cfghub_model::ir::{LabelValue, Profile, Stacks};

const CATEGORY: &str = "disabled-by-default-v8.cpu_profiler";

/// Writes the profile's stacks (or, with a warning, those derived as for folded stacks).
pub(crate) fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let (stacks, events) = stacks_for_writing(profile, options.event.as_deref(), findings, "Chrome traces")?;
    let model = stacks.into_model();
    let mut weighing = Weighing::new(&model, &events, "chrome-trace");
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    buf.extend_from_slice(b"{\"traceEvents\":[");
    let mut first = true;
    let mut next_id = 1u64;
    for process in &model.processes {
        let stacks = &process.stacks;
        let threads: BTreeSet<Option<u32>> = stacks.samples().map(|s| s.thread).collect();
        let pid = process.pid;
        if let Some(name) = label_of_all(stacks, None, PROCESS_NAME_LABEL) {
            metadata(&mut buf, &mut first, "process_name", pid, 0, &name);
        }
        for thread in threads {
            let tid = u64::from(thread.unwrap_or(0));
            let mut written = Written::new(&model);
            weighing.add(stacks, Some(thread), &mut written)?;
            if written.samples.is_empty() {
                continue;
            }
            if let Some(name) = label_of_all(stacks, Some(thread), THREAD_NAME_LABEL) {
                metadata(&mut buf, &mut first, "thread_name", pid, tid, &name);
            }
            let id = format!("0x{next_id:x}");
            next_id += 1;
            event_start(&mut buf, &mut first, "P", "Profile", CATEGORY, pid, tid);
            buf.extend_from_slice(b",\"id\":\"");
            buf.extend_from_slice(id.as_bytes());
            buf.extend_from_slice(b"\",\"args\":{\"data\":{\"startTime\":0}}}");
            event_start(&mut buf, &mut first, "P", "ProfileChunk", CATEGORY, pid, tid);
            buf.extend_from_slice(b",\"id\":\"");
            buf.extend_from_slice(id.as_bytes());
            buf.extend_from_slice(b"\",\"args\":{\"data\":{\"cpuProfile\":{\"nodes\":[");
            written.push_nodes(&mut buf, true);
            buf.extend_from_slice(b"],\"samples\":[");
            written.push_samples(&mut buf);
            buf.extend_from_slice(b"]},\"timeDeltas\":[");
            written.push_deltas(&mut buf);
            // The end of the last sample, as V8 states it in the chunk written when it stops.
            buf.extend_from_slice(b"],\"endTime\":");
            buf.extend_from_slice(itoa::Buffer::new().format(written.end_time()).as_bytes());
            buf.extend_from_slice(b"}}}");
            if buf.len() >= 1 << 20 {
                out.write_all(&buf).map_err(write_error("chrome-trace output"))?;
                buf.clear();
            }
        }
    }
    buf.extend_from_slice(b"\n],\"cfghub\":");
    weighing.push_written_events(&model, &mut buf);
    buf.extend_from_slice(b"}\n");
    out.write_all(&buf).map_err(write_error("chrome-trace output"))?;
    weighing.warn(&model, findings);
    Ok(())
}

/// An event's first fields, `{"ph":…,"name":…,"cat":…,"pid":…,"tid":…,"ts":0`, one a line.
/// speedscope takes a file for a trace when its first event has `ph`, `cat`, `pid` and `tid`.
fn event_start(buf: &mut Vec<u8>, first: &mut bool, ph: &str, name: &str, cat: &str, pid: u64, tid: u64) {
    if !*first {
        buf.push(b',');
    }
    *first = false;
    buf.extend_from_slice(b"\n{\"ph\":");
    json_string(buf, ph);
    buf.extend_from_slice(b",\"name\":");
    json_string(buf, name);
    buf.extend_from_slice(b",\"cat\":");
    json_string(buf, cat);
    buf.extend_from_slice(b",\"pid\":");
    buf.extend_from_slice(itoa::Buffer::new().format(pid).as_bytes());
    buf.extend_from_slice(b",\"tid\":");
    buf.extend_from_slice(itoa::Buffer::new().format(tid).as_bytes());
    buf.extend_from_slice(b",\"ts\":0");
}

/// A metadata event naming a process or thread.
fn metadata(buf: &mut Vec<u8>, first: &mut bool, what: &str, pid: u64, tid: u64, name: &str) {
    // Chrome's own category of metadata events.
    event_start(buf, first, "M", what, "__metadata", pid, tid);
    buf.extend_from_slice(b",\"args\":{\"name\":");
    json_string(buf, name);
    buf.extend_from_slice(b"}}");
}

/// The text of label `key` when every sample (of `thread`, when given) has it with one value.
fn label_of_all(stacks: &Stacks, thread: Option<Option<u32>>, key: &str) -> Option<String> {
    let mut values = stacks
        .samples()
        .filter(|s| thread.is_none_or(|t| t == s.thread))
        .map(|s| s.labels.iter().find(|l| &*l.key == key).map(|l| &l.value));
    let first = values.next()??;
    let LabelValue::Text(text) = first else { return None };
    values.all(|v| v == Some(first)).then(|| text.to_string())
}
