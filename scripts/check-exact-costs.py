#!/usr/bin/env python3
"""Checks that cfghub's stack outputs of a Valgrind profile keep Valgrind's numbers.

    scripts/check-exact-costs.py PROFILE [CFGHUB]

Converts a Callgrind profile to folded stacks, pprof, speedscope and an SVG flame graph, reads
each back as its client reads it (folded lines as inferno reads them, `go tool pprof -raw` reads
the pprof, the speedscope JSON is read as speedscope reads it, the SVG's frames as inferno drew
them), and compares with `callgrind_annotate --inclusive=no --threshold=100`:
- the total of the first event equals the PROGRAM TOTALS line, in every output;
- every function's self cost equals its line, recursion levels (`fib'2`) counted with their
  function and functions of one name (static functions of several files) counted together,
  as frames of one name are, in folded stacks, pprof and speedscope. An SVG leaves out frames
  narrower than 0.1 pixel (inferno's `--minwidth`), so it is checked on its total only.

Prints the figures and the differing functions; exits 1 when anything differs.
Needs: callgrind_annotate (valgrind), go (go tool pprof).
"""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def base_name(function):
    """`fib'2` -> `fib` (Callgrind's names for recursion levels)."""
    m = re.fullmatch(r"(.+)'(\d+)", function)
    return m.group(1) if m else function


def annotate(profile):
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", profile],
        check=True, capture_output=True, text=True, cwd=os.path.dirname(os.path.abspath(profile)),
    ).stdout
    total, functions, listing = None, collections.Counter(), False
    for line in out.splitlines():
        t = line.strip()
        if t.endswith("PROGRAM TOTALS"):
            total = int(t.split()[0].replace(",", ""))
        elif t.endswith("file:function"):
            listing = True
        elif listing and t[:1].isdigit():
            cost = int(t.split()[0].replace(",", ""))
            rest = t.split(")  ", 1)[1]
            if rest.endswith("]") and " [" in rest:
                rest = rest[: rest.rindex(" [")]
            function = rest.split(":", 1)[1] if ":" in rest else rest
            functions[base_name(function)] += cost
        elif listing and t.startswith("--") and functions:
            break
    return total, functions


def folded_self(path):
    selfs = collections.Counter()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            stack, value = line.rsplit(" ", 1)
            selfs[stack.split(";")[-1]] += int(value)
    return selfs


def pprof_self(path):
    """Self costs as `go tool pprof -raw` lists the profile: each sample's first value goes to
    its leaf location's function (`-top` shortens C++ names, merging overloads)."""
    out = subprocess.run(
        ["go", "tool", "pprof", "-raw", path], check=True, capture_output=True, text=True,
    ).stdout
    section, samples, functions = None, [], {}
    for line in out.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:" and ":" in line and line.strip()[:1].isdigit():
            values, locations = line.split(":", 1)
            samples.append((int(values.split()[0]), int(locations.split()[0])))
        elif section == "Locations" and re.match(r"\s*\d+: ", line):
            # `ID: ADDRESS M=MAPPING NAME FILE:LINE s=START`, then `(SYSTEM_NAME)` when pprof
            # shows a shortened name (C++ parameters and templates left out).
            head, rest = line.strip().split(": ", 1)
            rest = rest.split(" ", 2)[2]
            m = re.match(r"^(.*?) (\S*:\d+) s=\d+(?:\((.*)\))?$", rest)
            functions[int(head)] = m.group(3) if m.group(3) is not None else m.group(1)
    selfs = collections.Counter()
    for value, leaf in samples:
        selfs[functions[leaf]] += value
    return selfs


def speedscope_self(path):
    with open(path) as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    selfs = collections.Counter()
    for profile in doc["profiles"][:1]:
        if profile["type"] == "sampled":
            for sample, weight in zip(profile["samples"], profile["weights"]):
                if sample:
                    selfs[frames[sample[-1]]["name"]] += weight
        else:
            stack, last = [], profile["startValue"]
            for ev in profile["events"]:
                if stack:
                    selfs[frames[stack[-1]]["name"]] += ev["at"] - last
                last = ev["at"]
                if ev["type"] == "O":
                    stack.append(ev["frame"])
                else:
                    stack.pop()
    return selfs


def svg_total(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    m = re.search(r'<title>all \([^<]*</title><rect [^>]*fg:w="(\d+)"', text)
    return int(m.group(1)) if m else 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    profile = sys.argv[1]
    cfghub = sys.argv[2] if len(sys.argv) > 2 else "cfghub"
    total, functions = annotate(profile)
    print(f"callgrind_annotate: total {total:,}, {len(functions)} functions")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, reader in [("folded", folded_self), ("pprof", pprof_self), ("speedscope", speedscope_self), ("svg", None)]:
            out = os.path.join(tmp, "out." + fmt)
            subprocess.run([cfghub, "convert", "-q", profile, "--to", fmt, "-o", out], check=True)
            if reader is None:
                got = svg_total(out)
                ok = got == total
                failed |= not ok
                print(f"{fmt:>10}: total {got:,} ({'equal' if ok else f'differs by {got - total:+,}'})")
                continue
            selfs = reader(out)
            got = sum(selfs.values())
            differing = sorted(
                (name for name in set(functions) | set(selfs) if functions.get(name, 0) != selfs.get(name, 0)),
                key=lambda n: -abs(functions.get(n, 0) - selfs.get(n, 0)),
            )
            ok = got == total and not differing
            failed |= not ok
            print(
                f"{fmt:>10}: total {got:,} ({'equal' if got == total else f'differs by {got - total:+,}'}); "
                f"{len(selfs)} functions, {len(differing)} with another self cost"
            )
            for name in differing[:10]:
                print(f"{'':>12}{name}: callgrind_annotate {functions.get(name, 0):,}, {fmt} {selfs.get(name, 0):,}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
