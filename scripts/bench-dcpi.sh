#!/usr/bin/env bash
# Times whole cfghub commands on DCPI inputs (release build), with /usr/bin/time -v:
#   1. reading a 100 MB DCPI binary profile (25 million slots) into the model alone
#      (examples/load.rs), then `cfghub convert BIG.dcpi -o BIG2.dcpi` (read, check, build the
#      model, write back) and `cfghub info BIG.dcpi`;
#   2. merging 10^7 sampled addresses into a DCFG of 10^6 basic blocks (`cfghub merge`), beside
#      reading each input alone (`cfghub info`), which the merge includes.
# The library-level figures (decoding alone, reading into the model, the merge step alone) come
# from `cargo bench --bench dcpi`.
#
# Usage: scripts/bench-dcpi.sh [WORKDIR]   (needs python3; WORKDIR defaults to a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin cfghub --example load
BIN="$PWD/target/release/cfghub"
LOAD="$PWD/target/release/examples/load"
WORK="${1:-$(mktemp -d)}"
mkdir -p "$WORK"
echo "work folder: $WORK"

timed() {
    echo "== $*"
    /usr/bin/time -v "$@" 2> "$WORK/time.txt" > /dev/null || { cat "$WORK/time.txt"; exit 1; }
    grep -E "Elapsed \(wall clock\)|Maximum resident set size" "$WORK/time.txt"
}

# 1. A 100 MB profile: chunks of 64 slots, 64-byte gaps, non-zero counts mostly.
python3 scripts/gen-dcpi.py "$WORK/big.dcpi"
ls -l "$WORK/big.dcpi"
echo "== reading alone into the model (best of 3; target >= 500 MB/s)"
for _ in 1 2 3; do "$LOAD" "$WORK/big.dcpi"; done | sort -t= -k2 -n -r | head -1
timed "$BIN" -q convert "$WORK/big.dcpi" -o "$WORK/big2.dcpi"
cmp "$WORK/big.dcpi" "$WORK/big2.dcpi" && echo "byte-identical copy"
timed "$BIN" -q info "$WORK/big.dcpi"

# 2. A DCFG of 10^6 blocks (one image, 16 bytes and 4 instructions each, run once in a chain),
#    then 10^7 sampled addresses inside them (1-byte slots: chunks of 100 addresses, 60-byte gaps).
python3 - "$WORK" <<'PY'
import struct, sys
work = sys.argv[1]
blocks = 1_000_000
with open(f"{work}/big.dcfg.json", "w") as f:
    f.write('{ "MAJOR_VERSION" : 1, "MINOR_VERSION" : 0,\n'
            '  "FILE_NAMES" : [ [ "FILE_NAME_ID", "FILE_NAME" ], [ 1, "/usr/bin/app" ] ],\n'
            '  "EDGE_TYPES" : [ [ "EDGE_TYPE_ID", "EDGE_TYPE" ], [ 1, "ENTRY" ], [ 2, "EXIT" ], [ 18, "FALL_THROUGH" ] ],\n'
            '  "SPECIAL_NODES" : [ [ "NODE_ID", "NODE_NAME" ], [ 1, "START" ], [ 2, "END" ], [ 3, "UNKNOWN" ] ],\n'
            '  "PROCESSES" : [ [ "PROCESS_ID", "PROCESS_DATA" ], [ 1000, {\n'
            f'    "INSTR_COUNT_PER_THREAD" : [ {4 * blocks} ], "INSTR_COUNT" : {4 * blocks},\n'
            '    "IMAGES" : [ [ "IMAGE_ID", "LOAD_ADDR", "SIZE", "IMAGE_DATA" ],\n'
            f'      [ 1, "0x400000", {16 * blocks}, {{ "FILE_NAME_ID" : 1,\n'
            '        "BASIC_BLOCKS" : [ [ "NODE_ID", "ADDR_OFFSET", "SIZE", "NUM_INSTRS", "LAST_INSTR_OFFSET", "COUNT" ]')
    f.write("".join(f',\n          [ {i + 4}, "{16 * i:#x}", 16, 4, 12, 1 ]' for i in range(blocks)))
    f.write(' ] } ] ],\n    "EDGES" : [ [ "EDGE_ID", "SOURCE_NODE_ID", "TARGET_NODE_ID", "EDGE_TYPE_ID", "COUNT_PER_THREAD" ],\n'
            '      [ 1, 1, 4, 1, [ 1 ] ]')
    f.write("".join(f',\n      [ {i + 2}, {i + 4}, {i + 5}, 18, [ 1 ] ]' for i in range(blocks - 1)))
    f.write(f',\n      [ {blocks + 1}, {blocks + 3}, 2, 2, [ 1 ] ] ] }} ] ] }}\n')
samples, per_chunk, gap = 10_000_000, 100, 60
head = ("version pdb-0.07\nimage 20240101000000000000\npath /usr/bin/app\nepoch 2401010000\n"
        f"platform x86_64\nevent cycles\nperiod 100000\ntstart 400000\ntsize {16 * blocks}\ncpuspeed 3000\nsamples")
while (len(head) + 1) % 4:
    head += " "
head += "\n"
counts = [1 + i % 7 for i in range(per_chunk)]
packed = struct.pack(f"<{per_chunk}I", *counts)
with open(f"{work}/samples.dcpi", "wb") as f:
    f.write(head.encode())
    for c in range(samples // per_chunk):
        f.write(struct.pack("<II", c * (per_chunk + gap), per_chunk))
        f.write(packed)
    f.write(struct.pack("<II", samples, (sum(counts) * (samples // per_chunk)) & 0xFFFFFFFF))
PY
ls -l "$WORK/big.dcfg.json" "$WORK/samples.dcpi"
timed "$BIN" -q info "$WORK/big.dcfg.json"
timed "$BIN" -q info "$WORK/samples.dcpi" --address-step 1
timed "$BIN" -q merge "$WORK/big.dcfg.json" "$WORK/samples.dcpi" --address-step 1 -o "$WORK/merged.dcpi" --event cycles
