//! Tables: DuckDB and pandas (pyarrow) read every table cfghub writes for every fixture format,
//! with the documented types, and their sums agree with `cfghub info --json`; a folder DuckDB
//! filtered and wrote back itself reads into cfghub and converts to Callgrind that
//! `callgrind_annotate` accepts with the total DuckDB computed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use cfghub::converters::tables::TABLES;

/// Python with DuckDB, pyarrow and pandas, which scripts/test.sh installs.
fn require_python_modules() {
    let o = Command::new("python3")
        .args(["-c", "import duckdb, pyarrow, pandas"])
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "python3 cannot import duckdb, pyarrow and pandas; scripts/test.sh installs them (pip install duckdb pyarrow pandas)"
    );
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real_clients/tables").join(name)
}

/// The documented schema: table -> [(column, DuckDB type)].
fn schema_json() -> String {
    let tables: Vec<String> = TABLES
        .iter()
        .map(|(name, specs)| {
            let columns: Vec<String> =
                specs.iter().map(|s| format!("[\"{}\", \"{}\"]", s.name, s.kind.sql())).collect();
            format!("\"{name}\": [{}]", columns.join(", "))
        })
        .collect();
    format!("{{{}}}", tables.join(", "))
}

/// One input of each format that has fixtures, and the real-world ones where present.
fn inputs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [
        "dcfg/hello-world.dcfg.json",
        "dcfg/two-processes.dcfg.json",
        "dcfg-trace/small.trace.json",
        "callgrind/callgrind.out.recursion-loops",
        "csi/recursion-loops.debug_PT",
        "dcpi/alpha-cycles.dcpi",
        "dcpi/v006-imiss.dcpi",
        "dcpi/alpha-cycles.dcpicat",
        "dtrace/ustack.stacks",
        "folded/two-columns.folded",
        "perf/two-processes.perf.txt",
        "pprof/burn.cpu.pb.gz",
    ]
    .iter()
    .map(|f| common::fixture(f))
    .collect();
    v.extend(common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2"));
    v.extend(common::shared_fixture("callgrind/internal_driver_testdata_pprof.cpu.callgrind"));
    v
}

#[test]
fn duckdb_and_pandas_read_every_table_with_the_documented_types_and_info_totals() {
    require_python_modules();
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, schema_json()).unwrap();
    for (n, input) in inputs().iter().enumerate() {
        let input = input.to_str().unwrap();
        let out = dir.path().join(format!("p{n}.tables"));
        let o = common::run(&["convert", input, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{input}: {}", common::stderr(&o));
        let info = common::run(&["info", "--json", input]);
        assert!(info.status.success(), "{input}: {}", common::stderr(&info));
        let info_path = dir.path().join(format!("p{n}.info.json"));
        std::fs::write(&info_path, &info.stdout).unwrap();
        let o = Command::new("python3")
            .arg(script("check.py"))
            .args([out.as_os_str(), schema.as_os_str(), info_path.as_os_str()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{input}: {}{}", common::stdout(&o), common::stderr(&o));
    }
}

#[test]
fn a_folder_duckdb_filtered_and_wrote_back_converts_to_callgrind_that_callgrind_annotate_reads() {
    require_python_modules();
    common::require("callgrind_annotate");
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all.tables");
    let input = common::fixture("dcfg/hello-world.dcfg.json");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", all.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let hot = dir.path().join("hot.tables");
    let o = Command::new("python3")
        .arg(script("filter.py"))
        .args([all.as_os_str(), hot.as_os_str()])
        .args(TABLES.iter().map(|t| t.0))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let kept: u64 = common::stdout(&o).trim().parse().expect("the kept instructions");
    let whole = cfghub::convert::load(all.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    let filtered = cfghub::convert::load(hot.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    assert!(filtered.processes[0].images[0].blocks.len() == whole.processes[0].images[0].blocks.len());
    assert!(filtered.processes[0].images[1].blocks.is_empty(), "image 1's blocks were filtered away");
    let callgrind = dir.path().join("callgrind.out.hot");
    let o = common::run(&["convert", hot.to_str().unwrap(), "-o", callgrind.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let annotated = crate::callgrind::annotate(&callgrind);
    assert_eq!(annotated.total, kept, "callgrind_annotate's total is what DuckDB kept");
    assert!(kept > 0 && kept < cfghub::analysis::counts::executed_instructions(&whole.processes[0]));
}
