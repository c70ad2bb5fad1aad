#!/usr/bin/env python3
"""Adds up the branch stacks `perf script -F pid,brstack` prints, as perf2bolt does, on its own:
every entry `0xFROM/0xTO/FLAG/...` (newest first) is a taken branch, mispredicted when FLAG is
M; each consecutive pair, the older entry's TO to the newer entry's FROM, is code that ran
straight through. An entry between user space and the kernel (an interrupt, a system call and
their returns) is not a branch: it is left out and the user code's range runs across it, as
perf2bolt's -ignore-interrupt-lbr reads it; the kernel's own branches keep ranges of their own.
Prints one line per branch and range: `B PID FROM TO COUNT MISPRED` and
`F PID START END COUNT` (hex addresses), sorted."""
import collections
import subprocess
import sys

KERNEL = 0xffff800000000000
taken = collections.Counter()
mispredicted = collections.Counter()
ranges = collections.Counter()
out = subprocess.run(["perf", "script", "-F", "pid,brstack", "-i", sys.argv[1]],
                     capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    fields = line.split()
    if len(fields) < 2:
        continue
    pid = int(fields[0])
    newer = {False: None, True: None}  # the newer entry's source, in user space, in the kernel
    for entry in fields[1:]:
        parts = entry.split("/")
        src, dst = int(parts[0], 16), int(parts[1], 16)
        kernel = src >= KERNEL
        if kernel != (dst >= KERNEL):
            newer[True] = None
            continue
        if not kernel:
            newer[True] = None
        taken[(pid, src, dst)] += 1
        mispredicted[(pid, src, dst)] += parts[2] == "M"
        if newer[kernel] is not None:
            ranges[(pid, dst, newer[kernel])] += 1
        newer[kernel] = src
lines = [f"B {p} {a:x} {b:x} {n} {mispredicted[(p, a, b)]}" for (p, a, b), n in taken.items()]
lines += [f"F {p} {a:x} {b:x} {n}" for (p, a, b), n in ranges.items()]
print("\n".join(sorted(lines)))
