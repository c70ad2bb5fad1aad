#!/usr/bin/env bash
# Remakes example/: the program app.c, its DCFG and perf's samples of it as DCPI files, the
# inputs the user guide's workflows run on as written. Needs gcc, valgrind, perf (`perf record
# -e cpu-clock` is a software event: no PMU needed) and a cfghub build (CFGHUB, default
# target/release/cfghub). The program is built and run in /tmp/app, so that the DCFG and the
# samples name the same binary, /tmp/app/app.
set -euo pipefail
cd "$(dirname "$0")/.."
cfghub=$(realpath "${CFGHUB:-target/release/cfghub}")
example=$(realpath example)
work=/tmp/app
rm -rf "$work" && mkdir -p "$work"
cp example/app.c "$work/"
cd "$work"
gcc -O1 -g -o app app.c
# Every executed block and jump: the DCFG (instructions executed per block, edges with counts).
valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --callgrind-out-file=callgrind.out.app ./app 300000
"$cfghub" convert callgrind.out.app -o "$example/app.dcfg.json.bz2"
# Samples at instruction addresses, two software events: one DCPI file per event, of app alone.
perf record -q -e cpu-clock -e task-clock -o perf.data ./app 30000000
for event in cpu-clock task-clock; do
  "$cfghub" convert perf.data --image app --event "$event" -o "$example/$event.dcpi"
done
ls -l "$example"
