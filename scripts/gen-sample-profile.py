#!/usr/bin/env python3
"""Writes a synthetic LLVM text sample profile of about SIZE megabytes, for timing
`cfghub overlap` against `llvm-profdata overlap --sample` on big files.

Usage: gen-sample-profile.py SIZE_MB SEED OUT

Functions of 20 to 200 body lines (some with discriminators and call targets), with inlined
call sites two deep. One seed gives one file; two seeds give two profiles of one program:
the same function names and lines (seed 1's), counts drawn anew and a tenth of the functions
only in one of them.
"""
import random
import sys


def main():
    size_mb, seed, out = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    shape = random.Random(1)  # the program: names and lines
    counts = random.Random(seed)  # the run: counts
    target = int(size_mb * 1_000_000)
    written = 0
    f_index = 0
    with open(out, "w") as o:
        while written < target:
            f_index += 1
            lines = shape.randrange(20, 200)
            offsets = sorted(shape.sample(range(0, 2000), lines))
            inlined = shape.randrange(0, 4)
            # A tenth of the functions run in one of two runs only.
            skipped = shape.random() < 0.1 and f_index % 2 != seed % 2
            name = f"_ZN4app{f_index}7processEv"
            body = []
            total = 0
            for off in offsets:
                count = counts.randrange(1, 1_000_000) if counts.random() < 0.9 else 0
                at = f"{off}.{shape.randrange(1, 8)}" if shape.random() < 0.15 else str(off)
                calls = ""
                if shape.random() < 0.1:
                    calls = f" _ZN4app{shape.randrange(1, 100000)}4leafEv:{counts.randrange(1, 1000)}"
                body.append(f" {at}: {count}{calls}\n")
                total += count
            for k in range(inlined):
                site = shape.randrange(0, 2000)
                inner = [f" {site}: _ZN3lib{k}{f_index % 997}6helperEv:{counts.randrange(1, 100000)}\n"]
                for off in sorted(shape.sample(range(0, 50), shape.randrange(2, 12))):
                    inner.append(f"  {off}: {counts.randrange(1, 100000)}\n")
                inner.append(f"  7: _ZN3lib4deepEv:{counts.randrange(1, 1000)}\n   1: {counts.randrange(1, 1000)}\n")
                body.extend(inner)
            text = f"{name}:{total}:{counts.randrange(0, 10000)}\n" + "".join(body)
            if not skipped:
                o.write(text)
                written += len(text)


if __name__ == "__main__":
    main()
