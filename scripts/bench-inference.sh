#!/usr/bin/env bash
# What --infer costs: a perf.data of plain samples (no branch records) converted to BOLT's
# fdata with and without --infer, and `cfghub overlap` of the recording with and without
# inference, timed as whole commands in interleaved rounds (best and median wall-clock seconds,
# peak RSS). Target: --infer at most 2x the conversion without it.
# Without a file, one is recorded: cfghub itself (a release build, copied so that its code
# stays as recorded) converting a synthetic DCFG of 300,000 blocks over and over for about
# 60 s, `perf record -e cpu-clock -F 40000` (about 100 MB).
# Usage: scripts/bench-inference.sh [PERF_DATA BINARY [RUNS]]
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
RUNS=${3:-3}
cargo build --release --quiet --bin cfghub
CFGHUB=$PWD/target/release/cfghub
input=${1:-$DATA/inference.perf.data}
binary=${2:-$DATA/inference-cfghub}
if [ ! -f "$input" ]; then
  cp "$CFGHUB" "$binary"
  "$binary" synth -q --images 4 --routines 2500 --blocks 30 --steps 200000 -o "$DATA/inference.dcfg.json"
  perf record -q -e cpu-clock -F 40000 -o "$input" -- timeout 60 sh -c \
    "while :; do '$binary' convert -q '$DATA/inference.dcfg.json' -o '$DATA/inference.out.callgrind'; done" || true
fi
ls -l "$input" | awk '{printf "input: %s, %.1f MB\n", $NF, $5 / 1e6}'
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
names=("convert -o x.fdata" "convert --infer -o x.fdata" "info" "info --infer")
cmds=(
  "'$CFGHUB' convert -q '$input' --symbols '$binary' -o '$out/a.fdata'"
  "'$CFGHUB' convert -q '$input' --symbols '$binary' --infer -o '$out/b.fdata'"
  "'$CFGHUB' info -q '$input' --symbols '$binary' >/dev/null"
  "'$CFGHUB' info -q '$input' --symbols '$binary' --infer >/dev/null"
)
declare -A times
for r in $(seq 1 "$RUNS"); do
  for k in "${!cmds[@]}"; do
    t=$( { /usr/bin/time -f "%e %M" sh -c "${cmds[$k]}" >/dev/null; } 2>&1 | tail -1)
    times[$k]+="$t;"
  done
done
for k in "${!cmds[@]}"; do
  echo "${times[$k]}" | tr ';' '\n' | grep . | sort -n | awk -v name="${names[$k]}" \
    '{w[NR]=$1; if ($2>m) m=$2} END {printf "%-28s best %.2f s  median %.2f s  peak %.0f MB\n", name, w[1], w[int((NR+1)/2)], m/1024}'
done
