#!/usr/bin/env bash
# Times one cfghub command with two builds side by side, alternating runs so that both see the
# same machine load: the best wall and the best processor (user + system) seconds of each.
#
# Usage: scripts/bench-against.sh OTHER_CFGHUB RUNS LABEL ARGS...
#   OTHER_CFGHUB  the build to compare with (e.g. main's target/release/cfghub)
#   ARGS          cfghub's arguments; OUT in them becomes a per-build output path
# Example:
#   scripts/bench-against.sh ../main/target/release/cfghub 5 "pprof -> folded" \
#       convert -q big.pb -o OUT.folded
set -euo pipefail
other=$1 runs=$2 label=$3
shift 3
this=${CFGHUB:-target/release/cfghub}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A wall cpu
for _ in $(seq "$runs"); do
  for which in other this; do
    bin=$other
    [ "$which" = this ] && bin=$this
    args=("${@//OUT/$out/$which}")
    tmp=$(mktemp)
    /usr/bin/time -f "%e %U %S" -o "$tmp" "$bin" "${args[@]}" >/dev/null 2>&1 || { echo "failed: $bin ${args[*]}" >&2; exit 1; }
    read -r t u s < <(tail -1 "$tmp")
    rm -f "$tmp"
    c=$(awk -v u="$u" -v s="$s" 'BEGIN{print u + s}')
    if [ -z "${wall[$which]:-}" ] || awk "BEGIN{exit !($t < ${wall[$which]})}"; then wall[$which]=$t; fi
    if [ -z "${cpu[$which]:-}" ] || awk "BEGIN{exit !($c < ${cpu[$which]})}"; then cpu[$which]=$c; fi
  done
done
awk -v l="$label" -v wo="${wall[other]}" -v wt="${wall[this]}" -v co="${cpu[other]}" -v ct="${cpu[this]}" \
  'BEGIN{printf "%-44s other %6.2f s wall %6.2f s cpu | this %6.2f s wall %6.2f s cpu | cpu ratio %.3f\n", l, wo, co, wt, ct, ct/co}'
