#!/usr/bin/env bash
# Valgrind's numbers through every stack output, on a large real profile.
#
#   scripts/check-exact-costs.sh [WORKDIR]
#
# Makes (or reuses, in WORKDIR) the 21 MB profile of the C++ compiler proper (cc1plus) that
# scripts/bench-callgrind.sh times, builds cfghub --release, and runs
# scripts/check-exact-costs.py on it: folded stacks, pprof, speedscope and an SVG flame graph
# must hold callgrind_annotate's total, and every function callgrind_annotate --inclusive=no
# lists its self cost. Takes a few minutes of CPU the first time (Valgrind on g++).
#
# Needs: valgrind, g++, callgrind_annotate, go (go tool pprof), python3, a Rust toolchain.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
profile=$(MAKE_ONLY=1 bash "$root/scripts/bench-callgrind.sh" "$work" | tail -1)
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin cfghub
python3 "$root/scripts/check-exact-costs.py" "$profile" "$root/target/release/cfghub"
