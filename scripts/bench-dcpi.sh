#!/usr/bin/env bash
# Times whole cfghub commands on DCPI inputs (release build), with /usr/bin/time -v:
#   1. reading a 100 MB DCPI binary profile (25 million slots): `cfghub convert BIG.dcpi -o BIG2.dcpi`
#      (read, check, build the model, write back) and `cfghub info BIG.dcpi`;
#   2. merging 10^7 sampled addresses into a synthetic DCFG of about 10^6 basic blocks.
# The library-level figures (decoding alone, reading into the model, the merge step alone) come
# from `cargo bench --bench dcpi`.
#
# Usage: scripts/bench-dcpi.sh [WORKDIR]   (needs python3; WORKDIR defaults to a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN="$PWD/target/release/cfghub"
WORK="${1:-$(mktemp -d)}"
mkdir -p "$WORK"
echo "work folder: $WORK"

timed() {
    echo "== $*"
    /usr/bin/time -v "$@" 2> "$WORK/time.txt" > /dev/null || { cat "$WORK/time.txt"; exit 1; }
    grep -E "Elapsed \(wall clock\)|Maximum resident set size" "$WORK/time.txt"
}

# 1. A 100 MB profile: chunks of 64 slots, 64-byte gaps, non-zero counts mostly.
python3 - "$WORK/big.dcpi" <<'PY'
import struct, sys, array
slots = 25_000_000
head = ("version pdb-0.07\nimage 19970328081403c0c18b\npath /usr/bin/app\nepoch 9805191724\n"
        "platform walnut\nevent cycles\nperiod 63488\ntstart 120000000\ntsize 4294967295\n"
        "cpuspeed 500\nsamples")
while (len(head) + 1) % 4:
    head += " "
head += "\n"
with open(sys.argv[1], "wb") as f:
    f.write(head.encode())
    counts = array.array("I", [(i * 2654435761 >> 20) & 0x3FF for i in range(64)])
    nz = sum(1 for c in counts if c) * (slots // 64)
    total = sum(counts) * (slots // 64)
    offset = 0
    for _ in range(slots // 64):
        f.write(struct.pack("<II", offset, 64))
        f.write(counts.tobytes())
        offset += 64 * 4 + 64
    f.write(struct.pack("<II", nz, total & 0xFFFFFFFF))
PY
ls -l "$WORK/big.dcpi"
timed "$BIN" -q convert "$WORK/big.dcpi" -o "$WORK/big2.dcpi"
cmp "$WORK/big.dcpi" "$WORK/big2.dcpi" && echo "byte-identical copy"
timed "$BIN" -q info "$WORK/big.dcpi"

# 2. About 10^6 blocks (one image), then 10^7 sampled addresses inside its blocks.
"$BIN" -q synth --images 1 --routines 20000 --blocks 50 --threads 1 --steps 2000000 -o "$WORK/big.dcfg.json"
"$BIN" -q info --json "$WORK/big.dcfg.json" > "$WORK/big.info.json"
python3 - "$WORK" <<'PY'
import json, struct, sys
work = sys.argv[1]
info = json.load(open(f"{work}/big.info.json"))
image = info["processes"][0]["images"][0]
print("graph:", image["blocks"], "blocks in", image["path"])
load = int(image["load_address"], 16)
size = image["size"] or 1 << 26
samples = 10_000_000
head = (f"version pdb-0.07\nimage 20240101000000000000\npath {image['path']}\nepoch 2401010000\n"
        f"platform x86_64\nevent cycles\nperiod 100000\ntstart {load:x}\ntsize {size}\ncpuspeed 3000\nsamples")
while (len(head) + 1) % 4:
    head += " "
head += "\n"
# Addresses spread evenly over the image, one byte apart at most: one chunk of 10^7 slots
# with --address-step 1 would be dense; use a step of 1 and chunks of 100 slots with gaps.
per_chunk, chunks = 100, samples // 100
gap = max(0, size // chunks - per_chunk)
with open(f"{work}/samples.dcpi", "wb") as f:
    f.write(head.encode())
    counts = struct.pack("<100I", *[1 + i % 7 for i in range(100)])
    offset = 0
    for _ in range(chunks):
        f.write(struct.pack("<II", offset, per_chunk))
        f.write(counts)
        offset += per_chunk + gap
    total = sum(1 + i % 7 for i in range(100)) * chunks
    f.write(struct.pack("<II", samples, total & 0xFFFFFFFF))
PY
timed "$BIN" -q merge "$WORK/big.dcfg.json" "$WORK/samples.dcpi" --address-step 1 -o "$WORK/merged.dcpi" --event cycles
timed "$BIN" -q info "$WORK/big.dcfg.json"
