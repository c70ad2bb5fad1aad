//! Where a profile's tables lie. One profile is a folder of `<table>.parquet` files; a fleet
//! is a folder with a folder per table, Hive-style partitions below it and a file per profile
//! (and partition) in each, as Spark and DuckDB write and read them:
//!
//! ```text
//! fleet.tables/samples/service=web/day=2026-12-07/web-17.parquet
//! fleet.tables/frames/service=web/day=2026-12-07/web-17.parquet
//! ...
//! ```
//!
//! Adding a profile to a fleet writes its files and replaces those of the same profile id.

use std::path::{Path, PathBuf};

use cfghub_model::ir::Label;

/// The value Hive, Spark and DuckDB write for a partition whose key has no value.
pub const NO_VALUE: &str = "__HIVE_DEFAULT_PARTITION__";

/// The place of one profile's tables (or of one partition of it).
#[derive(Clone, Debug)]
pub enum Layout {
    /// `<dir>/<table>.parquet`.
    Folder(PathBuf),
    /// `<root>/<table>/<partition>/<file>.parquet`.
    Fleet {
        /// The fleet's folder.
        root: PathBuf,
        /// The partition folders, `key=value/...` (empty: none).
        partition: PathBuf,
        /// The profile id the file is named by.
        file: String,
    },
}

impl Layout {
    /// The file of `table`.
    pub fn path(&self, table: &str) -> PathBuf {
        match self {
            Layout::Folder(dir) => dir.join(format!("{table}.parquet")),
            Layout::Fleet { root, partition, file } => {
                root.join(table).join(partition).join(format!("{file}.parquet"))
            }
        }
    }

    /// The labels the partition folders give (`service=web` is the label `service`, `web`),
    /// those without a value left out.
    pub fn labels(&self) -> Vec<Label> {
        match self {
            Layout::Folder(_) => Vec::new(),
            Layout::Fleet { partition, .. } => partition
                .components()
                .filter_map(|c| c.as_os_str().to_str())
                .filter_map(|c| c.split_once('='))
                .filter(|(_, v)| *v != NO_VALUE)
                .map(|(k, v)| Label::text(&unescape(k), &unescape(v)))
                .collect(),
        }
    }
}

/// Whether `dir` is a fleet: it has a `profile` or `samples` folder.
pub fn is_fleet(dir: &Path) -> bool {
    dir.join("profile").is_dir() || dir.join("samples").is_dir()
}

/// The partition folder of `key` and `value`, escaped as Hive escapes path names (`%2F` for
/// `/`), which Spark and DuckDB undo.
pub fn partition_dir(key: &str, value: Option<&str>) -> String {
    format!("{}={}", escape(key), value.map_or_else(|| NO_VALUE.to_string(), escape))
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || "\"#%'*/:=?\\\u{7f}{[]^".contains(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    if out.is_empty() {
        NO_VALUE.to_string()
    } else {
        out
    }
}

fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The label keys a fleet's folders are partitioned by, as its first profile's place shows
/// them (`service=web/day=1/` -> `service`, `day`).
pub fn partition_keys(root: &Path) -> Vec<String> {
    let members = fleet_members(root).unwrap_or_default();
    match members.first() {
        Some(Layout::Fleet { partition, .. }) => partition
            .components()
            .filter_map(|c| c.as_os_str().to_str()?.split_once('=').map(|(k, _)| unescape(k)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The Parquet files of table `table` of the fleet at `root`, at any depth of partitions, in
/// path order (files and folders named `.*` or `_*`, which Spark and Hive keep beside their
/// data, left out; none when the table has no folder).
pub fn table_files(root: &Path, table: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let base = root.join(table);
    if !base.is_dir() {
        return Ok(out);
    }
    let mut stack = vec![base];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            // A link to a folder is not followed: a link back up would loop forever.
            if entry.file_type()?.is_dir() {
                stack.push(entry.path());
            } else if name.ends_with(".parquet") {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Every profile (and partition) of the fleet at `root`: the files of its `profile` table
/// (or, in a fleet of stack tables alone, of its `samples` table), in path order.
pub fn fleet_members(root: &Path) -> std::io::Result<Vec<Layout>> {
    let table = if root.join("profile").is_dir() { "profile" } else { "samples" };
    let base = root.join(table);
    Ok(table_files(root, table)?
        .into_iter()
        .map(|path| {
            let file = path.file_stem().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let partition = path.parent().and_then(|p| p.strip_prefix(&base).ok()).unwrap_or(Path::new(""));
            Layout::Fleet { root: root.to_path_buf(), partition: partition.to_path_buf(), file }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_escape_what_a_path_cannot_hold_and_read_back() {
        let dir = partition_dir("service", Some("web/api=1%"));
        assert_eq!(dir, "service=web%2Fapi%3D1%25");
        let layout = Layout::Fleet {
            root: "f".into(),
            partition: PathBuf::from(&dir).join(partition_dir("day", None)),
            file: "x".into(),
        };
        assert_eq!(layout.labels(), vec![Label::text("service", "web/api=1%")]);
        assert_eq!(
            layout.path("samples"),
            Path::new("f/samples/service=web%2Fapi%3D1%25/day=__HIVE_DEFAULT_PARTITION__/x.parquet")
        );
    }
}
