//! Reading a recording into the model, chunk by chunk: each chunk's metadata and constant
//! pools first, then its events in file order; the events of [`KINDS`] are added to the
//! sample of their stack and thread, the others skipped by their size. What a chunk's
//! constants become (frames, stack nodes, threads) is kept while the chunk is read.

use std::collections::HashMap;

use super::chunk::{Cursor, Header, HEADER_SIZE, HINT};
use super::metadata::{Classes, Value};
use super::pools::{Constants, Pools};
use super::{Kind, KINDS};
use crate::format::ReadOptions;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{Event, Label, Meta, Process, Profile, StackValue, EVENT_UNIT_KEY, NO_INDEX};

/// The sample label holding a thread's name, as the other readers of threads name it.
const THREAD_NAME_LABEL: &str = "thread_name";

/// Reads a whole recording.
pub(crate) fn read(
    input: &mut Source<'_>,
    _options: &ReadOptions,
    findings: &mut Findings,
) -> Result<Profile> {
    read_bytes(input.bytes()?, findings)
}

/// The samples read so far: one row per stack and thread, with a value per kind of event.
#[derive(Default)]
struct Rows {
    index: HashMap<(u32, u32), usize>,
    rows: Vec<(u32, u32, [StackValue; KINDS.len()])>,
    seen: [bool; KINDS.len()],
}

/// What a recording's threads became in the model: the thread index of each, by the thread's
/// Java and OS ids and name, and the label set of each index.
#[derive(Default)]
struct Threads {
    by_ids: HashMap<(i64, i64, String), u32>,
    labels: Vec<u32>,
}

/// Reads a recording held in memory.
pub fn read_bytes(file: &[u8], findings: &mut Findings) -> Result<Profile> {
    let mut profile = Profile {
        meta: Meta { creator: Some("Java Flight Recorder".into()), ..Meta::default() },
        processes: vec![Process::default()],
        ..Profile::default()
    };
    let mut rows = Rows::default();
    let mut threads = Threads::default();
    let mut truncated = 0u64;
    let mut rounded = 0u64;
    let mut dangling = 0u64;
    let mut start = 0u64;
    if file.is_empty() {
        return Err(Error::input("the recording is empty").at_byte(0).with_hint(HINT));
    }
    while start < file.len() as u64 {
        let header = Header::read(file, start)?;
        if profile.meta.format_version.is_none() {
            profile.meta.format_version = Some((2, u64::from(u16::from_be_bytes([file[6], file[7]]))));
        }
        let mut chunk = Chunk::open(file, header)?;
        chunk.read_events(&mut profile, &mut rows, &mut threads)?;
        truncated += chunk.truncated;
        dangling += chunk.constants.dangling.get();
        rounded += chunk.rounded;
        start = header.end;
    }
    if truncated > 0 {
        findings.detail(
            None,
            format!("jfr: {truncated} stack trace(s) truncated by the recorder (deeper than its stackdepth): their callers are missing"),
        );
    }
    if dangling > 0 {
        // Nothing is lost that the recording holds: a note, shown with -v.
        findings.detail(
            None,
            format!("jfr: {dangling} reference(s) to constants no pool of their chunk holds (threads that ended, as a rule) read as null, as the JDK's jfr tool reads them"),
        );
    }
    if rounded > 0 {
        findings.warn(
            None,
            format!("jfr: {rounded} lock wait(s) rounded to whole nanoseconds (the recording's ticks are not nanoseconds)"),
        );
    }
    let used: Vec<usize> = (0..KINDS.len()).filter(|&k| rows.seen[k]).collect();
    for &k in &used {
        let kind = &KINDS[k];
        profile.events.push(Event { description: Some(kind.description.into()), ..Event::new(kind.event) });
        if let Some(unit) = kind.unit {
            profile.meta.headers.push((EVENT_UNIT_KEY.into(), format!("{} {unit}", kind.event)));
        }
    }
    let stacks = &mut profile.processes[0].stacks;
    let mut values = vec![0; used.len()];
    for (node, (thread, labels), row) in rows.rows.iter().map(|(n, t, v)| (*n, split(&threads, *t), v)) {
        for (i, &k) in used.iter().enumerate() {
            values[i] = row[k];
        }
        stacks.push_labelled_sample(node, thread, labels, &values);
    }
    Ok(profile)
}

/// The model thread and label set of a thread index made by [`Chunk::thread`].
fn split(threads: &Threads, thread: u32) -> (Option<u32>, u32) {
    if thread == NO_INDEX {
        return (None, NO_INDEX);
    }
    (Some(thread), threads.labels[thread as usize])
}

/// The nanoseconds of `ticks` at `per_second` ticks a second (1e9 on the JDK's usual clock),
/// rounded to the nearest, and whether they are exact.
fn nanoseconds(ticks: i64, per_second: u64) -> (StackValue, bool) {
    let per_second = StackValue::from(per_second.max(1));
    let scaled = StackValue::from(ticks) * 1_000_000_000;
    ((scaled + per_second / 2).div_euclid(per_second), scaled % per_second == 0)
}

/// The event types of a chunk that cfghub reads, with where their fields are.
struct EventType {
    kind: usize,
    thread: Option<usize>,
    stack: Option<usize>,
    value: Option<usize>,
}

/// One chunk being read.
struct Chunk<'f> {
    constants: Constants<'f>,
    /// The event types read, by class id.
    types: HashMap<u64, EventType>,
    /// The class id of `jdk.JVMInformation`, the event that names the JVM's process.
    jvm_information: Option<u64>,
    /// The model node of each stack trace key met.
    stack_nodes: HashMap<u64, u32>,
    /// The model frame of each method key met.
    frames: HashMap<u64, u32>,
    /// The model thread of each thread key met.
    threads: HashMap<u64, u32>,
    truncated: u64,
    rounded: u64,
}

impl<'f> Chunk<'f> {
    /// The chunk of `header`: its metadata and constant pools read.
    fn open(file: &'f [u8], header: Header) -> Result<Chunk<'f>> {
        let mut at = Cursor::new(file, header.metadata, header.end, header.compressed);
        let size = at.int()?;
        let end =
            header.metadata.checked_add_signed(size).filter(|&e| size > 0 && e <= header.end).ok_or_else(
                || {
                    Error::input(format!("a metadata event of {size} bytes, past the end of its chunk"))
                        .at_byte(header.metadata)
                        .with_hint(HINT)
                },
            )?;
        let mut at = Cursor::new(file, at.pos, end, header.compressed);
        let kind = at.long()?;
        if kind != 0 {
            return Err(Error::input(format!(
                "the metadata should be here, in an event of type 0, and the event here is of type {kind}"
            ))
            .at_byte(header.metadata)
            .with_hint(HINT));
        }
        let classes = Classes::read(&mut at)?;
        let pools = Pools::read(file, &header, &classes)?;
        let mut types = HashMap::new();
        for (k, kind) in KINDS.iter().enumerate() {
            if let Some(id) = classes.id_of(kind.jfr_type) {
                let class = classes.get(id);
                let thread = class.field("sampledThread").or_else(|| class.field("eventThread"));
                types.insert(
                    id,
                    EventType {
                        kind: k,
                        thread,
                        stack: class.field("stackTrace"),
                        value: kind.field.and_then(|f| class.field(f)),
                    },
                );
            }
        }
        let jvm_information = classes.id_of("jdk.JVMInformation");
        Ok(Chunk {
            constants: Constants::new(file, header, classes, pools),
            types,
            jvm_information,
            stack_nodes: HashMap::new(),
            frames: HashMap::new(),
            threads: HashMap::new(),
            truncated: 0,
            rounded: 0,
        })
    }

    /// Reads every event of the chunk, adding those of [`KINDS`] to `rows`.
    fn read_events(&mut self, profile: &mut Profile, rows: &mut Rows, threads: &mut Threads) -> Result<()> {
        let header = self.constants.header;
        let file = self.constants.file;
        let mut pos = header.start + HEADER_SIZE;
        while pos < header.end {
            let mut at = Cursor::new(file, pos, header.end, header.compressed);
            let size = at.int()?;
            let end =
                pos.checked_add_signed(size).filter(|&e| size > 0 && e <= header.end).ok_or_else(|| {
                    Error::input(format!(
                        "an event of {size} bytes, past the end of its chunk (truncated file?)"
                    ))
                    .at_byte(pos)
                    .with_hint(HINT)
                })?;
            let mut at = Cursor::new(file, at.pos, end, header.compressed);
            let class = at.long()? as u64;
            if Some(class) == self.jvm_information {
                self.jvm_information_event(profile, &mut at, class, pos)?;
            } else if let Some(event) = self.types.get(&class) {
                let (kind, thread, stack, value) = (event.kind, event.thread, event.stack, event.value);
                let Value::Object(mut fields) = self.constants.classes.read_value(&mut at, class, 0)? else {
                    unreachable!("an event type is a class with fields");
                };
                let mut take =
                    |i: Option<usize>| i.map(|i| std::mem::replace(&mut fields[i], Value::Integer(0)));
                let (thread_value, stack_value, amount) = (take(thread), take(stack), take(value));
                let node = match stack_value {
                    Some(v) => self.stack_node(profile, v, pos)?,
                    None => NO_INDEX,
                };
                let thread = match thread_value {
                    Some(v) => self.thread(profile, threads, v, pos)?,
                    None => NO_INDEX,
                };
                let amount = match (KINDS[kind].field, amount) {
                    (None, _) => 1,
                    (Some(_), Some(Value::Integer(v))) => self.amount(&KINDS[kind], v),
                    (Some(f), _) => {
                        return Err(Error::input(format!("a {} event without a {f}", KINDS[kind].jfr_type))
                            .at_byte(pos)
                            .with_hint(HINT))
                    }
                };
                let next = rows.rows.len();
                let row = *rows.index.entry((node, thread)).or_insert(next);
                if row == next {
                    rows.rows.push((node, thread, [0; KINDS.len()]));
                }
                rows.rows[row].2[kind] += amount;
                rows.seen[kind] = true;
            }
            pos = end;
        }
        Ok(())
    }

    /// The process's id and command line (`java` and its arguments as the JVM states them),
    /// from the first `jdk.JVMInformation` event.
    fn jvm_information_event(
        &self,
        profile: &mut Profile,
        at: &mut Cursor<'_>,
        class: u64,
        place: u64,
    ) -> Result<()> {
        if profile.meta.command.is_some() {
            return Ok(());
        }
        let c = &self.constants;
        let mut event = c.classes.read_value(at, class, 0)?;
        if let Some((Value::Integer(pid), _)) = c.field(&mut event, class, "pid") {
            profile.processes[0].pid = pid as u64;
        }
        let mut text = |name: &str| match c.field(&mut event, class, name) {
            Some((v, _)) => c.text(v, place),
            None => Ok(None),
        };
        let jvm = text("jvmArguments")?.unwrap_or_default();
        let java = text("javaArguments")?.unwrap_or_default();
        let command: Vec<&str> =
            ["java", jvm.as_str(), java.as_str()].into_iter().filter(|a| !a.is_empty()).collect();
        profile.meta.command = Some(command.join(" "));
        Ok(())
    }

    /// What an event of `kind` adds: its field's value, a duration in ticks made nanoseconds.
    fn amount(&mut self, kind: &Kind, value: i64) -> StackValue {
        if !kind.ticks {
            return StackValue::from(value);
        }
        let (nanos, exact) = nanoseconds(value, self.constants.header.ticks_per_second);
        self.rounded += u64::from(!exact);
        nanos
    }

    /// The model node of a stack trace (frames leaf first in JFR, root first in the model).
    fn stack_node(&mut self, profile: &mut Profile, value: Value, place: u64) -> Result<u32> {
        let key = match value {
            Value::Pooled(0) => return Ok(no_stack_trace(profile)),
            Value::Pooled(key) => Some(key),
            _ => None,
        };
        if let Some(&node) = key.and_then(|k| self.stack_nodes.get(&k)) {
            return Ok(node);
        }
        let Some(class) = self.constants.classes.id_of("jdk.types.StackTrace") else {
            return Err(Error::input(
                "an event has a stack trace, and the metadata has no jdk.types.StackTrace",
            )
            .at_byte(place)
            .with_hint(HINT));
        };
        let Some(mut trace) = self.constants.resolve(value, class, place)? else {
            return Ok(no_stack_trace(profile));
        };
        if let Some((Value::Integer(t), _)) = self.constants.field(&mut trace, class, "truncated") {
            self.truncated += u64::from(t != 0);
        }
        let mut frames = Vec::new();
        if let Some((Value::Array(list), frame_class)) = self.constants.field(&mut trace, class, "frames") {
            for frame in list {
                let Some(mut frame) = self.constants.resolve(frame, frame_class, place)? else { continue };
                let Some((method, method_class)) = self.constants.field(&mut frame, frame_class, "method")
                else {
                    continue;
                };
                frames.push(self.frame(profile, method, method_class, place)?);
            }
        }
        let stacks = &mut profile.processes[0].stacks;
        let node = match frames.is_empty() {
            true => no_stack_trace(profile),
            false => frames.iter().rev().fold(NO_INDEX, |parent, &f| stacks.node(parent, f)),
        };
        if let Some(k) = key {
            self.stack_nodes.insert(k, node);
        }
        Ok(node)
    }

    /// The model frame of a method: `package.Class.method`, as Java's tools name it.
    fn frame(&mut self, profile: &mut Profile, method: Value, class: u64, place: u64) -> Result<u32> {
        let key = match method {
            Value::Pooled(key) => Some(key),
            _ => None,
        };
        if let Some(&frame) = key.and_then(|k| self.frames.get(&k)) {
            return Ok(frame);
        }
        let c = &self.constants;
        let mut name = String::new();
        if let Some(mut method) = c.resolve(method, class, place)? {
            let type_name = match c.field(&mut method, class, "type") {
                Some((t, t_class)) => match c.resolve(t, t_class, place)? {
                    Some(mut t) => self.symbol(&mut t, t_class, "name", place)?,
                    None => None,
                },
                None => None,
            };
            let method_name = self.symbol(&mut method, class, "name", place)?;
            if let Some(t) = type_name {
                name.push_str(&t.replace('/', "."));
                name.push('.');
            }
            name.push_str(method_name.as_deref().unwrap_or("(unknown)"));
        } else {
            name.push_str("(unknown)");
        }
        let frame = profile.frames.intern(&name);
        if let Some(k) = key {
            self.frames.insert(k, frame);
        }
        Ok(frame)
    }

    /// The text of the field `field` of an object: a `jdk.types.Symbol` (or a string) it holds
    /// or refers to.
    fn symbol(&self, object: &mut Value, class: u64, field: &str, place: u64) -> Result<Option<String>> {
        let c = &self.constants;
        let Some((value, of)) = c.field(object, class, field) else { return Ok(None) };
        if let Value::Text(_) = value {
            return c.text(value, place);
        }
        let Some(mut symbol) = c.resolve(value, of, place)? else { return Ok(None) };
        match c.field(&mut symbol, of, "string") {
            Some((text, _)) => c.text(text, place),
            None => Ok(None),
        }
    }

    /// The model thread of an event's thread, labelled with its name; [`NO_INDEX`] for none.
    fn thread(
        &mut self,
        profile: &mut Profile,
        threads: &mut Threads,
        value: Value,
        place: u64,
    ) -> Result<u32> {
        let key = match value {
            Value::Pooled(key) => Some(key),
            _ => None,
        };
        if let Some(&t) = key.and_then(|k| self.threads.get(&k)) {
            return Ok(t);
        }
        let Some(class) = self.constants.classes.id_of("java.lang.Thread") else { return Ok(NO_INDEX) };
        let Some(mut thread) = self.constants.resolve(value, class, place)? else { return Ok(NO_INDEX) };
        let integer = |thread: &mut Value, name: &str| match self.constants.field(thread, class, name) {
            Some((Value::Integer(i), _)) => i,
            _ => 0,
        };
        let java_id = integer(&mut thread, "javaThreadId");
        let os_id = integer(&mut thread, "osThreadId");
        let name = match self.symbol(&mut thread, class, "javaName", place)? {
            Some(n) => Some(n),
            None => self.symbol(&mut thread, class, "osName", place)?,
        }
        .unwrap_or_default();
        let next = threads.labels.len() as u32;
        let t = *threads.by_ids.entry((java_id, os_id, name.clone())).or_insert(next);
        if t == next {
            let stacks = &mut profile.processes[0].stacks;
            let labels = if name.is_empty() {
                NO_INDEX
            } else {
                stacks.label_set(vec![Label::text(THREAD_NAME_LABEL, &name)])
            };
            threads.labels.push(labels);
        }
        if let Some(k) = key {
            self.threads.insert(k, t);
        }
        Ok(t)
    }
}

/// The node of an event without a stack trace (none recorded, or one the recording does not
/// hold, which the JDK's `jfr` reads as null): a frame `(no stack trace)`, so that its value
/// stays in every output.
fn no_stack_trace(profile: &mut Profile) -> u32 {
    let frame = profile.frames.intern("(no stack trace)");
    profile.processes[0].stacks.node(NO_INDEX, frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_become_nanoseconds_exactly_where_they_can() {
        assert_eq!(nanoseconds(61_224_794, 1_000_000_000), (61_224_794, true));
        assert_eq!(nanoseconds(3, 3_000_000_000), (1, true));
        assert_eq!(nanoseconds(5, 3_000_000_000), (2, false));
        assert_eq!(nanoseconds(i64::MAX, 1), (StackValue::from(i64::MAX) * 1_000_000_000, true));
    }
}
