//! Java Flight Recorder recordings (`.jfr`): what `java -XX:StartFlightRecording`,
//! `jcmd PID JFR.dump` and JDK Mission Control write, JDK 11 and later (format version 2).
//!
//! A recording is a sequence of self-contained chunks ([`chunk`]: header, integer and string
//! encodings). Each chunk describes its own classes in a metadata event ([`metadata`]), holds
//! the threads, stack traces, methods, classes and strings its events refer to in constant
//! pools ([`pools`]), and then events, each its size, its class id and its fields:
//!
//! ```text
//! chunk  := header(68 bytes)  event*          (one of them the metadata, some checkpoints)
//! event  := size:int  class:long  field*      (fields as the class's metadata lays them out)
//! jdk.ExecutionSample { startTime, sampledThread -> Thread, stackTrace -> StackTrace, state }
//! StackTrace { truncated, frames: StackFrame[] }   StackFrame { method -> Method, lineNumber,
//!   bytecodeIndex, type -> FrameType }   Method { type -> Class, name -> Symbol, descriptor }
//! ```
//!
//! Model (docs/formats/jfr.md has the table): one process; a column per kind of event the
//! recording holds ([`KINDS`]); a sample per distinct stack and thread, adding up its events
//! (the events' times and order are not kept); frames named `package.Class.method`, as Java's
//! profilers name them; each thread a model thread, its name the `thread_name` label.

mod chunk;
mod metadata;
mod pools;
mod read;

pub use read::read_bytes;

use crate::format::Format;

/// The Java Flight Recorder format.
pub static FORMAT: Format = Format {
    name: "jfr",
    description:
        "Java Flight Recorder recording (JDK 11+: CPU, native, allocation and lock samples; read only)",
    extensions: &[".jfr"],
    sniffer: Some(sniff),
    reader: Some(read::read),
    ..Format::NONE
};

/// A chunk's magic (a version the reader does not take is then told as such).
fn sniff(head: &[u8]) -> bool {
    head.starts_with(chunk::MAGIC)
}

/// A kind of JFR event the reader makes a column of.
pub(crate) struct Kind {
    /// The event type as JFR names it.
    pub jfr_type: &'static str,
    /// The model's event (column) name.
    pub event: &'static str,
    /// The field whose value an event adds; `None`: each event counts one.
    pub field: Option<&'static str>,
    /// Whether that field is a duration in ticks, added as nanoseconds.
    pub ticks: bool,
    /// The unit of the column, when not a count.
    pub unit: Option<&'static str>,
    /// What the column measures.
    pub description: &'static str,
}

/// The events read, in the order of their columns.
pub(crate) const KINDS: [Kind; 5] = [
    Kind {
        jfr_type: "jdk.ExecutionSample",
        event: "cpu",
        field: None,
        ticks: false,
        unit: None,
        description: "samples of threads running Java code (jdk.ExecutionSample)",
    },
    Kind {
        jfr_type: "jdk.NativeMethodSample",
        event: "native",
        field: None,
        ticks: false,
        unit: None,
        description: "samples of threads in native code (jdk.NativeMethodSample)",
    },
    Kind {
        jfr_type: "jdk.ObjectAllocationSample",
        event: "allocation",
        field: Some("weight"),
        ticks: false,
        unit: Some("bytes"),
        description: "bytes allocated, sampled with their weight (jdk.ObjectAllocationSample)",
    },
    Kind {
        jfr_type: "jdk.ObjectAllocationInNewTLAB",
        event: "tlab",
        field: Some("tlabSize"),
        ticks: false,
        unit: Some("bytes"),
        description:
            "bytes of the thread-local allocation buffers allocations opened (jdk.ObjectAllocationInNewTLAB)",
    },
    Kind {
        jfr_type: "jdk.JavaMonitorEnter",
        event: "lock",
        field: Some("duration"),
        ticks: true,
        unit: Some("nanoseconds"),
        description: "time waiting to enter a contended monitor (jdk.JavaMonitorEnter)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_the_chunk_magic() {
        assert!(sniff(b"FLR\0\0\x02\0\x01"));
        assert!(!sniff(b"FLR"));
        assert!(!sniff(b"{\"nodes\":[]}"));
    }
}
