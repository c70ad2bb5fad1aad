//! The parts of the processed profile format the reader uses, as serde reads them.
//!
//! Every version keeps the same columnar tables; what moved between versions is where they
//! live and how a few columns are spelled:
//! - versions 0 to 55 keep `stackTable`, `frameTable`, `funcTable`, `resourceTable` and
//!   `stringArray` on each thread; version 56 moves `stringArray` to `shared`, version 60 the
//!   tables too;
//! - libraries are in each thread's `libs` in early versions, in the top-level `libs` later;
//! - version 58 replaces `funcTable.fileName` (a string index) with `funcTable.source` (an
//!   index into `shared.sources`, whose `filename` is a string index);
//! - version 66 replaces `stackTable.prefix` with `prefixOffset` (`i - prefixOffset[i]` is the
//!   prefix, 0 means a root);
//! - version 70 moves `lib` from `resourceTable` to `frameTable`;
//! - version 50 allows `samples.timeDeltas` in place of `samples.time`.
//!
//! Columns hold `null` or `-1` where a value is absent; both are read as absent. Unknown keys
//! are ignored.

use serde::Deserialize;

/// A number or a string (pids and tids are strings in recent versions, numbers in old ones).
#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
pub enum Id {
    Number(serde_json::Number),
    Text(String),
}

impl Id {
    /// The numeric part: `"1234"`, `"1234.1"` (a duplicate made unique) and `1234` give 1234.
    pub fn number(&self) -> Option<u64> {
        match self {
            Id::Number(n) => n.as_u64(),
            Id::Text(s) => s.split('.').next()?.parse().ok(),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Id::Number(n) => n.to_string(),
            Id::Text(s) => s.clone(),
        }
    }
}

/// A column of optional integers: `null` and negative values are absent.
pub type Column = Vec<Option<i64>>;

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct File {
    pub meta: Meta,
    pub libs: Vec<Lib>,
    pub shared: Shared,
    pub threads: Vec<Thread>,
}

/// Only the `meta` of a file, to tell what it is when it does not read as a processed profile.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Probe {
    pub meta: Meta,
    pub threads: Vec<serde_json::Value>,
}

impl Probe {
    /// Whether the threads are a Gecko profile's: sub-profiles as strings, or tables with a
    /// `schema`.
    pub fn gecko(&self) -> bool {
        self.threads.iter().any(|t| {
            t.is_string() || t["stackTable"]["schema"].is_object() || t["samples"]["schema"].is_object()
        })
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Meta {
    pub version: Option<serde_json::Value>,
    pub preprocessed_profile_version: Option<serde_json::Value>,
    pub product: Option<String>,
    pub interval: Option<f64>,
    pub start_time: Option<f64>,
    pub categories: Option<Vec<Category>>,
    /// cfghub's own: the event each track holds is named on the track (see the writer).
    pub cfghub: Option<serde_json::Value>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub struct Category {
    pub name: String,
    pub color: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default, rename_all = "camelCase")]
pub struct Lib {
    pub name: Option<String>,
    pub path: Option<String>,
    pub debug_name: Option<String>,
    pub debug_path: Option<String>,
    pub breakpad_id: Option<String>,
    pub code_id: Option<String>,
    pub start: Option<serde_json::Number>,
    pub end: Option<serde_json::Number>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Shared {
    pub string_array: Option<Vec<String>>,
    pub stack_table: Option<StackTable>,
    pub frame_table: Option<FrameTable>,
    pub func_table: Option<FuncTable>,
    pub resource_table: Option<ResourceTable>,
    pub sources: Option<Sources>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Thread {
    pub name: Option<String>,
    pub process_name: Option<String>,
    pub pid: Option<Id>,
    pub tid: Option<Id>,
    pub samples: Samples,
    pub stack_table: Option<StackTable>,
    pub frame_table: Option<FrameTable>,
    pub func_table: Option<FuncTable>,
    pub resource_table: Option<ResourceTable>,
    pub string_array: Option<Vec<String>>,
    pub libs: Option<Vec<Lib>>,
    /// cfghub's own: the event of this track and the model's thread it belongs to.
    pub cfghub_event: Option<String>,
    pub cfghub_thread: Option<u32>,
    /// The factor the writer divided this track's weights by (they did not fit 32 bits).
    pub cfghub_scale: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct StackTable {
    /// Gecko profiles (the profiler's input, not its processed format) describe their tables
    /// with a `schema`.
    pub schema: Option<serde_json::Value>,
    pub prefix: Option<Column>,
    pub prefix_offset: Option<Column>,
    pub frame: Column,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct FrameTable {
    pub address: Column,
    pub inline_depth: Option<Column>,
    pub func: Column,
    pub line: Option<Column>,
    pub lib: Option<Column>,
    pub category: Option<Column>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct FuncTable {
    pub name: Column,
    pub resource: Column,
    pub file_name: Option<Column>,
    pub source: Option<Column>,
    pub line_number: Option<Column>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ResourceTable {
    pub lib: Option<Column>,
    pub name: Column,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Sources {
    pub filename: Column,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Samples {
    pub stack: Column,
    /// Times are not kept (the model has no timeline of samples): skipped unparsed, which
    /// halves the time a large profile takes to read.
    pub time: Option<serde::de::IgnoredAny>,
    pub time_deltas: Option<serde::de::IgnoredAny>,
    pub weight: Option<Vec<Option<f64>>>,
    pub weight_type: Option<String>,
}
