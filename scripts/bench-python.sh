#!/usr/bin/env bash
# The Python module and the Spark job, against what a user would otherwise run:
#  1. `cfghub.read` of a 30 MB pprof against the command line's `cfghub info` of it (target:
#     within 10%; both include their start: the interpreter and the import, the process);
#  2. `cfghub.read(X).tables()` of the Pin-style DCFG of scripts/bench.sh (232 MB) against
#     `cfghub convert X -o X.tables` followed by `pyarrow.parquet.read_table` of every table
#     (target: no slower);
#  3. the Spark job (examples/spark/fleet.py, local[2]) on 200 generated profiles of four
#     formats against `cfghub merge` of the same files on the same 2 cores (target: at least half
#     its throughput), with the job's own parts: Spark's start, the conversion task, the writes.
# Needs the module installed (pip install ./python) and pyspark with a JDK for part 3
# (SPARK=0 leaves it out). SAMPLES (default 100000) sets the samples per generated profile.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --features tables --bin cfghub
CFGHUB=$PWD/target/release/cfghub
source scripts/bench-lib.sh
python3 -c 'import cfghub' || { echo "the module is not installed: pip install ./python" >&2; exit 1; }

echo "== Python: read"
pprof=$DATA/pprof-30MB.pb
[ -s "$pprof" ] || python3 scripts/gen-pprof.py "$pprof" 30
read -r ti ci mi < <(best 5 "$CFGHUB" info "$pprof")
read -r tp cp mp < <(best 5 python3 -c 'import cfghub, sys; cfghub.read(sys.argv[1])' "$pprof")
# The call alone, timed inside the interpreter (best of 5), and the interpreter's start.
tcall=$(python3 -c 'import cfghub, sys, time
best = 1e9
for _ in range(5):
    t = time.perf_counter(); cfghub.read(sys.argv[1]); best = min(best, time.perf_counter() - t)
print(best)' "$pprof")
read -r t0 _ _ < <(best 5 python3 -c 'import cfghub')
awk -v ti="$ti" -v ci="$ci" -v mi="$mi" -v tp="$tp" -v cp="$cp" -v mp="$mp" -v t0="$t0" -v tc="$tcall" -v s="$(stat -c %s "$pprof")" 'BEGIN{
  printf "%-40s %.1f MB: the call cfghub.read %.3f s, cfghub info %.3f s (cpu %.2f, peak %.0f MB): %.2fx (target <= 1.10)\n", "read a pprof", s/1e6, tc, ti, ci, mi, tc/ti
  printf "%-40s python3 -c \"cfghub.read(X)\" %.2f s (cpu %.2f, peak %.0f MB), of which the interpreter and import %.2f s\n", "", tp, cp, mp, t0 }'

echo "== Python: tables"
dcfg=${DCFG:-$DATA/synth-pin-style.dcfg.json}
[ -s "$dcfg" ] || $CFGHUB synth --pretty --images 4 --routines 14000 --blocks 24 --threads 2 --steps 28000000 -o "$dcfg"
tables=$DATA/bench-python.tables
read_back='import pyarrow.parquet as pq, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.parquet")): pq.read_table(f)'
cli_then_pyarrow() { "$CFGHUB" convert -q "$dcfg" -o "$tables" && python3 -c "$read_back" "$tables"; }
export -f cli_then_pyarrow
export CFGHUB dcfg tables read_back
read -r tc cc mc < <(best 3 bash -c cli_then_pyarrow)
read -r tm cm mm < <(best 3 python3 -c 'import cfghub, sys; cfghub.read(sys.argv[1]).tables()' "$dcfg")
awk -v tc="$tc" -v cc="$cc" -v mc="$mc" -v tm="$tm" -v cm="$cm" -v mm="$mm" -v s="$(stat -c %s "$dcfg")" 'BEGIN{
  printf "%-40s %.0f MB DCFG: cfghub.read().tables() %.2f s (cpu %.2f, peak %.0f MB), convert -o X.tables + pyarrow read_table %.2f s (cpu %.2f, peak %.0f MB of the two): %.2fx (target <= 1)\n", "tables as pyarrow", s/1e6, tm, cm, mm, tc, cc, mc, tm/tc }'
rm -rf "$tables"

if [ "${SPARK:-1}" != 0 ]; then
  echo "== Spark job, local[2], 200 profiles of four formats"
  samples=${SAMPLES:-100000}
  fleet=$DATA/spark-fleet-200-$samples
  [ -d "$fleet" ] || CFGHUB=$CFGHUB python3 scripts/fleet-profiles.py "$fleet" 200 "$samples" folded,pb.gz,fxprof.json,stacks
  mapfile -t files < <(find "$fleet" -type f | sort)
  bytes=$(cat "${files[@]}" | wc -c)
  out=$DATA/spark-fleet.tables
  read -r tg cg mg < <(best 3 taskset -c 0,1 "$CFGHUB" -q merge "${files[@]}" -o "$DATA/spark-fleet-merged.pb.gz")
  read -r ts cs _ < <(best 2 taskset -c 0,1 python3 examples/spark/fleet.py "$fleet" "$out" --master 'local[2]' --json)
  # Spark's own start and stop: the same job on no input (an empty folder).
  empty=$(mktemp -d)
  read -r te _ _ < <(best 2 taskset -c 0,1 python3 -c '
import sys
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
s.read.format("binaryFile").load(sys.argv[1]).count(); s.stop()' "$empty")
  rmdir "$empty"
  awk -v tg="$tg" -v cg="$cg" -v ts="$ts" -v cs="$cs" -v te="$te" -v b="$bytes" 'BEGIN{
    printf "%-40s %.0f MB: cfghub merge %.2f s (cpu %.2f) = %.1f MB/s; Spark job %.2f s = %.1f MB/s: %.2f of merge'"'"'s throughput (target >= 0.5); Spark'"'"'s start and stop alone %.2f s, the job without them %.2f s = %.2f of merge'"'"'s\n", "convert and sum a fleet", b/1e6, tg, cg, b/1e6/tg, ts, b/1e6/ts, tg/ts, te, ts-te, tg/(ts-te) }'
  rm -rf "$out"
fi
