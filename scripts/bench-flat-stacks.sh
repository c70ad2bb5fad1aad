#!/usr/bin/env bash
# Peak memory and time of writing stacks made of flat costs: DCPI profiles without symbols
# (scripts/gen-dcpi.py, 2.5 and 25 million sampled addresses, 10 and 103 MB), each address a
# stack of its own, converted to folded stacks, an SVG flame graph and pprof, with another build
# and this one in alternating runs. Prints per build and output the best and median wall and
# processor (user + system) seconds and peak resident memory, the peak over the input's size
# (target: at most 3x), and whether both builds wrote the same bytes.
#
# Usage: scripts/bench-flat-stacks.sh OTHER_CFGHUB [RUNS] [SIZES] [OUTPUTS] [WORKDIR]
#   RUNS     rounds of each command (default 3)
#   SIZES    slot counts to generate (default "2500000 25000000")
#   OUTPUTS  output extensions (default "folded svg pb")
#   CFGHUB   (environment) this build, instead of building target/release/cfghub
set -euo pipefail
other=$1 runs=${2:-3} sizes=${3:-2500000 25000000} outputs=${4:-folded svg pb}
cd "$(dirname "$0")/.."
this=${CFGHUB:-}
if [ -z "$this" ]; then
    cargo build --release --quiet --bin cfghub
    this=$PWD/target/release/cfghub
fi
work=${5:-$(mktemp -d)}
mkdir -p "$work"
for slots in $sizes; do
    input="$work/in-$slots.dcpi"
    [ -s "$input" ] || python3 scripts/gen-dcpi.py "$input" "$slots"
    size=$(stat -c %s "$input")
    for ext in $outputs; do
        unset runs_of; declare -A runs_of=()
        for _ in $(seq "$runs"); do
            for which in other this; do
                bin=$other
                [ "$which" = this ] && bin=$this
                /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin" -q convert "$input" -o "$work/out.$ext"
                read -r t u s k < "$work/time"
                runs_of[$which]+="$t $(awk -v u="$u" -v s="$s" 'BEGIN{print u + s}') $k"$'\n'
                sum=$(sha256sum < "$work/out.$ext")
                [ "$which" = other ] && first=$sum
                [ "$which" = this ] && [ "$sum" != "$first" ] && echo "  DIFFERENT OUTPUT: $ext of $slots slots"
                rm -f "$work/out.$ext"
            done
        done
        for which in other this; do
            # best / median of column $1 of the runs
            stat() { printf '%s' "${runs_of[$which]}" | awk -v c="$1" '{print $c}' | sort -g | awk '
                { v[NR] = $1 } END { print v[1], v[int((NR + 1) / 2)] }'; }
            read -r wb wm < <(stat 1)
            read -r cb cm < <(stat 2)
            read -r mb mm < <(stat 3)
            awk -v l="$(basename "$input") -> .$ext ($which)" -v n="$size" -v wb="$wb" -v wm="$wm" \
                -v cb="$cb" -v cm="$cm" -v mb="$mb" -v mm="$mm" 'BEGIN {
                printf "%-34s wall %7.2f / %7.2f s  cpu %7.2f / %7.2f s  peak %8.1f / %8.1f MiB = %5.2fx\n",
                    l, wb, wm, cb, cm, mb / 1024, mm / 1024, mb * 1024 / n }'
        done
        unset runs_of
    done
done
echo "(best / median of $runs; peak over the input's size from the best)"
