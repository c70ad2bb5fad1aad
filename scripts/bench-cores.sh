#!/usr/bin/env bash
# Whole commands on 1, 2, 4, 8 and 16 cores (`taskset`, as many as the machine has): more cores
# must never make a command slower, and `cfghub info FILE.bz2` must be no slower than the pipe a
# user would otherwise run, `lbzip2 -dc -n N FILE.bz2 | cfghub info -`.
#
# Commands, each the best and the median of RUNS, wall seconds:
#   info-bz2     cfghub info pin.dcfg.json.bz2            (the built-in parallel bzip2 decoder)
#   lbzip2-pipe  lbzip2 -dc -n N pin.dcfg.json.bz2 | cfghub info -
#   info-json    cfghub info pin.dcfg.json                (plain JSON)
#   callgrind    cfghub convert F -o OUT.callgrind, for each Callgrind profile F named
#                callgrind*.out in DATA (a file is read in parts on every core)
#   cg-stream    cfghub convert --from callgrind - -o OUT.callgrind < F
#                (the same profile from a pipe, read as one stream on one thread)
# With BASE set to another cfghub binary, its figures for the cfghub commands come beside.
#
# Usage: scripts/bench-cores.sh DATA [RUNS]
#   DATA holds pin.dcfg.json.bz2 (made with `cfghub synth` and lbzip2 when absent) and,
#   optionally, Callgrind profiles named callgrind*.out (e.g. the cc1plus profile
#   `scripts/bench-callgrind.sh` makes).
#   CFGHUB (default target/release/cfghub), BASE (optional), LBZIP2_BIN (default lbzip2), CORES
#   (default "1 2 4 8 16", capped at the machine's) override; ONLY (a bash pattern, e.g.
#   'c*') runs only the commands it matches.
# It needs only bash, taskset and lbzip2, so it runs on a bare machine with carried binaries.
set -euo pipefail
DATA=${1:?usage: scripts/bench-cores.sh DATA [RUNS]}
RUNS=${2:-3}
CFGHUB=${CFGHUB:-target/release/cfghub}
BASE=${BASE:-}
LBZIP2_BIN=${LBZIP2_BIN:-lbzip2}
CORES=${CORES:-1 2 4 8 16}
ONLY=${ONLY:-*}
MAX=$(nproc)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

if [ ! -s "$DATA/pin.dcfg.json.bz2" ]; then
  "$CFGHUB" synth --pretty --images 4 --routines 6000 --blocks 24 --threads 2 --steps 12000000 \
    -o "$DATA/pin.dcfg.json"
  "$LBZIP2_BIN" -k -9 "$DATA/pin.dcfg.json"
fi
[ -s "$DATA/pin.dcfg.json" ] || "$LBZIP2_BIN" -dc "$DATA/pin.dcfg.json.bz2" > "$DATA/pin.dcfg.json"

# best N CMD...: the best and the median wall time of RUNS runs of CMD on the first N cores.
best() {
  local n=$1 t0 t1 times=()
  shift
  for _ in $(seq "$RUNS"); do
    t0=$(date +%s.%N)
    taskset -c "0-$((n - 1))" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
    t1=$(date +%s.%N)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{t[NR]=$1} END{printf "%s/%s", t[1], t[int((NR+1)/2)]}'
}

pipe() { "$LBZIP2_BIN" -dc -n "$1" "$DATA/pin.dcfg.json.bz2" | "$CFGHUB" info -; }
stream() { "$CFGHUB" convert --from callgrind - -o "$2" < "$1"; }
export -f pipe stream
export LBZIP2_BIN CFGHUB DATA

builds=(cfghub)
[ -n "$BASE" ] && builds+=(base)
printf '%-6s %-28s' cores command
for b in "${builds[@]}"; do printf ' %13s' "$b"; done
echo
for n in $CORES; do
  [ "$n" -le "$MAX" ] || continue
  cmds=(info-bz2 lbzip2-pipe info-json)
  for f in "$DATA"/callgrind*.out; do
    [ -s "$f" ] && cmds+=("callgrind:${f##*/}" "cg-stream:${f##*/}")
  done
  for cmd in "${cmds[@]}"; do
    # shellcheck disable=SC2053 # ONLY is a pattern
    [[ $cmd == $ONLY ]] || continue
    printf '%-6s %-28s' "$n" "$cmd"
    for b in "${builds[@]}"; do
      bin=$CFGHUB
      [ "$b" = base ] && bin=$BASE
      case $cmd in
        info-bz2) t=$(best "$n" "$bin" info "$DATA/pin.dcfg.json.bz2") ;;
        lbzip2-pipe) t=$(CFGHUB=$bin best "$n" bash -c "pipe $n") ;;
        info-json) t=$(best "$n" "$bin" info "$DATA/pin.dcfg.json") ;;
        callgrind:*) t=$(best "$n" "$bin" convert "$DATA/${cmd#*:}" -o "$OUT/out.callgrind") ;;
        cg-stream:*) t=$(CFGHUB=$bin best "$n" bash -c "stream $DATA/${cmd#*:} $OUT/out.callgrind") ;;
      esac
      printf ' %13s' "$t"
    done
    echo
  done
done
