#!/usr/bin/env bash
# DCFG-trace decoding benchmarks, timing whole commands with /usr/bin/time -v:
#  1. throughput on one core: `cfghub trace -j 1 stats` on a generated trace of EDGES edges
#     (target: >= 100 million edges/s);
#  2. scaling: the same with -j 2 (target: >= 1.7x the one-core rate);
#  3. memory: `cfghub trace stats --dcfg` (every edge checked against the DCFG) on a generated
#     trace of 10^9 edges (target: peak resident memory <= 64 MB).
# The traces repeat one cycle of a synthetic walk with repeat groups over dictionary entries
# (`cfghub trace generate --looped`), so even 10^9 edges take a few kilobytes on disk.
# Rates are given against wall-clock time (best of RUNS) and against user CPU time; on a
# loaded machine only the CPU figure says what one core does.
# Usage: scripts/bench-dcfg-trace.sh [RUNS] [EDGES]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
EDGES=${2:-200000000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cargo build --release --quiet
CFGHUB=target/release/cfghub

# Runs a command RUNS times; prints "best_wall_s best_user_s max_rss_kb".
measure() {
    local best_wall= best_user= rss=0
    for _ in $(seq "$RUNS"); do
        local out wall user kb
        out=$( { /usr/bin/time -v "$@" >/dev/null; } 2>&1 )
        wall=$(echo "$out" | awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}')
        user=$(echo "$out" | awk -F': ' '/User time/ {print $2}')
        kb=$(echo "$out" | awk -F': ' '/Maximum resident set size/ {print $2}')
        if [ -z "$best_wall" ] || awk "BEGIN{exit !($wall < $best_wall)}"; then best_wall=$wall; fi
        if [ -z "$best_user" ] || awk "BEGIN{exit !($user < $best_user)}"; then best_user=$user; fi
        if [ "$kb" -gt "$rss" ]; then rss=$kb; fi
    done
    echo "$best_wall $best_user $rss"
}

half=$((EDGES / 2))
$CFGHUB trace generate --looped --edges "$half" --threads 2 --chunk-edges 2000000 \
    --dcfg-out "$WORK/app.dcfg.json" --trace-out "$WORK/app.trace.json"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "trace of $EDGES edges: $(stat -c %s "$WORK/app.trace.json") bytes"

read -r w1 u1 m1 < <(measure $CFGHUB trace -j 1 stats "$WORK/app.trace.json")
read -r w2 u2 m2 < <(measure $CFGHUB trace -j 2 stats "$WORK/app.trace.json")
awk -v e="$EDGES" -v w1="$w1" -v u1="$u1" -v w2="$w2" -v u2="$u2" 'BEGIN {
    printf "== 1. one core:  %.2f s wall (%.0f M edges/s), %.2f s user (%.0f M edges/s per CPU second)\n", w1, e/w1/1e6, u1, e/u1/1e6;
    printf "== 2. two cores: %.2f s wall (%.0f M edges/s), speed-up %.2fx wall; %.2f s user (CPU work %.2fx of one core: the rest is parallel)\n", w2, e/w2/1e6, w1/w2, u2, u2/u1;
}'
echo "   peak memory: $m1 KB (-j 1), $m2 KB (-j 2)"

# How the two-thread run splits its CPU time between threads (from /proc, polled until it
# exits): on a machine busy with other work, wall-clock speed-up is bounded by the CPU share
# the scheduler grants, but an even split shows the decoding itself runs in parallel.
$CFGHUB trace -j 2 stats "$WORK/app.trace.json" >/dev/null &
pid=$!
declare -A ticks
while kill -0 "$pid" 2>/dev/null; do
    for f in /proc/"$pid"/task/*/stat; do
        read -r -a st < "$f" 2>/dev/null || continue
        ticks[${st[0]}]=$(( st[13] + st[14] ))
    done
    sleep 0.05
done
wait "$pid" || true
echo "   CPU ticks per thread (-j 2): $(for t in "${!ticks[@]}"; do printf '%s ' "${ticks[$t]}"; done)"

$CFGHUB trace generate --looped --edges 500000000 --threads 2 --chunk-edges 10000000 \
    --dcfg-out "$WORK/giga.dcfg.json.bz2" --trace-out "$WORK/giga.trace.json.bz2"
read -r wg ug mg < <(RUNS=1 measure $CFGHUB trace stats "$WORK/giga.trace.json.bz2" --dcfg "$WORK/giga.dcfg.json.bz2")
echo "== 3. 10^9 edges checked against the DCFG: $(stat -c %s "$WORK/giga.trace.json.bz2") bytes on disk, $wg s wall, $ug s user, peak memory $mg KB"
