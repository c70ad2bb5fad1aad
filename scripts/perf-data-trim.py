#!/usr/bin/env python3
"""Cuts a perf.data file (file layout, little-endian, uncompressed) down to its first N samples:
samples after the first N and THROTTLE/UNTHROTTLE records (which say only when the kernel
slowed sampling down) are left out, every other record is kept, and the feature sections that
follow the records are moved up. Used to make small fixtures from large public recordings.

usage: perf-data-trim.py IN OUT N"""
import struct
import sys

SAMPLE = 9
THROTTLE, UNTHROTTLE = 5, 6


def main():
    src, dst, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = open(src, "rb").read()
    if data[:8] != b"PERFILE2" or struct.unpack_from("<Q", data, 8)[0] != 104:
        sys.exit("not a little-endian perf.data in the file layout")
    data_off, data_size = struct.unpack_from("<QQ", data, 40)
    records, at, samples = [], data_off, 0
    while at < data_off + data_size:
        kind, misc, size = struct.unpack_from("<IHH", data, at)
        if kind in (81, 83):
            sys.exit("compressed records: record without -z")
        if kind not in (SAMPLE, THROTTLE, UNTHROTTLE) or (kind == SAMPLE and samples < keep):
            records.append(data[at:at + size])
        samples += kind == SAMPLE
        at += size
    body = b"".join(records)
    delta = data_size - len(body)
    features = struct.unpack_from("<4Q", data, 72)
    nfeatures = sum(bin(w).count("1") for w in features)
    table_at = data_off + data_size
    table = bytearray(data[table_at:table_at + 16 * nfeatures])
    for i in range(nfeatures):
        off, size = struct.unpack_from("<QQ", table, 16 * i)
        if off >= table_at:
            struct.pack_into("<Q", table, 16 * i, off - delta)
    rest = data[table_at + 16 * nfeatures:]
    header = bytearray(data[:data_off])
    struct.pack_into("<Q", header, 48, len(body))
    open(dst, "wb").write(bytes(header) + body + bytes(table) + rest)


main()
