//! Profiles as tables: a folder of Apache Parquet files, one per table of the model, for SQL
//! engines and data-frame libraries (DuckDB, pandas/pyarrow, Spark, Trino, DataFusion).
//!
//! ```text
//! app.tables/
//!   profile.parquet   headers.parquet   events.parquet   files.parquet   frames.parquet
//!   processes.parquet threads.parquet   images.parquet   symbols.parquet source_lines.parquet
//!   blocks.parquet    block_counts.parquet
//!   edges.parquet     edge_counts.parquet edge_costs.parquet
//!   routines.parquet  routine_blocks.parquet loops.parquet loop_blocks.parquet
//!   costs.parquet     stack_nodes.parquet samples.parquet sample_labels.parquet
//!   block_lines.parquet coverage.parquet  (source lines and coverage arrays of CSI metadata)
//!   inline_frames.parquet                 (functions inlined at addresses, after --symbols)
//!   call_contexts.parquet                 (calls counted per recursion level or name of shared code)
//!   call_context_costs.parquet            (their inclusive costs)
//! ```
//!
//! Every row starts with `profile_id` (the folder's name without `.tables`), so that the tables
//! of many profiles read as one (`select ... from 'runs/*.tables/blocks.parquet'`). Things are
//! numbered as in the model: processes, images and the blocks and symbols of an image from 0,
//! routines and loops across the whole profile (so `join routines using (routine)` works on one
//! profile). Frames, call paths and images also have ids derived from their content ([`ids`]),
//! the same in every profile, by which the stack tables of many profiles join. Counts and
//! addresses are unsigned 64-bit integers (`UBIGINT`); those ids and the samples' exact values
//! signed (`BIGINT`). Values that follow from others are written for the reader's convenience
//! (a block's `address`, its `routine`, per-thread block counts, loop iterations, derived
//! routines) and ignored when the tables are read back. See docs/formats/tables.md for every
//! column and the model's mapping.
//!
//! The writer fills a temporary folder beside the target and renames it into place
//! ([`cfghub_model::io::write_output_folder`]), or, for a fleet ([`layout`]: a folder per table,
//! a file per profile, its tree shared), adds its files to it
//! ([`cfghub_model::io::add_to_output_folder`]). The reader takes one profile's folder (it holds
//! `blocks.parquet`), a fleet, or a query's stack tables.

#[cfg(feature = "arrow")]
pub mod arrow;
#[cfg(feature = "tables")]
mod columns;
pub mod ids;
pub mod layout;
#[cfg(feature = "tables")]
mod query;
#[cfg(feature = "tables")]
mod read;
mod schema;
#[cfg(feature = "tables")]
mod tree;
#[cfg(feature = "tables")]
mod write;

use std::path::Path;

use crate::format::Format;

use schema::Kind::{Bool, Text, I64, U32, U64};
use schema::{opt, req};

#[cfg(feature = "tables")]
pub use read::read_folder;
pub use schema::{Kind, Spec};
#[cfg(feature = "arrow")]
pub use write::arrow_tables;

/// How the tables' pages are compressed (`--compression`): snappy unless asked, as DuckDB
/// writes by default; zstd is what fleets of tables are often kept in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Snappy (the default).
    #[default]
    Snappy,
    /// Zstandard, at its default level.
    Zstd,
    /// Gzip, at its default level.
    Gzip,
    /// `LZ4_RAW`, the LZ4 codec the Parquet format recommends (DuckDB's and pyarrow's `lz4`).
    Lz4,
    /// No compression.
    None,
}

impl Compression {
    /// The names `--compression` takes.
    pub const NAMES: &'static [&'static str] = &["snappy", "zstd", "gzip", "lz4", "none"];

    /// The compression a name in [`Compression::NAMES`] names.
    pub fn named(name: &str) -> Option<Compression> {
        Some(match name {
            "snappy" => Compression::Snappy,
            "zstd" => Compression::Zstd,
            "gzip" => Compression::Gzip,
            "lz4" => Compression::Lz4,
            "none" | "uncompressed" => Compression::None,
            _ => return None,
        })
    }
}

/// The tables writer's options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// How the pages are compressed.
    pub compression: Compression,
    /// The id on every row (default: the output folder's name without `.tables`).
    pub profile_id: Option<String>,
    /// Write a fleet's layout, or add to one (a folder per table, a file per profile).
    pub fleet: bool,
    /// Label keys the fleet's folders are partitioned by (`service=web/day=...`); implies
    /// `fleet`.
    pub partition_by: Vec<String>,
}

/// The tables reader's options: which profile of a folder of many to read.
#[derive(Clone, Debug, Default)]
pub struct Select {
    /// Read only the profile of this id from a folder of many.
    pub profile: Option<String>,
}

const DESCRIPTION: &str =
    "a folder of Parquet tables (blocks, edges, routines, loops, costs, stacks) for DuckDB, pandas, Spark";

/// The tables format.
#[cfg(feature = "tables")]
pub static FORMAT: Format = Format {
    name: "tables",
    description: DESCRIPTION,
    extensions: &[".tables"],
    reader: Some(read::read),
    folder: Some(&crate::format::FolderFormat { holds: holds_tables, write: write::write, adds_to }),
    ..Format::NONE
};

/// The tables format, in a cfghub built without Parquet: named, so that asking for it says how
/// to get it.
#[cfg(not(feature = "tables"))]
pub static FORMAT: Format = Format {
    name: "tables",
    description: DESCRIPTION,
    extensions: &[".tables"],
    hint: Some("this cfghub was built without Parquet tables: build it with `cargo build --release` (the default features)"),
    ..Format::NONE
};

/// Whether a folder holds tables: one profile's (a `blocks.parquet`), a query's stack tables (a
/// `samples.parquet`), or a fleet's (a folder per table).
#[cfg_attr(not(feature = "tables"), allow(dead_code))]
fn holds_tables(dir: &Path) -> bool {
    dir.join("blocks.parquet").is_file() || dir.join("samples.parquet").is_file() || layout::is_fleet(dir)
}

/// Whether writing to `target` adds a profile to a fleet: asked for, or `target` is one.
#[cfg(feature = "tables")]
fn adds_to(target: &Path, options: &crate::format::WriteOptions) -> bool {
    let o = options.formats.get::<Options>();
    o.fleet || !o.partition_by.is_empty() || layout::is_fleet(target)
}

/// The profile id of tables written to `target`: the folder's name without `.tables`.
#[cfg_attr(not(feature = "tables"), allow(dead_code))]
pub(crate) fn profile_id_for(target: &Path) -> String {
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("profile");
    name.strip_suffix(".tables").filter(|s| !s.is_empty()).unwrap_or(name).to_string()
}

/// Every table, with its columns, in the order the docs list them.
pub static TABLES: &[(&str, &[Spec])] = &[
    ("profile", PROFILE),
    ("headers", HEADERS),
    ("events", EVENTS),
    ("files", FILES),
    ("frames", FRAMES),
    ("processes", PROCESSES),
    ("threads", THREADS),
    ("images", IMAGES),
    ("symbols", SYMBOLS),
    ("source_lines", SOURCE_LINES),
    ("blocks", BLOCKS),
    ("block_counts", BLOCK_COUNTS),
    ("edges", EDGES),
    ("edge_counts", EDGE_COUNTS),
    ("edge_costs", EDGE_COSTS),
    ("routines", ROUTINES),
    ("routine_blocks", ROUTINE_BLOCKS),
    ("loops", LOOPS),
    ("loop_blocks", LOOP_BLOCKS),
    ("costs", COSTS),
    ("block_lines", BLOCK_LINES),
    ("coverage", COVERAGE),
    ("stack_nodes", STACK_NODES),
    ("samples", SAMPLES),
    ("sample_labels", SAMPLE_LABELS),
    ("inline_frames", INLINE_FRAMES),
    ("call_contexts", CALL_CONTEXTS),
    ("call_context_costs", CALL_CONTEXT_COSTS),
];

/// Tables a folder written by an earlier version may lack: read when present.
#[cfg(feature = "tables")]
pub(crate) const OPTIONAL_TABLES: &[&str] =
    &["inline_frames", "call_contexts", "call_context_costs", "sample_labels"];

const PID: Spec = req("profile_id", Text);

pub(crate) const PROFILE: &[Spec] = &[
    PID,
    opt("format_major", U64),
    opt("format_minor", U64),
    opt("creator", Text),
    opt("command", Text),
    opt("address_step", U64),
];
pub(crate) const HEADERS: &[Spec] = &[PID, req("position", U32), req("key", Text), req("value", Text)];
pub(crate) const EVENTS: &[Spec] =
    &[PID, req("event", U32), req("name", Text), opt("description", Text), opt("decimals", U32)];
pub(crate) const FILES: &[Spec] = &[PID, req("file", U32), req("name", Text)];
pub(crate) const FRAMES: &[Spec] = &[
    PID,
    req("frame", I64),
    req("name", Text),
    req("source_known", Bool),
    opt("file", U32),
    opt("line", U32),
    opt("system_name", Text),
    opt("address", U64),
    opt("address_image", U32),
    opt("path", Text).derived().may_be_absent(),
];
pub(crate) const PROCESSES: &[Spec] =
    &[PID, req("process", U32), req("pid", U64), opt("instr_count", U64), req("threads", U32)];
pub(crate) const THREADS: &[Spec] = &[PID, req("process", U32), req("thread", U32), req("instr_count", U64)];
pub(crate) const IMAGES: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    req("image_id", U64),
    opt("file", U32),
    opt("path", Text).derived(),
    req("load_addr", U64),
    opt("size", U64),
    opt("file_offset", U64),
    opt("build_id", Text),
    req("no_addresses", Bool),
    req("routines_stated", Bool),
    req("lines_per_block", Bool),
    opt("leaf_samples", Bool),
    req("image_key", I64).derived().may_be_absent(),
];
pub(crate) const SYMBOLS: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    req("symbol", U32),
    req("name", Text),
    opt("offset", U64),
    opt("address", U64).derived(),
    opt("size", U64),
    opt("file", U32),
];
pub(crate) const SOURCE_LINES: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    opt("file", U32),
    opt("path", Text).derived(),
    req("line", U32),
    req("offset", U64),
    req("address", U64).derived(),
    req("size", U32),
    req("instrs", U32),
];
pub(crate) const BLOCKS: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    req("block", U32),
    req("node", U64),
    req("offset", U64),
    req("address", U64).derived(),
    req("size", U32),
    req("instrs", U32),
    req("last_instr_offset", U32),
    opt("count", U64),
    opt("routine", U32).derived(),
];
pub(crate) const BLOCK_COUNTS: &[Spec] = &[
    PID,
    req("process", U32).derived(),
    req("image", U32).derived(),
    req("block", U32).derived(),
    req("thread", U32).derived(),
    req("count", U64).derived(),
];
pub(crate) const EDGES: &[Spec] = &[
    PID,
    req("process", U32),
    req("edge", U32),
    req("edge_id", U64),
    req("kind", Text),
    req("source_kind", Text),
    opt("source_image", U32),
    opt("source_block", U32),
    opt("source_symbol", U32),
    opt("source_node", U64).derived(),
    req("target_kind", Text),
    opt("target_image", U32),
    opt("target_block", U32),
    opt("target_symbol", U32),
    opt("target_node", U64).derived(),
    req("count", U64).derived(),
    req("threads", U32),
    req("has_site", Bool),
    opt("source_offset", U64),
    opt("source_line", U32),
    opt("target_offset", U64),
    opt("target_line", U32),
    opt("path_increment", I64),
    opt("path_weight", I64),
    opt("path_back", Bool),
    opt("mispredicts", U64),
];
pub(crate) const EDGE_COUNTS: &[Spec] =
    &[PID, req("process", U32), req("edge", U32), req("thread", U32), req("count", U64)];
pub(crate) const EDGE_COSTS: &[Spec] = &[
    PID,
    req("process", U32),
    req("edge", U32),
    req("position", U32),
    opt("event", Text),
    req("inclusive", U64),
];
pub(crate) const CALL_CONTEXTS: &[Spec] = &[
    PID,
    req("process", U32),
    req("edge", U32),
    req("context", U32),
    req("caller_symbol", U32),
    req("callee_symbol", U32),
    req("thread", U32),
    req("count", U64),
];
pub(crate) const CALL_CONTEXT_COSTS: &[Spec] = &[
    PID,
    req("process", U32),
    req("edge", U32),
    req("context", U32),
    req("position", U32),
    opt("event", Text),
    req("inclusive", U64),
];
pub(crate) const ROUTINES: &[Spec] = &[
    PID,
    req("routine", U32),
    req("process", U32),
    req("image", U32),
    req("entry", U32),
    req("name", Text).derived(),
    opt("symbol", U32),
    req("stated", Bool),
    req("has_dominators", Bool),
    req("blocks", U32).derived(),
    req("loops", U32).derived(),
    req("instrs_executed", U64).derived(),
];
pub(crate) const ROUTINE_BLOCKS: &[Spec] = &[
    PID,
    req("routine", U32),
    req("block", U32),
    req("in_routine", Bool),
    opt("idom", U32),
    opt("exit_position", U32),
];
pub(crate) const LOOPS: &[Spec] = &[
    PID,
    req("loop", U32),
    req("routine", U32),
    req("head", U32),
    opt("parent_head", U32),
    req("depth", U32).derived(),
    req("blocks", U32).derived(),
    req("iterations", U64).derived(),
    req("entries", U64).derived(),
];
pub(crate) const LOOP_BLOCKS: &[Spec] =
    &[PID, req("loop", U32), req("block", U32), req("in_loop", Bool), opt("back_edge_position", U32)];
pub(crate) const COSTS: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    req("row", U64),
    opt("symbol", U32),
    opt("offset", U64),
    opt("address", U64).derived(),
    opt("file", U32),
    opt("line", U32),
    opt("event", Text),
    req("value", U64),
];
pub(crate) const BLOCK_LINES: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    req("block", U32),
    opt("local_id", U64),
    opt("position", U32),
    opt("line", U32),
    opt("path_end", Bool),
];
pub(crate) const COVERAGE: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    req("coverage", U32),
    req("kind", Text),
    req("symbol", U32),
    req("array", Text),
    opt("site", U32),
    opt("slot", I64),
    opt("label", Text),
    opt("lines", Text),
    opt("callee", Text),
];
pub(crate) const STACK_NODES: &[Spec] = &[
    PID,
    req("process", U32),
    req("node", I64),
    opt("parent", I64),
    req("frame", I64),
    req("name", Text).derived(),
    req("depth", U32).derived(),
];
pub(crate) const SAMPLES: &[Spec] = &[
    PID,
    req("process", U32),
    req("sample", U32),
    opt("node", I64),
    opt("thread", U32),
    req("position", U32),
    opt("event", Text),
    opt("value", I64),
];
pub(crate) const SAMPLE_LABELS: &[Spec] = &[
    PID,
    req("process", U32),
    req("sample", U32),
    req("key", Text),
    req("value", Text),
    opt("number", I64),
    opt("unit", Text),
];

/// Functions inlined at code addresses (`Image::inlined`, from `--symbols`). Optional on
/// reading: folders written before it existed have none.
pub(crate) const INLINE_FRAMES: &[Spec] = &[
    PID,
    req("process", U32),
    req("image", U32),
    req("offset", U64),
    req("address", U64).derived(),
    req("position", U32),
    req("name", Text),
    opt("file", U32),
    opt("line", U32),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/formats/tables.md lists every table, and in its section every column (after
    /// `profile_id`) with its type, in schema order.
    #[test]
    fn the_docs_list_every_column_with_its_type() {
        let docs = include_str!("../../../../docs/formats/tables.md");
        for (table, specs) in TABLES {
            let heading = format!("### `{table}`\n");
            let start = docs.find(&heading).unwrap_or_else(|| panic!("no section for {table}"));
            let section = &docs[start + heading.len()..];
            let section = &section[..section.find("\n### ").unwrap_or(section.len())];
            let listed: Vec<(&str, &str)> = section
                .lines()
                .filter_map(|l| {
                    let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                    let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
                    Some((name, *cells.get(2)?))
                })
                .collect();
            let expected: Vec<(&str, &str)> = specs[1..].iter().map(|s| (s.name, s.kind.sql())).collect();
            assert_eq!(listed, expected, "{table}");
            assert_eq!(specs[0].name, "profile_id");
        }
    }

    #[test]
    fn the_profile_id_is_the_folder_name_without_its_extension() {
        assert_eq!(profile_id_for(Path::new("runs/2026-11-26.tables")), "2026-11-26");
        assert_eq!(profile_id_for(Path::new("app.tables/")), "app");
        assert_eq!(profile_id_for(Path::new("plain")), "plain");
        assert_eq!(profile_id_for(Path::new(".tables")), ".tables");
    }
}
