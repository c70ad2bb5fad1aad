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
# The whole-program picture of a program of about 1,800 blocks in 100 routines, rendered to
# SVG by Graphviz: as drawn by default (the largest routines as one node each) and with every
# block drawn (--max-blocks 0; given up after 10 minutes).
"$bin" synth -q --images 2 --routines 50 --blocks 18 --threads 1 --steps 200000 -o "$dir/prog.dcfg.json"
"$bin" info "$dir/prog.dcfg.json" | grep -A2 '^  image'
run "$bin" dot -q "$dir/prog.dcfg.json" -o "$dir/prog.svg"
run timeout 600 "$bin" dot -q "$dir/prog.dcfg.json" --max-blocks 0 -o "$dir/prog-every-block.svg" || true
