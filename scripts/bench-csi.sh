#!/usr/bin/env bash
# CSI: reading `.debug_PT` text (the 28 real texts of ../shared/fixtures/csi concatenated 1000
# and 10000 times) against `wc -l` and python's line splitting over the same bytes, and
# Ball-Larus numbering of a routine of 10^4 blocks (criterion, benches/csi.rs).
# Usage: scripts/bench-csi.sh   (called by scripts/bench.sh; builds what it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --bin cfghub --example load
LOAD=target/release/examples/load
SHARED=${CFGHUB_SHARED:-../shared}
echo "== CSI .debug_PT reading"
if ls "$SHARED"/fixtures/csi/*-PT.expected >/dev/null 2>&1; then
  for times in 1000 10000; do
    f=$DATA/csi-pt-x$times.debug_PT
    if [ ! -s "$f" ]; then
      one=$(mktemp)
      cat "$SHARED"/fixtures/csi/*-PT.expected > "$one"
      for _ in $(seq "$times"); do cat "$one"; done > "$f"
      rm -f "$one"
    fi
    size=$(stat -c %s "$f")
    best=""
    for _ in 1 2 3; do
      t=$("$LOAD" "$f" | sed -n 's/.* in \([0-9.]*\) s = .*/\1/p')
      if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
    done
    tw=$( { /usr/bin/time -f "%e" wc -l "$f" >/dev/null; } 2>&1 | tail -1)
    tp=$( { /usr/bin/time -f "%e" python3 -c "import sys; sum(1 for l in open(sys.argv[1],'rb') if l.startswith(b'#'))" "$f"; } 2>&1 | tail -1)
    awk -v f="$(basename "$f")" -v s="$size" -v t="$best" -v tw="$tw" -v tp="$tp" 'BEGIN{
      printf "%-28s %6.1f MB  read %.3f s = %5.0f MB/s (target >= 200)   wc -l %.2f s, python line loop %.2f s\n",
             f, s/1e6, t, s/1e6/t, tw, tp }'
  done
else
  echo "skipping: $SHARED/fixtures/csi is absent"
fi
echo "== Ball-Larus numbering (criterion; target < 10 ms for 10^4 blocks)"
cargo bench --quiet --bench csi -- --warm-up-time 1 --measurement-time 3 2>&1 \
  | grep -E '^(ball_larus|csi)/|time:' | paste - - | sed 's/  */ /g'
