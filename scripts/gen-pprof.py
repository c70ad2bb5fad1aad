#!/usr/bin/env python3
"""Writes a synthetic uncompressed pprof profile.proto of about SIZE_MB megabytes:
FUNCS functions (one location each, ids 1..n), two sample types (samples/count,
cpu/nanoseconds) and samples whose stacks are 8 to 48 locations deep, drawn from a
pool of distinct stacks. With SAMPLES, exactly that many samples (SIZE_MB is then ignored).
Usage: gen-pprof.py OUT SIZE_MB [FUNCS [SAMPLES]]"""
import random
import sys


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def uint(number, v):
    return varint(number << 3) + varint(v)


def main():
    out, size_mb = sys.argv[1], float(sys.argv[2])
    funcs = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    samples = int(sys.argv[4]) if len(sys.argv) > 4 else None
    rng = random.Random(1)
    strings = ["", "samples", "count", "cpu", "nanoseconds", "/usr/bin/app", "app.go"]
    head = bytearray()
    head += field(1, uint(1, 1) + uint(2, 2))
    head += field(1, uint(1, 3) + uint(2, 4))
    tail = bytearray()
    tail += field(3, uint(1, 1) + uint(2, 0x400000) + uint(3, 0x800000) + uint(5, 5) + uint(7, 1))
    for i in range(1, funcs + 1):
        tail += field(4, uint(1, i) + uint(2, 1) + uint(3, 0x400000 + 16 * i) + field(4, uint(1, i) + uint(2, i % 900 + 1)))
    for i in range(1, funcs + 1):
        strings.append(f"app.(*Server).handler{i}")
        tail += field(5, uint(1, i) + uint(2, len(strings) - 1) + uint(3, len(strings) - 1) + uint(4, 6) + uint(5, i % 900 + 1))
    for s in strings:
        tail += field(6, s.encode())
    tail += uint(9, 1700000000000000000) + uint(10, 10_000_000_000)
    tail += field(11, uint(1, 3) + uint(2, 4)) + uint(12, 10_000_000)
    pool = []
    for _ in range(50000):
        depth = rng.randint(8, 48)
        locs = b"".join(varint(rng.randint(1, funcs)) for _ in range(depth))
        n = rng.randint(1, 5)
        values = varint(n) + varint(n * 10_000_000)
        pool.append(field(2, field(1, locs) + field(2, values)))
    target = int(size_mb * 1e6) - len(head) - len(tail)
    with open(out, "wb") as f:
        f.write(head)
        written = count = 0
        while (count < samples) if samples is not None else (written < target):
            k = 20000 if samples is None else min(20000, samples - count)
            chunk = b"".join(rng.choices(pool, k=k))
            f.write(chunk)
            written += len(chunk)
            count += k
        f.write(tail)


main()
