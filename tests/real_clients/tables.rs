//! Tables: DuckDB and pandas (pyarrow) read every table cfghub writes for every fixture format,
//! with the documented types, and their sums agree with `cfghub info --json`; a folder DuckDB
//! filtered and wrote back itself reads into cfghub and converts to Callgrind that
//! `callgrind_annotate` accepts with the total DuckDB computed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use cfghub::formats::tables::TABLES;

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
    assert!(kept > 0 && kept < cfghub::analysis::executions::executed_instructions(&whole.processes[0]));
}

/// Runs SQL over the tables with DuckDB (in `dir`) and returns its rows as text, one per line.
fn duckdb(dir: &Path, sql: &str) -> String {
    let script = format!(
        "import duckdb\nfor row in duckdb.sql('''{sql}''').fetchall(): print('|'.join(str(v) for v in row))"
    );
    let o = Command::new("python3").current_dir(dir).args(["-c", &script]).output().unwrap();
    assert!(o.status.success(), "{sql}\n{}", common::stderr(&o));
    common::stdout(&o)
}

/// Integer columns are stored as differences from row to row (DELTA_BINARY_PACKED): an image
/// loaded past 2^63, beside one loaded low, gives addresses whose differences overflow 64 bits
/// both ways. DuckDB reads them as written, and cfghub reads them back to the same DCFG.
#[test]
fn addresses_past_two_to_the_63_read_back_exactly() {
    require_python_modules();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(common::fixture("dcfg/hello-world.dcfg.json")).unwrap();
    let high = 0xffff_ffff_fff0_0000u64;
    assert!(text.contains("\"0x400000\""));
    let input = dir.path().join("high.dcfg.json");
    std::fs::write(&input, text.replace("\"0x400000\"", &format!("\"{high:#x}\""))).unwrap();
    let tables = dir.path().join("high.tables");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", tables.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let profile = cfghub::convert::load(input.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    let mut expected: Vec<String> = profile.processes[0]
        .images
        .iter()
        .enumerate()
        .flat_map(|(i, image)| {
            image
                .blocks
                .iter()
                .enumerate()
                .map(move |(b, block)| format!("{i}|{b}|{}", image.load_addr.wrapping_add(block.offset)))
        })
        .collect();
    expected.sort();
    assert!(expected.iter().any(|l| l.starts_with("0|")) && expected.len() > 1);
    let got = duckdb(dir.path(), "select image, block, address from 'high.tables/blocks.parquet' b");
    let mut got: Vec<String> = got.lines().map(str::to_string).collect();
    got.sort();
    assert_eq!(got, expected);
    let direct = dir.path().join("direct.dcfg.json");
    let back = dir.path().join("back.dcfg.json");
    for (from, to) in [(&input, &direct), (&tables, &back)] {
        let o = common::run(&["convert", from.to_str().unwrap(), "-o", to.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
    assert_eq!(std::fs::read_to_string(&back).unwrap(), std::fs::read_to_string(&direct).unwrap());
}

#[test]
fn the_user_guides_queries_over_many_runs_agree_with_each_run() {
    require_python_modules();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("runs")).unwrap();
    let mut per_run = 0u64;
    for (run, input) in [("a", "dcfg/hello-world.dcfg.json"), ("b", "dcfg/two-processes.dcfg.json")] {
        let input = common::fixture(input);
        let out = dir.path().join(format!("runs/{run}.tables"));
        let o = common::run(&["convert", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let p = cfghub::convert::load(input.to_str().unwrap(), None, &Default::default()).unwrap().profile;
        per_run += p.processes.iter().map(cfghub::analysis::executions::executed_instructions).sum::<u64>();
    }
    let hot = duckdb(
        dir.path(),
        "select r.name, count(distinct b.profile_id) as runs, sum(b.count * b.instrs) as instrs
         from 'runs/*.tables/blocks.parquet' b
         join 'runs/*.tables/routines.parquet' r using (profile_id, routine)
         group by 1 order by 3 desc",
    );
    let total: u64 = hot.lines().map(|l| l.rsplit('|').next().unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(total, per_run, "{hot}");
    let loops = duckdb(
        dir.path(),
        "select r.name, b.address as head, l.profile_id, l.iterations
         from 'runs/*.tables/loops.parquet' l
         join 'runs/*.tables/routines.parquet' r using (profile_id, routine)
         join 'runs/*.tables/blocks.parquet' b
           on b.profile_id = l.profile_id and b.process = r.process and b.image = r.image and b.block = l.head
         order by r.name, head, l.profile_id",
    );
    assert!(loops.lines().any(|l| l.contains("|a|")), "{loops}");
    let single = duckdb(
        dir.path(),
        "select r.name, l.head, l.depth, l.iterations, l.entries
         from 'runs/a.tables/loops.parquet' l join 'runs/a.tables/routines.parquet' r using (routine)
         order by l.iterations desc limit 20",
    );
    assert!(!single.trim().is_empty());
}

#[test]
fn dcpi_samples_per_block_from_a_merged_profile() {
    require_python_modules();
    let Some(dcfg) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let graph = cfghub::convert::load(dcfg.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    let process = &graph.processes[0];
    let (exe_index, exe) = process
        .images
        .iter()
        .enumerate()
        .find(|(_, i)| graph.image_name(i).ends_with("/simple_loop"))
        .unwrap();
    // One block per start address: k + 1 samples at the first instruction of block k.
    let mut samples = std::collections::BTreeMap::new();
    for (k, b) in exe.blocks.iter().enumerate() {
        if b.size > 0 && exe.blocks.iter().filter(|o| o.offset == b.offset).count() == 1 {
            samples.insert(b.offset, k as u64 + 1);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let cycles = dir.path().join("cycles.dcpi");
    std::fs::write(&cycles, common::dcpi_bytes(&graph.image_name(exe), "cycles", exe.load_addr, &samples))
        .unwrap();
    let merged = dir.path().join("merged.tables");
    let o = common::run(&[
        "merge",
        dcfg.to_str().unwrap(),
        cycles.to_str().unwrap(),
        "--address-step",
        "1",
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let rows = duckdb(
        dir.path(),
        "select b.image, b.block, b.address, b.count, sum(c.value) as samples
         from 'merged.tables/costs.parquet' c
         join 'merged.tables/blocks.parquet' b
           on c.process = b.process and c.image = b.image and c.offset >= b.offset and c.offset < b.offset + b.size
         where c.event = 'cycles'
         group by all order by samples desc",
    );
    let mut seen = 0;
    for line in rows.lines() {
        let f: Vec<&str> = line.split('|').collect();
        let (image, block, got) =
            (f[0].parse::<usize>().unwrap(), f[1].parse::<usize>().unwrap(), f[4].parse::<u64>().unwrap());
        assert_eq!(image, exe_index, "{rows}");
        assert_eq!(Some(&got), samples.get(&exe.blocks[block].offset), "block {block}: {rows}");
        seen += 1;
    }
    assert_eq!(seen, samples.len(), "{rows}");
}

/// A table of several row groups (65,536 rows each, the last one shorter): every row carries
/// the profile id, which DuckDB and pyarrow read from the dictionary-encoded column, with
/// statistics (min = max = the id, no nulls) in every row group; cfghub reads the folder back
/// to the same DCFG.
#[test]
fn profile_id_is_on_every_row_of_every_row_group() {
    require_python_modules();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("many.dcfg.json");
    let o = common::run(&[
        "synth",
        "-q",
        "--images",
        "1",
        "--routines",
        "12000",
        "--blocks",
        "24",
        "--steps",
        "3000000",
        "-o",
        input.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let tables = dir.path().join("run-7.tables");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", tables.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let rows = duckdb(
        dir.path(),
        "select count(*), count(profile_id), count(distinct profile_id), min(profile_id) from 'run-7.tables/blocks.parquet' b",
    );
    let fields: Vec<&str> = rows.trim().split('|').collect();
    let blocks: u64 = fields[0].parse().unwrap();
    assert!(blocks > 1 << 16, "{blocks} blocks fill one row group only");
    assert_eq!(&fields[1..], [fields[0], "1", "run-7"]);
    let groups = duckdb(
        dir.path(),
        "select row_group_id, stats_min_value, stats_max_value, stats_null_count, num_values, encodings
         from parquet_metadata('run-7.tables/blocks.parquet') where path_in_schema = 'profile_id' order by 1",
    );
    let groups: Vec<&str> = groups.lines().collect();
    assert_eq!(groups.len() as u64, blocks.div_ceil(1 << 16), "{groups:?}");
    let mut total = 0;
    for (g, line) in groups.iter().enumerate() {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f[..4], [g.to_string().as_str(), "run-7", "run-7", "0"], "{line}");
        assert!(f[5].contains("RLE_DICTIONARY"), "{line}");
        total += f[4].parse::<u64>().unwrap();
    }
    assert_eq!(total, blocks);
    let o = Command::new("python3")
        .args([
            "-c",
            "import pyarrow.parquet as pq, sys; t = pq.read_table(sys.argv[1]); c = t.column('profile_id'); print(t.num_rows, c.null_count, c.unique().to_pylist())",
            tables.join("blocks.parquet").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(common::stdout(&o).trim(), format!("{blocks} 0 ['run-7']"));
    let direct = dir.path().join("direct.dcfg.json");
    let back = dir.path().join("back.dcfg.json");
    for (from, to) in [(&input, &direct), (&tables, &back)] {
        let o = common::run(&["convert", from.to_str().unwrap(), "-o", to.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&direct).unwrap());
}

/// Tables DuckDB wrote back with zstd, gzip or lz4 (the codecs fleets of tables are kept in)
/// read as the snappy ones cfghub wrote; `--compression` writes each, and DuckDB and pyarrow
/// read them with the codec asked for.
#[test]
fn tables_in_every_codec_duckdb_and_pyarrow_write_read_back_alike() {
    require_python_modules();
    let dir = tempfile::tempdir().unwrap();
    let input = common::fixture("dcfg/hello-world.dcfg.json");
    let snappy = dir.path().join("snappy.tables");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", snappy.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let dcfg = |folder: &Path| {
        let out = folder.with_extension("dcfg.json");
        let o = common::run(&["convert", folder.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", folder.display(), common::stderr(&o));
        std::fs::read_to_string(out).unwrap()
    };
    let expected = dcfg(&snappy);
    for codec in ["zstd", "gzip", "lz4"] {
        // DuckDB rewrites every table with the codec.
        let theirs = dir.path().join(format!("duckdb-{codec}.tables"));
        std::fs::create_dir(&theirs).unwrap();
        for (table, _) in TABLES {
            duckdb(
                dir.path(),
                &format!(
                    "copy (select * from 'snappy.tables/{table}.parquet') to '{}/{table}.parquet' (format parquet, compression {codec})",
                    theirs.display()
                ),
            );
        }
        assert_eq!(dcfg(&theirs), expected, "tables DuckDB wrote with {codec}");
        // cfghub writes the codec asked for.
        let ours = dir.path().join(format!("cfghub-{codec}.tables"));
        let o = common::run(&[
            "convert",
            input.to_str().unwrap(),
            "--compression",
            codec,
            "-o",
            ours.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let stated = duckdb(
            dir.path(),
            &format!(
                "select distinct compression from parquet_metadata('{}/blocks.parquet') where path_in_schema <> 'profile_id' order by 1",
                ours.display()
            ),
        );
        let named = if codec == "lz4" { "LZ4_RAW".to_string() } else { codec.to_uppercase() };
        assert_eq!(stated.trim(), named, "{codec}");
        assert_eq!(dcfg(&ours), expected, "tables cfghub wrote with {codec}");
    }
}

/// A valgrind profile's routines come without loops (Callgrind states none): the tables hold
/// the loops `info` derives and lists, so that the user guide's "loops by iteration count"
/// query finds them, with their routines.
#[test]
fn the_loops_info_shows_of_a_valgrind_profile_are_in_the_tables() {
    require_python_modules();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let source = common::fixture("callgrind/callgrind.out.recursion-loops");
    let o = common::run(&["convert", source.to_str().unwrap(), "-o", d.join("app.tables").to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let info = common::stdout(&common::run(&["info", "--top", "1000", source.to_str().unwrap()]));
    // The images table's `loops` column, summed.
    let loops_in_info: u64 = info
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("image "))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum();
    assert!(loops_in_info > 0, "{info}");
    let listed = duckdb(
        d,
        "select count(*) from 'app.tables/loops.parquet' l join 'app.tables/routines.parquet' r using (routine)",
    );
    assert_eq!(listed.trim(), loops_in_info.to_string(), "{info}");
    // The guide's query, verbatim but for the folder.
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/user-guide.md")).unwrap();
    let start = guide.find("select r.name, l.head, l.depth, l.iterations").expect("the guide's loop query");
    let query = &guide[start..start + guide[start..].find(';').unwrap()];
    let rows = duckdb(d, query);
    assert!(rows.lines().count() >= 1 && rows.contains("main"), "{rows}");
}

/// Runs one DuckDB statement (a `copy ... to`) in `dir`.
fn duckdb_execute(dir: &Path, sql: &str) {
    let o = Command::new("python3")
        .current_dir(dir)
        .args(["-c", "import duckdb, sys; duckdb.connect().execute(sys.argv[1])", sql])
        .output()
        .unwrap();
    assert!(o.status.success(), "{sql}: {}", common::stderr(&o));
}

/// Leaf sums of a folded file: each stack's value to its last frame.
fn self_by_leaf(folded: &str) -> Vec<(String, i64)> {
    let mut sums: std::collections::BTreeMap<String, i64> = Default::default();
    for line in folded.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (stack, value) = line.rsplit_once(' ').unwrap();
        *sums.entry(stack.rsplit(';').next().unwrap().to_string()).or_default() +=
            value.parse::<i64>().unwrap();
    }
    let mut v: Vec<(String, i64)> = sums.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(20);
    v
}

/// Names with values, in order.
type Ranked = Vec<(String, i64)>;

/// What `fleet.py ENGINE FLEET` answers: the top 20 functions by self value, the total per
/// service.
fn fleet_answers(engine: &str, fleet: &Path) -> (Ranked, Ranked) {
    let o = Command::new("python3")
        .arg(script("fleet.py"))
        .arg(engine)
        .arg(fleet)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "fleet.py {engine}: {}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let top = v["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_i64().unwrap()))
        .collect();
    let per =
        v["per_service"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_i64().unwrap())).collect();
    (top, per)
}

/// A fleet: generated profiles of four services, each added to one tables folder partitioned
/// by the service its path names. DuckDB and Spark (local mode) read the glob and give the
/// top 20 functions by self value and the totals per service that `cfghub merge` of the
/// inputs gives; the aggregate DuckDB writes of the samples reads back into cfghub, whose pprof
/// shows the `go tool pprof -top` of the merge's; and a profile added again replaces its files.
#[test]
fn a_fleet_of_tables_answers_duckdb_and_spark_as_cfghub_merge_and_its_aggregate_reads_back() {
    require_python_modules();
    common::require("go");
    common::require("java");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/fleet-profiles.py"))
        .args([d.join("in").to_str().unwrap(), "12", "3000"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let services = ["api", "batch", "db", "web"];
    let mut inputs: Vec<String> = Vec::new();
    for s in services {
        let mut files: Vec<String> = std::fs::read_dir(d.join("in").join(s))
            .unwrap()
            .map(|e| e.unwrap().path().to_str().unwrap().to_string())
            .collect();
        files.sort();
        inputs.extend(files);
    }
    let fleet = d.join("fleet.tables");
    for (k, input) in inputs.iter().enumerate() {
        let mut args = vec![
            "-q",
            "convert",
            input,
            "--label-from-path",
            "{service}/{host}.folded",
            "-o",
            fleet.to_str().unwrap(),
        ];
        if k == 0 {
            args.extend(["--partition-by", "service"]);
        }
        let o = common::run(&args);
        assert!(o.status.success(), "{input}: {}", common::stderr(&o));
    }
    // Added again: its files replaced, not doubled.
    let o = common::run(&[
        "-q",
        "convert",
        &inputs[0],
        "--label-from-path",
        "{service}/{host}.folded",
        "-o",
        fleet.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));

    let merged = d.join("merged.folded");
    let mut args = vec!["-q", "merge"];
    args.extend(inputs.iter().map(String::as_str));
    args.extend(["-o", merged.to_str().unwrap()]);
    assert!(common::run(&args).status.success());
    let want_top = self_by_leaf(&std::fs::read_to_string(&merged).unwrap());
    let mut want_per = Vec::new();
    for s in services {
        let out = d.join(format!("{s}.folded"));
        let mut args = vec!["-q", "merge"];
        args.extend(inputs.iter().filter(|i| i.contains(&format!("/{s}/"))).map(String::as_str));
        args.extend(["-o", out.to_str().unwrap()]);
        assert!(common::run(&args).status.success());
        let total: i64 = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<i64>().ok())
            .sum();
        want_per.push((s.to_string(), total));
    }
    assert_eq!(want_per.iter().map(|p| p.1).sum::<i64>(), 12 * 3000);
    for engine in ["duckdb", "spark"] {
        let (top, per) = fleet_answers(engine, &fleet);
        assert_eq!(top, want_top, "{engine}: top 20 by self value");
        assert_eq!(per, want_per, "{engine}: totals per service");
    }

    // The fleet holds its tree once: every call path in one file of stack_nodes.
    let counts = duckdb(
        d,
        "select count(*), count(distinct node) from read_parquet('fleet.tables/stack_nodes/**/*.parquet')",
    );
    let (rows, distinct) = counts.trim().split_once('|').unwrap();
    assert_eq!(rows, distinct, "call paths written once");

    // The whole fleet reads back as the merge; DuckDB's aggregate of it, too.
    let back = d.join("back.folded");
    assert!(common::run(&["-q", "convert", fleet.to_str().unwrap(), "-o", back.to_str().unwrap()])
        .status
        .success());
    assert_eq!(self_by_leaf(&std::fs::read_to_string(&back).unwrap()), want_top);
    std::fs::create_dir(d.join("top.tables")).unwrap();
    let t = |name: &str| format!("read_parquet('fleet.tables/{name}/**/*.parquet')");
    for sql in [
        format!("copy (select node, event, sum(value) as value from {} group by all) to 'top.tables/samples.parquet'", t("samples")),
        format!("copy (select distinct process, node, parent, frame from {}) to 'top.tables/stack_nodes.parquet'", t("stack_nodes")),
        format!("copy (select distinct frame, name from {}) to 'top.tables/frames.parquet'", t("frames")),
    ] {
        duckdb_execute(d, &sql);
    }
    let (ours, theirs) = (d.join("top.pb.gz"), d.join("merged.pb.gz"));
    assert!(common::run(&[
        "-q",
        "convert",
        d.join("top.tables").to_str().unwrap(),
        "-o",
        ours.to_str().unwrap()
    ])
    .status
    .success());
    let mut args = vec!["-q", "merge"];
    args.extend(inputs.iter().map(String::as_str));
    args.extend(["-o", theirs.to_str().unwrap()]);
    assert!(common::run(&args).status.success());
    assert_eq!(
        crate::pprof::top_flat(d, &ours, 0, "count"),
        crate::pprof::top_flat(d, &theirs, 0, "count"),
        "go tool pprof -top of DuckDB's aggregate and of cfghub merge"
    );

    // An aggregate DuckDB partitions by service, as Spark writes its results: the partitions
    // are the samples' labels read back, which `go tool pprof -tags` totals per service.
    std::fs::create_dir_all(d.join("by_service.tables/stack_nodes")).unwrap();
    std::fs::create_dir_all(d.join("by_service.tables/frames")).unwrap();
    let hive =
        |name: &str| format!("read_parquet('fleet.tables/{name}/**/*.parquet', hive_partitioning = true)");
    for sql in [
        format!(
            "copy (select service, node, event, sum(value)::BIGINT as value from {} group by all) \
             to 'by_service.tables/samples' (format parquet, partition_by (service))",
            hive("samples")
        ),
        format!("copy (select * from {}) to 'by_service.tables/stack_nodes/all.parquet'", t("stack_nodes")),
        format!("copy (select * from {}) to 'by_service.tables/frames/all.parquet'", t("frames")),
    ] {
        duckdb_execute(d, &sql);
    }
    let labelled = d.join("by_service.pb.gz");
    let o = common::run(&[
        "-q",
        "convert",
        d.join("by_service.tables").to_str().unwrap(),
        "-o",
        labelled.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let tags = crate::pprof::tags(d, &labelled, 0);
    let block = tags.split("service:").nth(1).expect("a service label").split("\n\n").next().unwrap();
    let mut per: Ranked = block
        .lines()
        .skip(1)
        .map(|l| {
            let (value, rest) = l.trim().split_once(' ').unwrap();
            (rest.rsplit(": ").next().unwrap().to_string(), value.parse::<f64>().unwrap() as i64)
        })
        .collect();
    per.sort();
    assert_eq!(per, want_per, "{tags}");
}
