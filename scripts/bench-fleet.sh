#!/usr/bin/env bash
# A fleet of generated profiles (scripts/fleet-profiles.py: shared stacks, four services),
# N of them (default 1000) of SAMPLES samples each (default 100000), as pprof files of about
# 1 MB:
#  1. merging them: `cfghub merge` against `go tool pprof -proto` (target: 5x faster, peak
#     under 1 GiB);
#  2. adding each to a fleet of tables (`cfghub convert F --label-from-path ... -o fleet.tables/`),
#     the time per profile against `cfghub info F` (writing tables was 1.95x info), and the
#     tables' size against the inputs';
#  3. the fleet's queries (top 20 functions by self value, totals per service) in DuckDB
#     (target: under 10 s on 2 cores) and Spark (local[2]), checked equal to cfghub merge's;
#  4. DuckDB's aggregate of the fleet read back into cfghub: its pprof `-top` equal to the
#     merge's.
# Usage: scripts/bench-fleet.sh [N] [SAMPLES]   (GO=0 skips go tool pprof, SPARK=0 Spark, MERGE=0
# cfghub merge when its output is there)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
SAMPLES=${2:-100000}
DATA=${DATA:-target/bench-data}/fleet-$N-$SAMPLES
cargo build --release --quiet --features tables --bin cfghub
CFGHUB=$PWD/target/release/cfghub
source scripts/bench-lib.sh

[ -f "$DATA/.done" ] || { rm -rf "$DATA/in"; python3 scripts/fleet-profiles.py "$DATA/in" "$N" "$SAMPLES" pb.gz && touch "$DATA/.done"; }
inputs=("$DATA"/in/*/*.pb.gz)
echo "== $N pprof files, $(du -sh "$DATA/in" | cut -f1) in all"

echo "-- merge (wall s, cpu s, peak MB)"
if [ "${MERGE:-1}" = 1 ] || [ ! -f "$DATA/merged.pb.gz" ]; then
  echo "cfghub merge:         $(best 1 "$CFGHUB" -q merge "${inputs[@]}" -o "$DATA/merged.pb.gz")"
fi
if [ "${GO:-1}" = 1 ]; then
  echo "go tool pprof -proto: $(best 1 sh -c 'go tool pprof -proto "$@" > '"$DATA"'/go.pb' sh "${inputs[@]}")"
fi

echo "-- one profile: info and conversion to a fleet of tables (wall s, cpu s, peak MB)"
one=${inputs[0]}
echo "info:                 $(best 3 "$CFGHUB" -q info "$one")"
echo "convert -o single.tables: $(best 3 "$CFGHUB" -q convert "$one" -o "$DATA/single.tables")"
rm -rf "$DATA/fleet.tables"
start=$(date +%s.%N)
"$CFGHUB" -q convert "$one" --label-from-path '{service}/{host}.pb.gz' --partition-by service -o "$DATA/fleet.tables"
for f in "${inputs[@]:1}"; do
  "$CFGHUB" -q convert "$f" --label-from-path '{service}/{host}.pb.gz' -o "$DATA/fleet.tables"
done
end=$(date +%s.%N)
echo "adding all $N to the fleet: $(awk "BEGIN{printf \"%.1f s, %.3f s a profile\", $end - $start, ($end - $start) / $N}")"
echo "distinct call paths: $(python3 -c "import duckdb,sys; print(duckdb.sql(\"select count(*), count(distinct node) from read_parquet('$DATA/fleet.tables/stack_nodes/**/*.parquet')\").fetchall())")"
echo "sizes: inputs $(du -sb "$DATA/in" | cut -f1) bytes, fleet tables $(du -sb "$DATA/fleet.tables" | cut -f1) bytes, of which samples $(du -sb "$DATA/fleet.tables/samples" | cut -f1), stack_nodes $(du -sb "$DATA/fleet.tables/stack_nodes" | cut -f1), frames $(du -sb "$DATA/fleet.tables/frames" | cut -f1)"

echo "-- queries"
start=$(date +%s.%N)
python3 tests/real_clients/tables/fleet.py duckdb "$DATA/fleet.tables" > "$DATA/duckdb.json"
end=$(date +%s.%N)
echo "duckdb: $(awk "BEGIN{printf \"%.1f s\", $end - $start}")"
if [ "${SPARK:-1}" = 1 ]; then
  start=$(date +%s.%N)
  python3 tests/real_clients/tables/fleet.py spark "$DATA/fleet.tables" 2>/dev/null > "$DATA/spark.json"
  end=$(date +%s.%N)
  echo "spark local[2]: $(awk "BEGIN{printf \"%.1f s\", $end - $start}")"
  cmp "$DATA/duckdb.json" "$DATA/spark.json" && echo "spark's answers equal duckdb's"
fi
"$CFGHUB" -q convert "$DATA/merged.pb.gz" -o "$DATA/merged.folded"
python3 - "$DATA/merged.folded" "$DATA/duckdb.json" <<'PY'
import json, sys
sums = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    stack, value = line.rsplit(" ", 1)
    leaf = stack.rsplit(";", 1)[-1]
    sums[leaf] = sums.get(leaf, 0) + int(value)
top = sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
got = json.load(open(sys.argv[2]))["top"]
assert [list(t) for t in top] == got, (top[:3], got[:3])
print("duckdb's top 20 equal cfghub merge's")
PY

echo "-- DuckDB's aggregate back into cfghub"
rm -rf "$DATA/top.tables"; mkdir "$DATA/top.tables"
(cd "$DATA" && python3 - <<'PY'
import duckdb
c = duckdb.connect()
t = lambda n: f"read_parquet('fleet.tables/{n}/**/*.parquet')"
c.execute(f"copy (select node, event, sum(value)::BIGINT as value from {t('samples')} group by all) to 'top.tables/samples.parquet'")
c.execute(f"copy (select distinct process, node, parent, frame from {t('stack_nodes')}) to 'top.tables/stack_nodes.parquet'")
c.execute(f"copy (select distinct frame, name from {t('frames')}) to 'top.tables/frames.parquet'")
PY
)
"$CFGHUB" -q convert "$DATA/top.tables" -o "$DATA/top.pb.gz"
diff <(go tool pprof -top -nodecount=100000 "$DATA/top.pb.gz" 2>/dev/null | sed -n '/flat%/,$p') \
     <(go tool pprof -top -nodecount=100000 "$DATA/merged.pb.gz" 2>/dev/null | sed -n '/flat%/,$p') >/dev/null \
  && echo "go tool pprof -top of the aggregate equals the merge's"
