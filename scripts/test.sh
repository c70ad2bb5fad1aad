#!/usr/bin/env bash
# Runs the whole test suite, first installing the real programs the tests drive when they are
# missing: Graphviz (dot), valgrind (callgrind and callgrind_annotate), gcc, g++, bzip2, lbzip2 and
# pbzip2 (whose files cfghub must read), binutils (addr2line, objcopy, readelf, strip, nm, c++filt), dwz,
# Go (go tool pprof), Chromium, bolt-19, llvm-19 and clang-19 (llvm-bolt, perf2bolt, llvm-profgen,
# llvm-profdata, clang -fprofile-sample-use), groff (manual pages), script (bsdutils), a JDK and pyspark (Spark in local
# mode), python's networkx, pytest and the cfghub module itself (pip install ./python, which
# fetches maturin), the speedscope viewer (npm, under
# target/speedscope) and the Firefox Profiler's command-line client (npm, under
# target/firefox-profiler). Needs root for apt-get on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
need_apt=()
for tool in dot:graphviz valgrind:valgrind callgrind_annotate:valgrind gcc:gcc bzip2:bzip2 lbzip2:lbzip2 pbzip2:pbzip2 \
    addr2line:binutils objcopy:binutils readelf:binutils strip:binutils nm:binutils c++filt:binutils g++:g++ dwz:dwz \
    go:golang-go chromium:chromium perf:linux-perf \
    llvm-bolt-19:bolt-19 perf2bolt-19:bolt-19 llvm-profgen-19:llvm-19 llvm-profdata-19:llvm-19 clang-19:clang-19 \
    groff:groff-base script:bsdutils java:openjdk-17-jdk-headless; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need_apt+=("${tool##*:}")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
python3 -c 'import networkx' 2>/dev/null || python3 -m pip install --quiet networkx
# DuckDB, pyarrow and pandas read the Parquet tables (tests/real_clients/tables.rs).
python3 -c 'import duckdb, pyarrow, pandas' 2>/dev/null || python3 -m pip install --quiet duckdb pyarrow pandas
# Spark (local mode, on the JDK above) queries a fleet of tables (tests/real_clients/tables.rs).
python3 -c 'import pyspark' 2>/dev/null || python3 -m pip install --quiet pyspark
# The speedscope viewer's web build, outside the sources (tests/real_clients/speedscope.rs).
[ -f target/speedscope/node_modules/speedscope/dist/release/index.html ] \
  || npm install --silent --no-audit --no-fund --prefix target/speedscope speedscope@1.25.0 >/dev/null
# The Firefox Profiler's own command-line client (tests/real_clients/firefox.rs).
[ -x target/firefox-profiler/node_modules/.bin/profiler-cli ] \
  || npm install --silent --no-audit --no-fund --prefix target/firefox-profiler @firefox-devtools/profiler-cli@0.10.0 >/dev/null

cargo test --workspace --features tables "$@"

# The Python module (python/, built by maturin into this Python) and its tests (tests/python):
# the module against the command line just built, and the Spark job in local mode.
python3 -c 'import pytest' 2>/dev/null || python3 -m pip install --quiet pytest
python3 -m pip install --quiet ./python
cargo build --quiet --bin cfghub
CFGHUB="$PWD/target/debug/cfghub" python3 -m pytest -q tests/python
