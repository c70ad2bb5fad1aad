#!/usr/bin/env python3
"""Cuts a Chrome trace-event JSON file to the events of one process, for a small fixture.

    chrome-trace-cut.py TRACE.json PID OUT.json

Keeps, of process PID, its metadata events (`M`: process and thread names), its sampled CPU
profile (`P`: `Profile` and `ProfileChunk`) and its complete and begin/end duration events
(`X`, `B`, `E`), unchanged and in their order; leaves out every other process, the instant,
flow and async events, and the file's top-level `metadata` (the machine's description).
Writes one event a line, as Chromium does.
"""
import json
import sys

trace_path, pid, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(trace_path) as f:
    trace = json.load(f)
events = trace["traceEvents"] if isinstance(trace, dict) else trace
kept = [e for e in events if e.get("pid") == pid and e.get("ph") in ("M", "P", "X", "B", "E")]
with open(out_path, "w") as out:
    out.write('{"traceEvents":[\n')
    out.write(",\n".join(json.dumps(e, separators=(",", ":"), sort_keys=True) for e in kept))
    out.write("\n]}\n")
