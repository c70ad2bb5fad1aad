//! Reading a trace into the model. The events are taken one at a time as the JSON arrives
//! (from the file, or from the thread that inflates it): only what makes stacks is kept
//! (names of processes and threads, profiles' nodes and samples, durations), the rest is
//! skipped. Then each profile's call tree becomes stack nodes and its samples are pushed in
//! time order, and each thread's duration events are nested into stacks by their times.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{PROCESS_NAME_LABEL, THREAD_NAME_LABEL};
use crate::format::ReadOptions;
use crate::v8_profile::{sample_times, Columns, Node, NodeTree, WrittenEvents};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{Event, Label, Meta, Process, Profile, StackValue, EVENT_UNIT_KEY, NO_INDEX};
use cfghub_model::json::JsonReader;

const HINT: &str = "expected Chrome's trace-event JSON (an array of events, or an object with \
                    traceEvents), as Chrome's tracing or DevTools writes it";

/// One event as the trace states it: every field is taken as any JSON value and checked
/// where it is used, since producers differ (pids as strings, fractional times) and the
/// `args` of events that make no stacks may be anything.
#[derive(Deserialize)]
struct RawEvent {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    ph: Option<Value>,
    #[serde(default)]
    pid: Option<Value>,
    #[serde(default)]
    tid: Option<Value>,
    #[serde(default)]
    ts: Option<Value>,
    #[serde(default)]
    dur: Option<Value>,
    /// The thread-clock duration: the duration of an `X` event that states no `dur`, as
    /// speedscope takes it.
    #[serde(default)]
    tdur: Option<Value>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    args: Option<Value>,
}

/// A process or thread id as the trace writes it (a number, or a string), as text.
fn id_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// A thread of a process, by their ids' texts.
type ThreadKey = (String, String);

/// A duration on a thread, in nanoseconds.
struct Span {
    start: i128,
    end: i128,
    name: String,
}

/// One V8 profile (`Profile` and its `ProfileChunk`s, one `id` in one process).
#[derive(Default)]
struct V8Profile {
    /// The thread the `Profile` event is on, else the first chunk's.
    thread: Option<ThreadKey>,
    /// `args.data.startTime` of the `Profile` event (µs).
    start: Option<i64>,
    /// `args.data.endTime` of the last chunk that has one (µs): V8 writes it when profiling
    /// stops.
    end: Option<i64>,
    /// A `CpuProfile` event's, whose deltas are inside `cpuProfile`.
    whole: bool,
    tree: NodeTree,
    /// Each sample's node id and where it is stated.
    samples: Vec<(u64, usize, usize)>,
    deltas: Vec<i64>,
}

/// Which part of a V8 profile an event holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `Profile`: where the profile is, and when it starts.
    Start,
    /// `ProfileChunk`: nodes, samples and deltas that continue it.
    Chunk,
    /// `CpuProfile` (what DevTools saved before chunks): a whole `.cpuprofile` in
    /// `args.data.cpuProfile`, its deltas and times inside it.
    Whole,
}

/// What reading keeps of the events.
#[derive(Default)]
struct Gathered {
    /// Where the events are: `traceEvents` or the top-level array (empty).
    at: String,
    process_names: HashMap<String, String>,
    thread_names: HashMap<ThreadKey, String>,
    /// Profiles by (pid text, id text), in order of appearance.
    profiles: Vec<V8Profile>,
    profile_index: HashMap<(String, String), usize>,
    /// Durations per thread, threads in order of appearance.
    spans: Vec<(ThreadKey, Vec<Span>)>,
    span_index: HashMap<ThreadKey, usize>,
    /// Open `B` events per thread: their name and start.
    open: HashMap<ThreadKey, Vec<(String, i128)>>,
    /// The last time seen on each thread (ns), where unclosed events end.
    last_time: HashMap<ThreadKey, i128>,
    unmatched_ends: usize,
    rounded_times: usize,
    /// The model's events, in a trace cfghub wrote (its top-level `cfghub` key).
    cfghub: Option<WrittenEvents>,
    /// The JSON Object Format's sampled stacks: `stackFrames` by id, and `samples`.
    stack_frames: HashMap<String, StackFrame>,
    trace_samples: Vec<TraceSample>,
    /// Events read so far, and whether an array trace ended without its closing `]`.
    events_read: usize,
    unclosed_array: bool,
}

/// A frame of the JSON Object Format's `stackFrames`: its name and its caller's id.
#[derive(Deserialize)]
struct StackFrame {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    parent: Option<Value>,
}

/// A sample of the JSON Object Format's `samples`: a thread, a time and a stack frame.
#[derive(Deserialize)]
struct TraceSample {
    #[serde(default)]
    pid: Option<Value>,
    #[serde(default)]
    tid: Option<Value>,
    #[serde(default)]
    ts: Option<Value>,
    #[serde(default)]
    sf: Option<Value>,
    #[serde(default)]
    weight: Option<Value>,
}

impl Gathered {
    fn place(&self, i: usize) -> String {
        if self.at.is_empty() {
            format!("[{i}]")
        } else {
            format!("{}[{i}]", self.at)
        }
    }

    fn spans_of(&mut self, thread: ThreadKey) -> &mut Vec<Span> {
        let next = self.spans.len();
        let k = *self.span_index.entry(thread.clone()).or_insert(next);
        if k == next {
            self.spans.push((thread, Vec::new()));
        }
        &mut self.spans[k].1
    }

    /// Takes event `i`, keeping what makes stacks.
    fn take(&mut self, i: usize, e: RawEvent) -> Result<()> {
        let ph = match &e.ph {
            Some(Value::String(s)) => s.as_str(),
            _ => return Ok(()),
        };
        // A duration without a name is `(unnamed)`, as speedscope shows it.
        let name = match &e.name {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ if matches!(ph, "X" | "B") => "(unnamed)".to_string(),
            _ => String::new(),
        };
        let thread: ThreadKey = (id_text(e.pid.as_ref()), id_text(e.tid.as_ref()));
        match ph {
            "M" => {
                let named = e.args.as_ref().and_then(|a| a.get("name")).and_then(Value::as_str);
                match (name.as_str(), named) {
                    ("process_name", Some(n)) => {
                        self.process_names.insert(thread.0, n.to_string());
                    }
                    ("thread_name", Some(n)) => {
                        self.thread_names.insert(thread, n.to_string());
                    }
                    _ => {}
                }
            }
            "P" | "I" if name == "Profile" => self.take_profile(i, &e, Part::Start, thread)?,
            "P" | "I" if name == "ProfileChunk" => self.take_profile(i, &e, Part::Chunk, thread)?,
            _ if name == "CpuProfile" => self.take_profile(i, &e, Part::Whole, thread)?,
            "X" => {
                let start = self.time(i, "ts", e.ts.as_ref())?;
                let dur = match self.time(i, "dur", e.dur.as_ref())? {
                    Some(dur) => dur,
                    None => self.time(i, "tdur", e.tdur.as_ref())?.unwrap_or(0),
                };
                if let Some(start) = start {
                    if dur < 0 {
                        return Err(bad(format!("{}.dur", self.place(i)), "a negative duration"));
                    }
                    self.note_time(&thread, start + dur);
                    self.spans_of(thread).push(Span { start, end: start + dur, name });
                }
            }
            "B" => {
                if let Some(start) = self.time(i, "ts", e.ts.as_ref())? {
                    self.note_time(&thread, start);
                    self.open.entry(thread).or_default().push((name, start));
                }
            }
            "E" => {
                if let Some(end) = self.time(i, "ts", e.ts.as_ref())? {
                    self.note_time(&thread, end);
                    match self.open.get_mut(&thread).and_then(Vec::pop) {
                        Some((name, start)) => {
                            self.spans_of(thread).push(Span { start, end: end.max(start), name });
                        }
                        None => self.unmatched_ends += 1,
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn note_time(&mut self, thread: &ThreadKey, t: i128) {
        let last = self.last_time.entry(thread.clone()).or_insert(t);
        *last = (*last).max(t);
    }

    /// A time field in nanoseconds (the trace's microseconds, exactly to a thousandth;
    /// finer fractions are rounded and counted).
    fn time(&mut self, i: usize, field: &str, v: Option<&Value>) -> Result<Option<i128>> {
        let path = format!("{}.{field}", self.place(i));
        self.time_at(path, v)
    }

    /// A time in nanoseconds, as [`Gathered::time`], of the value at `path`.
    fn time_at(&mut self, path: String, v: Option<&Value>) -> Result<Option<i128>> {
        let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(None) };
        let not_a_time = || bad(path.clone(), format!("{v} is not a time in microseconds"));
        // Hermes and other tracers write times as strings of digits.
        let parsed;
        let n = match v {
            Value::Number(n) => n,
            Value::String(text) => {
                parsed = serde_json::from_str::<serde_json::Number>(text.trim()).map_err(|_| not_a_time())?;
                &parsed
            }
            _ => return Err(not_a_time()),
        };
        if let Some(int) = n.as_i64() {
            return Ok(Some(i128::from(int) * 1000));
        }
        if let Some(int) = n.as_u64() {
            return Ok(Some(i128::from(int) * 1000));
        }
        let (digits, places) = n.as_f64().and_then(cfghub_model::ir::from_f64).ok_or_else(not_a_time)?;
        let nanos = if places <= 3 {
            digits.checked_mul(10i128.pow(u32::from(3 - places)))
        } else {
            self.rounded_times += 1;
            Some(cfghub_model::ir::rounded(digits, places - 3))
        };
        // Within 2^63 µs either way, so that sums of times stay exact.
        let limit = i128::from(i64::MAX) * 1000;
        match nanos.filter(|t| t.abs() <= limit) {
            Some(t) => Ok(Some(t)),
            None => Err(bad(path, format!("{v} µs is past 2^63 µs"))),
        }
    }

    fn take_profile(&mut self, i: usize, e: &RawEvent, part: Part, thread: ThreadKey) -> Result<()> {
        let id = match part {
            // Each `CpuProfile` is a profile of its own.
            Part::Whole => format!("event {i}"),
            Part::Start | Part::Chunk => id_text(e.id.as_ref()),
        };
        let key = (thread.0.clone(), id);
        let next = self.profiles.len();
        let k = *self.profile_index.entry(key).or_insert(next);
        if k == next {
            self.profiles.push(V8Profile::default());
        }
        let place = self.place(i);
        let data = e.args.as_ref().and_then(|a| a.get("data"));
        let profile = &mut self.profiles[k];
        if part == Part::Start {
            profile.thread = Some(thread);
            profile.start = data.and_then(|d| d.get("startTime")).and_then(Value::as_i64);
            return Ok(());
        }
        profile.thread.get_or_insert(thread);
        let Some(data) = data else { return Ok(()) };
        let cpu = data.get("cpuProfile");
        // A whole profile states its times inside `cpuProfile`, a chunk beside it.
        let (times, times_at) = match part {
            Part::Whole => (cpu.unwrap_or(&Value::Null), format!("{place}.args.data.cpuProfile")),
            Part::Start | Part::Chunk => (data, format!("{place}.args.data")),
        };
        if part == Part::Whole {
            profile.whole = true;
            profile.start = times.get("startTime").and_then(Value::as_i64);
        }
        if let Some(end) = times.get("endTime").and_then(Value::as_i64) {
            profile.end = Some(end);
        }
        if let Some(nodes) = cpu.and_then(|c| c.get("nodes")) {
            let at = format!("{place}.args.data.cpuProfile.nodes");
            let nodes = nodes.as_array().ok_or_else(|| bad(at.clone(), "the nodes are not a list"))?;
            for (n, node) in nodes.iter().enumerate() {
                let node = Node::deserialize(node)
                    .map_err(|err| bad(format!("{at}[{n}]"), format!("not a V8 node: {err}")))?;
                profile.tree.add(node, format!("{at}[{n}]"))?;
            }
        }
        let samples = match cpu.and_then(|c| c.get("samples")) {
            Some(s) => s
                .as_array()
                .ok_or_else(|| {
                    bad(format!("{place}.args.data.cpuProfile.samples"), "the samples are not a list")
                })?
                .as_slice(),
            None => &[],
        };
        let deltas = match times.get("timeDeltas") {
            Some(d) => d
                .as_array()
                .ok_or_else(|| bad(format!("{times_at}.timeDeltas"), "the time deltas are not a list"))?
                .as_slice(),
            None => &[],
        };
        if samples.len() != deltas.len() {
            return Err(bad(
                format!("{times_at}.timeDeltas"),
                format!("{} time deltas for {} samples", deltas.len(), samples.len()),
            ));
        }
        for (s, (id, delta)) in samples.iter().zip(deltas).enumerate() {
            let id = id.as_u64().ok_or_else(|| {
                bad(format!("{place}.args.data.cpuProfile.samples[{s}]"), format!("{id} is not a node id"))
            })?;
            let delta = delta.as_i64().ok_or_else(|| {
                bad(
                    format!("{times_at}.timeDeltas[{s}]"),
                    format!("{delta} is not a whole number of microseconds"),
                )
            })?;
            profile.samples.push((id, i, s));
            profile.deltas.push(delta);
        }
        Ok(())
    }
}

/// A sample's `weight`: a count (a number, or digits in a string); 1 when it states none.
fn sample_weight(v: Option<&Value>) -> Option<StackValue> {
    match v {
        None | Some(Value::Null) => Some(1),
        Some(Value::Number(n)) => n.as_u64().map(StackValue::from),
        Some(Value::String(text)) => text.trim().parse::<u64>().ok().map(StackValue::from),
        _ => None,
    }
}

fn bad(path: impl Into<String>, message: impl Into<String>) -> Error {
    Error::input(message).at_path(path).with_hint(HINT)
}

/// Reads a whole trace as it arrives.
pub(crate) fn read(
    input: &mut Source<'_>,
    _options: &ReadOptions,
    findings: &mut Findings,
) -> Result<Profile> {
    read_from(input.stream(), findings)
}

/// The events of the top level: an array of them, or an object's `traceEvents`.
struct TopLevel<'g> {
    gathered: &'g mut Gathered,
    /// The first error of the reader's own (not JSON's), kept apart to be returned as it is.
    failed: &'g mut Option<Error>,
}

/// Takes the elements of the event array one by one.
struct Events<'g> {
    gathered: &'g mut Gathered,
    failed: &'g mut Option<Error>,
}

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let mut i = 0;
        while let Some(event) = seq.next_element::<RawEvent>()? {
            if let Err(e) = self.gathered.take(i, event) {
                *self.failed = Some(e);
                return Err(de::Error::custom("stopped"));
            }
            i += 1;
            self.gathered.events_read = i;
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of trace events, or an object with traceEvents")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        Events { gathered: self.gathered, failed: self.failed }.visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "traceEvents" && !seen {
                seen = true;
                self.gathered.at = "traceEvents".into();
                map.next_value_seed(Events { gathered: &mut *self.gathered, failed: &mut *self.failed })?;
            } else if key == "cfghub" {
                self.gathered.cfghub = map.next_value::<Option<WrittenEvents>>()?;
            } else if key == "stackFrames" {
                self.gathered.stack_frames =
                    map.next_value::<Option<HashMap<String, StackFrame>>>()?.unwrap_or_default();
            } else if key == "samples" {
                self.gathered.trace_samples =
                    map.next_value::<Option<Vec<TraceSample>>>()?.unwrap_or_default();
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen && self.gathered.trace_samples.is_empty() {
            return Err(de::Error::custom("the object has no traceEvents"));
        }
        Ok(())
    }
}

fn read_from(input: impl Read, findings: &mut Findings) -> Result<Profile> {
    let mut gathered = Gathered::default();
    let mut failed = None;
    let mut json = JsonReader::new(input);
    let parsed = TopLevel { gathered: &mut gathered, failed: &mut failed }
        .deserialize(&mut json)
        .and_then(|()| json.end());
    if let Some(e) = failed {
        return Err(e);
    }
    if let Err(e) = parsed {
        let e = json.place(e);
        if e.io {
            return Err(Error::input(e.message.clone()));
        }
        // The array form may end without its `]` (the format says so: a tracer that stops
        // mid-write leaves it so), after a comma or between events; the events read stand.
        if e.eof && gathered.at.is_empty() && gathered.events_read > 0 {
            gathered.unclosed_array = true;
            return Model::new(&gathered).build(gathered, findings);
        }
        let what = if e.eof { "the JSON ends too early (truncated file?)" } else { "not a Chrome trace" };
        return Err(Error::input(format!("{what}: {e}")).at_line(e.line).with_hint(HINT));
    }
    Model::new(&gathered).build(gathered, findings)
}

/// The model as it is made: processes and threads by their ids' texts.
struct Model {
    profile: Profile,
    processes: HashMap<String, usize>,
    threads: HashMap<ThreadKey, (usize, u32, u32)>,
    /// The V8 samples' columns, and their indices.
    columns: Columns,
    samples: Option<usize>,
    time: Option<usize>,
    duration: Option<usize>,
}

impl Model {
    /// Events in the order `samples`, `time`, `duration`, those the trace has.
    fn new(g: &Gathered) -> Model {
        let sampled = g.profiles.iter().any(|p| !p.samples.is_empty()) || !g.trace_samples.is_empty();
        let timed = g.spans.iter().any(|(_, s)| !s.is_empty()) || g.open.values().any(|o| !o.is_empty());
        let mut profile = Profile {
            meta: Meta { creator: Some("Chrome trace".into()), ..Meta::default() },
            ..Profile::default()
        };
        let columns = Columns::of(g.cfghub.as_ref(), true);
        let (samples, time) = if sampled { columns.add_to(&mut profile) } else { (None, None) };
        let duration = timed.then(|| {
            profile.events.push(Event::new("duration"));
            profile.meta.headers.push((EVENT_UNIT_KEY.into(), "duration microseconds".into()));
            profile.events.len() - 1
        });
        Model {
            profile,
            processes: HashMap::new(),
            threads: HashMap::new(),
            columns,
            samples,
            time,
            duration,
        }
    }

    /// The model process, thread and label set of a trace thread, made when new.
    fn thread(&mut self, g: &Gathered, key: &ThreadKey) -> (usize, u32, u32) {
        if let Some(&t) = self.threads.get(key) {
            return t;
        }
        let next = self.processes.len();
        let p = *self.processes.entry(key.0.clone()).or_insert(next);
        if p == self.profile.processes.len() {
            let pid = key.0.parse::<u64>().unwrap_or(p as u64);
            let mut stacks = cfghub_model::ir::Stacks::with_width(self.profile.events.len());
            if let Some(t) = self.time {
                stacks.set_decimals(t, self.columns.time_decimals());
            }
            self.profile.processes.push(Process { pid, stacks, ..Process::default() });
        }
        let thread = self.threads.keys().filter(|(q, _)| *q == key.0).count() as u32;
        let mut labels = Vec::new();
        if let Some(n) = g.process_names.get(&key.0) {
            labels.push(Label::text(PROCESS_NAME_LABEL, n));
        }
        if let Some(n) = g.thread_names.get(key) {
            labels.push(Label::text(THREAD_NAME_LABEL, n));
        }
        let set = self.profile.processes[p].stacks.label_set(labels);
        self.threads.insert(key.clone(), (p, thread, set));
        (p, thread, set)
    }

    fn build(mut self, mut g: Gathered, findings: &mut Findings) -> Result<Profile> {
        let mut reordered = 0;
        let profiles = std::mem::take(&mut g.profiles);
        for v8 in &profiles {
            self.add_profile(&g, v8, &mut reordered, findings)?;
        }
        self.add_trace_samples(&mut g, &mut reordered)?;
        self.add_spans(&mut g, findings);
        if reordered > 0 {
            findings.warn(
                None,
                format!("chrome-trace: {reordered} sample(s) earlier than the one before put in time order, as Chrome DevTools does"),
            );
        }
        if g.unclosed_array {
            findings.detail(
                None,
                format!("chrome-trace: the array of events ends without its `]`, as the format allows; {} event(s) read", g.events_read),
            );
        }
        if g.unmatched_ends > 0 {
            findings.warn(
                None,
                format!("chrome-trace: {} end event(s) (E) without a begin (B) left out", g.unmatched_ends),
            );
        }
        if g.rounded_times > 0 {
            findings.warn(
                None,
                format!("chrome-trace: {} time(s) rounded to whole nanoseconds", g.rounded_times),
            );
        }
        Ok(self.profile)
    }

    /// Adds a V8 profile's samples; `reordered` counts those put in time order.
    fn add_profile(
        &mut self,
        g: &Gathered,
        v8: &V8Profile,
        reordered: &mut usize,
        findings: &mut Findings,
    ) -> Result<()> {
        let Some(thread) = v8.thread.as_ref().filter(|_| self.samples.is_some() || self.time.is_some())
        else {
            return Ok(());
        };
        if v8.samples.is_empty() {
            return Ok(());
        }
        let (p, t, labels) = self.thread(g, thread);
        let made = v8.tree.model_nodes(&mut self.profile, p, findings)?;
        // A sample at an id no node has is left out, as speedscope leaves it.
        let leaves: Vec<Option<u32>> =
            v8.samples.iter().map(|&(id, _, _)| v8.tree.find(id).map(|n| made[n])).collect();
        crate::v8_profile::warn_unknown_samples(&leaves, findings);
        let start = v8.start.unwrap_or(0);
        let times = sample_times(start, &v8.deltas, v8.end).map_err(|k| {
            let (_, event, s) = v8.samples[k];
            bad(
                format!(
                    "{}.args.data.{}timeDeltas[{s}]",
                    g.place(event),
                    if v8.whole { "cpuProfile." } else { "" }
                ),
                "the sample's time, startTime plus the deltas so far, is past 2^63 µs",
            )
        })?;
        *reordered += times.reordered;
        let mut values: Vec<StackValue> = vec![0; self.profile.events.len()];
        let stacks = &mut self.profile.processes[p].stacks;
        for (&i, &weight) in times.order.iter().zip(&times.weights) {
            if let Some(c) = self.samples {
                values[c] = 1;
            }
            if let Some(t) = self.time {
                values[t] = self.columns.time_value(weight);
            }
            if let Some(leaf) = leaves[i] {
                stacks.push_labelled_sample(leaf, Some(t), labels, &values);
            }
        }
        Ok(())
    }

    /// The JSON Object Format's samples (`samples` at frames of `stackFrames`), per thread in
    /// time order: each a sample of its `weight` (1 when it states none) and of the time until
    /// the thread's next sample (the last: none), as speedscope weighs them.
    fn add_trace_samples(&mut self, g: &mut Gathered, reordered: &mut usize) -> Result<()> {
        let samples = std::mem::take(&mut g.trace_samples);
        let frames = std::mem::take(&mut g.stack_frames);
        let mut threads: Vec<(ThreadKey, Vec<(i128, usize)>)> = Vec::new();
        let mut thread_index: HashMap<ThreadKey, usize> = HashMap::new();
        for (i, sample) in samples.iter().enumerate() {
            let key: ThreadKey = (id_text(sample.pid.as_ref()), id_text(sample.tid.as_ref()));
            let time = g.time_at(format!("samples[{i}].ts"), sample.ts.as_ref())?.unwrap_or(0);
            let next = threads.len();
            let k = *thread_index.entry(key.clone()).or_insert(next);
            if k == next {
                threads.push((key, Vec::new()));
            }
            threads[k].1.push((time, i));
        }
        // Each stack frame's model node, per process.
        let mut nodes: HashMap<(usize, String), u32> = HashMap::new();
        for (key, mut list) in threads {
            let (p, t, labels) = self.thread(g, &key);
            *reordered += list.windows(2).filter(|w| w[1].0 < w[0].0).count();
            list.sort_by_key(|&(time, _)| time);
            let mut values: Vec<StackValue> = vec![0; self.profile.events.len()];
            for (k, &(time, i)) in list.iter().enumerate() {
                let leaf = self.stack_frame_node(&frames, &mut nodes, p, &samples[i], i)?;
                if let Some(c) = self.samples {
                    values[c] = sample_weight(samples[i].weight.as_ref())
                        .ok_or_else(|| bad(format!("samples[{i}].weight"), "the weight is not a count"))?;
                }
                if let Some(column) = self.time {
                    let until = list.get(k + 1).map_or(time, |&(next, _)| next);
                    let nanos = until - time;
                    if nanos % 1000 != 0 {
                        g.rounded_times += 1;
                    }
                    values[column] = self.columns.time_value(cfghub_model::ir::rounded(nanos, 3));
                }
                self.profile.processes[p].stacks.push_labelled_sample(leaf, Some(t), labels, &values);
            }
        }
        Ok(())
    }

    /// The model node of sample `i`'s stack frame (`sf`) and its callers, made in process
    /// `p` when new. A frame no `stackFrames` entry has, and callers in a cycle, are errors.
    fn stack_frame_node(
        &mut self,
        frames: &HashMap<String, StackFrame>,
        nodes: &mut HashMap<(usize, String), u32>,
        p: usize,
        sample: &TraceSample,
        i: usize,
    ) -> Result<u32> {
        let mut chain: Vec<String> = Vec::new();
        let mut at = sample.sf.as_ref().map(|v| id_text(Some(v))).filter(|id| !id.is_empty());
        let mut node = NO_INDEX;
        while let Some(id) = at {
            if let Some(&made) = nodes.get(&(p, id.clone())) {
                node = made;
                break;
            }
            let Some(frame) = frames.get(&id) else {
                let place = if chain.is_empty() {
                    format!("samples[{i}].sf")
                } else {
                    format!("stackFrames.{}.parent", chain[chain.len() - 1])
                };
                return Err(bad(place, format!("no stack frame has the id {id}")));
            };
            if chain.len() > frames.len() {
                return Err(bad(format!("stackFrames.{id}"), "the frames' parents go round in a cycle"));
            }
            chain.push(id);
            at = frame.parent.as_ref().map(|v| id_text(Some(v))).filter(|id| !id.is_empty());
        }
        for id in chain.iter().rev() {
            let name = match frames.get(id).and_then(|f| f.name.as_ref()) {
                Some(Value::String(name)) if !name.is_empty() => name.as_str(),
                _ => "(unknown)",
            };
            let frame = self.profile.frames.intern(name);
            if frame as usize == self.profile.frame_sources.len() {
                self.profile.frame_sources.push(cfghub_model::ir::FrameSource::default());
            }
            node = self.profile.processes[p].stacks.node(node, frame);
            nodes.insert((p, id.clone()), node);
        }
        Ok(node)
    }

    /// Each thread's durations nested by time into stacks, a sample per duration of its
    /// self time (its time less that of the durations inside it). A duration that ends past
    /// the one it starts in is cut at that one's end; one never closed ends at the thread's
    /// last time.
    fn add_spans(&mut self, g: &mut Gathered, findings: &mut Findings) {
        let Some(column) = self.duration else { return };
        let mut unclosed = 0;
        for (thread, open) in std::mem::take(&mut g.open) {
            let end = g.last_time.get(&thread).copied().unwrap_or(0);
            for (name, start) in open {
                unclosed += 1;
                g.spans_of(thread.clone()).push(Span { start, end: end.max(start), name });
            }
        }
        let spans = std::mem::take(&mut g.spans);
        // (thread, node, self time in ns) in order of start.
        let mut made: Vec<(usize, u32, u32, u32, i128)> = Vec::new();
        let mut cut = 0;
        for (thread, mut list) in spans {
            if list.is_empty() {
                continue;
            }
            let (p, t, labels) = self.thread(g, &thread);
            list.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
            // The enclosing durations: index into `made`, end.
            let mut open: Vec<(usize, i128)> = Vec::new();
            for span in list {
                while open.last().is_some_and(|&(_, end)| end <= span.start && end < span.end) {
                    open.pop();
                }
                let mut end = span.end;
                if let Some(&(_, outer)) = open.last() {
                    if end > outer {
                        end = outer;
                        cut += 1;
                    }
                }
                let stacks = &mut self.profile.processes[p].stacks;
                let parent = open.last().map_or(NO_INDEX, |&(k, _)| made[k].2);
                let frame = self.profile.frames.intern(&span.name);
                let node = stacks.node(parent, frame);
                let length = end - span.start;
                if let Some(&(k, _)) = open.last() {
                    made[k].4 -= length;
                }
                made.push((p, t, node, labels, length));
                open.push((made.len() - 1, end));
            }
        }
        let whole = made.iter().all(|m| m.4 % 1000 == 0);
        let mut values: Vec<StackValue> = vec![0; self.profile.events.len()];
        for &(p, t, node, labels, nanos) in &made {
            if nanos <= 0 {
                continue;
            }
            let stacks = &mut self.profile.processes[p].stacks;
            if !whole {
                stacks.set_decimals(column, 3);
            }
            values[column] = if whole { nanos / 1000 } else { nanos };
            stacks.push_labelled_sample(node, Some(t), labels, &values);
        }
        if unclosed > 0 {
            findings.warn(None, format!("chrome-trace: {unclosed} begin event(s) (B) never ended: each ends at its thread's last time"));
        }
        if cut > 0 {
            findings.warn(
                None,
                format!("chrome-trace: {cut} duration(s) ending past the one they start in cut at its end"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<(Profile, Findings)> {
        let mut findings = Findings::default();
        read_from(text.as_bytes(), &mut findings).map(|p| (p, findings))
    }

    /// Each sample as `pid thread frames values`.
    fn listed(profile: &Profile) -> Vec<String> {
        let mut out = Vec::new();
        for process in &profile.processes {
            for s in process.stacks.listed() {
                let names: Vec<&str> = s.frames.iter().map(|&f| profile.frames.get(f)).collect();
                out.push(format!("{} {:?} {} {:?}", process.pid, s.thread, names.join(";"), s.values));
            }
        }
        out
    }

    #[test]
    fn an_array_may_end_without_its_bracket_and_times_may_be_strings() {
        let events = r#"[
  {"pid": 0, "tid": 0, "ph": "B", "name": "alpha", "ts": "0"},
  {"pid": 0, "tid": 0, "ph": "X", "name": "beta", "ts": 2, "dur": "5"},
  {"pid": 0, "tid": 0, "ph": "E", "name": "alpha", "ts": 14}"#;
        for end in ["", ",", ",\n  ", "\n"] {
            let (profile, findings) = read_text(&format!("{events}{end}")).unwrap();
            assert_eq!(listed(&profile), ["0 Some(0) alpha [9]", "0 Some(0) alpha;beta [5]"], "{end:?}");
            assert!(findings.details().any(|d| d.message.contains("without its `]`")), "{end:?}");
        }
        // An object's traceEvents must close.
        assert!(
            read_text(r#"{"traceEvents": [{"ph":"X","name":"a","pid":0,"tid":0,"ts":0,"dur":1},"#).is_err()
        );
        let e = read_text(r#"[{"ph":"X","name":"a","pid":0,"tid":0,"ts":"soon","dur":1}]"#).unwrap_err();
        assert!(e.to_string().contains("[0].ts"), "{e}");
    }

    #[test]
    fn sampled_stack_frames_weigh_the_time_to_the_next_sample() {
        // The JSON Object Format's samples, as Hermes writes them (numbers as strings).
        let trace = r#"{"traceEvents": [
            {"name":"thread_name","ph":"M","pid":7,"tid":"9","ts":"0","args":{"name":"js"}}],
          "stackFrames": {"1": {"name": "main", "category": "JS"}, "2": {"name": "work", "parent": 1},
                          "3": {"name": "leaf", "parent": "2"}},
          "samples": [{"pid":7,"tid":"9","ts":"100","sf":3,"weight":"1"},
                      {"pid":7,"tid":"9","ts":"130","sf":2,"weight":"2"},
                      {"pid":7,"tid":"9","ts":"120","sf":"3"}]}"#;
        let (profile, findings) = read_text(trace).unwrap();
        // In time order: leaf at 100 (20 µs to the next), leaf at 120 (10), work at 130 (0).
        assert_eq!(
            listed(&profile),
            [
                "7 Some(0) main;work;leaf [1, 20]",
                "7 Some(0) main;work;leaf [1, 10]",
                "7 Some(0) main;work [2, 0]"
            ]
        );
        assert!(findings.warnings().any(|w| w.message.contains("put in time order")));
        let e = read_text(&trace.replace(r#""sf":2"#, r#""sf":8"#)).unwrap_err().to_string();
        assert!(e.contains("samples[1].sf") && e.contains("8"), "{e}");
        let e = read_text(&trace.replace(r#""category": "JS"}"#, r#""parent": 3}"#)).unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
    }

    #[test]
    fn nested_durations_weigh_their_self_time() {
        let trace = r#"[
            {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"main"}},
            {"ph":"X","name":"outer","pid":1,"tid":2,"ts":100,"dur":50},
            {"ph":"B","name":"inner","pid":1,"tid":2,"ts":110},
            {"ph":"X","name":"leaf","pid":1,"tid":2,"ts":115,"dur":5.5},
            {"ph":"E","pid":1,"tid":2,"ts":130},
            {"ph":"i","name":"mark","pid":1,"tid":2,"ts":120,"args":"anything"},
            {"ph":"X","name":"other","pid":1,"tid":3,"ts":0,"dur":7}]"#;
        let (profile, findings) = read_text(trace).unwrap();
        assert_eq!(
            listed(&profile),
            [
                "1 Some(0) outer [30000]",
                "1 Some(0) outer;inner [14500]",
                "1 Some(0) outer;inner;leaf [5500]",
                "1 Some(1) other [7000]"
            ]
        );
        assert_eq!(profile.processes[0].stacks.decimals_of(0), 3);
        assert_eq!(profile.processes[0].stacks.sample(0).labels, [Label::text(THREAD_NAME_LABEL, "main")]);
        assert_eq!(findings.warnings().count(), 0);
    }

    #[test]
    fn a_profile_gathers_its_chunks_on_the_thread_of_its_profile_event() {
        let trace = r#"{"traceEvents":[
            {"ph":"P","name":"Profile","id":"0x1","pid":5,"tid":5,"ts":1000,"args":{"data":{"startTime":1000}}},
            {"ph":"P","name":"ProfileChunk","id":"0x1","pid":5,"tid":9,"ts":1100,"args":{"data":{
                "cpuProfile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}},
                                       {"id":2,"callFrame":{"functionName":"f","url":"a.js","lineNumber":3},"parent":1}],
                              "samples":[2,1]},"timeDeltas":[10,20]}}},
            {"ph":"P","name":"ProfileChunk","id":"0x1","pid":5,"tid":9,"ts":1200,"args":{"data":{
                "cpuProfile":{"nodes":[{"id":3,"callFrame":{"functionName":""},"parent":2}],"samples":[3]},
                "timeDeltas":[5]}}}],
            "metadata":{"anything":[1,2]}}"#;
        let (profile, _) = read_text(trace).unwrap();
        assert_eq!(
            listed(&profile),
            [
                "5 Some(0) (root);f [1, 20]",
                "5 Some(0) (root) [1, 5]",
                "5 Some(0) (root);f;(anonymous) [1, 0]"
            ]
        );
    }

    #[test]
    fn a_whole_cpu_profile_event_is_read_as_a_cpuprofile() {
        let trace = r#"[{"ph":"I","name":"CpuProfile","pid":3,"tid":4,"ts":0,"args":{"data":{"cpuProfile":{
            "nodes":[{"id":1,"callFrame":{"functionName":"(root)"},"children":[2]},{"id":2,"callFrame":{"functionName":"g"}}],
            "startTime":100,"endTime":200,"samples":[2,2],"timeDeltas":[10,30]}}}}]"#;
        let (profile, _) = read_text(trace).unwrap();
        assert_eq!(listed(&profile), ["3 Some(0) (root);g [1, 30]", "3 Some(0) (root);g [1, 60]"]);
        let e = read_text(&trace.replace("[10,30]", "[10,9223372036854775807]")).unwrap_err().to_string();
        assert!(e.contains("[0].args.data.cpuProfile.timeDeltas[1]"), "{e}");
    }

    #[test]
    fn samples_out_of_order_in_several_profiles_are_sorted_and_told_once() {
        let chunk = |pid: u32| {
            format!(
                r#"{{"ph":"P","name":"ProfileChunk","id":"0x1","pid":{pid},"tid":1,"args":{{"data":{{
                "cpuProfile":{{"nodes":[{{"id":1,"callFrame":{{"functionName":"(root)"}}}},
                                       {{"id":2,"callFrame":{{"functionName":"f"}},"parent":1}}],"samples":[1,2,1]}},
                "timeDeltas":[10,-4,8],"endTime":20}}}}}}"#
            )
        };
        let (profile, findings) = read_text(&format!("[{},{}]", chunk(1), chunk(2))).unwrap();
        assert_eq!(
            listed(&profile)[..3],
            ["1 Some(0) (root);f [1, 4]", "1 Some(0) (root) [1, 4]", "1 Some(0) (root) [1, 6]"]
        );
        let told: Vec<String> = findings.warnings().map(|w| w.to_string()).collect();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].contains("2 sample(s) earlier than the one before"), "{told:?}");
    }

    #[test]
    fn bad_events_are_placed() {
        let e = read_text(r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":"soon","dur":1}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[0].ts"), "{e}");
        let e = read_text(r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1e37,"dur":1}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[0].ts") && e.contains("2^63"), "{e}");
        let e = read_text(r#"{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":-1}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("traceEvents[0].dur"), "{e}");
        let chunk = r#"[{"ph":"P","name":"ProfileChunk","id":1,"pid":1,"tid":1,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{},"parent":1}],"samples":[1]},"timeDeltas":[1]}}}]"#;
        let e = read_text(chunk).unwrap_err().to_string();
        assert!(e.contains("[0].args.data.cpuProfile.nodes[0]") && e.contains("cycle"), "{e}");
        let e = read_text(r#"{"traceEvents":[{"ph":"X""#).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        let e = read_text(r#"{"events":[]}"#).unwrap_err().to_string();
        assert!(e.contains("traceEvents"), "{e}");
    }
}
