#!/usr/bin/env bash
# Chrome traces: reading a 100 MB trace-event file (`cfghub info`) against python3's json.load of
# it (target: at least 3x faster), with peak memory against the file (target: under 2x; 3x for
# its gzip form).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --bin cfghub
CFGHUB=target/release/cfghub
source scripts/bench-lib.sh

trace=$DATA/chrome-trace-100MB.json
[ -s "$trace" ] || python3 scripts/gen-chrome-trace.py "$trace" 100
[ -s "$trace.gz" ] || gzip -6 -k "$trace"
echo "== Chrome trace"
size=$(stat -c %s "$trace")
read -r tc cc mc < <(best 3 "$CFGHUB" info "$trace")
read -r tz cz mz < <(best 3 "$CFGHUB" info "$trace.gz")
read -r tp cp mp < <(best 1 python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$trace")
awk -v s="$size" -v tc="$tc" -v cc="$cc" -v mc="$mc" -v tz="$tz" -v mz="$mz" -v tp="$tp" -v mp="$mp" 'BEGIN{
  printf "%-28s %.0f MB: cfghub info %.2f s (cpu %.2f, peak %.0f MB = %.2fx the file; target < 2), python3 json.load %.2f s (peak %.0f MB): %.1fx faster (target >= 3)\n", "chrome-trace-100MB.json", s/1e6, tc, cc, mc, mc*1e6/s, tp, mp, tp/tc
  printf "%-28s gzip: cfghub info %.2f s (peak %.0f MB = %.2fx the uncompressed file; target < 3)\n", "", tz, mz, mz*1e6/s }'
