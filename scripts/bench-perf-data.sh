#!/usr/bin/env bash
# perf.data with call chains to folded stacks, timed as whole commands side by side with the
# route users take today:
#   cfghub convert perf.data -o x.folded
#   perf script -i perf.data | COLLAPSE > y.folded
# where COLLAPSE is `inferno-collapse-perf` when it is installed (`cargo install inferno`), else
# cfghub's own `perf script` reader (`cfghub convert --from perf - -o y.folded`, which is
# inferno's collapse as a library). Targets: cfghub at least 10x faster; its peak memory at
# most 2x the file. Each command runs RUNS times; the best wall-clock and CPU (user + system)
# seconds and the largest peak RSS are shown, and the two outputs' stacks compared.
# Without a file, one is recorded: `perf record -g -e cpu-clock -F 10000 -a -- sleep 45`
# (every CPU, whatever runs on them: at least 100 MB on two CPUs; run as root).
# Usage: scripts/bench-perf-data.sh [PERF_DATA [RUNS]]   (NO_BUILD=1: use target/release/cfghub as built)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
input=${1:-$DATA/perf-callchains.perf.data}
RUNS=${2:-3}
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet --bin cfghub
CFGHUB=$PWD/target/release/cfghub
if [ ! -f "$input" ]; then
  perf record -q -g -e cpu-clock -F 10000 -a -o "$input" -- sleep 45
fi
if command -v inferno-collapse-perf >/dev/null; then
  collapse="inferno-collapse-perf > $DATA/script.folded"
  collapse_name="perf script | inferno-collapse-perf"
else
  collapse="$CFGHUB convert -q --from perf - -o $DATA/script.folded"
  collapse_name="perf script | cfghub convert --from perf -"
fi
size=$(stat -c %s "$input")
echo "input: $input, $((size / 1048576)) MiB, $(perf report -i "$input" --stats 2>/dev/null | awk '/SAMPLE events/ {print $3; exit}') samples"

# Best wall and CPU seconds and largest peak RSS (KiB) of RUNS runs of a shell command.
measure() {
  local best_wall=999999 best_cpu=999999 peak=0 line wall cpu rss
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -o "$DATA/time.txt" -f "%e %U %S %M" sh -c "$1" >/dev/null 2>&1
    line=$(tail -1 "$DATA/time.txt")
    read -r wall user sys rss <<<"$line"
    cpu=$(echo "$user + $sys" | bc)
    best_wall=$(echo "if ($wall < $best_wall) $wall else $best_wall" | bc)
    best_cpu=$(echo "if ($cpu < $best_cpu) $cpu else $best_cpu" | bc)
    [ "$rss" -gt "$peak" ] && peak=$rss
  done
  echo "$best_wall $best_cpu $peak"
}

read -r cw cc cm <<<"$(measure "$CFGHUB convert -q '$input' -o $DATA/direct.folded")"
read -r sw sc sm <<<"$(measure "perf script -i '$input' 2>/dev/null | $collapse")"
printf '%-48s %8s %8s %10s\n' command wall_s cpu_s peak_MiB
printf '%-48s %8s %8s %10s\n' "cfghub convert perf.data -o x.folded" "$cw" "$cc" "$((cm / 1024))"
printf '%-48s %8s %8s %10s\n' "$collapse_name" "$sw" "$sc" "$((sm / 1024))"
echo "speed-up (wall): $(echo "scale=1; $sw / $cw" | bc)x; cfghub peak / file size: $(echo "scale=2; $cm * 1024 / $size" | bc)"
same=$(comm -12 <(grep -v '^#' "$DATA/direct.folded" | sort) <(sort "$DATA/script.folded") | wc -l)
echo "stacks: $(grep -vc '^#' "$DATA/direct.folded") direct, $(wc -l < "$DATA/script.folded") via perf script, $same identical"
