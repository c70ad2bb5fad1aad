#!/usr/bin/env bash
# Whole commands on 1, 2, 4, 8 and 16 cores (`taskset`, as many as the machine has): more cores
# must never make a command slower, and `cfghub info FILE.bz2` must be no slower than the pipe a
# user would otherwise run, `lbzip2 -dc -n N FILE.bz2 | cfghub info -`.
#
# Rounds run every command on every core count in turn, so that a machine whose speed drifts
# (a virtual machine's CPUs can differ by 40% from run to run) drifts under all of them alike.
# Commands, each the best and the median of RUNS rounds, wall seconds:
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

# once N CMD...: the wall time of one run of CMD on the first N cores.
once() {
  local n=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  taskset -c "0-$((n - 1))" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}'
}

pipe() { "$LBZIP2_BIN" -dc -n "$1" "$DATA/pin.dcfg.json.bz2" | "$CFGHUB" info -; }
stream() { "$CFGHUB" convert --from callgrind - -o "$2" < "$1"; }
export -f pipe stream
export LBZIP2_BIN CFGHUB DATA

builds=(cfghub)
[ -n "$BASE" ] && builds+=(base)
cmds=(info-bz2 lbzip2-pipe info-json)
for f in "$DATA"/callgrind*.out; do
  [ -s "$f" ] && cmds+=("callgrind:${f##*/}" "cg-stream:${f##*/}")
done
cores=()
for n in $CORES; do [ "$n" -le "$MAX" ] && cores+=("$n"); done
declare -A times=()
for _ in $(seq "$RUNS"); do
  for n in "${cores[@]}"; do
    for cmd in "${cmds[@]}"; do
      # shellcheck disable=SC2053 # ONLY is a pattern
      [[ $cmd == $ONLY ]] || continue
      for b in "${builds[@]}"; do
        bin=$CFGHUB
        [ "$b" = base ] && bin=$BASE
        case $cmd in
          info-bz2) t=$(once "$n" "$bin" info "$DATA/pin.dcfg.json.bz2") ;;
          lbzip2-pipe) t=$(CFGHUB=$bin once "$n" bash -c "pipe $n") ;;
          info-json) t=$(once "$n" "$bin" info "$DATA/pin.dcfg.json") ;;
          callgrind:*) t=$(once "$n" "$bin" convert "$DATA/${cmd#*:}" -o "$OUT/out.callgrind") ;;
          cg-stream:*) t=$(CFGHUB=$bin once "$n" bash -c "stream $DATA/${cmd#*:} $OUT/out.callgrind") ;;
        esac
        times[$n/$cmd/$b]+="$t "
      done
    done
  done
done

# best/median of the times recorded for one key.
summary() { printf '%s\n' $1 | sort -n | awk '{t[NR]=$1} END{printf "%s/%s", t[1], t[int((NR+1)/2)]}'; }
printf '%-6s %-28s' cores command
for b in "${builds[@]}"; do printf ' %13s' "$b"; done
echo
for n in "${cores[@]}"; do
  for cmd in "${cmds[@]}"; do
    [ -n "${times[$n/$cmd/cfghub]:-}" ] || continue
    printf '%-6s %-28s' "$n" "$cmd"
    for b in "${builds[@]}"; do printf ' %13s' "$(summary "${times[$n/$cmd/$b]}")"; done
    echo
  done
done
