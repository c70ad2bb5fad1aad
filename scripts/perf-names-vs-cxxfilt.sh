#!/usr/bin/env bash
# Compares the names cfghub gives C++ functions of perf.data frames (perf's words: libiberty's
# demangler without parameters) with `c++filt -p` (libiberty, the same without parameters) over
# the functions a set of shared libraries export: as printed, and after the folding cfghub
# applies to frame names (through its `perf script` reader: one sample per name).
#
#   scripts/perf-names-vs-cxxfilt.sh [LIBRARY...]
#
# Default libraries: LLVM 19's and clang 19's (`/usr/lib/llvm-19/lib/libLLVM.so.19.1`,
# `libclang-cpp.so.19.1`). `c++filt` writes the standard library's abbreviations in full before
# most names (`std::basic_ostream<char, std::char_traits<char> >::put`, it is run verbose);
# perf writes `std::ostream::put`, as cfghub does: libstdc++'s own symbols differ that way.
# CFGHUB: the cfghub binary (default target/debug/cfghub); the differing names are left in
# $OUT (default /tmp/perf-names-vs-cxxfilt).
set -euo pipefail
cd "$(dirname "$0")/.."
libraries=("$@")
if [ ${#libraries[@]} -eq 0 ]; then
    libraries=(/usr/lib/llvm-19/lib/libLLVM.so.19.1)
    [ -e /usr/lib/llvm-19/lib/libclang-cpp.so.19.1 ] && libraries+=(/usr/lib/llvm-19/lib/libclang-cpp.so.19.1)
fi
CFGHUB=${CFGHUB:-target/debug/cfghub}
OUT=${OUT:-/tmp/perf-names-vs-cxxfilt}
mkdir -p "$OUT"
cargo build -q --bin cfghub --example perf_names
for l in "${libraries[@]}"; do nm -D --defined-only "$l"; done |
    awk 'NF >= 3 && $2 ~ /^[TtWwi]$/ { sub(/@.*/, "", $3); if ($3 ~ /^_Z/) print $3 }' | sort -u >"$OUT/mangled.txt"
target/debug/examples/perf_names <"$OUT/mangled.txt" >"$OUT/cfghub.txt"
c++filt -p <"$OUT/mangled.txt" >"$OUT/cxxfilt.txt"
paste -d '\t' "$OUT/mangled.txt" "$OUT/cfghub.txt" "$OUT/cxxfilt.txt" | awk -F '\t' '$2 != $3' >"$OUT/differ.tsv"
# Folded: one `perf script` sample per name, its command `pN` (N the line), read by cfghub.
fold() {
    awk '{ printf "p%d %d 1.000000:          1 cpu-clock: \n\t            1000 %s+0x0 (/lib.so)\n\n", NR, NR, $0 }' "$1" >"$OUT/$2.perf.txt"
    "$CFGHUB" convert --from perf "$OUT/$2.perf.txt" -o "$OUT/$2.folded" 2>/dev/null
    grep -v '^#' "$OUT/$2.folded" | sed -E 's/^p([0-9]+);(.*) 1$/\1\t\2/' | sort -t "$(printf '\t')" -k1,1 >"$OUT/$2.by-line"
}
fold "$OUT/cfghub.txt" cfghub
fold "$OUT/cxxfilt.txt" cxxfilt
join -t "$(printf '\t')" "$OUT/cfghub.by-line" "$OUT/cxxfilt.by-line" | awk -F '\t' '$2 != $3' >"$OUT/differ-folded.tsv"
echo "functions: $(wc -l <"$OUT/mangled.txt")"
echo "named otherwise than c++filt -p: $(wc -l <"$OUT/differ.tsv") ($OUT/differ.tsv)"
echo "after folding: $(wc -l <"$OUT/differ-folded.tsv") ($OUT/differ-folded.tsv)"
