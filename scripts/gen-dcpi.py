#!/usr/bin/env python3
"""Writes a DCPI binary profile of 25 million slots (103 MB) to PATH: chunks of 64 slots 4 bytes
apart, 64-byte gaps between chunks, counts from 0 to 1023 (most non-zero). SLOTS makes it
another size (2500000: 10 MB).

Usage: scripts/gen-dcpi.py PATH [SLOTS]"""
import struct, sys, array
if len(sys.argv) not in (2, 3) or sys.argv[1].startswith("-"):
    sys.exit(__doc__)
slots = int(sys.argv[2]) if len(sys.argv) == 3 else 25_000_000
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
