#!/usr/bin/env bash
# The Firefox Profiler's processed format, timing whole reads and writes against what a user
# would otherwise run:
#  1. reading a 100 MB processed profile (samply's layout, gzip-compressed and plain) against
#     Python merely parsing its JSON (`json.load(gzip.open(...))`; target: cfghub >= 3x faster);
#  2. writing 10^6 samples (target < 1 s): examples/write prints the write's own wall and CPU time.
# Wall times on a shared machine vary with its load: CPU seconds (user+sys) are printed too.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --bin cfghub --example load --example write
LOAD=target/release/examples/load
WRITE=target/release/examples/write

source scripts/bench-lib.sh

big=$DATA/firefox-100MB.json
million=$DATA/pprof-1M-samples.pb
[ -s "$big" ] || python3 scripts/gen-firefox.py "$big" 105
[ -s "$big.gz" ] || gzip -6 -k "$big"
[ -s "$million" ] || python3 scripts/gen-pprof.py "$million" 0 5000 1000000

echo "== firefox"
for f in "$big.gz" "$big"; do
  size=$(stat -c %s "$f")
  read -r t c _ < <(best 3 "$LOAD" "$f")
  if [ "${f%.gz}" != "$f" ]; then
    read -r tp cp _ < <(best 1 python3 -c 'import json,gzip,sys; json.load(gzip.open(sys.argv[1]))' "$f")
  else
    read -r tp cp _ < <(best 1 python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f")
  fi
  awk -v f="$(basename "$f")" -v s="$size" -v t="$t" -v c="$c" -v tp="$tp" -v cp="$cp" 'BEGIN{
    printf "%-26s %6.1f MB  cfghub reads %.2f s (cpu %.2f); python3 json.load %.2f s (cpu %.2f): %.1fx (target >= 3x)\n",
      f, s/1e6, t, c, tp, cp, tp/t }'
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for o in out.fxprof.json out.fxprof.json.gz; do
  "$WRITE" "$million" "$out/$o" | sed 's/^/  /'
done
