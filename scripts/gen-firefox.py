#!/usr/bin/env python3
"""Writes a synthetic processed profile in samply's layout (version 49) of about SIZE_MB
megabytes of JSON: THREADS threads, each with its own tables (a stack prefix tree of random
depth over a few thousand functions at addresses in one library) and samples with times.

    scripts/gen-firefox.py OUT.json SIZE_MB [THREADS]
"""
import json, random, sys

def main():
    out, size_mb = sys.argv[1], float(sys.argv[2])
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    rng = random.Random(42)
    per_thread = int(size_mb * 1e6 / threads)
    funcs = 4000
    with open(out, 'w') as f:
        f.write('{"meta":{"preprocessedProfileVersion":49,"version":24,"interval":1,"product":"synthetic",'
                '"categories":[{"name":"Other","color":"grey","subcategories":["Other"]},'
                '{"name":"User","color":"yellow","subcategories":["Other"]}]},')
        f.write('"libs":[{"name":"app","path":"/opt/app/app","debugName":"app","debugPath":"/opt/app/app",'
                '"breakpadId":"0123456789ABCDEF0123456789ABCDEF0","codeId":"67452301ab89efcd","arch":null}],')
        f.write('"threads":[')
        for t in range(threads):
            if t:
                f.write(',')
            stacks = max(1000, per_thread // 150)
            samples = (per_thread - stacks * 14) // 18
            prefix = [None] + [rng.randrange(0, i) if rng.random() < 0.97 else None for i in range(1, stacks)]
            frame = [rng.randrange(funcs) for _ in range(stacks)]
            names = ['0x%x' % (0x1000 + 16 * i) for i in range(funcs)]
            stack_col = [rng.randrange(stacks) for _ in range(samples)]
            times = ['%.3f' % (i * 1.0 + rng.random() * 0.1) for i in range(samples)]
            thread = {
                'name': 'worker %d' % t, 'processName': 'app', 'pid': '1000', 'tid': str(1000 + t), 'isMainThread': t == 0,
                'stackTable': {'length': stacks, 'prefix': prefix, 'frame': frame},
                'frameTable': {'length': funcs, 'address': [0x1000 + 16 * i for i in range(funcs)],
                               'inlineDepth': [0] * funcs, 'category': [1] * funcs, 'subcategory': [0] * funcs,
                               'func': list(range(funcs)), 'nativeSymbol': [None] * funcs,
                               'innerWindowID': [None] * funcs, 'implementation': [None] * funcs,
                               'line': [None] * funcs, 'column': [None] * funcs},
                'funcTable': {'length': funcs, 'name': list(range(funcs)), 'isJS': [False] * funcs,
                              'relevantForJS': [False] * funcs, 'resource': [0] * funcs,
                              'fileName': [None] * funcs, 'lineNumber': [None] * funcs, 'columnNumber': [None] * funcs},
                'resourceTable': {'length': 1, 'lib': [0], 'name': [funcs], 'host': [None], 'type': [1]},
                'stringArray': names + ['app'],
                'samples': {'length': samples, 'weightType': 'samples', 'weight': None, 'stack': stack_col, 'time': []},
            }
            text = json.dumps(thread, separators=(',', ':'))
            text = text.replace('"time":[]', '"time":[' + ','.join(times) + ']')
            f.write(text)
        f.write(']}\n')

main()
