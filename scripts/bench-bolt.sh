#!/usr/bin/env bash
# BOLT and LLVM sample profiles: the cost of writing them from the Pin-style DCFG that
# scripts/bench.sh generates (same generator, same file: 232 MB), against `cfghub info` on it (target:
# at most 1.30x), and the worked example of docs/user-guide.md ("PGO and BOLT from any
# profile"): its program's run time before and after llvm-bolt with the profile cfghub wrote,
# and after clang -fprofile-sample-use. Best of 3 runs.
# Usage: scripts/bench-bolt.sh   (builds the release binary; needs valgrind, clang-19, bolt-19)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --bin cfghub
bin=target/release/cfghub
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

best() {
  local best="" t
  for _ in 1 2 3; do
    /usr/bin/time -f "%e" -o "$dir/time" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
    t=$(tail -1 "$dir/time")
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
  done
  echo "$best"
}

echo "== BOLT and sample profiles from the Pin-style DCFG"
pretty=$DATA/synth-pin-style.dcfg.json
[ -s "$pretty" ] || $bin synth --pretty --images 4 --routines 14000 --blocks 24 --threads 2 --steps 28000000 -o "$pretty"
size=$(stat -c %s "$pretty")
info=$(best "$bin" info -q "$pretty")
awk -v s="$size" -v t="$info" 'BEGIN{ printf "%-44s %.2f s (%.1f MB)\n", "cfghub info", t, s/1e6 }'
for out in x.fdata x.pa x.rawprof; do
  t=$(best "$bin" convert -q "$pretty" -o "$dir/$out")
  awk -v o="$out" -v t="$t" -v i="$info" 'BEGIN{ printf "%-44s %.2f s = %.2fx info (target <= 1.30)\n", "cfghub convert -o " o, t, t/i }'
done
wc -l "$dir/x.fdata" "$dir/x.pa" "$dir/x.rawprof" | head -3

echo "== the worked example: fixtures/bolt/branchy.c"
n=${N:-30000000}
clang-19 -O2 -g -gdwarf-4 -fno-jump-tables -no-pie -Wl,--emit-relocs fixtures/bolt/branchy.c -o "$dir/branchy"
valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --callgrind-out-file="$dir/callgrind.out" \
  "$dir/branchy" 1000000 >/dev/null 2>&1
$bin convert -q "$dir/callgrind.out" -o "$dir/branchy.fdata"
$bin convert -q "$dir/callgrind.out" -o "$dir/branchy.prof"
llvm-bolt-19 "$dir/branchy" -o "$dir/branchy.bolt" -data="$dir/branchy.fdata" -reorder-blocks=ext-tsp \
  -reorder-functions=hfsort -split-functions -split-all-cold -dyno-stats >"$dir/bolt.log" 2>&1
grep -E "non-empty execution profile|taken branches|executed forward branches" "$dir/bolt.log" | head -4
clang-19 -O2 -g -fno-jump-tables -no-pie -fprofile-sample-use="$dir/branchy.prof" fixtures/bolt/branchy.c -o "$dir/branchy.pgo"
[ "$("$dir/branchy" "$n")" = "$("$dir/branchy.bolt" "$n")" ] || { echo "BOLT changed the output" >&2; exit 1; }
for b in branchy branchy.bolt branchy.pgo; do
  t=$(best "$dir/$b" "$n")
  printf "%-44s %s s\n" "$b $n" "$t"
done
