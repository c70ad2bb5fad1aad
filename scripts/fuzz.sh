#!/usr/bin/env bash
# Runs every fuzz target (fuzz/src/bin/*.rs) for SECONDS each (default 60), one after the
# other, or only the targets named after SECONDS:
#
#   scripts/fuzz.sh                 # every target, a minute each
#   scripts/fuzz.sh 600 dcfg perf   # two targets, ten minutes each
#
# Each target's corpus (fuzz/corpus/<target>, not committed) is first seeded with the files its
# `//! seeds:` line names: `fixtures/...` in this checkout, `shared/...` in ../shared/fixtures
# (CFGHUB_SHARED overrides ../shared; absent folders are skipped with a message). libFuzzer
# runs in fork mode and goes on past a finding: every crash, timeout or out-of-memory input is
# kept in fuzz/artifacts/<target>/ and becomes a regression test in tests/bad_input/.
# Limits: a run of one input past TIMEOUT seconds (default 20), an allocation past
# MALLOC_MB (default 1024) or a resident size past RSS_MB (default 2048) is a finding.
# PARALLEL=N runs N targets at a time (default 1; each runs one libFuzzer job). BUILD=0 reuses
# the targets built last time instead of building them first.
# The last line per target gives executions and findings; the exit status is 1 when any target
# found something. Needs the nightly toolchain; installs cargo-fuzz when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
shared=${CFGHUB_SHARED:-../shared}/fixtures

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz" >&2
  cargo install --quiet --locked cargo-fuzz
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in fuzz/src/bin/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

# Copies the files a target's `//! seeds:` line names into its corpus.
seed() {
  local target=$1 corpus=fuzz/corpus/$1 entry path
  mkdir -p "$corpus"
  for entry in $(sed -n 's|^//! seeds:||p' "fuzz/src/bin/$target.rs"); do
    case $entry in
      shared/*) path=$shared/${entry#shared/} ;;
      *) path=$entry ;;
    esac
    if [ ! -e "$path" ]; then
      echo "fuzz.sh: $target: seed $path is absent, skipped" >&2
      continue
    fi
    # Each file is named by its seed path, slashes as underscores (two seeds may share a base
    # name). No empty braces here: this function runs through `xargs -I{}`, which replaces them.
    find "$path" -type f -size -2M -print0 | while IFS= read -r -d '' file; do
      copy=$corpus/$(printf '%s' "$entry${file#"$path"}" | tr / _)
      [ -e "$copy" ] && continue
      if [ "$target" = tables ]; then
        # A table is a member of its own: `NAME SIZE` on a line, then the file.
        case $file in *.parquet) ;; *) continue ;; esac
        { printf '%s %s\n' "$(basename "$file" .parquet)" "$(wc -c <"$file")"; cat "$file"; } >"$copy"
      else
        cp "$file" "$copy"
      fi
    done
  done
  # The symbolizer's seeds are ELF files with DWARF, compiled from the C sources it names.
  if [ "${target%-at}" = symbols ] && command -v cc >/dev/null; then
    for c in "$corpus"/*.c; do
      [ -e "$c" ] || continue
      cc -g -O2 -o "${c%.c}-O2.elf" "$c" 2>/dev/null || true
      cc -g -O0 -o "${c%.c}-O0.elf" "$c" 2>/dev/null || true
    done
  fi
  # symbols-at: the same files behind a count byte and addresses inside them (their first
  # function symbols).
  if [ "$target" = symbols-at ] && command -v nm >/dev/null; then
    for elf in "$corpus"/*.elf; do
      [ -e "$elf" ] || continue
      nm "$elf" 2>/dev/null | awk '$2 ~ /^[tT]$/ {print $1}' | head -8 | python3 -c '
import struct, sys
addrs = [int(l, 16) + 4 for l in sys.stdin if l.strip()]
sys.stdout.buffer.write(bytes([len(addrs)]) + b"".join(struct.pack("<Q", a) for a in addrs))
' > "$elf.at" && cat "$elf" >> "$elf.at" && rm -f "$elf"
    done
  fi
  # csi-elf: each text behind a flag byte, as is and to be compressed.
  if [ "$target" = csi-elf ]; then
    for t in "$corpus"/*; do
      case $t in *.z|*.raw) continue ;; esac
      { printf '\001'; cat "$t"; } > "$t.z" && { printf '\000'; cat "$t"; } > "$t.raw" && rm -f "$t"
    done
  fi
}

[ "${BUILD:-1}" = 0 ] || cargo +nightly fuzz build
bin=fuzz/target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release
mkdir -p fuzz/logs

# Runs one target for $seconds; prints its executions and findings.
run() {
  local target=$1 log=fuzz/logs/$1.log execs findings
  seed "$target"
  mkdir -p "fuzz/artifacts/$target"
  "$bin/$target" "fuzz/corpus/$target" \
    -max_total_time="$seconds" -timeout="${TIMEOUT:-20}" \
    -malloc_limit_mb="${MALLOC_MB:-1024}" -rss_limit_mb="${RSS_MB:-2048}" \
    -max_len=65536 -detect_leaks=0 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -artifact_prefix="fuzz/artifacts/$target/" >"$log" 2>&1 || true
  execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  findings=$(find "fuzz/artifacts/$target" -type f | wc -l)
  echo "$target: ${execs:-0} executions in ${seconds}s, $findings finding(s) in fuzz/artifacts/$target (log $log)"
}

for target in "${targets[@]}"; do
  [ -x "$bin/$target" ] || { echo "fuzz.sh: no target $target (built in $bin?)" >&2; exit 2; }
done
printf '%s\n' "${targets[@]}" | xargs -P "${PARALLEL:-1}" -I{} bash -c "$(declare -f seed run); bin=$bin seconds=$seconds shared=$shared; run {}" \
  | tee fuzz/logs/summary.txt
! grep -q ', [1-9][0-9]* finding' fuzz/logs/summary.txt
