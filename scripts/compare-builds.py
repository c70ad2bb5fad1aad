#!/usr/bin/env python3
"""Runs two builds of cfghub side by side on every input it finds and reports every difference in
what they print, write and exit with: `info` (text and JSON), `validate`, `convert` to every
writable format, `dot` views, `diff`, `trace stats` and `merge` (each input with itself; most
inputs are refused by some of these, and the refusals are compared too). For refactors that promise byte-identical outputs.

    python3 scripts/compare-builds.py OLD_BINARY NEW_BINARY [INPUT_DIR ...]

INPUT_DIRs default to fixtures/ and ../shared/fixtures. Exit 1 when anything differs."""
import filecmp, os, subprocess, sys, tempfile

def writers(binary):
    out = subprocess.run([binary, "formats"], capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines()[1:]:
        parts = line.split()
        if len(parts) > 2 and parts[2] == "yes":
            names.append(parts[0])
    return names

EXT = {"dcfg": ".dcfg.json", "callgrind": ".callgrind", "csi": ".debug_PT", "dcpi": ".dcpi",
       "dcpicat": ".dcpicat", "dot": ".dot", "graphml": ".graphml", "firefox": ".fxprof.json",
       "pprof": ".pb", "speedscope": ".speedscope.json", "fdata": ".fdata", "bolt-pa": ".pa",
       "llvm-sample": ".prof", "llvm-unsymbolized": ".rawprof", "folded": ".folded", "svg": ".svg",
       "tables": ".tables"}

def run(binary, args, workdir):
    """Exit code, stdout, stderr and the bytes of every file under workdir/out."""
    out_dir = os.path.join(workdir, "out")
    subprocess.run(["rm", "-rf", out_dir]); os.makedirs(out_dir)
    args = [a.replace("@OUT@", out_dir) for a in args]
    p = subprocess.run([binary] + args,
                       capture_output=True, timeout=300, cwd=workdir)
    files = {}
    for root, _, names in os.walk(out_dir):
        for n in names:
            path = os.path.join(root, n)
            files[os.path.relpath(path, out_dir)] = open(path, "rb").read()
    strip = lambda b: b.replace(out_dir.encode(), b"@OUT@")
    return p.returncode, strip(p.stdout), strip(p.stderr), files

def inputs(dirs):
    for d in dirs:
        for root, _, names in os.walk(d):
            for n in sorted(names):
                if n.endswith((".expected", ".json.expected", ".md", ".c", ".txt", ".py", ".cpp", ".go", ".h")) \
                        or ".expected" in n or n == "README":
                    continue
                path = os.path.join(root, n)
                if os.path.getsize(path) > 50_000_000:
                    continue
                yield os.path.abspath(path)

def main():
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = sys.argv[3:] or [os.path.join(here, "fixtures"), os.path.join(here, "..", "shared", "fixtures")]
    names = writers(old)
    assert names == writers(new), "the builds write different formats"
    cases = 0
    differ = []
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        for path in inputs(dirs):
            commands = [["info", path], ["info", "--json", path], ["validate", path],
                        ["dot", path, "--callgraph", "-o", "@OUT@/cg.dot"],
                        ["dot", path, "--routine", "main", "-o", "@OUT@/main.dot"],
                        ["diff", path, path, "-o", "@OUT@/diff.svg"],
                        ["trace", "stats", path],
                        ["merge", path, path, "-o", "@OUT@/merged.callgrind"],
                        ["convert", path, "--event", "nosuch", "-o", "@OUT@/e.folded"],
                        ["dot", path, "--callgraph", "--event", "nosuch", "-o", "@OUT@/e.dot"]]
            commands += [["convert", path, "--to", w, "-o", "@OUT@/out" + EXT.get(w, "." + w)] for w in names]
            for args in commands:
                cases += 1
                r_old, r_new = run(old, args, a), run(new, args, b)
                if r_old != r_new:
                    what = [k for k, x, y in zip(("exit", "stdout", "stderr", "files"), r_old, r_new) if x != y]
                    differ.append(f"{' '.join(args)}: {', '.join(what)}")
                    print(differ[-1], flush=True)
    print(f"{cases} runs, {len(differ)} differ")
    sys.exit(1 if differ else 0)

main()
