#!/usr/bin/env bash
# Benchmarks of stack profiles, timing whole commands:
#  1. reading folded stacks (target: >= 200 MB/s): `cfghub info` on a large folded file;
#  2. DTrace -> SVG flame graph on FlameGraph's example profile, against inferno's own
#     `inferno-collapse-dtrace | inferno-flamegraph` (target: within 1.1x);
#  3. one very deep stack (200,000 and 1,000,000 frames) to Callgrind: the time per frame stays
#     flat (linear in the depth).
# Usage: scripts/bench-stacks.sh [RUNS]   (installs inferno's binaries with cargo if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-15}
SHARED=${CFGHUB_SHARED:-../shared}
DTRACE="$SHARED/fixtures/dtrace/FlameGraph__example-dtrace-stacks.txt"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cargo build --release --quiet
CFGHUB=target/release/cfghub
if ! command -v inferno-flamegraph >/dev/null || ! command -v inferno-collapse-dtrace >/dev/null; then
    cargo install inferno --locked --quiet
fi

# Best (minimum) wall-clock seconds of one run of a shell command: RUNS measurements, each of
# REPS runs in a row (GNU time counts in hundredths of a second).
best() {
    local cmd=$1 reps=${2:-1} best= t
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -o "$WORK/t" -f %e bash -c "for _ in \$(seq $reps); do $cmd; done" >/dev/null 2>&1
        t=$(tail -1 "$WORK/t" | awk -v r="$reps" '{print $1 / r}')
        if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
    done
    echo "$best"
}

echo "== 1. reading folded stacks"
# Realistic lines: the collapse of the DTrace example (or a synthetic trunk when the shared
# fixtures are absent), copied under distinct roots until the file is ~256 MB.
python3 - "$WORK/big.folded" "$SHARED/fixtures/dtrace/inferno__results__dtrace-example.txt" <<'PY'
import os, sys
out, src = sys.argv[1], sys.argv[2]
if os.path.exists(src):
    lines = [l for l in open(src).read().splitlines() if l.strip()]
else:
    lines = [";".join(f"mod{d % 7}`func_{(i * 31 + d) % 997}" for d in range(8 + i % 30)) + f" {i % 100 + 1}"
             for i in range(1000)]
with open(out, "w") as f:
    size, copy = 0, 0
    while size < 256 * 1024 * 1024:
        block = "".join(f"root{copy};{l}\n" for l in lines)
        f.write(block)
        size += len(block)
        copy += 1
PY
BYTES=$(stat -c %s "$WORK/big.folded")
/usr/bin/time -v "$CFGHUB" -q info --from folded "$WORK/big.folded" >/dev/null 2>"$WORK/time.txt"
SECS=$(best "$CFGHUB -q info --from folded $WORK/big.folded")
RSS=$(awk -F: '/Maximum resident/ {gsub(/ /, "", $2); print $2}' "$WORK/time.txt")
awk -v b="$BYTES" -v s="$SECS" -v r="$RSS" 'BEGIN {
    printf "cfghub info on %.0f MB of folded stacks: %.3f s = %.0f MB/s (max RSS %.0f MB)\n", b/1e6, s, b/1e6/s, r/1024 }'

echo "== 3. one deep stack -> Callgrind"
for depth in 200000 1000000; do
    python3 -c "import sys; print(';'.join(f'f{i}' for i in range($depth)), 7)" > "$WORK/deep.folded"
    SECS=$(best "$CFGHUB -q convert $WORK/deep.folded -o $WORK/deep.callgrind")
    awk -v d="$depth" -v s="$SECS" 'BEGIN { printf "%7d frames: %.3f s (%.2f us per frame)\n", d, s, s * 1e6 / d }'
done

echo "== 2. DTrace -> SVG flame graph"
if [ ! -f "$DTRACE" ]; then
    echo "skipped: $DTRACE is absent"
    exit 0
fi
# Both commands run through `bash -c` (the pipeline needs a shell). With perf: the mean of
# 10*RUNS runs, alternated in rounds so that load on a shared machine hits both alike;
# otherwise the best of RUNS measurements of 20 runs.
OURS_CMD="$CFGHUB -q convert $DTRACE --from dtrace -o $WORK/ours.svg"
THEIRS_CMD="inferno-collapse-dtrace $DTRACE | inferno-flamegraph > $WORK/theirs.svg"
if command -v perf >/dev/null && perf stat -r 1 true >/dev/null 2>&1; then
    mean() { perf stat -r "$2" bash -c "$1" 2>&1 >/dev/null | awk '/seconds time elapsed/ {print $1}'; }
    OURS=0 THEIRS=0
    for _ in $(seq "$RUNS"); do
        OURS=$(awk -v a="$OURS" -v b="$(mean "$OURS_CMD" 10)" 'BEGIN {print a + b}')
        THEIRS=$(awk -v a="$THEIRS" -v b="$(mean "$THEIRS_CMD" 10)" 'BEGIN {print a + b}')
    done
    OURS=$(awk -v a="$OURS" -v n="$RUNS" 'BEGIN {print a / n}')
    THEIRS=$(awk -v a="$THEIRS" -v n="$RUNS" 'BEGIN {print a / n}')
    HOW="mean of $((RUNS * 10)) runs (perf stat)"
else
    OURS=$(best "$OURS_CMD" 20)
    THEIRS=$(best "$THEIRS_CMD" 20)
    HOW="best of $RUNS x 20 runs"
fi
awk -v o="$OURS" -v t="$THEIRS" -v how="$HOW" 'BEGIN {
    printf "cfghub convert --from dtrace -o app.svg:           %.4f s (%s)\n", o, how
    printf "inferno-collapse-dtrace | inferno-flamegraph:      %.4f s\n", t
    printf "ratio: %.2fx (target <= 1.10x)\n", o / t }'
