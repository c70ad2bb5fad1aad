#!/usr/bin/env bash
# Times whole cfghub commands on large generated inputs and prints ratios against the commands
# users would otherwise run. Usage: scripts/bench.sh [section...]   (default: every section)
# Sections: dcfg, plus one per scripts/bench-<name>.sh. Inputs are generated once into
# target/bench-data. Best of 3 runs; peak memory from GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=target/bench-data
mkdir -p "$DATA"
cargo build --release --quiet --bin cfghub --example load
CFGHUB=target/release/cfghub
LOAD=target/release/examples/load
export CFGHUB LOAD DATA

# best_of N CMD...: prints "seconds max_rss_kb" of the fastest of N runs.
best_of() {
  local n=$1; shift
  local best="" rss=""
  for _ in $(seq "$n"); do
    local out tmp
    tmp=$(mktemp)
    /usr/bin/time -f "%e %M" -o "$tmp" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; rm -f "$tmp"; return 1; }
    out=$(tail -1 "$tmp"); rm -f "$tmp"
    local t=${out% *} m=${out#* }
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; rss=$m; fi
  done
  echo "$best $rss"
}
export -f best_of

section_dcfg() {
  echo "== DCFG reading"
  local pretty=$DATA/synth-pin-style.dcfg.json compact=$DATA/synth-compact.dcfg.json
  [ -s "$pretty" ] || $CFGHUB synth --pretty --images 4 --routines 14000 --blocks 24 --threads 2 --steps 28000000 -o "$pretty"
  [ -s "$compact" ] || $CFGHUB synth --images 4 --routines 22000 --blocks 24 --threads 2 --steps 44000000 -o "$compact"
  [ -s "$pretty.bz2" ] || bzip2 -k -9 "$pretty"
  for f in "$pretty" "$compact"; do
    local size; size=$(stat -c %s "$f")
    read -r t m < <(best_of 3 "$LOAD" "$f")
    awk -v f="$(basename "$f")" -v s="$size" -v t="$t" -v m="$m" 'BEGIN{
      printf "%-28s %7.1f MB  read %.2f s = %5.0f MB/s (target >= 250)  peak %6.0f MB = %.2fx input (target <= 2)\n",
             f, s/1e6, t, s/1e6/t, m/1024, m*1024/s }'
    read -r tp _ < <(best_of 1 python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$f")
    awk -v t="$t" -v tp="$tp" 'BEGIN{ printf "%-28s python3 json.load %.2f s: cfghub is %.1fx faster\n", "", tp, tp/t }'
  done
  read -r tb _ < <(best_of 3 bzip2 -dc "$pretty.bz2")
  read -r tc _ < <(best_of 3 "$LOAD" "$pretty.bz2")
  awk -v tb="$tb" -v tc="$tc" 'BEGIN{ printf "%-28s bzip2 -dc %.2f s, cfghub read %.2f s: ratio %.3f (target <= 1.15)\n", "synth-pin-style.dcfg.json.bz2", tb, tc, tc/tb }'
}

sections=("$@")
if [ ${#sections[@]} -eq 0 ]; then
  sections=(dcfg)
  for s in scripts/bench-*.sh; do [ -e "$s" ] && sections+=("$(basename "$s" .sh | sed 's/^bench-//')"); done
fi
for s in "${sections[@]}"; do
  if [ "$s" = dcfg ]; then section_dcfg; else bash "scripts/bench-$s.sh"; fi
done
