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

/// The tables of a folded profile (`main;a;b 3`, `main;c 2`) in `dir/stacks.tables`.
fn stack_tables(dir: &Path) -> PathBuf {
    let input = dir.join("in.folded");
    std::fs::write(&input, "main;a;b 3\nmain;c 2\n").unwrap();
    let out = dir.join("stacks.tables");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", out.to_str().unwrap(), "--to", "tables"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    out
}

/// A value column (`position`) is one of the events: 30,000 stacks each at position 29,999
/// made every sample 30,000 values wide (1.8 GB and an abort); a position of 4x10^9, 32 GB.
#[test]
fn a_value_position_past_the_events_is_refused_at_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let folder = stack_tables(dir.path());
    rewrite(
        &folder,
        "samples",
        "select t.profile_id, t.process, i::UINTEGER as sample, t.node, t.thread, 29999::UINTEGER as position, \
         t.event, t.value from t, range(30000) r(i) where t.sample = 0",
    );
    let o = common::run_limited(dir.path(), 60, &["convert", "-q", "stacks.tables", "-o", "out.folded"]);
    let err = common::assert_contained(&o, "position 29999");
    assert_eq!(o.status.code(), Some(2), "{err}");
    contains_all(&err, &["samples.parquet", "column position, row 0", "holds 1 event(s)"]);
    rewrite(&folder, "samples", "select * replace (0::UINTEGER as position, 'other' as event) from t");
    let err = refused(dir.path(), &folder);
    contains_all(&err, &["column event, row 0", "\"other\""]);
}

/// 30,000 stacks on the deepest node of a chain 30,000 frames long are one stack of that
/// path, their values added up: written at once, not as 9x10^8 frames.
#[test]
fn stacks_of_one_path_and_thread_are_one_sample() {
    let dir = tempfile::tempdir().unwrap();
    let folder = stack_tables(dir.path());
    rewrite(&folder, "frames", "select * replace ((row_number() over () - 1)::BIGINT as frame) from t");
    rewrite(
        &folder,
        "stack_nodes",
        "select any_value(t.profile_id) as profile_id, 0::UINTEGER as process, i::BIGINT as node, \
         case when i = 0 then null else (i - 1)::BIGINT end as parent, (i % 4)::BIGINT as frame, \
         'x' as name, i::UINTEGER as depth from t, range(30000) r(i) group by i order by i",
    );
    rewrite(
        &folder,
        "samples",
        "select t.profile_id, t.process, i::UINTEGER as sample, 29999::BIGINT as node, t.thread, t.position, \
         t.event, 1::BIGINT as value from t, range(30000) r(i) where t.sample = 0 order by i",
    );
    let o = common::run_limited(dir.path(), 60, &["convert", "-q", "stacks.tables", "-o", "out.folded"]);
    let err = common::assert_contained(&o, "one deep path");
    assert_eq!(o.status.code(), Some(0), "{err}");
    let out = std::fs::read_to_string(dir.path().join("out.folded")).unwrap();
    assert_eq!(out.lines().count(), 1, "one stack");
    assert!(
        out.trim_end().ends_with(";c 30000") && out.matches(';').count() == 29_999,
        "{}",
        &out[out.len() - 40..]
    );
}

/// A FIFO in place of a table is refused at once (opening it would wait for a writer).
#[test]
fn a_fifo_in_place_of_a_table_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let folder = stack_tables(dir.path());
    std::fs::remove_file(folder.join("edges.parquet")).unwrap();
    assert!(Command::new("mkfifo").arg(folder.join("edges.parquet")).status().unwrap().success());
    let o = common::run_limited(dir.path(), 20, &["convert", "-q", "stacks.tables", "-o", "out.folded"]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    contains_all(&err, &["edges.parquet", "not a regular file"]);
}

/// Every file a run reads is an input the output may not replace: a table of the folder read,
/// and the binary `--symbols` found in a folder by the image's name.
#[test]
fn files_read_on_the_way_are_inputs_no_output_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let folder = stack_tables(dir.path());
    let before = common::snapshot(dir.path());
    let o = common::run_limited(
        dir.path(),
        60,
        &["convert", "-q", "stacks.tables", "--to", "folded", "-o", "stacks.tables/edges.parquet"],
    );
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    contains_all(&err, &["is also an input", "edges.parquet was read"]);
    assert_eq!(common::snapshot(dir.path()), before, "an input changed");
    let _ = folder;

    // A DCPI text profile of `prog`, whose binary is found in the folder named by --symbols.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::copy(common::fixture("bolt/call_in_loop"), bin.join("prog")).unwrap();
    std::fs::write(
        dir.path().join("in.dcpicat"),
        "name                 prog\nimage                1\npath                 prog\n\
         epoch                202611230000\nplatform             x86_64\n\
         text_start           0x000000400000\ntext_size            0x000000100000\n\
         event                1 cycles:63488:10000\n0x000000401130      1\n",
    )
    .unwrap();
    let before = common::snapshot(dir.path());
    let o = common::run_limited(
        dir.path(),
        60,
        &["convert", "-q", "in.dcpicat", "--symbols", "bin", "--to", "folded", "-o", "bin/prog"],
    );
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    contains_all(&err, &["is also an input", "prog was read"]);
    assert_eq!(common::snapshot(dir.path()), before, "an input changed");
}

/// The tables of a valgrind profile with recursion levels, whose calls have contexts.
fn recursion_tables(dir: &Path) -> PathBuf {
    let out = dir.join("recursion.tables");
    let input = common::fixture("callgrind/callgrind.out.recursion-loops");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    out
}

/// A call context naming a symbol its image does not hold, or rows out of the order of
/// contexts and threads, is refused at its row (a context number of 4x10^9 made nothing).
#[test]
fn a_call_context_past_the_symbols_or_out_of_order_is_refused_at_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let folder = recursion_tables(dir.path());
    rewrite(&folder, "call_contexts", "select * replace (caller_symbol + 1000000 as caller_symbol) from t");
    let err = refused(dir.path(), &folder);
    contains_all(&err, &["call_contexts.parquet", "column caller_symbol, row 0", "symbol 100000"]);

    std::fs::remove_dir_all(&folder).unwrap();
    let folder = recursion_tables(dir.path());
    rewrite(&folder, "call_contexts", "select * replace (context + 4000000000 as context) from t");
    let err = refused(dir.path(), &folder);
    contains_all(&err, &["call_contexts.parquet", "row 0", "context 4000000000", "numbered 0, 1, ..."]);
}

/// The stack tables of `stack_tables` alone, as a query writes them: (the whole folder, the
/// query's folder `dir/query.tables`).
fn query_tables(dir: &Path) -> (PathBuf, PathBuf) {
    let folder = stack_tables(dir);
    let query = dir.join("query.tables");
    std::fs::create_dir(&query).unwrap();
    for table in ["samples", "stack_nodes", "frames"] {
        std::fs::copy(folder.join(format!("{table}.parquet")), query.join(format!("{table}.parquet")))
            .unwrap();
    }
    (folder, query)
}

/// A query's stack tables (no profile table): a node whose parents lead back to it, and a frame
/// id that names two frames, are refused at their row (exit 2), not followed forever or merged.
#[test]
fn a_queried_tree_with_a_cycle_or_an_id_of_two_frames_is_refused_at_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let (folder, query) = query_tables(dir.path());
    // Every node its own parent's child: the root's parent is its leaf.
    rewrite(
        &query,
        "stack_nodes",
        "select * replace (coalesce(parent, (select max(node) from t where node not in (select parent from t where parent is not null))) as parent) from t",
    );
    let err = refused(dir.path(), &query);
    contains_all(&err, &["samples.parquet", "column node", "form a cycle"]);
    std::fs::copy(folder.join("stack_nodes.parquet"), query.join("stack_nodes.parquet")).unwrap();
    rewrite(&query, "frames", "select * replace ((select min(frame) from t) as frame) from t");
    let err = refused(dir.path(), &query);
    contains_all(&err, &["frames.parquet", "column frame, row 1", "names both"]);
}

/// A query's stack tables whose rows say process 4,000,000,000: a number, not a size (one
/// process is made, not four billion), read in a moment.
#[test]
fn a_queried_process_number_is_no_size() {
    let dir = tempfile::tempdir().unwrap();
    let (_, query) = query_tables(dir.path());
    for table in ["samples", "stack_nodes"] {
        rewrite(&query, table, "select * replace (4000000000::UINTEGER as process) from t");
    }
    let o = common::run_limited(dir.path(), 30, &["convert", "-q", "query.tables", "-o", "out.folded"]);
    let err = common::assert_contained(&o, "a process number");
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!std::fs::read_to_string(dir.path().join("out.folded")).unwrap().is_empty());
}
