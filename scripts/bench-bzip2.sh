#!/usr/bin/env bash
# Compressed input, timed as whole commands side by side with the decompressors users run:
#  1. `cfghub info` of a Pin-style (pretty-printed) DCFG `.bz2` of about 28 MB compressed
#     (232 MB of JSON) against `lbzip2 -d -c -n 2` and `bzip2 -dc` of the same file
#     (target: cfghub at most 1.1x lbzip2's time), and `cfghub info` of the plain file; then
#     bzip2-parallel's block decoder alone against lbzip2's, on one core;
#  2. the same DCFG as `.gz` against `gzip -dc`;
#  3. DCFG-trace decoding from a `.bz2` trace: `cfghub trace stats` with -j 1 and -j 2
#     (the speed-up of decoding on two cores, with bzip2 decompressed on every core in both).
# The CPU time of one cfghub run is also shown thread by thread.
# Each figure is the best of RUNS, wall-clock and CPU (user + system) seconds: on a machine busy
# with other work the wall-clock figures are bounded by the CPU share the scheduler grants, and
# the CPU figures say what each command costs.
# Usage: scripts/bench-bzip2.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --bin cfghub
CFGHUB=target/release/cfghub
for tool in lbzip2 bzip2 gzip; do
  command -v "$tool" >/dev/null || { echo "bench-bzip2: $tool is not installed (apt-get install $tool)" >&2; exit 1; }
done

# measure CMD...: prints "best_wall_s best_cpu_s max_rss_kb" over RUNS runs.
measure() {
  local best_wall="" best_cpu="" rss=0
  for _ in $(seq "$RUNS"); do
    local tmp out wall cpu kb
    tmp=$(mktemp)
    /usr/bin/time -f "%e %U %S %M" -o "$tmp" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; rm -f "$tmp"; return 1; }
    out=$(tail -1 "$tmp"); rm -f "$tmp"
    read -r wall u s kb <<<"$out"
    cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')
    if [ -z "$best_wall" ] || awk "BEGIN{exit !($wall < $best_wall)}"; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || awk "BEGIN{exit !($cpu < $best_cpu)}"; then best_cpu=$cpu; fi
    if [ "$kb" -gt "$rss" ]; then rss=$kb; fi
  done
  echo "$best_wall $best_cpu $rss"
}

# thread_split CMD...: runs CMD once and prints the CPU seconds of each of its threads by name
# (from /proc, polled until it exits): the decoding threads should carry even parts of the work.
thread_split() {
  "$@" >/dev/null &
  local pid=$! hz
  hz=$(getconf CLK_TCK)
  declare -A ticks names
  while kill -0 "$pid" 2>/dev/null; do
    for t in /proc/"$pid"/task/*; do
      { read -r -a st < "$t/stat"; } 2>/dev/null || continue
      ticks[${st[0]}]=$(( st[13] + st[14] ))
      names[${st[0]}]=$(cat "$t/comm" 2>/dev/null || echo '?')
    done
    sleep 0.05
  done
  wait "$pid" || true
  for t in "${!ticks[@]}"; do
    awk -v n="${names[$t]}" -v k="${ticks[$t]}" -v hz="$hz" 'BEGIN{ if (k > 0) printf "%s %.2f  ", n, k/hz }'
  done
}

row() { # label wall cpu rss
  awk -v l="$1" -v w="$2" -v c="$3" -v m="$4" 'BEGIN{ printf "   %-34s %6.2f s wall %6.2f s CPU  peak %5.0f MB\n", l, w, c, m/1024 }'
}

echo "== compressed input (load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores, best of $RUNS)"
pretty=$DATA/synth-pin-style.dcfg.json
[ -s "$pretty" ] || $CFGHUB synth -q --pretty --images 4 --routines 14000 --blocks 24 --threads 2 --steps 28000000 -o "$pretty"
[ -s "$pretty.bz2" ] || bzip2 -k -9 "$pretty"
[ -s "$pretty.gz" ] || gzip -k -6 "$pretty"
echo "   $(basename "$pretty"): $(stat -c %s "$pretty") bytes; .bz2 $(stat -c %s "$pretty.bz2"); .gz $(stat -c %s "$pretty.gz")"

read -r wc cc mc < <(measure "$CFGHUB" info -q "$pretty.bz2")
read -r wl cl ml < <(measure lbzip2 -d -c -n 2 "$pretty.bz2")
read -r wb cb mb < <(measure bzip2 -dc "$pretty.bz2")
read -r wp cp mp < <(measure "$CFGHUB" info -q "$pretty")
row "cfghub info .bz2" "$wc" "$cc" "$mc"
row "lbzip2 -d -c -n 2" "$wl" "$cl" "$ml"
row "bzip2 -dc" "$wb" "$cb" "$mb"
row "cfghub info (plain file)" "$wp" "$cp" "$mp"
awk -v wc="$wc" -v wl="$wl" -v wb="$wb" -v cc="$cc" -v cp="$cp" -v cb="$cb" -v n="$(nproc)" 'BEGIN{
  printf "== 1. bzip2: cfghub %.2fx lbzip2 -n 2 (target <= 1.1), %.2fx faster than bzip2 -dc\n", wc/wl, wb/wc;
  printf "      cfghub needs %.2f s CPU (libbz2 alone: bzip2 -dc %.2f s; the parse: %.2f s), at best %.2f s on %d idle cores\n", cc, cb, cp, cc/n, n }'

echo "      CPU seconds per thread: $(thread_split "$CFGHUB" info -q "$pretty.bz2")"

# The block decoder alone (crates/bzip2-parallel, its `bzcat` example) against C lbzip2's, both
# on one core: CPU seconds to decompress the file to /dev/null.
cargo build --release --quiet -p bzip2-parallel --example bzcat
read -r _ cd1 _ < <(measure taskset -c 0 target/release/examples/bzcat -n 1 "$pretty.bz2")
read -r _ cl1 _ < <(measure taskset -c 0 lbzip2 -d -c -n 1 "$pretty.bz2")
awk -v a="$cd1" -v b="$cl1" 'BEGIN{ printf "      block decoding on one core: bzip2-parallel %.2f s CPU, lbzip2 -n 1 %.2f s (target: at most lbzip2)\n", a, b }'

read -r wg cg mg < <(measure "$CFGHUB" info -q "$pretty.gz")
read -r wz cz mz < <(measure gzip -dc "$pretty.gz")
row "cfghub info .gz" "$wg" "$cg" "$mg"
row "gzip -dc" "$wz" "$cz" "$mz"
awk -v wg="$wg" -v wz="$wz" -v wp="$wp" 'BEGIN{ printf "== 2. gzip: cfghub %.2fx gzip -dc, %.2fx the plain file\n", wg/wz, wg/wp }'

trace=$DATA/bzip2-app.trace.json
if [ ! -s "$trace.bz2" ]; then
  $CFGHUB trace generate -q --edges 30000000 --threads 2 --dcfg-out "$DATA/bzip2-app.dcfg.json" --trace-out "$trace"
  bzip2 -f -9 "$trace"
fi
read -r w1 c1 m1 < <(measure "$CFGHUB" trace -q -j 1 stats "$trace.bz2")
read -r w2 c2 m2 < <(measure "$CFGHUB" trace -q -j 2 stats "$trace.bz2")
row "cfghub trace -j 1 stats .bz2" "$w1" "$c1" "$m1"
row "cfghub trace -j 2 stats .bz2" "$w2" "$c2" "$m2"
awk -v w1="$w1" -v w2="$w2" -v s="$(stat -c %s "$trace.bz2")" 'BEGIN{ printf "== 3. DCFG-trace .bz2 (%d bytes, 60 M edges): -j 2 is %.2fx -j 1 (wall clock)\n", s, w1/w2 }'
echo "      CPU seconds per thread (-j 2): $(thread_split "$CFGHUB" trace -q -j 2 stats "$trace.bz2")"
