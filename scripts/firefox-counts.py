#!/usr/bin/env python3
"""Self samples per function of a samply profile, computed without cfghub: each sample's leaf
frame address (relative to its library) is resolved with binutils' addr2line against the
binary given, and samples are counted per function name. Frames in other libraries are counted
under the library's name. Prints `COUNT FUNCTION` lines, sorted by name.

    scripts/firefox-counts.py PROFILE.json.gz BINARY
"""
import gzip, json, subprocess, sys, collections, os

def main():
    profile_path, binary = sys.argv[1], sys.argv[2]
    opener = gzip.open if open(profile_path, 'rb').read(2) == b'\x1f\x8b' else open
    with opener(profile_path, 'rt') as f:
        p = json.load(f)
    libs = p['libs']
    # The lowest PT_LOAD address of the binary: samply's addresses are relative to it.
    base = None
    for line in subprocess.run(['readelf', '-lW', binary], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if parts[:1] == ['LOAD']:
            vaddr = int(parts[2], 16)
            base = vaddr if base is None else min(base, vaddr)
    base &= ~0xfff
    want = os.path.basename(binary)
    counts = collections.Counter()
    addresses = collections.Counter()
    for t in p['threads']:
        strings = t.get('stringArray') or p.get('shared', {}).get('stringArray')
        stacks, frames, funcs, res = t['stackTable'], t['frameTable'], t['funcTable'], t['resourceTable']
        weights = t['samples'].get('weight')
        for i, s in enumerate(t['samples']['stack']):
            w = weights[i] if weights else 1
            if s is None:
                counts['(no stack)'] += w
                continue
            fr = stacks['frame'][s]
            func = frames['func'][fr]
            r = funcs['resource'][func]
            lib = res['lib'][r] if r is not None and r >= 0 else None
            if lib is not None and libs[lib]['name'] == want and frames['address'][fr] >= 0:
                addresses[frames['address'][fr] + base] += w
            else:
                counts[libs[lib]['name'] if lib is not None else strings[funcs['name'][func]]] += w
    ordered = sorted(addresses)
    if ordered:
        out = subprocess.run(['addr2line', '-f', '-e', binary] + [hex(a) for a in ordered],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        for k, a in enumerate(ordered):
            counts[out[2 * k]] += addresses[a]
    for name in sorted(counts):
        print(counts[name], name)

main()
