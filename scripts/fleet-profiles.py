#!/usr/bin/env python3
"""Writes N generated profiles of a fleet, as services have them: every host samples the same
code, so the stacks of all profiles are drawn from one shared set (a few hosts' hot paths
differ), each profile holding SAMPLES samples.

Usage: scripts/fleet-profiles.py OUT_DIR N [SAMPLES] [FORMAT]
  OUT_DIR  a folder, made if missing: SERVICE/host0000.FORMAT ... SERVICE/host{N-1}.FORMAT, the
           hosts spread over four services (web, api, db, batch: host number modulo 4), so that
           `--label-from-path '{service}/{host}.FORMAT'` labels them
  N        how many profiles
  SAMPLES  samples per profile (default 100000)
  FORMAT   folded (default), or any format cfghub writes (pb.gz, speedscope.json, ...): the
           folded text is converted by target/release/cfghub (or $CFGHUB); several, comma-
           separated (folded,pb.gz,fxprof.json,stacks), take turns host by host; `stacks` is
           DTrace's aggregation output, written here

The stacks: 3,000 function names in 40 modules, 60,000 distinct paths of 8 to 32 frames
sharing their first frames (main, the request loop, the handlers), drawn per sample with a
Zipf-like weight so that a few paths are hot on every host. Seeded by the host's number:
the same N give the same files.
"""
import os
import random
import subprocess
import sys


def paths(rng):
    modules = [f"svc{m}" for m in range(40)]
    names = [f"{modules[i % 40]}::fn{i}" for i in range(3000)]
    roots = ["main", "runtime.main", "server.serve"]
    out = []
    for _ in range(60000):
        depth = rng.randint(8, 32)
        handler = rng.randrange(60)
        frames = roots + [f"handler{handler}"] + [names[rng.randrange(3000)] for _ in range(depth - 4)]
        out.append(";".join(frames))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_dir, n = sys.argv[1], int(sys.argv[2])
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
    fmts = (sys.argv[4] if len(sys.argv) > 4 else "folded").split(",")
    os.makedirs(out_dir, exist_ok=True)
    shared = paths(random.Random(1))
    weights = [1.0 / (k + 1) for k in range(len(shared))]
    cfghub = os.environ.get("CFGHUB") or os.path.join(os.path.dirname(__file__), "..", "target", "release", "cfghub")
    services = ["web", "api", "db", "batch"]
    for service in services[:n]:
        os.makedirs(os.path.join(out_dir, service), exist_ok=True)
    for host in range(n):
        rng = random.Random(1000 + host)
        fmt = fmts[(host // 4) % len(fmts)]
        where = os.path.join(out_dir, services[host % 4])
        counts = {}
        for p in rng.choices(shared, weights=weights, k=samples):
            counts[p] = counts.get(p, 0) + 1
        folded = os.path.join(where, f"host{host:04}.folded")
        with open(folded, "w") as f:
            for p, c in counts.items():
                f.write(f"{p} {c}\n")
        if fmt == "stacks":
            # DTrace's aggregation output (`dtrace -n 'profile-97 { @[ustack()] = count(); }'`):
            # each stack leaf first, indented, then its count, stacks apart by a blank line.
            with open(os.path.join(where, f"host{host:04}.stacks"), "w") as f:
                f.write("CPU     ID                    FUNCTION:NAME\n  1  75237                        :tick-10s\n\n")
                for p, c in counts.items():
                    f.write("\n")
                    for frame in reversed(p.split(";")):
                        f.write(f"              {frame}\n")
                    f.write(f"{c:>17}\n")
            os.remove(folded)
        elif fmt != "folded":
            target = os.path.join(where, f"host{host:04}.{fmt}")
            subprocess.run([cfghub, "-q", "convert", folded, "-o", target], check=True)
            os.remove(folded)


if __name__ == "__main__":
    main()
