#!/usr/bin/env python3
"""BOLT's own block and edge counts for a profile without branch records, as fdata.

Reads what `llvm-bolt BINARY -data NOLBR.fdata -print-cfg --print-estimate-edge-counts`
prints on standard input and writes, for every function "after estimate-edge-counts", each
edge BOLT estimated as a branch record of BOLT's fdata (`1 FUNC FROM 1 FUNC TO 0 COUNT`, from
the block's last instruction to the successor's first), so that `cfghub overlap` can score
BOLT's estimate on the same grid as any other profile.
"""
import re
import sys

HEADER = re.compile(r'^Binary Function "([^"(]+)(?:\(\*\d+\))?" after estimate-edge-counts \{')
BLOCK = re.compile(r'^(\.L\S+) \(\d+ instructions')
INSTRUCTION = re.compile(r'^\s+([0-9a-f]{8}):\s+(\S+)')
SUCCESSORS = re.compile(r'^\s+Successors: (.*)$')
EDGE = re.compile(r'(\.L\S+) \(mispreds: \d+, count: (\d+)\)')


def main():
    function = None
    blocks = {}  # label -> [first offset, last offset, successors]
    order = []
    label = None

    def flush():
        if function is None:
            return
        for name in order:
            first, last, successors = blocks[name]
            if last is None:
                continue
            for target, count in successors:
                if count > 0 and target in blocks and blocks[target][0] is not None:
                    print(f"1 {function} {last:x} 1 {function} {blocks[target][0]:x} 0 {count}")

    for line in sys.stdin:
        m = HEADER.match(line)
        if m:
            flush()
            function, blocks, order, label = m.group(1), {}, [], None
            continue
        if function is None:
            continue
        if line.startswith('End of Function'):
            flush()
            function = None
            continue
        m = BLOCK.match(line)
        if m:
            label = m.group(1)
            blocks[label] = [None, None, []]
            order.append(label)
            continue
        if label is None:
            continue
        m = INSTRUCTION.match(line)
        if m and not m.group(2).startswith('!'):
            offset = int(m.group(1), 16)
            if blocks[label][0] is None:
                blocks[label][0] = offset
            if '# NOP' not in line:
                blocks[label][2 - 1] = offset
            continue
        m = SUCCESSORS.match(line)
        if m:
            blocks[label][2] = [(t, int(c)) for t, c in EDGE.findall(m.group(1))]
    flush()


if __name__ == '__main__':
    main()
