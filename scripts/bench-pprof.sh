#!/usr/bin/env bash
# pprof profile.proto, timing whole reads and writes against the tools a user would otherwise run:
#  1. reading a 100 MB uncompressed profile.proto (target >= 100 MB/s), beside `go tool pprof -top`;
#  2. writing 10^6 samples (target < 1 s), beside `go tool pprof -proto` rewriting the same file;
#  3. reading the gzip form against `gzip -dc` of it (target: no more than 1.15x).
# Called by scripts/bench.sh (which exports CFGHUB, LOAD, DATA and best_of) or on its own.
# Wall times on a shared machine vary with its load: CPU seconds (user+sys) are printed too.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-target/bench-data}
mkdir -p "$DATA"
cargo build --release --quiet --bin cfghub --example load --example write
LOAD=target/release/examples/load
WRITE=target/release/examples/write

source scripts/bench-lib.sh

big=$DATA/pprof-100MB.pb
million=$DATA/pprof-1M-samples.pb
[ -s "$big" ] || python3 scripts/gen-pprof.py "$big" 100
[ -s "$big.gz" ] || gzip -6 -k "$big"
[ -s "$million" ] || python3 scripts/gen-pprof.py "$million" 0 5000 1000000

gohome=$(mktemp -d)
trap 'rm -rf "$gohome"' EXIT
go_env=(env HOME="$gohome" GOPATH="$gohome/gopath" GOCACHE="$gohome/gocache" GOPROXY=off GOTOOLCHAIN=local
        PPROF_TMPDIR="$gohome")

echo "== pprof"
size=$(stat -c %s "$big")
read -r t c _ < <(best 3 "$LOAD" "$big")
awk -v s="$size" -v t="$t" -v c="$c" 'BEGIN{ printf "%-28s %6.1f MB  read %.2f s = %4.0f MB/s (target >= 100); cpu %.2f s\n", "pprof-100MB.pb", s/1e6, t, s/1e6/t, c }'
if command -v go >/dev/null; then
  read -r tg cg _ < <(best 1 "${go_env[@]}" go tool pprof -top -symbolize=none "$big")
  awk -v t="$t" -v tg="$tg" -v cg="$cg" 'BEGIN{ printf "%-28s go tool pprof -top %.2f s (cpu %.2f s): cfghub reads %.1fx faster\n", "", tg, cg, tg/t }'
fi

out=$(mktemp -d)
read -r tw _ _ < <(best 3 "$WRITE" "$million" "$out/out.pb")
"$WRITE" "$million" "$out/out.pb" | sed 's/^/  /'
awk -v t="$tw" 'BEGIN{ printf "%-28s load + write %.2f s\n", "pprof-1M-samples.pb", t }'
if command -v go >/dev/null; then
  read -r tg _ _ < <(best 1 "${go_env[@]}" go tool pprof -proto -symbolize=none -output "$out/go.pb.gz" "$million")
  awk -v tg="$tg" 'BEGIN{ printf "%-28s go tool pprof -proto (read + write) %.2f s\n", "", tg }'
fi
rm -rf "$out"

read -r tz cz _ < <(best 3 gzip -dc "$big.gz")
read -r tc cc _ < <(best 3 "$LOAD" "$big.gz")
awk -v tz="$tz" -v tc="$tc" -v cz="$cz" -v cc="$cc" 'BEGIN{ printf "%-28s gzip -dc %.2f s (cpu %.2f), cfghub read %.2f s (cpu %.2f): ratio %.2f (target <= 1.15)\n", "pprof-100MB.pb.gz", tz, cz, tc, cc, tc/tz }'
