"""Filters a cfghub tables folder with DuckDB the way a user keeps a hot part of a profile: only
the blocks of image 0, the edges between what is kept, and the routines and loops of image 0;
every table is written back by DuckDB itself (`COPY ... TO ... (FORMAT parquet)`, its own types
and default compression). Prints the instructions the kept blocks executed.
Usage: filter.py SOURCE DESTINATION TABLE..."""
import os
import sys

import duckdb

src, dst, tables = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(dst, exist_ok=True)
con = duckdb.connect()
for t in tables:
    con.execute(f"create view {t} as select * from '{src}/{t}.parquet'")
kept_edges = (
    "select * from edges where (source_kind <> 'block' or source_image = 0)"
    " and (target_kind <> 'block' or target_image = 0)"
)
queries = {
    "blocks": "select * from blocks where image = 0",
    "block_counts": "select * from block_counts where image = 0",
    "edges": kept_edges,
    "edge_counts": f"select * from edge_counts where (process, edge) in (select (process, edge) from ({kept_edges}))",
    "edge_costs": f"select * from edge_costs where (process, edge) in (select (process, edge) from ({kept_edges}))",
    "call_contexts": "select * from call_contexts where (process, edge) in"
    f" (select (process, edge) from ({kept_edges}))",
    "call_context_costs": "select * from call_context_costs where (process, edge) in"
    f" (select (process, edge) from ({kept_edges}))",
    "routines": "select * from routines where image = 0",
    "routine_blocks": "select * from routine_blocks where routine in (select routine from routines where image = 0)",
    "loops": "select * from loops where routine in (select routine from routines where image = 0)",
    "loop_blocks": "select * from loop_blocks where loop in"
    " (select loop from loops where routine in (select routine from routines where image = 0))",
}
for t in tables:
    query = queries.get(t, f"select * from {t}")
    con.execute(f"copy ({query}) to '{dst}/{t}.parquet' (format parquet)")
print(con.execute(f"select sum(count * instrs) from '{dst}/blocks.parquet'").fetchone()[0])
