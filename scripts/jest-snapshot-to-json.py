#!/usr/bin/env python3
"""Turns one value of a Jest snapshot file (`__snapshots__/*.snap`, pretty-format's notation:
`Object {`, `Array [`, trailing commas) into JSON. The Firefox Profiler's repository keeps the
profiles its upgrader produces as such snapshots; this makes processed profiles of the
versions it upgraded to, exactly as its own code wrote them.

    scripts/jest-snapshot-to-json.py FILE.snap 'EXPORT NAME SUBSTRING' > OUT.json
"""
import json, re, sys


def snapshot_values(text):
    """(name, body) of every `exports[`name`] = `body`;` in the file."""
    for m in re.finditer(r'^exports\[`(.*?)`\] = `\n(.*?)\n`;$', text, re.S | re.M):
        yield m.group(1), m.group(2)


def to_json(body):
    body = body.replace('\\`', '`')
    # Type names before containers (Object {, Array [, typed arrays) go; so do trailing commas.
    body = re.sub(r'\b[A-Z][A-Za-z0-9]* ([\[{])', r'\1', body)
    # A key whose value is `undefined` is absent from JSON; an `undefined` element is null.
    body = re.sub(r'^\s*"(?:[^"\\]|\\.)*": undefined,?$\n', '', body, flags=re.M)
    body = re.sub(r'\bundefined\b', 'null', body)
    body = re.sub(r',(\s*[\]}])', r'\1', body)
    return json.loads(body)


def main():
    path, want = sys.argv[1], sys.argv[2]
    with open(path, encoding='utf-8') as f:
        text = f.read()
    found = [(n, b) for n, b in snapshot_values(text) if want in n]
    if len(found) != 1:
        sys.exit(f'{len(found)} snapshots match {want!r}: ' + '; '.join(n for n, _ in found))
    json.dump(to_json(found[0][1]), sys.stdout, separators=(',', ':'), sort_keys=True)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
