#!/usr/bin/env bash
# How close block and edge counts inferred from plain samples come to the exact counts, on three
# programs of fixtures/inference (clang-19 -O2), as docs/inference.md publishes them:
#
#   scripts/inference-accuracy.sh [RUNS]      # RUNS recordings per program (default 3)
#
# Per program: `perf record -e cpu-clock -F 20000` (no branch records) for about a second,
# and Valgrind (`--dump-instr=yes --collect-jumps=yes`, a smaller input, the same code) for the
# truth. Three estimates are scored against the truth with `cfghub overlap` on the binary's
# own blocks (BOLT's), over the functions holding 90% of the truth's executed instructions:
# - plain: the samples per block (per estimated cycle of a run), no edges;
# - BOLT: `llvm-bolt -aggregate-only -nl`, then BOLT's own estimate of the edge counts
#   (`--print-estimate-edge-counts`, read by scripts/bolt_estimate_to_fdata.py);
# - cfghub: `--infer`.
# Prints a Markdown table: block overlap / edge overlap, and blocks that conserve flow.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
cargo build --release --quiet
cfghub=$PWD/target/release/cfghub
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A sampled=([bytecode]=400000 [sort]=8000000 [hash]=400000)
declare -A exact=([bytecode]=100000 [sort]=1000000 [hash]=100000)
score() { # TRUTH OTHER [ARGS...] -> "block/edge balanced"
  "$cfghub" -q overlap "$1" "$2" --json "${@:3}" | python3 -c '
import json, sys
o = json.load(sys.stdin)
edges = "-" if o["edges"] is None else "%.3f" % o["edges"]
b = o["balanced"][1]
print("%.3f / %s | %s" % (o["blocks"], edges, "-" if b is None else "%d of %d" % tuple(b)))'
}
echo "| program | run | plain samples | BOLT -nl estimate | BOLT balanced | cfghub --infer | cfghub balanced |"
echo "|---|---|---|---|---|---|---|"
for p in bytecode sort hash; do
  bin=$work/$p
  clang-19 -O2 -gdwarf-4 -Wl,--emit-relocs -o "$bin" fixtures/inference/$p.c
  valgrind -q --tool=callgrind --dump-instr=yes --collect-jumps=yes --callgrind-out-file="$work/$p.cg" "$bin" "${exact[$p]}" >/dev/null
  for r in $(seq 1 "$runs"); do
    data=$work/$p.$r.perf.data
    perf record -q -e cpu-clock -F 20000 -o "$data" "$bin" "${sampled[$p]}" >/dev/null 2>&1
    plain=$(score "$work/$p.cg" "$data" --symbols "$bin" | cut -d'|' -f1)
    llvm-bolt-19 "$bin" -p "$data" -aggregate-only -nl -o "$work/$p.nl.fdata" >/dev/null 2>&1
    llvm-bolt-19 "$bin" -o "$work/$p.bolt" -data "$work/$p.nl.fdata" -print-cfg --print-estimate-edge-counts 2>&1 \
      | python3 scripts/bolt_estimate_to_fdata.py >"$work/$p.estimate.fdata"
    if [ -s "$work/$p.estimate.fdata" ]; then
      bolt=$(score "$work/$p.cg" "$work/$p.estimate.fdata" --symbols "$bin")
    else
      bolt="no profile | -" # BOLT leaves the function without counts
    fi
    inferred=$(score "$work/$p.cg" "$data" --symbols "$bin" --infer)
    echo "| $p | $r | $plain | ${bolt%%|*} | ${bolt##*|} | ${inferred%%|*} | ${inferred##*|} |"
  done
done
