#!/usr/bin/env bash
# Peak memory of whole cfghub commands against the input's size, beside the tool a user would
# otherwise run:
#   1. the Callgrind profile of cc1plus that scripts/bench-callgrind.sh makes (about 21 MB):
#      callgrind_annotate on it, then cfghub reading it alone (examples/load, which also prints
#      the model's own size by part), `cfghub info`, and `cfghub convert` to Callgrind;
#   2. a 103 MB DCPI profile (scripts/gen-dcpi.py): reading alone, `cfghub convert` to DCPI and
#      to dcpicat.
# Each line gives wall time, CPU time and peak resident memory (GNU time), and peak memory over
# the input's size (target: at most 3x).
#
# Usage: scripts/bench-memory.sh [WORKDIR]   (WORKDIR keeps the inputs between runs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cd "$root"
cargo build --release --quiet --bin cfghub --example load
cfghub="$root/target/release/cfghub"
load="$root/target/release/examples/load"

# peak LABEL INPUT CMD...: one line of figures for CMD, its peak memory over INPUT's size.
peak() {
    local label=$1 input=$2
    shift 2
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" > "$work/stdout.txt"
    read -r secs user sys kb < "$work/time.txt"
    awk -v l="$label" -v s="$secs" -v u="$user" -v y="$sys" -v k="$kb" -v n="$(stat -c %s "$input")" 'BEGIN {
        printf "%-44s %6.2f s wall %6.2f s cpu %7.1f MB peak = %5.2fx the input\n", l, s, u + y, k / 1024, k * 1024 / n }'
}

echo "== Callgrind"
profile=$(MAKE_ONLY=1 bash "$root/scripts/bench-callgrind.sh" "$work" | tail -1)
echo "profile: $profile ($(($(stat -c %s "$profile") / 1000000)) MB)"
peak "callgrind_annotate" "$profile" callgrind_annotate "$profile"
peak "cfghub reading alone (examples/load)" "$profile" "$load" "$profile"
sed 's/.*; //' "$work/stdout.txt"
peak "cfghub info" "$profile" "$cfghub" -q info "$profile"
grep '^memory:' "$work/stdout.txt"
peak "cfghub convert --to callgrind" "$profile" "$cfghub" -q convert "$profile" --to callgrind -o "$work/out.callgrind"

echo "== DCPI"
dcpi="$work/big.dcpi"
[ -s "$dcpi" ] || python3 "$root/scripts/gen-dcpi.py" "$dcpi"
peak "cfghub reading alone (examples/load)" "$dcpi" "$load" "$dcpi"
sed 's/.*; //' "$work/stdout.txt"
peak "cfghub convert --to dcpi" "$dcpi" "$cfghub" -q convert "$dcpi" -o "$work/out.dcpi"
cmp -s "$dcpi" "$work/out.dcpi" && echo "  (byte-identical copy)"
peak "cfghub convert --to dcpicat" "$dcpi" "$cfghub" -q convert "$dcpi" --to dcpicat -o "$work/out.dcpicat"
