"""Reads every table of a cfghub tables folder with DuckDB and with pandas (pyarrow), checks the
column types against the documented ones, and the totals of blocks and costs against
`cfghub info --json`. Usage: check.py FOLDER SCHEMA.json INFO.json"""
import json
import sys

import duckdb
import pandas as pd
import pyarrow.parquet as pq

folder, schema_path, info_path = sys.argv[1:4]
schema = json.load(open(schema_path))
info = json.load(open(info_path))
con = duckdb.connect()
ARROW = {"UBIGINT": "uint64", "UINTEGER": "uint32", "BIGINT": "int64", "DOUBLE": "double",
         "BOOLEAN": "bool", "VARCHAR": "string"}
rows = {}
for table, columns in schema.items():
    path = f"{folder}/{table}.parquet"
    described = [(r[0], r[1]) for r in con.execute(f"describe select * from '{path}'").fetchall()]
    assert described == [tuple(c) for c in columns], (table, described, columns)
    rows[table] = con.execute(f"select count(*) from '{path}'").fetchone()[0]
    arrow = pq.read_schema(path)
    frame = pd.read_parquet(path, dtype_backend="pyarrow")
    assert len(frame) == rows[table], (table, len(frame), rows[table])
    for name, sql in columns:
        assert str(arrow.field(name).type) == ARROW[sql], (table, name, arrow.field(name).type, sql)
        dtype = str(frame[name].dtype)
        assert dtype in (ARROW[sql] + "[pyarrow]", "large_" + ARROW[sql] + "[pyarrow]"), (table, name, dtype)

for p, process in enumerate(info["processes"]):
    executed = con.execute(
        f"select coalesce(sum(count * instrs), 0) from '{folder}/blocks.parquet' where process = {p}"
    ).fetchone()[0]
    assert int(executed) == process["executed_instructions"], (p, executed, process["executed_instructions"])
    want = {}
    for image in process.get("costs_by_image", []):
        for event, value in image["costs"].items():
            want[event] = want.get(event, 0) + value
    got = {
        event: int(total)
        for event, total in con.execute(
            f"select event, sum(value) from '{folder}/costs.parquet' where process = {p} group by event"
        ).fetchall()
    }
    want = {e: v for e, v in want.items() if v}
    got = {e: v for e, v in got.items() if v}
    assert got == want, (p, got, want)
print(json.dumps(rows))
