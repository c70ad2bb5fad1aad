#!/usr/bin/env bash
# Parquet tables, on the Pin-style DCFG that scripts/bench.sh generates (same generator, same
# file: 232 MB of pretty JSON today):
#  1. writing the tables (`cfghub convert X.dcfg.json -o X.tables/`): target <= 1.5x the time of
#     `cfghub info` on the DCFG (both read the DCFG; the writing is what the conversion adds);
#  2. reading them back (`load X.tables`): target <= reading the DCFG JSON (`load X.dcfg.json`);
#  3. beside them, what a user would otherwise run: DuckDB summing the block table, and
#     python3's json.load of the DCFG.
# Called by scripts/bench.sh (which exports CFGHUB, LOAD, DATA and best_of) or on its own.
# Wall times on a shared machine vary with its load: CPU seconds (user+sys) are printed too.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --features tables --bin cfghub --example load
CFGHUB=target/release/cfghub
LOAD=target/release/examples/load

source scripts/bench-lib.sh

# DCFG=path times another DCFG (e.g. a real Pin one); CPUS=0 or CPUS=0,1 pins every command
# to those cores (taskset), to compare one core with two.
dcfg=${DCFG:-$DATA/synth-pin-style.dcfg.json}
tables=$DATA/$(basename "$dcfg" .dcfg.json).tables
PIN=()
if [ -n "${CPUS:-}" ]; then PIN=(taskset -c "$CPUS"); fi
# The generator and arguments of scripts/bench.sh's DCFG section.
[ -s "$dcfg" ] || [ -n "${DCFG:-}" ] || $CFGHUB synth --pretty --images 4 --routines 14000 --blocks 24 --threads 2 --steps 28000000 -o "$dcfg"

echo "== tables (Parquet)"
read -r ti ci mi < <(best 3 "${PIN[@]}" "$CFGHUB" info "$dcfg")
read -r tw cw mw < <(best 3 "${PIN[@]}" "$CFGHUB" convert -q "$dcfg" -o "$tables")
size=$(du -sb "$tables" | cut -f1)
awk -v ti="$ti" -v ci="$ci" -v mi="$mi" -v tw="$tw" -v cw="$cw" -v mw="$mw" -v s="$(stat -c %s "$dcfg")" -v o="$size" -v name="$(basename "$dcfg")" 'BEGIN{
  printf "%-34s %.1f MB DCFG -> %.1f MB of tables\n", name, s/1e6, o/1e6
  printf "%-34s write %.2f s (cpu %.2f, peak %.0f MB), info %.2f s (cpu %.2f, peak %.0f MB): %.2fx wall, %.2fx cpu (target <= 1.5)\n", "convert -o X.tables vs info", tw, cw, mw, ti, ci, mi, tw/ti, cw/ci }'
read -r tr cr mr < <(best 3 "${PIN[@]}" "$LOAD" "$tables")
read -r tj cj mj < <(best 3 "${PIN[@]}" "$LOAD" "$dcfg")
awk -v tr="$tr" -v cr="$cr" -v mr="$mr" -v tj="$tj" -v cj="$cj" -v mj="$mj" -v o="$size" 'BEGIN{
  printf "%-34s tables %.2f s (cpu %.2f, peak %.0f MB = %.1fx the tables), DCFG JSON %.2f s (cpu %.2f, peak %.0f MB): %.2fx wall, %.2fx cpu (target <= 1)\n", "read back (examples/load)", tr, cr, mr, mr*1e6/o, tj, cj, mj, tr/tj, cr/cj }'
if python3 -c 'import duckdb' 2>/dev/null; then
  read -r td _ < <(best 3 python3 -c "import duckdb,sys; duckdb.sql(f\"select sum(count*instrs) from '{sys.argv[1]}/blocks.parquet'\").fetchall()" "$tables")
  read -r tp _ < <(best 1 python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dcfg")
  awk -v td="$td" -v tp="$tp" 'BEGIN{ printf "%-34s DuckDB sum over blocks.parquet %.2f s; python3 json.load of the DCFG %.2f s\n", "what a user would otherwise run", td, tp }'
fi
