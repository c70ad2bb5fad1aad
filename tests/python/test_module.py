"""The module's API on a file of every format it reads: what it reads, summarises, tables and
writes equals what the command-line tool does with the same file."""
import ast
import os
import signal
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import cfghub
from conftest import FIXTURES, ROOT, cli, cli_info, shared

# A file of every format cfghub reads, as (format, path).
EVERY_FORMAT = [
    ("dcfg", FIXTURES / "dcfg/hello-world.dcfg.json"),
    ("dcfg", FIXTURES / "dcfg/hello-world.dcfg.json.bz2"),
    ("dcfg-trace", FIXTURES / "dcfg-trace/small.trace.json"),
    ("callgrind", FIXTURES / "callgrind/callgrind.out.recursion-loops"),
    ("csi", FIXTURES / "csi/recursion-loops.debug_PT"),
    ("dcpi", FIXTURES / "dcpi/alpha-cycles.dcpi"),
    ("dcpicat", FIXTURES / "dcpi/alpha-cycles.dcpicat"),
    ("dtrace", FIXTURES / "dtrace/ustack.stacks"),
    ("firefox", FIXTURES / "firefox/burn.samply.json.gz"),
    ("perf", FIXTURES / "perf/two-processes.perf.txt"),
    ("perf-data", FIXTURES / "perf-data/two-events.perf.data"),
    ("pprof", FIXTURES / "pprof/burn.cpu.pb.gz"),
    ("folded", FIXTURES / "folded/austin.folded"),
    ("fdata", FIXTURES / "bolt/call_in_loop.fdata"),
    ("bolt-pa", FIXTURES / "bolt/call_in_loop.pa"),
    ("tables", FIXTURES / "tables/hello-world.tables"),
    ("cpuprofile", FIXTURES / "cpuprofile/small.cpuprofile"),
    ("chrome-trace", FIXTURES / "chrome-trace/burn.chrome-trace.json"),
    ("jfr", FIXTURES / "jfr/burn.jfr"),
    ("llvm-sample", FIXTURES / "llvm-sample/inlined-calls.prof"),
]
SHARED_FILES = [
    "dcfg/simple-loop.dcfg.json.bz2",
    "callgrind/internal_driver_testdata_pprof.cpu.callgrind",
    "folded/tests_data_flamegraph_fractional-samples_fractional.txt",
]


def ids(cases):
    return [f"{fmt}:{Path(p).name}" for fmt, p in cases]


@pytest.mark.parametrize("fmt,path", EVERY_FORMAT, ids=ids(EVERY_FORMAT))
def test_read_and_info_equal_the_command_lines(fmt, path):
    profile = cfghub.read(path)
    assert profile.format == fmt
    mine, theirs = profile.info(), cli_info(path)
    if fmt == "dcfg-trace":
        # `info` counts a trace's edges as its chunks declare them; a profile read for use
        # decodes them, as `convert` does.
        assert mine["processes"][0]["edges"] > 0 == theirs["processes"][0]["edges"]
        for info in (mine, theirs):
            del info["memory"]
            for process in info["processes"]:
                del process["edges"], process["edges_by_kind"]
    assert mine == theirs


@pytest.mark.parametrize("path", SHARED_FILES)
def test_real_world_files_read_as_the_command_line_reads_them(path):
    path = shared(path)
    assert cfghub.read(path).info() == cli_info(path)


def tables_equal(mine, folder):
    files = sorted(p.stem for p in Path(folder).glob("*.parquet"))
    assert sorted(mine) == files
    for name, table in mine.items():
        written = pq.read_table(Path(folder) / f"{name}.parquet")
        assert table.schema == written.schema, name
        assert table.equals(written), name


TABLED = [case for case in EVERY_FORMAT if case[0] != "tables"]


@pytest.mark.parametrize("fmt,path", TABLED, ids=ids(TABLED))
def test_tables_equal_the_files_the_command_line_writes(fmt, path, tmp_path):
    folder = tmp_path / "run.tables"
    cli("convert", path, "-o", folder)
    tables_equal(cfghub.read(path).tables(profile_id="run"), folder)


def test_tables_only_makes_the_tables_named():
    p = cfghub.read(FIXTURES / "dcfg/hello-world.dcfg.json")
    every = p.tables(profile_id="x")
    for name in every:
        assert p.tables(profile_id="x", only=[name]) == {name: every[name]}
    with pytest.raises(cfghub.UsageError) as e:
        p.tables(only=["no_such_table"])
    assert "no_such_table" in e.value.message and "samples" in e.value.message


def test_bytes_read_as_the_file_does_and_their_name_tells_the_format(tmp_path):
    path = FIXTURES / "pprof/burn.cpu.pb.gz"
    from_file = cfghub.read(path).tables(profile_id="x")
    for data in [path.read_bytes(), bytearray(path.read_bytes()), memoryview(path.read_bytes())]:
        from_bytes = cfghub.read(data, name="burn.cpu.pb.gz")
        assert from_bytes.name == "burn.cpu.pb.gz" and from_bytes.format == "pprof"
        assert from_bytes.tables(profile_id="x") == from_file
    # Folded stacks are told by name or by from_.
    text = (FIXTURES / "folded/austin.folded").read_bytes()
    assert cfghub.read(text, from_="folded").format == "folded"


def test_write_convert_and_merge_write_what_the_command_line_writes(tmp_path):
    pprof, folded = FIXTURES / "pprof/burn.cpu.pb.gz", FIXTURES / "folded/austin.folded"
    for out in ["a.folded", "a.callgrind", "a.speedscope.json", "a.fxprof.json"]:
        cfghub.read(pprof).write(tmp_path / f"py-{out}")
        cli("convert", pprof, "-o", tmp_path / f"cli-{out}")
        assert (tmp_path / f"py-{out}").read_bytes() == (tmp_path / f"cli-{out}").read_bytes(), out
    cfghub.convert(pprof, tmp_path / "py.svg", title="burn")
    cli("convert", pprof, "-o", tmp_path / "cli.svg", "--title", "burn")
    assert (tmp_path / "py.svg").read_bytes() == (tmp_path / "cli.svg").read_bytes()
    cfghub.merge([pprof, folded], tmp_path / "py.pb.gz", labels={"run": "1"})
    cli("merge", pprof, folded, "-o", tmp_path / "cli.pb.gz", "--label", "run=1")
    assert (tmp_path / "py.pb.gz").read_bytes() == (tmp_path / "cli.pb.gz").read_bytes()
    # A tables folder written with options, and read back.
    cfghub.read(pprof).write(tmp_path / "z.tables", compression="zstd")
    assert cfghub.read(tmp_path / "z.tables").info()["events"] == cli_info(pprof)["events"]


def test_labels_from_keywords_and_from_the_path_label_every_sample():
    path = FIXTURES / "pprof/burn.cpu.pb.gz"
    p = cfghub.read(path, labels={"service": "web"}, label_from_path="{kind}/{name}.cpu.pb.gz")
    labels = p.tables()["sample_labels"].to_pylist()
    samples = p.tables()["samples"].num_rows
    by_key = {}
    for row in labels:
        by_key.setdefault(row["key"], set()).add(row["value"])
    assert by_key == {"service": {"web"}, "kind": {"pprof"}, "name": {"burn"}}
    assert len(labels) == 3 * len({(r["process"], r["sample"]) for r in p.tables()["samples"].to_pylist()})
    assert samples > 0


def test_errors_are_exceptions_that_say_where_and_what(tmp_path):
    # A truncated pprof: the byte where it ends.
    data = (FIXTURES / "pprof/burn.cpu.pb.gz").read_bytes()
    import gzip

    raw = gzip.decompress(data)
    with pytest.raises(cfghub.InputError) as e:
        cfghub.read(raw[: len(raw) // 2], name="cut.pb", from_="pprof")
    assert e.value.file == "cut.pb" and e.value.byte is not None and str(e.value).startswith("cut.pb")
    # A DCFG with a broken row: the place in the document.
    with pytest.raises(cfghub.InputError) as e:
        cfghub.read(b'{"MAJOR_VERSION": 1, "PROCESSES": [}', name="bad.dcfg.json")
    assert e.value.path is not None and "PROCESSES" in e.value.path
    # A folded line without a count: its line.
    with pytest.raises(cfghub.InputError) as e:
        cfghub.read(b"main;f 1\nmain;g\n", name="bad.folded")
    assert e.value.line == 2
    with pytest.raises(cfghub.FileError) as e:
        cfghub.read(tmp_path / "missing.pb.gz")
    assert e.value.file == str(tmp_path / "missing.pb.gz")
    with pytest.raises(cfghub.UsageError) as e:
        cfghub.read(FIXTURES / "pprof/burn.cpu.pb.gz", from_="no-such-format")
    with pytest.raises(cfghub.UsageError) as e:
        cfghub.convert(FIXTURES / "pprof/burn.cpu.pb.gz", tmp_path / "x.folded", no_such_option=1)
    assert "--no-such-option" in e.value.message
    # Never an input overwritten.
    target = tmp_path / "in.folded"
    target.write_bytes(b"main 1\n")
    with pytest.raises(cfghub.UsageError):
        cfghub.read(target).write(target)
    assert target.read_bytes() == b"main 1\n"
    assert issubclass(cfghub.InputError, cfghub.Error) and issubclass(cfghub.Error, Exception)


def test_reading_lets_other_threads_run(tmp_path):
    # The reader waits on a FIFO that this thread fills: with the GIL held it would wait forever.
    fifo = tmp_path / "stacks.folded"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("p", cfghub.read(fifo)))

    def stuck(*_):
        raise AssertionError("cfghub.read held the GIL: the thread that feeds it never ran")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(30)
    try:
        reader.start()
        with open(fifo, "wb") as f:
            f.write(b"main;work 3\nmain;idle 1\n")
        reader.join()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert got["p"].info()["format"] == "folded"


def test_the_type_stubs_name_everything_the_module_has():
    stubs = ast.parse((ROOT / "python/cfghub/_cfghub.pyi").read_text())
    stubbed = {n.name for n in stubs.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {t.target.id for t in stubs.body if isinstance(t, ast.AnnAssign)}
    public = {n for n in cfghub.__all__}
    assert public == stubbed
    methods = {n.name for c in stubs.body if isinstance(c, ast.ClassDef) and c.name == "Profile" for n in c.body
               if isinstance(n, ast.FunctionDef)}
    assert methods == {n for n in dir(cfghub.Profile) if not n.startswith("_")}
    for name in cfghub.__all__:
        if callable(getattr(cfghub, name)):
            assert getattr(cfghub, name).__doc__, name


def test_formats_and_run_are_the_command_lines():
    names = {f["name"] for f in cfghub.formats()}
    assert {"pprof", "tables", "folded", "callgrind"} <= names
    assert cfghub.run(["validate", str(FIXTURES / "dcfg/hello-world.dcfg.json")]) == 0
