#!/usr/bin/env bash
# Callgrind benchmark on a real profile of at least 20 MB, against callgrind_annotate.
#
#   scripts/bench-callgrind.sh [WORKDIR]
#
# 1. Makes the profile: valgrind --tool=callgrind (instructions and jumps, following children)
#    on `g++ -O2 -c` of a C++ file that includes <regex>, <map> and <iostream>; the compiler
#    proper (cc1plus) writes the largest profile, which is the one used. Kept in WORKDIR
#    (default: a temporary folder) and reused when present; never committed.
# 2. Times whole commands side by side with /usr/bin/time: callgrind_annotate on the file, and
#    cfghub reading it and writing it back as Callgrind; then `cfghub info` (reading plus the
#    analyses it prints).
# 3. Measures reading alone (and writing alone) in memory with the criterion bench
#    benches/callgrind.rs, which reports MB/s.
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
echo "== profile: $work/$profile ($((size / 1000000)) MB; $(grep -m1 '^cmd:' "$profile" | cut -c1-60))"
if [ "$size" -lt 20000000 ]; then
    echo "the profile is smaller than 20 MB" >&2
    exit 1
fi

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
cfghub="$root/target/release/cfghub"

timed() {
    local label=$1
    shift
    /usr/bin/time -f "%e %M" -o time.txt "$@" > /dev/null
    read -r secs kb < time.txt
    printf '%-44s %8.2f s %8d MB max RSS\n' "$label" "$secs" "$((kb / 1024))"
    echo "$secs" > "last.txt"
}

echo "== whole commands"
timed "callgrind_annotate $profile" callgrind_annotate "$profile"
annotate=$(cat last.txt)
timed "cfghub convert (read + write Callgrind)" "$cfghub" convert -q "$profile" --to callgrind -o "$work/out.callgrind"
convert=$(cat last.txt)
timed "cfghub info (read + analyses)" "$cfghub" info -q "$profile"
awk -v a="$annotate" -v c="$convert" -v s="$size" 'BEGIN {
    printf "cfghub read+write is %.1fx faster than callgrind_annotate; %.0f MB/s end to end\n", a / c, s / c / 1e6 }'

echo "== in memory (criterion): read and write throughput"
cd "$root"
CFGHUB_CALLGRIND_BENCH="$work/$profile" cargo bench --quiet --bench callgrind -- --noplot 2>&1 |
    grep -E "^callgrind/|thrpt|time:" || true
