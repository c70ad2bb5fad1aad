#!/bin/sh
# Times whole `cfghub dot` and `cfghub convert -o x.graphml` commands on a synthetic DCFG with
# one routine of about ten thousand blocks (reading included), with /usr/bin/time -v.
# Usage: scripts/bench-dot.sh   (builds the release binary first)
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/cfghub
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" synth -q --images 1 --routines 1 --blocks 11000 --threads 1 --steps 3000000 -o "$dir/big.dcfg.json"
"$bin" info "$dir/big.dcfg.json" | grep -A1 '^  image'
run() {
    echo "== $*"
    /usr/bin/time -v "$@" 2>&1 >/dev/null | grep -E 'Elapsed|Maximum resident'
}
run "$bin" dot -q "$dir/big.dcfg.json" --routine main -o "$dir/main.dot"
run "$bin" dot -q "$dir/big.dcfg.json" --callgraph -o "$dir/calls.dot"
run "$bin" convert -q "$dir/big.dcfg.json" -o "$dir/big.graphml"
ls -l "$dir"
