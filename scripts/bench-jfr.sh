#!/usr/bin/env bash
# A Java Flight Recorder recording to folded stacks, timed as whole commands side by side with
# the JDK's own reader:
#   cfghub convert rec.jfr --event cpu -o x.folded
#   jfr print --json rec.jfr > /dev/null       (what a script over the JDK's tool starts from;
#                                               its output, many times the file, is not kept)
# Targets: cfghub at least 10x faster than `jfr print --json`; its peak memory under 2x the
# file. RUNS rounds (default 3), each command once a round; the best wall-clock and CPU
# (user + system) seconds and the largest peak RSS are shown.
# Without a file, one of at least 100 MB is made: fixtures/jfr/Burn.java recorded for 10 s
# (settings=profile, TLAB events on), its chunk repeated (a recording is chunks one after
# another: `jfr summary` counts them all) until the file passes 100 MB.
# Usage: scripts/bench-jfr.sh [RECORDING [RUNS]]   (NO_BUILD=1: use target/release/cfghub as
# built; CFGHUB=path: time that build instead)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
input=${1:-$DATA/burn-100mb.jfr}
RUNS=${2:-3}
[ -n "${NO_BUILD:-}${CFGHUB:-}" ] || cargo build --release --quiet --bin cfghub
CFGHUB=${CFGHUB:-$PWD/target/release/cfghub}
if [ ! -f "$input" ]; then
  javac -d "$DATA" fixtures/jfr/Burn.java
  java "-XX:StartFlightRecording=filename=$DATA/burn-10s.jfr,settings=profile,+jdk.ObjectAllocationInNewTLAB#enabled=true" \
    -cp "$DATA" Burn 10 >/dev/null 2>&1
  : > "$input"
  while [ "$(stat -c %s "$input")" -lt 104857600 ]; do cat "$DATA/burn-10s.jfr" >> "$input"; done
fi
size=$(stat -c %s "$input")
echo "input: $input, $((size / 1048576)) MiB, $(jfr summary "$input" | awk '/Chunks:/ {print $2}') chunks," \
  "$(jfr summary "$input" | awk '$1 == "jdk.ExecutionSample" {print $2}') execution samples"

names=("cfghub convert rec.jfr --event cpu -o x.folded" "jfr print --json rec.jfr > /dev/null")
commands=("$CFGHUB convert -q '$input' --event cpu -o $DATA/jfr.folded" "jfr print --json '$input' > /dev/null")
declare -A wall cpu rss
for _ in $(seq "$RUNS"); do
  for i in "${!commands[@]}"; do
    tmp=$(mktemp)
    /usr/bin/time -f "%e %U %S %M" -o "$tmp" bash -c "${commands[$i]}"
    read -r t u s m < <(tail -1 "$tmp")
    rm -f "$tmp"
    c=$(awk -v u="$u" -v s="$s" 'BEGIN{print u + s}')
    if [ -z "${wall[$i]:-}" ] || awk "BEGIN{exit !($t < ${wall[$i]})}"; then wall[$i]=$t; fi
    if [ -z "${cpu[$i]:-}" ] || awk "BEGIN{exit !($c < ${cpu[$i]})}"; then cpu[$i]=$c; fi
    if [ -z "${rss[$i]:-}" ] || [ "$m" -gt "${rss[$i]}" ]; then rss[$i]=$m; fi
  done
done
for i in "${!commands[@]}"; do
  printf '%-50s best %7.2f s wall %7.2f s cpu, peak RSS %6d MiB (%.2fx the file)\n' "${names[$i]}" \
    "${wall[$i]}" "${cpu[$i]}" "$((rss[$i] / 1024))" "$(awk -v r="${rss[$i]}" -v s="$size" 'BEGIN{print r * 1024 / s}')"
done
awk -v a="${wall[0]}" -v b="${wall[1]}" 'BEGIN{printf "cfghub is %.1fx faster than jfr print --json (wall)\n", b / a}'
