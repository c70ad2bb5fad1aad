//! Damaged tables: a missing table, a column of the wrong type, a negative or null count, an
//! edge to a block no table holds, rows of two profiles: exit 2 with the file, table, column and
//! row named, and no output left behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// The tables of a DCFG fixture in `dir/good.tables`.
fn good_tables(dir: &Path) -> PathBuf {
    let out = dir.join("good.tables");
    let input = common::fixture("dcfg/hello-world.dcfg.json");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    out
}

/// Replaces `table` in the folder by what a DuckDB query over it (as `t`) returns.
fn rewrite(folder: &Path, table: &str, query: &str) {
    let path = folder.join(format!("{table}.parquet"));
    let script = format!(
        "import duckdb; c = duckdb.connect(); c.execute(\"create table t as select * from '{p}'\"); \
         c.execute(\"copy ({query}) to '{p}' (format parquet)\")",
        p = path.display()
    );
    let o = Command::new("python3").args(["-c", &script]).output().expect("python3 runs");
    assert!(o.status.success(), "python3 with duckdb (scripts/test.sh installs it): {}", common::stderr(&o));
}

/// Converts the folder to Callgrind and returns the error after checking exit 2 and that no
/// output (nor a temporary file) is left.
fn refused(dir: &Path, folder: &Path) -> String {
    let out = dir.join("callgrind.out.x");
    let o = common::run(&["convert", "-q", folder.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".cfghub-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    err
}

fn contains_all(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "{p:?} not in: {err}");
    }
}

#[test]
fn a_missing_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let folder = good_tables(dir.path());
    std::fs::remove_file(folder.join("edges.parquet")).unwrap();
    let err = refused(dir.path(), &folder);
    contains_all(&err, &["edges.parquet", "table edges is missing"]);
}

#[test]
fn a_column_of_the_wrong_type_names_file_table_column_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let folder = good_tables(dir.path());
    rewrite(&folder, "blocks", "select * replace (cast(count as varchar) as count) from t");
    let err = refused(dir.path(), &folder);
    contains_all(
        &err,
        &["blocks.parquet", "table blocks, column count, row 0", "expected an unsigned integer (UBIGINT)"],
    );
}

#[test]
fn a_missing_column_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let folder = good_tables(dir.path());
    rewrite(&folder, "edges", "select * exclude (kind) from t");
    let err = refused(dir.path(), &folder);
    contains_all(&err, &["edges.parquet", "table edges, column kind", "has no column kind"]);
}

#[test]
fn a_negative_or_null_count_names_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let folder = good_tables(dir.path());
    rewrite(
        &folder,
        "edge_counts",
        "select * replace (case when edge = 3 then -5 else count::bigint end as count) from t",
    );
    let err = refused(dir.path(), &folder);
    contains_all(&err, &["edge_counts.parquet", "table edge_counts, column count, row", "-5 is negative"]);
    std::fs::create_dir(dir.path().join("again")).unwrap();
    let folder = good_tables(&dir.path().join("again"));
    rewrite(&folder, "images", "select * replace (null::ubigint as load_addr) from t");
    let err = refused(&dir.path().join("again"), &folder);
    contains_all(
        &err,
        &["images.parquet", "table images, column load_addr, row 0", "null where a value is required"],
    );
}

#[test]
fn an_edge_naming_a_missing_block_names_the_edge_row() {
    let dir = tempfile::tempdir().unwrap();
    let folder = good_tables(dir.path());
    rewrite(&folder, "blocks", "select * from t where not (image = 0 and block = 2)");
    // The first edge that touches block 2 of image 0.
    let script = format!(
        "import duckdb; print(duckdb.sql(\"select min(rn) from (select row_number() over () - 1 as rn, * from '{}') \
         where (source_image = 0 and source_block = 2) or (target_image = 0 and target_block = 2)\").fetchone()[0])",
        folder.join("edges.parquet").display()
    );
    let o = Command::new("python3").args(["-c", &script]).output().unwrap();
    let row = common::stdout(&o).trim().to_string();
    let err = refused(dir.path(), &folder);
    contains_all(
        &err,
        &["edges.parquet", "table edges, column", &format!("row {row}"), "no block 2 of image 0"],
    );
}

#[test]
fn rows_of_another_profile_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let folder = good_tables(dir.path());
    rewrite(
        &folder,
        "blocks",
        "select * replace (case when block = 4 then 'other' else profile_id end as profile_id) from t",
    );
    let err = refused(dir.path(), &folder);
    contains_all(&err, &["blocks.parquet", "table blocks, column profile_id, row 4", "\"other\""]);
}

#[test]
fn a_folder_without_tables_and_a_file_named_as_tables_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = refused(dir.path(), &empty);
    contains_all(&err, &["no blocks.parquet"]);
    let file = dir.path().join("x.tables");
    std::fs::write(&file, "not a folder").unwrap();
    let o = common::run(&[
        "convert",
        "-q",
        "--from",
        "tables",
        file.to_str().unwrap(),
        "-o",
        dir.path().join("o.folded").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("read from a folder"), "{}", common::stderr(&o));
}
