#!/usr/bin/env bash
# perf.data with call chains to folded stacks, timed as whole commands side by side with the
# route users take today:
#   cfghub convert perf.data -o x.folded
#   perf script -i perf.data | inferno-collapse-perf > y.folded       (the usual route)
#   perf script -i perf.data | cfghub convert --from perf - -o z.folded (cfghub's text reader)
# inferno-collapse-perf comes with `cargo install inferno`; without it that route is left out.
# Targets: cfghub at least 10x faster than the usual route; its peak memory at most 2x the
# file. The commands run in interleaved rounds (each round runs every command once), RUNS
# rounds; the best and median wall-clock and CPU (user + system, of the whole pipeline: the
# shell's children count) seconds and the largest peak RSS (of the largest process) are shown.
# BASELINE=path/to/other/cfghub adds that build's `convert` to each round (a build of main,
# say). CPUS=0 runs everything on the CPUs given (taskset -c), to see what one core does.
# Without a file, one is recorded: `perf record -g -e cpu-clock -F 10000 -a -- sleep 45`
# (every CPU, whatever runs on them: at least 100 MB on two busy CPUs; run as root).
# DWARF=1 instead records fixtures/perf-data/interp.c (an interpreter built without frame
# pointers, computing fib(38) through deep recursion) with `perf record --call-graph dwarf`
# (about 140 MB, 17,000 samples of up to 45 frames) and adds `perf script` alone, which
# unwinds the user stacks: target, cfghub at least 5x faster than it.
# Usage: scripts/bench-perf-data.sh [PERF_DATA [RUNS]]   (NO_BUILD=1: use target/release/cfghub as
# built; CFGHUB=path: time that build instead)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
if [ -n "${DWARF:-}" ]; then
  input=${1:-$DATA/perf-dwarf.perf.data}
else
  input=${1:-$DATA/perf-callchains.perf.data}
fi
RUNS=${2:-3}
[ -n "${NO_BUILD:-}${CFGHUB:-}" ] || cargo build --release --quiet --bin cfghub
CFGHUB=${CFGHUB:-$PWD/target/release/cfghub}
if [ ! -f "$input" ] && [ -n "${DWARF:-}" ]; then
  gcc -O2 -g -fomit-frame-pointer -o "$DATA/interp" fixtures/perf-data/interp.c
  perf record -q --call-graph dwarf -e cpu-clock -o "$input" "$DATA/interp" 38 >/dev/null
elif [ ! -f "$input" ]; then
  perf record -q -g -e cpu-clock -F 10000 -a -o "$input" -- sleep 45
fi
pin=""
[ -z "${CPUS:-}" ] || pin="taskset -c $CPUS"
size=$(stat -c %s "$input")
echo "input: $input, $((size / 1048576)) MiB, $(perf report -i "$input" --stats 2>/dev/null | awk '/SAMPLE events/ {print $3; exit}') samples${CPUS:+, on CPUs $CPUS}"

# The commands, by name.
names=("cfghub convert perf.data -o x.folded")
commands=("$CFGHUB convert -q '$input' -o $DATA/direct.folded")
if [ -n "${BASELINE:-}" ]; then
  names+=("baseline: $BASELINE convert")
  commands+=("$BASELINE convert -q '$input' -o $DATA/baseline.folded")
fi
if command -v inferno-collapse-perf >/dev/null; then
  names+=("perf script | inferno-collapse-perf")
  commands+=("perf script -i '$input' 2>/dev/null | inferno-collapse-perf > $DATA/inferno.folded")
else
  echo "inferno-collapse-perf is not installed (cargo install inferno): its route is left out"
fi
if [ -n "${DWARF:-}" ]; then
  names+=("perf script > /dev/null")
  commands+=("perf script -i '$input' > /dev/null 2>&1")
fi
names+=("perf script | cfghub convert --from perf -")
commands+=("perf script -i '$input' 2>/dev/null | $CFGHUB convert -q --from perf - -o $DATA/script.folded")

# Per command: its wall and CPU seconds and peak RSS (KiB) of each round, one line each.
results=()
for i in "${!commands[@]}"; do results[i]=""; done
for _ in $(seq "$RUNS"); do
  for i in "${!commands[@]}"; do
    $pin /usr/bin/time -o "$DATA/time.txt" -f "%e %U %S %M" bash -c "${commands[$i]}" >/dev/null 2>&1
    read -r wall user sys rss <<<"$(tail -1 "$DATA/time.txt")"
    results[i]+="$wall $(echo "$user + $sys" | bc) $rss"$'\n'
  done
done

# Best and median of a column of numbers.
best_median() {
  sort -g | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s %s", v[1], m}'
}
printf '%-44s %16s %16s %9s\n' command "wall_s best/med" "cpu_s best/med" peak_MiB
best_wall=()
for i in "${!commands[@]}"; do
  read -r wb wm <<<"$(printf '%s' "${results[$i]}" | awk 'NF {print $1}' | best_median)"
  read -r cb cm <<<"$(printf '%s' "${results[$i]}" | awk 'NF {print $2}' | best_median)"
  peak=$(printf '%s' "${results[$i]}" | awk 'NF && $3 > p {p = $3} END {print p}')
  best_wall[i]=$wb
  printf '%-44s %16s %16s %9s\n' "${names[$i]}" "$wb/$wm" "$cb/$cm" "$((peak / 1024))"
  [ "$i" != 0 ] || direct_peak=$peak
done
for i in "${!commands[@]}"; do
  [ "$i" = 0 ] && continue
  echo "speed-up of cfghub (best wall) over ${names[$i]}: $(echo "scale=1; ${best_wall[$i]} / ${best_wall[0]}" | bc)x"
done
echo "cfghub peak / file size: $(echo "scale=2; $direct_peak * 1024 / $size" | bc)"
# The stacks of the direct read and of cfghub's reading of `perf script` text are the same.
same=$(comm -12 <(grep -v '^#' "$DATA/direct.folded" | sort) <(grep -v '^#' "$DATA/script.folded" | sort) | wc -l)
echo "stacks: $(grep -vc '^#' "$DATA/direct.folded") direct, $(grep -vc '^#' "$DATA/script.folded") via perf script, $same identical"
if [ -n "${BASELINE:-}" ]; then
  cmp -s "$DATA/direct.folded" "$DATA/baseline.folded" && echo "output: byte for byte the baseline's" ||
    echo "output: DIFFERS from the baseline's"
fi
