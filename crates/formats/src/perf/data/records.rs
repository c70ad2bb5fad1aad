//! The records of a perf.data file, replayed in time order into what the model needs: each
//! process's address space (from `MMAP`/`MMAP2` records, inherited on `FORK`), each thread's
//! command name (`COMM`), and the samples: their stacks logged, their costs added up by
//! address and by branch.
//!
//! Addresses are resolved as perf resolves them when it prints: the sample's (or the call
//! chain's context marker's) CPU mode picks the kernel's mappings or the process's, and an
//! address falls in the mapping that covers it at the time of the sample. An address in an
//! image becomes `(image, file offset)`; one in no mapping stays the bare address (`[unknown]`).
//!
//! Two threads share the work: the replay parses, orders and resolves the records, and hands
//! the resolved samples in batches to the [`Tally`], which interns their frames and threads,
//! logs their stacks and adds them up by address.

use std::collections::HashMap;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};

use rustc_hash::FxHashMap;

use linux_perf_data::linux_perf_event_reader::{EventRecord, Mmap2FileId, RecordType};
use linux_perf_data::{PerfFileReader, PerfFileRecord};

use super::layout::{self, Kind, Layout, Order};
use super::sample::{Layout as SampleLayout, Sample};
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::NO_INDEX;
use cfghub_model::mem::PageReleaser;

/// An image: a file mapped into some process (or the kernel).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImageKey {
    /// The path perf recorded (`/usr/lib/x86_64-linux-gnu/libc.so.6`, `[kernel.kallsyms]`,
    /// `[vdso]`).
    pub path: String,
    /// Where the file's byte 0 would lie: the mapping's start less its file offset (0 for the
    /// kernel, whose addresses are kept as they are).
    pub base: u64,
    /// Whether it is the kernel or a kernel module.
    pub kernel: bool,
}

/// A frame of a call chain: the image (index into [`Recording::images`]) and the offset in
/// it, or an address in no image ([`NO_IMAGE`] in user space, [`NO_KERNEL_IMAGE`] in the
/// kernel).
pub type Frame = (u32, u64);
pub(crate) const NO_IMAGE: u32 = NO_INDEX;
pub(crate) const NO_KERNEL_IMAGE: u32 = NO_INDEX - 1;

/// One event of the file: its name and how it samples.
#[derive(Clone, Debug, Default)]
pub struct EventInfo {
    /// The event's name (`cycles`, `cpu/branches/u`), or one made from its attribute when the
    /// file names none.
    pub name: String,
    /// Fixed sampling period, or the frequency in Hz (`freq` set), as the attribute says.
    pub period: Option<u64>,
    /// Sampling frequency in Hz when the attribute has `freq` set (then `period` is `None`).
    pub frequency: Option<u64>,
    /// The attribute's `sample_type` bits: which fields its `SAMPLE` records hold.
    pub sample_type: u64,
    /// The attribute's `branch_sample_type` bits: which branches its branch stacks record.
    pub branch_sample_type: u64,
    /// What its periods count: `nanoseconds` for the clock events (`cpu-clock`, `task-clock`:
    /// perf's period is the time between samples), `count` for the others.
    pub unit: &'static str,
}

/// A thread as a sample names it: pid, tid and the thread's command name at the time (index
/// into [`Recording::comms`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Thread {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Command name, as an index into [`Recording::comms`].
    pub comm: u32,
}

pub use super::stack_set::StackLog;

/// Branch records of one process, added up (runtime addresses).
#[derive(Clone, Debug, Default)]
pub struct BranchTotals {
    /// `(from, to)` -> (times taken, times mispredicted).
    pub taken: FxHashMap<(u64, u64), (u64, u64)>,
    /// `(start, end)`: code ran from `start` through the instruction at `end`.
    pub ranges: FxHashMap<(u64, u64), u64>,
    /// The same ranges by the source of the branch that entered them, `(from, start, end)`:
    /// perf2bolt reads a range entered from another function at a block just after a call
    /// as running on from the call (`FunctionCode::call_before`).
    pub entered: FxHashMap<(u64, u64, u64), u64>,
}

/// Everything the records said.
#[derive(Default)]
pub struct Recording {
    /// The file's byte order, from its magic (`None` until the header is read).
    pub order: Option<Order>,
    /// Whether the file has the file or the pipe layout (`None` until the header is read).
    pub kind: Option<Kind>,
    /// One entry per event attribute, in the file's order (a sample's attribute index).
    pub events: Vec<EventInfo>,
    /// The images mapped in any process, interned ([`Frame`]s index it).
    pub images: Vec<ImageKey>,
    /// Highest file offset seen mapped, per image (its size).
    pub image_ends: Vec<u64>,
    /// Build ids by recorded path.
    pub build_ids: HashMap<String, Vec<u8>>,
    /// Command names, interned.
    pub comms: Vec<String>,
    /// The distinct frames of the call chains, each resolved once.
    pub frames: Vec<Frame>,
    /// The distinct threads of the samples.
    pub threads: Vec<Thread>,
    /// Every sample's stack, by the key `[event, thread, then each frame of the chain, leaf
    /// first]` (indexes into [`Recording::threads`] and [`Recording::frames`]), with its
    /// weight.
    pub stacks: StackLog,
    /// `(pid, image, offset)` -> period per event, of the sampled instruction (held inline
    /// for up to two events: no allocation per address). Empty when the replay was asked
    /// for stacks alone.
    pub costs: FxHashMap<(i32, u32, u64), smallvec::SmallVec<[u64; 2]>>,
    /// Branch records per pid.
    pub branches: FxHashMap<i32, BranchTotals>,
    /// The last command name of each thread: `(pid, tid)` -> comm.
    pub thread_names: FxHashMap<(i32, i32), u32>,
    /// `SAMPLE` records read (malformed ones not counted).
    pub samples: u64,
    /// Samples per event.
    pub event_samples: Vec<u64>,
    /// Samples perf reported lost while recording, summed over the `LOST` records.
    pub lost: u64,
    /// `SAMPLE` records skipped because their fields run past the record's end.
    pub malformed: u64,
    /// Header features as `(name, value)` pairs (`hostname`, `os release`, `cpu`, ...).
    pub headers: Vec<(String, String)>,
    /// The command line of `perf record`, from the `CMDLINE` feature.
    pub command: Option<String>,
    /// The perf version that wrote the file (`perf 6.5`), from the `VERSION` feature.
    pub creator: Option<String>,
    /// How the user stacks of `--call-graph dwarf` went, when samples carried them: their
    /// frames (in [`Recording::stacks`]) were unwound here, and are named with their inline
    /// chains as `perf script` names such frames.
    pub unwound: Option<super::unwind::Tally>,
    /// Samples with user stacks of a machine whose stacks are not unwound (its `arch`).
    pub not_unwound: Option<(String, u64)>,

    /// The address spaces as the records left them, for addresses added up without their
    /// image (branch records).
    spaces: FxHashMap<i32, Space>,
}

impl Recording {
    /// The image and offset of a runtime address in process `pid` at the end of the
    /// recording (kernel addresses in the kernel's mappings).
    pub fn resolve(&self, pid: i32, address: u64) -> (u32, u64) {
        let kernel = address >= KERNEL_START;
        resolve_in(&self.spaces, &self.images, pid, address, kernel)
    }
}

/// Where the kernel's half of the address space starts on 64-bit machines.
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

fn resolve_in(
    spaces: &FxHashMap<i32, Space>,
    images: &[ImageKey],
    pid: i32,
    address: u64,
    kernel: bool,
) -> (u32, u64) {
    let space = spaces.get(&if kernel { KERNEL_PID } else { pid });
    resolve_among(space, images, address, kernel)
}

/// The image and offset of `address` among the mappings of one address space.
fn resolve_among(space: Option<&Space>, images: &[ImageKey], address: u64, kernel: bool) -> (u32, u64) {
    match space.and_then(|s| s.find(address)) {
        Some(m) => (m.image, address.wrapping_sub(images[m.image as usize].base)),
        None if kernel => (NO_KERNEL_IMAGE, address),
        None => (NO_IMAGE, address),
    }
}

/// One mapping of an address space.
#[derive(Clone, Copy, Debug)]
struct Mapping {
    start: u64,
    end: u64,
    pgoff: u64,
    image: u32,
}

/// The state of the replay: the address spaces and names as the records have them so far,
/// each sample resolved against them and handed on to the [`Tally`] in [`Batch`]es.
#[derive(Default)]
struct Replay {
    rec: Recording,
    image_index: HashMap<ImageKey, u32>,
    comm_index: HashMap<String, u32>,
    /// Mappings per pid; pid -1 is the kernel's.
    spaces: FxHashMap<i32, Space>,
    /// The current command name of each tid.
    comm_of: FxHashMap<i32, u32>,
    layouts: Vec<SampleLayout>,
    default_period: Vec<u64>,
    /// Each sample weighs 1 rather than its period.
    count_samples: bool,
    /// The samples resolved since the last batch was handed on.
    batch: Batch,
    /// The unwinding of user stacks (`--call-graph dwarf` on x86-64).
    unwinding: Option<super::unwind::Unwinding>,
    /// Per pid, the generation of its address space: changed by each mapping and fork, so
    /// that an unwinder built for an older one is built again.
    generations: FxHashMap<i32, u64>,
    next_generation: u64,
    /// The unwound frames of the sample at hand.
    unwound: Vec<u64>,
}

/// A sample resolved: its event, thread, weight, sampled instruction and the number of its
/// call chain's frames (the next ones of [`Batch::frames`]).
struct Resolved {
    event: u32,
    thread: Thread,
    period: u64,
    ip: Option<Frame>,
    frames: u32,
}

/// Samples resolved in time order, handed from the replay to the tally in one piece.
#[derive(Default)]
struct Batch {
    samples: Vec<Resolved>,
    /// The frames of every sample's chain, leaf first, one sample after the other.
    frames: Vec<Frame>,
}

impl Batch {
    /// Samples per batch: enough that handing a batch on costs nothing beside it, few
    /// enough that its frames stay in the cache between the two threads.
    const SAMPLES: usize = 2048;
}

/// The samples taken in: distinct frames and threads interned, stacks logged, costs counted.
/// It runs on a thread of its own beside the replay, which parses, orders and resolves the
/// records: the two halves of the work take about as long, so a conversion on two cores
/// takes about half the time of the replay (the usual route, `perf script` piped into a
/// collapse, runs on two cores too).
#[derive(Default)]
struct Tally {
    frames: Vec<Frame>,
    frame_index: FxHashMap<Frame, u32>,
    threads: Vec<Thread>,
    thread_index: FxHashMap<Thread, u32>,
    stacks: StackLog,
    costs: FxHashMap<(i32, u32, u64), smallvec::SmallVec<[u64; 2]>>,
    /// The number of events (each cost has a value per event).
    events: usize,
    /// Add up the sampled instructions' costs. An output of stacks alone needs none:
    /// leaving them out spares a look-up per sample in a table of as many entries as there
    /// are distinct addresses.
    addresses: bool,
    /// The key of the sample at hand, reused from sample to sample.
    key: Vec<u32>,
}

impl Tally {
    fn add(&mut self, batch: &Batch) {
        let mut chains = batch.frames.as_slice();
        let mut key = std::mem::take(&mut self.key);
        for s in &batch.samples {
            let (chain, rest) = chains.split_at(s.frames as usize);
            chains = rest;
            let thread = self.thread(s.thread);
            key.clear();
            key.extend_from_slice(&[s.event, thread]);
            key.extend(chain.iter().map(|&frame| self.frame(frame)));
            self.stacks.push(&key, s.period);
            let Some((image, offset)) = s.ip.filter(|_| self.addresses) else { continue };
            let events = self.events;
            let values = self
                .costs
                .entry((s.thread.pid, image, offset))
                .or_insert_with(|| smallvec::smallvec![0; events]);
            let value = &mut values[s.event as usize];
            *value = value.saturating_add(s.period);
        }
        self.key = key;
    }

    /// The id of a frame.
    fn frame(&mut self, frame: Frame) -> u32 {
        let next = self.frames.len() as u32;
        let id = *self.frame_index.entry(frame).or_insert(next);
        if id == next {
            self.frames.push(frame);
        }
        id
    }

    fn thread(&mut self, thread: Thread) -> u32 {
        let next = self.threads.len() as u32;
        let id = *self.thread_index.entry(thread).or_insert(next);
        if id == next {
            self.threads.push(thread);
        }
        id
    }

    /// Adds up every batch `batches` hands over, handing each back emptied through `spent`.
    fn run(mut self, batches: Receiver<Batch>, spent: Sender<Batch>) -> Tally {
        for mut batch in batches {
            self.add(&batch);
            batch.samples.clear();
            batch.frames.clear();
            // The replay may have finished and gone: then the batch is dropped here.
            let _ = spent.send(batch);
        }
        self
    }
}

const KERNEL_PID: i32 = -1;
/// `sample_type` bits of `--call-graph dwarf`: user registers and a copy of the user stack.
const USER_STACKS: u64 = (1 << 12) | (1 << 13);
/// Call-chain entries from here up are context markers (`PERF_CONTEXT_*`), not addresses.
const CONTEXT_MAX: u64 = (-4095i64) as u64;
const CONTEXT_KERNEL: u64 = (-128i64) as u64;
const CONTEXT_USER: u64 = (-512i64) as u64;
const CONTEXT_GUEST_KERNEL: u64 = (-2176i64) as u64;
/// `misc` CPU modes.
const MISC_CPUMODE_MASK: u16 = 7;
const MISC_KERNEL: u16 = 1;
const MISC_GUEST_KERNEL: u16 = 4;

/// Reads every record of a checked file, each sample weighing its period; `pages` hands the
/// file's pages back to the system once the records in them are read.
pub fn replay(
    bytes: &[u8],
    pages: PageReleaser<'_>,
    frame: &Layout,
    findings: &mut Findings,
) -> Result<Recording> {
    replay_weighing(bytes, pages, frame, false, true, &[], findings)
}

/// The name perf gives an event with no stated name (a recording killed before it wrote its
/// event descriptions): a generic hardware or software event's, with the modifiers of the
/// privilege levels it counts when it leaves any out (`cpu-clock:u`); else `event{index}`.
fn name_of_attribute(attr: &linux_perf_data::linux_perf_event_reader::PerfEventAttr, index: usize) -> String {
    use linux_perf_data::linux_perf_event_reader::{
        AttrFlags, HardwareEventId as H, PerfEventType, SoftwareCounterType as S,
    };
    let base = match &attr.type_ {
        PerfEventType::Hardware(id, _) => match id {
            H::CpuCycles => "cycles",
            H::Instructions => "instructions",
            H::CacheReferences => "cache-references",
            H::CacheMisses => "cache-misses",
            H::BranchInstructions => "branches",
            H::BranchMisses => "branch-misses",
            H::BusCycles => "bus-cycles",
            H::StalledCyclesFrontend => "stalled-cycles-frontend",
            H::StalledCyclesBackend => "stalled-cycles-backend",
            H::RefCpuCycles => "ref-cycles",
            _ => return format!("event{index}"),
        },
        PerfEventType::Software(counter) => match counter {
            S::CpuClock => "cpu-clock",
            S::TaskClock => "task-clock",
            S::PageFaults => "page-faults",
            S::ContextSwitches => "context-switches",
            S::CpuMigrations => "cpu-migrations",
            S::PageFaultsMin => "minor-faults",
            S::PageFaultsMaj => "major-faults",
            S::AlignmentFaults => "alignment-faults",
            S::EmulationFaults => "emulation-faults",
            S::Dummy => "dummy",
            S::BpfOutput => "bpf-output",
            S::CgroupSwitches => "cgroup-switches",
            _ => return format!("event{index}"),
        },
        _ => return format!("event{index}"),
    };
    let levels =
        [(AttrFlags::EXCLUDE_USER, 'u'), (AttrFlags::EXCLUDE_KERNEL, 'k'), (AttrFlags::EXCLUDE_HV, 'h')];
    if levels.iter().all(|(flag, _)| !attr.flags.contains(*flag)) {
        return base.to_string();
    }
    let kept: String =
        levels.iter().filter(|(flag, _)| !attr.flags.contains(*flag)).map(|(_, c)| *c).collect();
    format!("{base}:{kept}")
}

/// Reads every record of a checked file as [`replay`] does; with `count_samples`, each sample
/// weighs 1 in the stacks and costs (sample counts, as perf2bolt and llvm-profgen count
/// samples), else its period; without `addresses`, the sampled instructions' costs are left
/// out ([`Recording::costs`] stays empty: for an output of stacks alone).
pub(crate) fn replay_weighing(
    bytes: &[u8],
    pages: PageReleaser<'_>,
    frame: &Layout,
    count_samples: bool,
    addresses: bool,
    symbol_paths: &[std::path::PathBuf],
    findings: &mut Findings,
) -> Result<Recording> {
    let (cursor, seen) = super::stream::RecordStream::new(bytes, frame, pages)?;
    // The parser reads a record's header a field at a time: served from a buffer, each read
    // is a copy rather than a call through the cursor.
    let cursor = std::io::BufReader::with_capacity(64 << 10, cursor);
    let fail = |e: linux_perf_data::Error| seen.borrow().error(e);
    let reader = match frame.kind {
        Kind::File => PerfFileReader::parse_file(cursor),
        Kind::Pipe => PerfFileReader::parse_pipe(cursor),
    }
    .map_err(fail)?;
    let PerfFileReader { mut perf_file, mut record_iter } = reader;
    let mut r = Replay { count_samples, ..Replay::default() };
    r.rec.order = Some(frame.order);
    r.rec.kind = Some(frame.kind);
    r.events(&perf_file);
    r.rec.event_samples = vec![0; r.rec.events.len()];
    let features = super::header::read(&perf_file, frame.order);
    (r.rec.headers, r.rec.creator, r.rec.command) = (features.headers, features.creator, features.command);
    r.rec.build_ids = features.build_ids;
    if r.layouts.iter().any(|l| l.sample_type & USER_STACKS == USER_STACKS) {
        let arch = r.rec.headers.iter().find(|(k, _)| k == "arch").map(|(_, v)| v.as_str());
        // A recording that does not say its machine is taken for this one's.
        let x86_64 = arch.map_or(cfg!(target_arch = "x86_64"), |a| a == "x86_64");
        if x86_64 {
            r.unwinding = Some(super::unwind::Unwinding::new(symbol_paths));
        } else {
            r.rec.not_unwound = Some((arch.unwrap_or("an unstated machine").to_string(), 0));
        }
    }
    let tally = Tally { events: r.layouts.len(), addresses, ..Tally::default() };
    // A few batches in flight at most: the replay waits for the tally rather than queue.
    let (to_tally, batches) = sync_channel::<Batch>(4);
    let (spent, recycled) = channel::<Batch>();
    let tally = std::thread::scope(|scope| -> Result<Tally> {
        let adding = scope.spawn(move || tally.run(batches, spent));
        let read = (|| {
            loop {
                let record = match record_iter.next_record(&mut perf_file) {
                    Ok(Some(record)) => record,
                    Ok(None) => break,
                    // The file layout's records end where the parser meets the end of its
                    // input (see `stream`).
                    Err(_) if seen.borrow().finished && seen.borrow().fault.is_none() => break,
                    Err(e) => return Err(fail(e)),
                };
                match record {
                    PerfFileRecord::EventRecord { attr_index, record } => r.event(
                        attr_index,
                        record.record_type,
                        record.misc,
                        record.data.as_slice().as_ref(),
                        &record,
                    ),
                    PerfFileRecord::UserRecord(u) => {
                        if u.record_type.record_type().0 == layout::BUILD_ID {
                            r.build_id_record(u.misc, u.data.as_slice().as_ref(), frame.order);
                        }
                    }
                }
                if r.batch.samples.len() >= Batch::SAMPLES {
                    let next = recycled.try_recv().unwrap_or_default();
                    // The tally only stops when this sender is dropped (or it panicked,
                    // which the join below reports).
                    let _ = to_tally.send(std::mem::replace(&mut r.batch, next));
                }
            }
            let _ = to_tally.send(std::mem::take(&mut r.batch));
            Ok(())
        })();
        drop(to_tally);
        let tally = adding.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        read.map(|()| tally)
    })?;
    r.rec.frames = tally.frames;
    r.rec.threads = tally.threads;
    r.rec.stacks = tally.stacks;
    r.rec.costs = tally.costs;
    r.rec.unwound = r.unwinding.take().map(|u| u.tally);
    warn_about_the_records(frame, &r.rec, &seen.borrow(), findings);
    r.rec.spaces = std::mem::take(&mut r.spaces);
    Ok(r.rec)
}

impl Replay {
    /// The events of the file's attributes: their sample layouts, default periods and names.
    fn events(&mut self, perf_file: &linux_perf_data::PerfFile) {
        for attr in perf_file.event_attributes() {
            let a = attr.attributes();
            let (period, frequency) = match a.sampling_policy {
                linux_perf_data::linux_perf_event_reader::SamplingPolicy::Period(p) => (Some(p.get()), None),
                linux_perf_data::linux_perf_event_reader::SamplingPolicy::Frequency(f) => (None, Some(f)),
                linux_perf_data::linux_perf_event_reader::SamplingPolicy::NoSampling => (None, None),
            };
            self.layouts.push(SampleLayout {
                sample_type: a.sample_format.bits(),
                read_format: a.read_format.bits(),
                branch_sample_type: a.branch_sample_format.bits(),
                regs_user: a.sample_regs_user,
            });
            self.default_period.push(period.unwrap_or(1));
            self.rec.events.push(EventInfo {
                name: attr.name().map_or_else(|| name_of_attribute(a, self.rec.events.len()), str::to_string),
                period,
                frequency,
                sample_type: a.sample_format.bits(),
                branch_sample_type: a.branch_sample_format.bits(),
                unit: period_unit(a),
            });
        }
    }
}

/// What an event's periods count: time in nanoseconds for the software clocks, events for
/// the rest.
fn period_unit(attr: &linux_perf_data::linux_perf_event_reader::PerfEventAttr) -> &'static str {
    use linux_perf_data::linux_perf_event_reader::{PerfEventType, SoftwareCounterType as S};
    match attr.type_ {
        PerfEventType::Software(S::CpuClock | S::TaskClock) => "nanoseconds",
        _ => "count",
    }
}

/// The warnings of a replay: a recording that did not end properly, records of unknown types,
/// samples perf lost and samples whose fields run past their end.
fn warn_about_the_records(
    frame: &Layout,
    rec: &Recording,
    seen: &super::stream::Seen,
    findings: &mut Findings,
) {
    if frame.patched_header.is_some() {
        let (start, end) = frame.records;
        findings.warn(
            Some(cfghub_model::error::Place::Byte(40)),
            format!(
                "the data section's size is 0: `perf record` did not end properly (killed?); its \
                 {} bytes of records up to byte {end} were read, without the features perf \
                 writes last (build-id table, host, command line)",
                end - start
            ),
        );
    }
    for (t, n, at) in &frame.unknown {
        findings.warn(
            Some(cfghub_model::error::Place::Byte(*at)),
            format!("{n} record(s) of unknown type {t} skipped (the first at this offset)"),
        );
    }
    for (t, n, at) in &seen.unknown {
        findings.warn(
            Some(cfghub_model::error::Place::Byte(*at)),
            format!("{n} record(s) of unknown type {t} skipped (the first in the compressed record at this offset)"),
        );
    }
    if seen.cut_off > 0 {
        findings.warn(
            None,
            format!(
                "the compressed records end {} byte(s) into a record, which is left out (the recording was cut off?)",
                seen.cut_off
            ),
        );
    }
    if rec.lost > 0 {
        findings.warn(None, format!("perf lost {} sample(s) while recording (LOST records)", rec.lost));
    }
    if let Some(t) = rec.unwound.as_ref().filter(|t| t.cut_short > 0) {
        let mut why = Vec::new();
        if t.out_of_copy > 0 {
            why.push(format!(
                "{} at the end of the stack copy (`perf record --call-graph dwarf,SIZE` copies more)",
                t.out_of_copy
            ));
        }
        if !t.without_unwind_info.is_empty() {
            why.push(format!("no unwind information read from {}", t.without_unwind_info.join(", ")));
        }
        let rest = t.cut_short - t.out_of_copy;
        if rest > 0 && t.without_unwind_info.is_empty() {
            why.push(format!("{rest} on code whose unwind rules are beyond this unwinder"));
        }
        findings.warn(
            None,
            format!(
                "{} of {} user stack(s) ({:.1}%) were unwound only in part, their outer frames left out: {}",
                t.cut_short,
                t.stacks,
                100.0 * t.cut_short as f64 / t.stacks.max(1) as f64,
                why.join("; ")
            ),
        );
    }
    if let Some((arch, n)) = rec.not_unwound.as_ref().filter(|(_, n)| *n > 0) {
        findings.warn(
            None,
            format!("{n} sample(s) carry user stacks of {arch}, which are not unwound (x86-64 only): their stacks hold their kernel frames and sampled instruction alone"),
        );
    }
    if rec.malformed > 0 {
        findings.warn(
            None,
            format!("{} SAMPLE record(s) whose fields run past their end were skipped", rec.malformed),
        );
    }
}

impl Replay {
    fn event(
        &mut self,
        attr: usize,
        kind: RecordType,
        misc: u16,
        body: &[u8],
        raw: &linux_perf_data::linux_perf_event_reader::RawEventRecord<'_>,
    ) {
        // An MMAP2 record stating a build id longer than 20 bytes (its length byte, at 32) is
        // damaged: the record parser asserts on it, so it is left out here.
        if kind == RecordType::MMAP2 && misc & 0x4000 != 0 && body.get(32).is_none_or(|&n| n > 20) {
            self.rec.malformed += 1;
            return;
        }
        match kind {
            RecordType::SAMPLE => self.sample(attr, misc, body),
            RecordType::MMAP | RecordType::MMAP2 | RecordType::COMM | RecordType::FORK => match raw.parse() {
                Ok(EventRecord::Mmap(m)) => {
                    let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                    self.map(m.pid, m.address, m.length, m.page_offset, path, misc, None);
                }
                Ok(EventRecord::Mmap2(m)) => {
                    let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                    let id = match m.file_id {
                        Mmap2FileId::BuildId(id) => Some(id),
                        Mmap2FileId::InodeAndVersion(_) => None,
                    };
                    // Only code: a mapping without PROT_EXEC holds no samples perf names.
                    if m.protection & 4 != 0
                        || m.cpu_mode != linux_perf_data::linux_perf_event_reader::CpuMode::User
                    {
                        self.map(m.pid, m.address, m.length, m.page_offset, path, misc, id);
                    }
                }
                Ok(EventRecord::Comm(c)) => {
                    let name = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
                    let id = self.comm(name);
                    self.comm_of.insert(c.tid, id);
                    self.rec.thread_names.insert((c.pid, c.tid), id);
                }
                Ok(EventRecord::Fork(f)) => {
                    if f.pid != f.ppid {
                        if let Some(parent) = self.spaces.get(&f.ppid).cloned() {
                            self.spaces.insert(f.pid, parent);
                            self.changed(f.pid);
                        }
                    }
                    if let Some(&c) = self.comm_of.get(&f.ptid) {
                        self.comm_of.insert(f.tid, c);
                        self.rec.thread_names.insert((f.pid, f.tid), c);
                    }
                }
                _ => {}
            },
            // `id`, then the number of samples lost.
            RecordType::LOST if body.len() >= 16 => {
                let order = self.rec.order.unwrap_or(Order::Little);
                self.rec.lost = self.rec.lost.saturating_add(order.u64(&body[8..]));
            }
            _ => {}
        }
    }

    fn comm(&mut self, name: String) -> u32 {
        if let Some(&id) = self.comm_index.get(&name) {
            return id;
        }
        let id = self.rec.comms.len() as u32;
        self.rec.comms.push(name.clone());
        self.comm_index.insert(name, id);
        id
    }

    #[allow(clippy::too_many_arguments)]
    fn map(
        &mut self,
        pid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: String,
        misc: u16,
        id: Option<Vec<u8>>,
    ) {
        let mode = misc & MISC_CPUMODE_MASK;
        let kernel = mode == MISC_KERNEL || mode == MISC_GUEST_KERNEL;
        let pid = if kernel { KERNEL_PID } else { pid };
        let Some(end) = start.checked_add(len).filter(|_| len > 0) else { return };
        let (path, base) = if kernel {
            let name =
                if path.starts_with("[kernel.kallsyms]") { "[kernel.kallsyms]".to_string() } else { path };
            (name, 0)
        } else {
            (path, start.wrapping_sub(pgoff))
        };
        if let Some(id) = id {
            self.rec.build_ids.entry(path.clone()).or_insert(id);
        }
        let key = ImageKey { path, base, kernel };
        let image = match self.image_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.rec.images.len() as u32;
                self.rec.images.push(key.clone());
                self.rec.image_ends.push(0);
                self.image_index.insert(key, i);
                i
            }
        };
        let top = &mut self.rec.image_ends[image as usize];
        *top = (*top).max(end.wrapping_sub(base));
        self.spaces.entry(pid).or_default().insert(Mapping { start, end, pgoff, image });
        self.changed(pid);
    }

    /// Marks the address space of `pid` changed (see [`Replay::generations`]).
    fn changed(&mut self, pid: i32) {
        self.next_generation += 1;
        self.generations.insert(pid, self.next_generation);
    }

    /// A `HEADER_BUILD_ID` record (pipe layout): `pid`, 24 bytes of id, the path.
    fn build_id_record(&mut self, misc: u16, body: &[u8], order: Order) {
        if let Some((path, id)) = super::header::build_id_entry(misc, body, order) {
            self.rec.build_ids.insert(path, id);
        }
    }

    fn sample(&mut self, attr: usize, misc: u16, body: &[u8]) {
        let order = self.rec.order.unwrap_or(Order::Little);
        let Some(&layout) = self.layouts.get(attr) else { return };
        let Some(s) = Sample::parse(body, layout, order) else {
            self.rec.malformed += 1;
            return;
        };
        self.rec.samples += 1;
        if let Some(n) = self.rec.event_samples.get_mut(attr) {
            *n += 1;
        }
        let period = if self.count_samples { 1 } else { s.period.unwrap_or(self.default_period[attr]) };
        let (pid, tid) = (s.pid.unwrap_or(-1), s.tid.unwrap_or(-1));
        // A thread with no COMM record is named as perf names it: `swapper` for the idle
        // task (tid 0), else `:TID`.
        let comm = match self.comm_of.get(&tid) {
            Some(&c) => c,
            None if tid == 0 => self.comm("swapper".to_string()),
            None => self.comm(":".to_string() + &tid.to_string()),
        };
        let mode = misc & MISC_CPUMODE_MASK;
        let sample_kernel = mode == MISC_KERNEL || mode == MISC_GUEST_KERNEL;
        // The user stack unwound here (`--call-graph dwarf`): its frames follow the kernel's
        // of the call chain, in place of any user frame the chain has.
        self.unwound.clear();
        let unwinding = if s.user_stack.is_empty() { None } else { self.unwinding.as_mut() };
        let mut unwound = false;
        if let Some(u) = unwinding {
            let generation = self.generations.get(&pid).copied().unwrap_or(0);
            let (rec, spaces) = (&self.rec, &self.spaces);
            let mappings = || {
                spaces.get(&pid).into_iter().flat_map(|s| s.0.values()).map(|m| {
                    let image = &rec.images[m.image as usize];
                    super::unwind::CodeMapping {
                        range: m.start..m.end,
                        pgoff: m.pgoff,
                        image: m.image,
                        path: image.path.as_str(),
                        build_id: rec.build_ids.get(&image.path).map(Vec::as_slice),
                    }
                })
            };
            let regs = |n| s.user_register(&layout, n, order);
            u.unwind(pid, generation, mappings, regs, s.user_stack, &mut self.unwound);
            unwound = true;
        }
        if let Some((_, n)) = self.rec.not_unwound.as_mut().filter(|_| !s.user_stack.is_empty()) {
            *n += 1;
        }
        let (images, batch) = (&self.rec.images, &mut self.batch);
        let (user, kernel_space) = (self.spaces.get(&pid), self.spaces.get(&KERNEL_PID));
        let resolve = |address, kernel| {
            resolve_among(if kernel { kernel_space } else { user }, images, address, kernel)
        };
        let before = batch.frames.len();
        if s.has_callchain() {
            let mut kernel = sample_kernel;
            for address in s.callchain(order) {
                if address >= CONTEXT_MAX {
                    kernel = matches!(address, CONTEXT_KERNEL | CONTEXT_GUEST_KERNEL);
                    if address == CONTEXT_USER {
                        kernel = false;
                    }
                    continue;
                }
                if kernel || !unwound {
                    batch.frames.push(resolve(address, kernel));
                }
            }
        } else if let Some(ip) = s.ip.filter(|_| !unwound || sample_kernel) {
            batch.frames.push(resolve(ip, sample_kernel));
        }
        batch.frames.extend(self.unwound.iter().map(|&a| resolve(a, false)));
        batch.samples.push(Resolved {
            event: attr as u32,
            thread: Thread { pid, tid, comm },
            period,
            ip: s.ip.map(|ip| resolve(ip, sample_kernel)),
            frames: (batch.frames.len() - before) as u32,
        });
        if s.branch_count() > 0 {
            add_branches(self.rec.branches.entry(pid).or_default(), &s, order);
        }
    }
}

/// Adds one sample's branch stack, newest first, as perf2bolt does: every record a taken
/// branch, and between two consecutive records (the older one's target, the newer one's
/// source) code that ran straight through (see [`BranchTotals::add_stack`]).
pub(crate) fn add_branches(totals: &mut BranchTotals, s: &Sample<'_>, order: Order) {
    totals.add_stack(s.branches(order));
}

impl BranchTotals {
    /// Adds one branch stack, newest branch first: every record a taken branch, and between
    /// two consecutive records (the older one's target, the newer one's source) a range of
    /// code that ran straight through.
    ///
    /// A record between user space and the kernel (an interrupt, a fault or a system call
    /// entering the kernel, its return leaving it) is not a branch of either side's code: it
    /// is left out, and the user code's range runs across it, from the target of the user
    /// branch before to the source of the user branch after, as perf2bolt reads them (its
    /// `-ignore-interrupt-lbr`, on by default). The code interrupted ran on where it
    /// stopped; counting the return from the interrupt as a branch would end a block in the
    /// middle of straight code and cut the range before it off as running across images.
    /// Branches inside the kernel are kept, their ranges joined among themselves.
    pub(crate) fn add_stack(&mut self, stack: impl Iterator<Item = super::sample::Branch>) {
        let totals = self;
        // The source of the newer branch of each side: user space, the kernel.
        let mut newer: [Option<u64>; 2] = [None, None];
        for b in stack {
            let (from_kernel, to_kernel) = (b.from >= KERNEL_START, b.to >= KERNEL_START);
            if from_kernel != to_kernel {
                // Between the two sides: the kernel's code before it is not the code after.
                newer[1] = None;
                continue;
            }
            let side = usize::from(from_kernel);
            if side == 0 {
                newer[1] = None;
            }
            let t = totals.taken.entry((b.from, b.to)).or_insert((0, 0));
            t.0 += 1;
            t.1 += u64::from(b.mispredicted);
            if let Some(end) = newer[side] {
                *totals.ranges.entry((b.to, end)).or_insert(0) += 1;
                *totals.entered.entry((b.from, b.to, end)).or_insert(0) += 1;
            }
            newer[side] = Some(b.from);
        }
    }
}

/// The mappings of one address space by start address, none overlapping. A forked process
/// shares its parent's until either maps something (copied on that write), so that thousands of
/// forks of a process with thousands of mappings cost no copies; a mapping goes in, in any
/// address order, in logarithmic time.
#[derive(Clone, Debug, Default)]
struct Space(std::sync::Arc<std::collections::BTreeMap<u64, Mapping>>);

impl Space {
    /// The mapping that holds `address`.
    fn find(&self, address: u64) -> Option<Mapping> {
        let (_, &m) = self.0.range(..=address).next_back()?;
        (address < m.end).then_some(m)
    }

    /// Puts a mapping in: what it covers of older mappings is cut out of them (a later `mmap`
    /// over an address replaces what was there).
    fn insert(&mut self, new: Mapping) {
        let maps = std::sync::Arc::make_mut(&mut self.0);
        let before = maps.range(..new.start).next_back().map(|(_, &m)| m).filter(|m| m.end > new.start);
        let covered: Vec<Mapping> =
            before.into_iter().chain(maps.range(new.start..new.end).map(|(_, &m)| m)).collect();
        for old in covered {
            maps.remove(&old.start);
            if old.start < new.start {
                maps.insert(old.start, Mapping { end: new.start, ..old });
            }
            if old.end > new.end {
                let cut = new.end - old.start;
                maps.insert(new.end, Mapping { start: new.end, pgoff: old.pgoff.wrapping_add(cut), ..old });
            }
        }
        maps.insert(new.start, new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interrupt in user code (its return from the kernel recorded, newest first) is left
    /// out, and the user code's range runs across it; the kernel's own branches stay.
    #[test]
    fn interrupts_are_left_out_and_ranges_run_across_them() {
        use super::super::sample::Branch;
        let k = |a: u64| KERNEL_START + a;
        let b = |from, to| Branch { from, to, mispredicted: false };
        let mut totals = BranchTotals::default();
        // Oldest last: a jump to 0x100, an interrupt at 0x108 (two kernel branches, then the
        // return to 0x108), a jump from 0x110.
        totals.add_stack(
            [b(0x110, 0x200), b(k(0x90), 0x108), b(k(0x20), k(0x80)), b(k(0x10), k(0x18)), b(0x50, 0x100)]
                .into_iter(),
        );
        let mut taken: Vec<_> = totals.taken.keys().copied().collect();
        taken.sort_unstable();
        assert_eq!(taken, vec![(0x50, 0x100), (0x110, 0x200), (k(0x10), k(0x18)), (k(0x20), k(0x80))]);
        let mut ranges: Vec<_> = totals.ranges.keys().copied().collect();
        ranges.sort_unstable();
        assert_eq!(ranges, vec![(0x100, 0x110), (k(0x18), k(0x20))]);
        // Each range by the source of the branch that entered it: the user range by the
        // jump from 0x50, not by the interrupt's return.
        let mut entered: Vec<_> = totals.entered.keys().copied().collect();
        entered.sort_unstable();
        assert_eq!(entered, vec![(0x50, 0x100, 0x110), (k(0x10), k(0x18), k(0x20))]);
    }

    /// Samples handed to the tally in several batches, through its channel, add up as in one.
    #[test]
    fn batches_add_up_as_one() {
        let thread = |tid| Thread { pid: 1, tid, comm: 0 };
        let samples: Vec<(Thread, Vec<Frame>)> = (0..50u64)
            .map(|i| (thread((i % 3) as i32), (0..i % 5).map(|d| (0, 0x1000 + (i + d) % 7)).collect()))
            .collect();
        let batch_of = |part: &[(Thread, Vec<Frame>)]| {
            let mut batch = Batch::default();
            for (thread, chain) in part {
                batch.frames.extend_from_slice(chain);
                let (event, period, frames) = (0, 10, chain.len() as u32);
                batch.samples.push(Resolved {
                    event,
                    thread: *thread,
                    period,
                    ip: chain.first().copied(),
                    frames,
                });
            }
            batch
        };
        let mut whole = Tally { events: 1, addresses: true, ..Tally::default() };
        whole.add(&batch_of(&samples));
        let (to_tally, batches) = sync_channel(1);
        let (spent, recycled) = channel();
        let split = std::thread::scope(|scope| {
            let adding =
                scope.spawn(|| Tally { events: 1, addresses: true, ..Tally::default() }.run(batches, spent));
            for part in samples.chunks(7) {
                to_tally.send(batch_of(part)).unwrap();
            }
            drop(to_tally);
            adding.join().unwrap()
        });
        assert!(recycled.iter().all(|b| b.samples.is_empty() && b.frames.is_empty()));
        assert_eq!((&split.frames, &split.threads), (&whole.frames, &whole.threads));
        let logged = |t: &Tally| t.stacks.iter().map(|(k, period)| (k.to_vec(), period)).collect::<Vec<_>>();
        assert_eq!(logged(&split), logged(&whole));
        assert_eq!(split.costs, whole.costs);
        assert_eq!(whole.stacks.len(), 50);
    }

    #[test]
    fn a_later_mapping_cuts_the_older_ones() {
        let mut space = Space::default();
        space.insert(Mapping { start: 0x1000, end: 0x5000, pgoff: 0, image: 0 });
        space.insert(Mapping { start: 0x2000, end: 0x3000, pgoff: 0, image: 1 });
        let listed = |space: &Space| -> Vec<_> {
            space.0.values().map(|m| (m.start, m.end, m.pgoff, m.image)).collect()
        };
        assert_eq!(
            listed(&space),
            vec![(0x1000, 0x2000, 0, 0), (0x2000, 0x3000, 0, 1), (0x3000, 0x5000, 0x2000, 0)]
        );
        // Over the end of one and the start of the next, and over several whole.
        space.insert(Mapping { start: 0x1800, end: 0x2800, pgoff: 0, image: 2 });
        assert_eq!(
            listed(&space),
            vec![
                (0x1000, 0x1800, 0, 0),
                (0x1800, 0x2800, 0, 2),
                (0x2800, 0x3000, 0x800, 1),
                (0x3000, 0x5000, 0x2000, 0)
            ]
        );
        space.insert(Mapping { start: 0x0, end: 0x6000, pgoff: 0, image: 3 });
        assert_eq!(listed(&space), vec![(0x0, 0x6000, 0, 3)]);
        assert_eq!(space.find(0x5fff).map(|m| m.image), Some(3));
        assert!(space.find(0x6000).is_none());
    }

    /// 200,000 mappings in descending address order (each before all others): each goes in
    /// without moving the others (a sorted list took 12-17 s for them), and each is found.
    #[test]
    fn mappings_go_in_in_any_order() {
        let mut space = Space::default();
        let n = 200_000u64;
        for i in (0..n).rev() {
            space.insert(Mapping { start: i * 0x1000, end: i * 0x1000 + 0x800, pgoff: 0, image: i as u32 });
        }
        assert_eq!(space.0.len(), n as usize);
        assert!((0..n)
            .step_by(997)
            .all(|i| space.find(i * 0x1000 + 0x7ff).map(|m| m.image) == Some(i as u32)));
        assert!(space.find(0x800).is_none());
    }

    /// A fork shares its parent's mappings until one of them maps something.
    #[test]
    fn a_forked_space_is_shared_until_written() {
        let mut parent = Space::default();
        parent.insert(Mapping { start: 0x1000, end: 0x2000, pgoff: 0, image: 0 });
        let mut child = parent.clone();
        assert!(std::sync::Arc::ptr_eq(&parent.0, &child.0));
        child.insert(Mapping { start: 0x3000, end: 0x4000, pgoff: 0, image: 1 });
        assert_eq!((parent.0.len(), child.0.len()), (1, 2));
    }
}
