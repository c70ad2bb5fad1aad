"""The Spark job of examples/spark/fleet.py in local[2] mode on 200 generated profiles of four
formats: its fleet tables read back into cfghub equal `cfghub merge` of the same files to the
unit on every event, and its answers (top functions, totals per service) equal those of the
merge."""
import json
import subprocess
import sys
from collections import Counter

import pyarrow.compute as pc

import cfghub
from conftest import ROOT, cli, cli_path

FORMATS = "folded,pb.gz,fxprof.json,stacks"


def stacks_by_event(profile):
    """Each event's value per call path (a tuple of names) and per path label, from a
    profile's tables."""
    t = profile.tables()
    names = dict(zip(t["frames"]["frame"].to_pylist(), t["frames"]["name"].to_pylist()))
    nodes = t["stack_nodes"].to_pylist()
    parent = {n["node"]: n["parent"] for n in nodes}
    frame = {n["node"]: n["frame"] for n in nodes}

    def path(node):
        out = []
        while node is not None:
            out.append(names[frame[node]])
            node = parent[node]
        return tuple(reversed(out))

    events = Counter()
    for row in t["samples"].to_pylist():
        if row["value"]:
            events[(row["event"], path(row["node"]) if row["node"] is not None else ())] += row["value"]
    return events


def test_the_spark_job_equals_cfghub_merge(tmp_path):
    inputs, out = tmp_path / "profiles", tmp_path / "fleet.tables"
    subprocess.run(
        [sys.executable, ROOT / "scripts/fleet-profiles.py", inputs, "200", "2000", FORMATS],
        check=True,
        env={"CFGHUB": cli_path(), "PATH": "/usr/bin:/bin"},
    )
    files = sorted(p for p in inputs.rglob("*") if p.is_file())
    assert len(files) == 200 and len({p.name.split(".", 1)[1] for p in files}) == 4
    job = subprocess.run(
        [sys.executable, ROOT / "examples/spark/fleet.py", inputs, out, "--master", "local[2]", "--json",
         "--label-from-path", "{service}/{host}"],
        capture_output=True,
        text=True,
    )
    assert job.returncode == 0, job.stderr
    answers = json.loads(job.stdout.strip().splitlines()[-1])

    merged = tmp_path / "merged.pb.gz"
    cli("merge", *files, "-o", merged)
    spark = cfghub.read(out, from_="tables")
    expected = stacks_by_event(cfghub.read(merged))
    assert stacks_by_event(spark) == expected
    assert sum(expected.values()) == 200 * 2000

    # The job's answers: self value per function, and the total per service.
    self_values = Counter()
    for (event, path), value in expected.items():
        self_values[(event, path[-1])] += value
    top = sorted(self_values.items(), key=lambda kv: (-kv[1], kv[0][1]))[:20]
    assert [[e, n, v] for (e, n), v in top] == answers["top"]
    per_service = Counter()
    for f in files:
        samples = cfghub.read(f).tables()["samples"]
        for event in set(samples["event"].to_pylist()):
            chosen = samples.filter(pc.equal(samples["event"], event))
            per_service[(f.parent.name, event)] += pc.sum(chosen["value"]).as_py()
    assert sorted([s, e, v] for (s, e), v in per_service.items()) == answers["per_service"]
    # The fleet is partitioned by service, Hive-style.
    assert sorted(p.name for p in (out / "samples").iterdir() if p.is_dir()) == [
        "service=api", "service=batch", "service=db", "service=web"]
