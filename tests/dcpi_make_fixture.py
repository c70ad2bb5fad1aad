#!/usr/bin/env python3
"""Writes DCPI binary profiles with Python's `struct`, independently of cfghub's writer,
following dcpiformat(4): an ASCII header ending in `samples` (padded with spaces so the
body starts at a multiple of 4), chunks `<offset u32> <number u32> <count u32>*number`
in increasing, non-overlapping order, and a footer `<addresses with samples> <sum>`,
all little-endian.

Beside each `NAME.dcpi` it writes `NAME.dcpi.expected/model.json`: what a reader must find
(header lines in order, version, event, period, tstart, tsize, path, the address step
the file was made for, and every slot as [offset from tstart, count]).

Usage: python3 tests/dcpi_make_fixture.py OUTDIR
"""

import json
import os
import struct
import sys


def profile(header_lines, chunks, step):
    text = "".join(f"{k} {v}\n" for k, v in header_lines) + "samples"
    while (len(text) + 1) % 4:
        text += " "
    text += "\n"
    body = b""
    slots = []
    nonzero = 0
    total = 0
    for offset, counts in chunks:
        body += struct.pack("<II", offset, len(counts))
        body += struct.pack(f"<{len(counts)}I", *counts)
        for i, c in enumerate(counts):
            slots.append([offset + i * step, c])
            nonzero += c != 0
            total += c
    body += struct.pack("<II", nonzero, total & 0xFFFFFFFF)
    return text.encode("ascii") + body, slots


def expected(header_lines, slots, step):
    h = dict()
    for k, v in header_lines:
        h.setdefault(k, v)
    major, minor = h["version"][len("pdb-"):].split(".")
    return {
        "headers": [[k, v] for k, v in header_lines],
        "version": [int(major), int(minor)],
        "event": h["event"],
        "period": int(h["period"]),
        "tstart": int(h["tstart"], 16),
        "tsize": int(h["tsize"]),
        "path": h.get("path"),
        "step": step,
        "samples": slots,
    }


CASES = {
    # A full 0.07 header with optional and unknown lines, chunks with zero counts inside,
    # gaps between chunks, and a large count.
    "alpha-cycles": (
        [
            ("version", "pdb-0.07"),
            ("image", "19970328081403c0c18b"),
            ("path", "/usr/local/bin/xemacs"),
            ("epoch", "9805191724"),
            ("platform", "walnut"),
            ("event", "cycles"),
            ("period", "63488"),
            ("tstart", "120000000"),
            ("tsize", "8388608"),
            ("cpuspeed", "500"),
            ("cpuamask", "1"),
            ("cpuimplv", "2"),
            ("cpucount", "1"),
            ("hostname", "walnut.pa.dec.com"),
            ("comment", "two words  and spacing"),
        ],
        [
            (0x6CBB8, [29]),
            (0x6CBD0, [10, 1, 2, 0, 3, 0, 2]),
            (0x70000, [0, 4000000000, 7]),
            (0x7FFFFC, [1]),
        ],
        4,
    ),
    # Version 0.06, no path, one chunk, header needing no padding.
    "v006-imiss": (
        [
            ("version", "pdb-0.06"),
            ("image", "19961203101112aabbcc"),
            ("epoch", "9612031011"),
            ("platform", "alpha21064"),
            ("event", "imiss"),
            ("period", "4096"),
            ("tstart", "12000A000"),
            ("tsize", "65536"),
            ("cpuspeed", "200"),
        ],
        [(0x40, [5, 6, 7, 8])],
        4,
    ),
    # Byte-granular slots (read with --address-step 1), and no chunks at all in a second file.
    "x86-step1": (
        [
            ("version", "pdb-0.07"),
            ("image", "20240101000000000000"),
            ("path", "/usr/bin/loop"),
            ("epoch", "20240101000000"),
            ("platform", "x86_64"),
            ("event", "cycles"),
            ("period", "100000"),
            ("tstart", "401000"),
            ("tsize", "4096"),
            ("cpuspeed", "3000"),
        ],
        [(0x10, [1, 0, 0, 2, 0, 3]), (0x20, [9])],
        1,
    ),
    "empty": (
        [
            ("version", "pdb-0.07"),
            ("image", "20240101000000000001"),
            ("epoch", "2401010000"),
            ("platform", "walnut"),
            ("event", "dmiss"),
            ("period", "4096"),
            ("tstart", "0"),
            ("tsize", "0"),
            ("cpuspeed", "500"),
        ],
        [],
        4,
    ),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "fixtures/dcpi"
    os.makedirs(out, exist_ok=True)
    for name, (header, chunks, step) in CASES.items():
        data, slots = profile(header, chunks, step)
        with open(os.path.join(out, name + ".dcpi"), "wb") as f:
            f.write(data)
        os.makedirs(os.path.join(out, name + ".dcpi.expected"), exist_ok=True)
        with open(os.path.join(out, name + ".dcpi.expected", "model.json"), "w") as f:
            json.dump(expected(header, slots, step), f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
