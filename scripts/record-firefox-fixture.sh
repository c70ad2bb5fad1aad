#!/usr/bin/env bash
# Re-records fixtures/firefox/: builds burn.c, samples it with perf (cpu-clock, frame-pointer
# call stacks) and converts perf.data with samply into the Firefox Profiler's processed format,
# as a user of samply would on a machine where `samply record` is not allowed
# (perf_event_paranoid above 1). Needs gcc, linux-perf and samply (`cargo install --locked samply`).
#
#   scripts/record-firefox-fixture.sh            # writes fixtures/firefox/burn and burn.samply.json.gz
set -euo pipefail
cd "$(dirname "$0")/../fixtures/firefox"
command -v samply >/dev/null || { echo "samply not found: cargo install --locked samply" >&2; exit 1; }
# -O1 keeps the call structure; frame pointers let perf unwind; DWARF 4 suits every reader.
gcc -O1 -g -gdwarf-4 -fno-omit-frame-pointer -o burn burn.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf record -F 1000 -g -e cpu-clock -o "$tmp/perf.data" "$PWD/burn" 100000000 >/dev/null
samply import "$tmp/perf.data" --save-only -o burn.samply.json.gz
ls -l burn burn.samply.json.gz
