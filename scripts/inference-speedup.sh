#!/usr/bin/env bash
# What the sample profiles cfghub writes do to the program clang-19 optimizes with them
# (`-fprofile-sample-use`, AutoFDO), on the programs of fixtures/inference, as
# docs/inference.md publishes it:
#
#   scripts/inference-speedup.sh [RUNS]      # RUNS timed runs of each build (default 21)
#
# Per program: the profiling build (`clang-19 -O2 -gdwarf-4 -fdebug-info-for-profiling`: the
# line table and discriminators the profile is written from; DWARF 4 for Valgrind 3.19),
# sampled with `perf record -e cpu-clock -F 20000` on the measured input (no branch records),
# and run under Valgrind (`--dump-instr=yes --collect-jumps=yes`) on a smaller one. Three
# sample profiles:
# - exact: from Valgrind's counts (`cfghub convert callgrind.out --symbols BIN`);
# - inferred: from the samples with `--infer` (block counts that conserve flow);
# - plain: from the samples alone (each sampled address counted once at its line).
# Each is scored against the exact one with `llvm-profdata-19 overlap --sample` (whole program
# similarity). The program is rebuilt with each (`-fprofile-sample-use=P`, the same flags
# besides; clang must not warn) and without one (the baseline), and each build is timed on the
# measured input, the builds in turn RUNS times, pinned to one core (`taskset -c 1` where there
# is one): CPU time (user + sys, `perf stat -e task-clock`). A profile's gain is the
# baseline's time over the build's, less 1, from the fastest run of each (the programs are
# deterministic: what other work on the machine adds only slows a run), then in parentheses
# from the medians; the ratio is the inferred (plain) profile's gain over the exact one's (-
# where the exact profile does not pay).
# Prints a Markdown table: times in seconds, fastest (median).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
cargo build --release --quiet
cfghub=$PWD/target/release/cfghub
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
programs=(bytecode sort hash parse orders)
declare -A sampled=([bytecode]=400000 [sort]=8000000 [hash]=1000000 [parse]=6000000 [orders]=1000000)
declare -A exact=([bytecode]=100000 [sort]=1000000 [hash]=100000 [parse]=1000000 [orders]=100000)
flags=(-O2 -gdwarf-4 -fdebug-info-for-profiling)
pin=()
if [ "$(nproc)" -gt 1 ] && command -v taskset >/dev/null; then pin=(taskset -c 1); fi
similarity() { # EXACT OTHER -> whole program similarity, 0 to 1
  llvm-profdata-19 overlap --sample "$1" "$2" | sed -n 's/.*Whole program profile similarity: *\([0-9.]*\)%.*/\1/p' \
    | awk '{printf "%.3f", $1 / 100}'
}
echo "| program | baseline s | exact: gain | inferred: gain | plain: gain | inferred / exact gain | plain / exact gain | similarity to exact: inferred | plain |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in "${programs[@]}"; do
  src=fixtures/inference/$p.c
  bin=$work/$p
  clang-19 "${flags[@]}" -o "$bin" "$src"
  perf record -q -e cpu-clock -F 20000 -o "$work/$p.perf.data" "$bin" "${sampled[$p]}" >/dev/null 2>&1
  valgrind -q --tool=callgrind --dump-instr=yes --collect-jumps=yes --callgrind-out-file="$work/$p.cg" \
    "$bin" "${exact[$p]}" >/dev/null
  "$cfghub" -q convert "$work/$p.cg" --symbols "$bin" -o "$work/$p.exact.prof"
  "$cfghub" -q convert "$work/$p.perf.data" --symbols "$bin" --infer -o "$work/$p.inferred.prof"
  "$cfghub" -q convert "$work/$p.perf.data" --symbols "$bin" -o "$work/$p.plain.prof"
  builds=(base exact inferred plain)
  clang-19 "${flags[@]}" -o "$work/$p.base" "$src"
  for b in exact inferred plain; do
    clang-19 "${flags[@]}" -Wall -fprofile-sample-use="$work/$p.$b.prof" -o "$work/$p.$b" "$src" 2>"$work/$p.$b.warn"
    if [ -s "$work/$p.$b.warn" ]; then
      echo "clang warns on $p's $b profile:" >&2
      cat "$work/$p.$b.warn" >&2
    fi
  done
  for _ in $(seq "$runs"); do
    for b in "${builds[@]}"; do
      perf stat -x, -e task-clock -o "$work/stat" "${pin[@]}" "$work/$p.$b" "${sampled[$p]}" >/dev/null
      awk -F, '/task-clock/ {print $1 / 1000}' "$work/stat" >>"$work/$p.$b.times"
    done
  done
  python3 - "$work/$p" "$p" "$(similarity "$work/$p.exact.prof" "$work/$p.inferred.prof")" \
    "$(similarity "$work/$p.exact.prof" "$work/$p.plain.prof")" <<'EOF'
import statistics, sys
stem, name, sim_inferred, sim_plain = sys.argv[1:]
times = {b: [float(l) for l in open(f"{stem}.{b}.times")] for b in ("base", "exact", "inferred", "plain")}
best = {b: min(t) for b, t in times.items()}
median = {b: statistics.median(t) for b, t in times.items()}
row = [name, "%.3f (%.3f)" % (best["base"], median["base"])]
gain = {b: best["base"] / best[b] - 1 for b in times}
gain_median = {b: median["base"] / median[b] - 1 for b in times}
for b in ("exact", "inferred", "plain"):
    row.append("%+.1f%% (%+.1f%%)" % (100 * gain[b], 100 * gain_median[b]))
def ratio(g, b):  # "-" where the exact profile does not pay
    return "%.2f" % (g[b] / g["exact"]) if g["exact"] > 0 else "-"
for b in ("inferred", "plain"):
    row.append("%s (%s)" % (ratio(gain, b), ratio(gain_median, b)))
row += [sim_inferred, sim_plain]
print("| " + " | ".join(row) + " |")
EOF
done
