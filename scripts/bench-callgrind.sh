#!/usr/bin/env bash
# Callgrind benchmark on a real profile of at least 20 MB, against callgrind_annotate.
#
#   scripts/bench-callgrind.sh [WORKDIR]
#   MAKE_ONLY=1 scripts/bench-callgrind.sh WORKDIR   (make the profile, print its path, stop)
#
# 1. Makes the profile: valgrind --tool=callgrind (instructions and jumps, following children)
#    on `g++ -O2 -c` of a C++ file that includes <regex>, <map> and <iostream>; the compiler
#    proper (cc1plus) writes the largest profile, which is the one used. Kept in WORKDIR
#    (default: a temporary folder) and reused when present; never committed.
# 2. Times whole commands side by side with /usr/bin/time: callgrind_annotate on the file, and
#    cfghub reading it and writing it back as Callgrind (the median of 7 runs: a run takes a
#    fraction of a second, so a busy moment of the machine weighs more); then `cfghub info`
#    (reading plus the analyses it prints).
#    Reading alone is timed as a whole process too (examples/load: open and read).
#    BEFORE=DIR times an earlier build's programs too (DIR: its target/release folder), runs
#    alternating, for a before/after comparison on the same machine at the same moment.
#    NO_CRITERION=1 stops after the whole commands.
# 3. Measures reading alone (and writing alone) in memory with the criterion bench
#    benches/callgrind.rs, which reports MB/s: `read` as a stream (as cfghub reads a pipe or a
#    compressed file; a large file on disk is read in parts, as the whole commands above show),
#    and `write`.
#
# Needs: valgrind, g++, callgrind_annotate (valgrind package), a Rust toolchain.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"

profile=$(ls -S callgrind.out.* 2>/dev/null | head -1 || true)
if [ -z "$profile" ]; then
    cat > big.cpp <<'CPP'
#include <regex>
#include <map>
#include <iostream>
#include <string>
int main(int argc, char **argv) {
    std::map<std::string, int> counts;
    std::regex word("[a-z]+");
    for (int i = 1; i < argc; i++) {
        std::string s(argv[i]);
        for (auto it = std::sregex_iterator(s.begin(), s.end(), word); it != std::sregex_iterator(); ++it)
            counts[it->str()]++;
    }
    for (auto &kv : counts) std::cout << kv.first << " " << kv.second << "\n";
}
CPP
    echo "== making the profile (valgrind on g++ -O2 -c big.cpp; takes minutes)"
    valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --trace-children=yes \
        --callgrind-out-file="$work/callgrind.out.%p" g++ -O2 -c big.cpp -o big.o 2> valgrind.log
    profile=$(ls -S callgrind.out.* | head -1)
fi
size=$(stat -c %s "$profile")
# MAKE_ONLY=1: only make (or find) the profile, and print its path.
if [ -n "${MAKE_ONLY:-}" ]; then
    echo "$work/$profile"
    exit 0
fi
echo "== profile: $work/$profile ($((size / 1000000)) MB; $(grep -m1 '^cmd:' "$profile" | cut -c1-60))"
if [ "$size" -lt 20000000 ]; then
    echo "the profile is smaller than 20 MB" >&2
    exit 1
fi

cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin cfghub --example load

# One run of a command: appends "wall user sys kb" (GNU time) to the file named first.
one_run() {
    local into=$1
    shift
    /usr/bin/time -f "%e %U %S %M" -o time.txt "$@" > /dev/null
    cat time.txt >> "$into"
}

# Prints wall time, CPU time (user + system: what the command itself costs, whatever else the
# machine is doing) and peak memory of the median run by wall time of the runs in a file; keeps
# "wall cpu" in last.txt.
report() {
    local label=$1 runs=$2 n
    n=$(wc -l < "$runs")
    read -r secs user sys kb < <(sort -n "$runs" | sed -n "$(( (n + 1) / 2 ))p")
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    printf '%-50s %7.2f s wall %7.2f s cpu %6d MB max RSS' "$label" "$secs" "$cpu" "$((kb / 1024))"
    [ "$n" -gt 1 ] && printf '  (median of %d)' "$n"
    printf '\n'
    echo "$secs $cpu" > last.txt
}

# timed LABEL CMD...: RUNS runs (default 1) of a command, reported.
timed() {
    local label=$1
    shift
    : > runs.txt
    for _ in $(seq "${RUNS:-1}"); do one_run runs.txt "$@"; done
    report "$label" runs.txt
}

# compared LABEL PROGRAM ARGS...: RUNS runs of one of this build's programs (cfghub or
# examples/load). With BEFORE=DIR, the target/release folder of another build (an earlier
# commit's), that build's program runs too, the two alternating so that both meet the same
# machine; its line comes first.
compared() {
    local label=$1 program=$2
    shift 2
    : > runs.txt
    : > before.txt
    for _ in $(seq "${RUNS:-1}"); do
        [ -n "${BEFORE:-}" ] && one_run before.txt "$BEFORE/$program" "$@"
        one_run runs.txt "$root/target/release/$program" "$@"
    done
    [ -n "${BEFORE:-}" ] && report "$label, before" before.txt
    report "$label" runs.txt
}

echo "== whole commands"
timed "callgrind_annotate" callgrind_annotate "$profile"
read -r annotate_wall annotate_cpu < last.txt
RUNS=7 compared "cfghub convert (read + write Callgrind)" cfghub convert -q "$profile" --to callgrind -o "$work/out.callgrind"
read -r convert_wall convert_cpu < last.txt
RUNS=7 compared "cfghub info (read + analyses)" cfghub info -q "$profile"
RUNS=7 compared "reading alone (examples/load)" examples/load "$profile"
read -r load_wall _ < last.txt
awk -v w="$load_wall" -v s="$size" 'BEGIN { printf "reading alone, whole process: %.0f MB/s\n", s / w / 1e6 }'
awk -v aw="$annotate_wall" -v ac="$annotate_cpu" -v cw="$convert_wall" -v cc="$convert_cpu" -v s="$size" 'BEGIN {
    printf "cfghub read+write vs callgrind_annotate: %.1fx faster (wall), %.1fx (cpu); %.0f MB/s end to end (cpu)\n",
        aw / cw, ac / cc, s / cc / 1e6 }'
[ -n "${NO_CRITERION:-}" ] && exit 0

echo "== in memory (criterion): read and write throughput"
cd "$root"
CFGHUB_CALLGRIND_BENCH="$work/$profile" cargo bench --quiet --bench callgrind -- --noplot 2>&1 |
    grep -E "^callgrind/|thrpt|time:" || true
