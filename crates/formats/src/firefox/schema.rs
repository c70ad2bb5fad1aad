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

use cfghub_model::ir::NO_INDEX;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A number or a string (pids and tids are strings in recent versions, numbers in old ones).
#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
pub(crate) enum Id {
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

/// A column of row indices of the largest tables (the samples' stacks, the stacks' prefixes
/// and frames): `null` and negative values are absent; 4 bytes a row instead of the 16 of
/// [`Column`], which keeps the stack table of a thread in the processor's cache while the
/// reader walks it and a quarter of the memory for the sample column. An index beyond 32 bits
/// (no table has that many rows) is refused where it is.
#[derive(Default)]
pub struct Indices(Vec<u32>);

impl Indices {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Row `i`'s index; `None` where it is absent or the column is shorter.
    pub fn get(&self, i: usize) -> Option<usize> {
        self.0.get(i).copied().filter(|&v| v != NO_INDEX).map(|v| v as usize)
    }

    pub fn iter(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        self.0.iter().map(|&v| (v != NO_INDEX).then_some(v as usize))
    }
}

impl<'de> Deserialize<'de> for Indices {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Rows;
        impl<'de> Visitor<'de> for Rows {
            type Value = Indices;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of indices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Indices, A::Error> {
                let mut rows = Vec::new();
                while let Some(v) = seq.next_element::<Option<i64>>()? {
                    rows.push(match v {
                        Some(v) if v >= 0 => {
                            u32::try_from(v).ok().filter(|&v| v != NO_INDEX).ok_or_else(|| {
                                de::Error::custom(format!("index {v} is beyond any table's rows"))
                            })?
                        }
                        _ => NO_INDEX,
                    });
                }
                Ok(Indices(rows))
            }
        }
        deserializer.deserialize_seq(Rows)
    }
}

/// A whole file, as [`FileSeed`] reads it.
#[derive(Default)]
pub struct File {
    pub meta: Meta,
    pub libs: Vec<Lib>,
    pub shared: Shared,
    pub threads: Vec<Thread>,
}

/// What the top level of a file showed before reading stopped: enough to refuse a file of
/// another version, or a Gecko profile, as what it is rather than where its JSON stops
/// matching this schema.
#[derive(Default)]
pub(crate) struct Seen {
    pub meta: Option<Meta>,
    /// `libs` or a thread was a string: Gecko profiles keep them as JSON text in strings.
    pub gecko: bool,
}

/// Reads a whole file (its top-level keys in any order; unknown keys skipped), noting in
/// [`Seen`] what it has read so far. Reading stops at the first sign of a Gecko profile.
pub(crate) struct FileSeed<'s>(pub &'s mut Seen);

impl<'de> DeserializeSeed<'de> for FileSeed<'_> {
    type Value = File;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<File, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed<'_> {
    type Value = File;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a processed profile (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<File, A::Error> {
        let mut file = File::default();
        let gecko =
            || de::Error::custom("a string where the processed format has a table (as in a Gecko profile)");
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "meta" => self.0.meta = Some(map.next_value()?),
                "libs" => match map.next_value()? {
                    OrText::Value(libs) => file.libs = libs,
                    OrText::Text => {
                        self.0.gecko = true;
                        return Err(gecko());
                    }
                },
                "shared" => file.shared = map.next_value()?,
                "threads" => {
                    for thread in map.next_value::<Vec<OrText<Thread>>>()? {
                        match thread {
                            OrText::Value(thread) => file.threads.push(thread),
                            OrText::Text => {
                                self.0.gecko = true;
                                return Err(gecko());
                            }
                        }
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        file.meta = self.0.meta.take().unwrap_or_default();
        Ok(file)
    }
}

/// A table, or a string in its place (a Gecko profile's `libs` and sub-process profiles).
enum OrText<T> {
    Value(T),
    Text,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OrText<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Either<T> {
            type Value = OrText<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object, an array or a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<OrText<T>, E> {
                Ok(OrText::Text)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OrText<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(OrText::Value)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OrText<T>, A::Error> {
                T::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(OrText::Value)
            }
        }
        deserializer.deserialize_any(Either(PhantomData))
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
pub(crate) struct Category {
    pub name: String,
    pub color: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Lib {
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
pub(crate) struct Shared {
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
    /// The thread's own name, where cfghub named the track by it.
    pub cfghub_thread_name: Option<String>,
    /// The factor the writer divided this track's weights by (they did not fit 32 bits).
    pub cfghub_scale: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct StackTable {
    /// Gecko profiles (the profiler's input, not its processed format) describe their tables
    /// with a `schema`.
    pub schema: Option<serde_json::Value>,
    pub prefix: Option<Indices>,
    pub prefix_offset: Option<Column>,
    pub frame: Indices,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct FrameTable {
    pub address: Column,
    pub inline_depth: Option<Column>,
    pub func: Column,
    pub line: Option<Column>,
    pub lib: Option<Column>,
    pub category: Option<Column>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct FuncTable {
    pub name: Column,
    pub resource: Column,
    pub file_name: Option<Column>,
    pub source: Option<Column>,
    pub line_number: Option<Column>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct ResourceTable {
    pub lib: Option<Column>,
    pub name: Column,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Sources {
    pub filename: Column,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Samples {
    pub stack: Indices,
    /// Times are not kept (the model has no timeline of samples): skipped unparsed, which
    /// halves the time a large profile takes to read.
    pub time: Option<IgnoredAny>,
    pub time_deltas: Option<IgnoredAny>,
    pub weight: Option<Vec<Option<f64>>>,
    pub weight_type: Option<String>,
}
