#!/usr/bin/env python3
"""Writes a synthetic Chrome trace of about SIZE_MB megabytes of JSON, as Chrome's tracing
writes one: metadata naming processes and threads, nested duration events (`X`, and `B`/`E`
pairs) on THREADS threads with args of the shapes Chrome gives them, and one V8 CPU profile
(`Profile` and `ProfileChunk` events: nodes, samples and time deltas).

    scripts/gen-chrome-trace.py OUT.json SIZE_MB [THREADS]
"""
import json
import random
import sys


def main():
    out, size_mb = sys.argv[1], float(sys.argv[2])
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    rng = random.Random(7)
    target = int(size_mb * 1e6)
    names = [f"Task{i}" for i in range(300)] + ["v8.run", "FunctionCall", "Layout", "Paint", "ParseHTML"]
    with open(out, "w") as f:
        f.write('{"traceEvents":[\n')
        f.write(json.dumps({"args": {"name": "Renderer"}, "cat": "__metadata", "name": "process_name",
                            "ph": "M", "pid": 1, "tid": 0, "ts": 0}))
        for t in range(threads):
            f.write(",\n" + json.dumps({"args": {"name": f"Thread{t}"}, "cat": "__metadata",
                                        "name": "thread_name", "ph": "M", "pid": 1, "tid": 10 + t, "ts": 0}))
        # A V8 profile on the first thread: a tree of 2,000 nodes, samples every 100 µs.
        f.write(",\n" + json.dumps({"args": {"data": {"startTime": 1000}}, "cat": "disabled-by-default-v8.cpu_profiler",
                                    "id": "0x1", "name": "Profile", "ph": "P", "pid": 1, "tid": 10, "ts": 1000}))
        nodes = [{"id": 1, "callFrame": {"functionName": "(root)", "scriptId": "0", "url": "", "lineNumber": -1, "columnNumber": -1}}]
        for i in range(2, 2001):
            nodes.append({"id": i, "parent": rng.randrange(1, i),
                          "callFrame": {"functionName": f"fn{i % 500}", "scriptId": "7", "url": "https://example.com/app.js",
                                        "lineNumber": i, "columnNumber": 4}})
        first = True
        written = f.tell()
        ts = 1000
        while written < target:
            chunk = nodes if first else []
            first = False
            samples = [rng.randrange(1, 2001) for _ in range(500)]
            f.write(",\n" + json.dumps({"args": {"data": {"cpuProfile": {"nodes": chunk, "samples": samples},
                                                          "timeDeltas": [100] * 500}},
                                        "cat": "disabled-by-default-v8.cpu_profiler", "id": "0x1",
                                        "name": "ProfileChunk", "ph": "P", "pid": 1, "tid": 11, "ts": ts}))
            # Each thread's tasks one after another, a compile nested in each.
            for t in range(10, 10 + threads):
                start = ts
                for _ in range(400 // threads):
                    dur = rng.randrange(50, 120)
                    f.write(",\n" + json.dumps({"args": {"data": {"frame": "F1", "url": "https://example.com"}},
                                                "cat": "devtools.timeline", "dur": dur, "name": rng.choice(names),
                                                "ph": "X", "pid": 1, "tid": t, "ts": start, "tdur": 3, "tts": 9}))
                    f.write(",\n" + json.dumps({"args": {}, "cat": "v8", "name": "v8.compile", "ph": "B",
                                                "pid": 1, "tid": t, "ts": start + 1}))
                    f.write(",\n" + json.dumps({"args": {}, "cat": "v8", "name": "v8.compile", "ph": "E",
                                                "pid": 1, "tid": t, "ts": start + 1 + rng.randrange(1, 40)}))
                    start += dur + rng.randrange(0, 5)
            ts += 50000
            written = f.tell()
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
