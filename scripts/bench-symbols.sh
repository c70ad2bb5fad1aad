#!/usr/bin/env bash
# Times symbolization of COUNT (default 100,000) sampled addresses of a real binary with DWARF (cfghub's own
# release build, built with line tables) side by side with the tools a user would otherwise run:
#   1. the whole `cfghub convert SAMPLES.dcpicat --symbols BINARY -o OUT.folded` (read, search,
#      look up every address with its inline chain, write the stacks);
#   2. GNU `addr2line -a -f -i -C -e BINARY` and `llvm-addr2line -a -f -i -C -e BINARY` on the
#      same addresses (sorted), read from a file;
#   3. opening the debug file: `cfghub info` of a one-address profile with --symbols.
# Best of 3 runs each, with the peak resident size of the fastest. Installs binutils and llvm
# when missing (Debian).
#
# Usage: [COUNT=1000000] [FUNCTIONS=1000000] scripts/bench-symbols.sh [WORKDIR]   (needs python3, gcc)
# COUNT=1000000 checks that a million addresses cost no more per address than 100,000, in
# memory that follows the debug information.
# FUNCTIONS=N samples another binary instead: one built here with gcc -g -no-pie from assembly of
# N small functions (one compilation unit, line tables, a DW_TAG_subprogram each; a million
# make an 84 MB ELF), one address in each function: the symbolizer's cost per function.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v addr2line >/dev/null 2>&1 || need+=(binutils)
command -v llvm-addr2line >/dev/null 2>&1 || need+=(llvm)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
cargo build --release --quiet --bin cfghub
BIN="$PWD/target/release/cfghub"
WORK="${1:-$(mktemp -d)}"
mkdir -p "$WORK"
# The binary whose addresses are sampled: a copy, so that rebuilding does not change it; or,
# with FUNCTIONS, a binary of that many functions.
TARGET="$WORK/cfghub-target"
if [ -n "${FUNCTIONS:-}" ]; then
  TARGET="$WORK/functions-$FUNCTIONS"
  if [ ! -f "$TARGET" ]; then
    python3 - "$WORK/functions.s" "$FUNCTIONS" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write(".text\n")
    for i in range(n):
        f.write(f".globl function_{i}\n.type function_{i}, @function\nfunction_{i}:\n"
                f"\tpush %rbp\n\tmov %rsp, %rbp\n\tpop %rbp\n\tret\n.size function_{i}, .-function_{i}\n")
    f.write(".globl main\n.type main, @function\nmain:\n\txor %eax, %eax\n\tret\n.size main, .-main\n")
PY
    gcc -g -no-pie -Wl,-z,noexecstack -o "$TARGET" "$WORK/functions.s"
    rm -f "$WORK/functions.s"
  fi
  COUNT=$(nm -S --defined-only "$TARGET" | awk 'NF >= 4 && $3 ~ /^[tTwW]$/ && $2 !~ /^0+$/' | wc -l)
else
  cp "$BIN" "$TARGET"
fi

# 100,000 distinct addresses inside function symbols, as a dcpicat dump (text_start: the
# executable segment, so runtime and stated addresses agree) and as a list for addr2line.
COUNT=${COUNT:-100000}
python3 - "$TARGET" "$WORK" "$COUNT" <<'PY'
import random, subprocess, sys
target, work, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
syms = []
for line in subprocess.run(["nm", "-S", "--defined-only", target], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) >= 4 and f[2] in "tTwW":
        syms.append((int(f[0], 16), int(f[1], 16)))
syms = [s for s in syms if s[1] > 0]
text = None
for line in subprocess.run(["readelf", "-lW", target], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if f and f[0] == "LOAD" and "E" in f[6:-1]:
        text = int(f[2], 16)
        break
rng = random.Random(7)
weights = [s[1] for s in syms]
picked = set()
if count >= len(syms):
    # One address in each function (its second byte).
    picked = {a + 1 for a, n in syms}
while len(picked) < count:
    for a, n in rng.choices(syms, weights=weights, k=10_000):
        picked.add(a + rng.randrange(n))
addrs = sorted(picked)[:count]
with open(f"{work}/addresses.txt", "w") as f:
    f.writelines(f"{a:#x}\n" for a in addrs)
with open(f"{work}/samples.dcpicat", "w") as f:
    f.write(f"name bench\nimage 1\npath {target}\nepoch 202611230000\nplatform x86_64\n")
    f.write(f"text_start {text:#014x}\ntext_size 0x000010000000\nevent {len(addrs)} cycles:63488:10000\n")
    f.writelines(f"{a:#014x} 1\n" for a in addrs)
with open(f"{work}/one.dcpicat", "w") as f:
    f.write(f"name bench\nimage 1\npath {target}\nepoch 202611230000\nplatform x86_64\n")
    f.write(f"text_start {text:#014x}\ntext_size 0x000010000000\nevent 1 cycles:63488:10000\n{addrs[0]:#014x} 1\n")
PY

# best_of CMD...: "wall cpu rss" of the fastest of 3 runs (cpu: user + system seconds; rss:
# peak resident MiB); on a loaded machine the processor time says more than the wall clock.
best_of() {
  local best="" cpu="" rss=""
  for _ in 1 2 3; do
    local tmp; tmp=$(mktemp)
    /usr/bin/time -f "%e %U %S %M" -o "$tmp" "$@" > /dev/null 2>&1 || { echo "failed: $*" >&2; rm -f "$tmp"; return 1; }
    local t u s m; read -r t u s m < <(tail -1 "$tmp"); rm -f "$tmp"
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{print u + s}'); rss=$((m / 1024)); fi
  done
  echo "$best $cpu $rss"
}

echo "== symbolization: $COUNT sorted addresses of $(basename "$TARGET") ($(stat -c %s "$TARGET") bytes), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
read -r t_cfg c_cfg m_cfg < <(best_of "$BIN" convert -q "$WORK/samples.dcpicat" --symbols "$TARGET" -o "$WORK/out.folded")
read -r t_bare c_bare m_bare < <(best_of "$BIN" convert -q "$WORK/samples.dcpicat" -o "$WORK/bare.folded")
read -r t_gnu c_gnu m_gnu < <(best_of sh -c "addr2line -a -f -i -C -e '$TARGET' < '$WORK/addresses.txt'")
read -r t_llvm c_llvm m_llvm < <(best_of sh -c "llvm-addr2line -a -f -i -C -e '$TARGET' < '$WORK/addresses.txt'")
read -r t_open _ < <(best_of "$BIN" info -q "$WORK/one.dcpicat" --symbols "$TARGET")
read -r t_none _ < <(best_of "$BIN" info -q "$WORK/one.dcpicat")
awk -v cnt="$COUNT" -v tb="$t_bare" -v cb="$c_bare" -v mb="$m_bare" -v mc="$m_cfg" -v mg="$m_gnu" -v ml="$m_llvm" -v c="$t_cfg" -v cc="$c_cfg" -v g="$t_gnu" -v cg="$c_gnu" -v l="$t_llvm" -v cl="$c_llvm" -v o="$t_open" -v n="$t_none" 'BEGIN{
  printf "cfghub convert --symbols (whole command)  %6.3f s wall %6.3f s cpu  %5d MiB  %.2f us cpu/address\n", c, cc, mc, cc * 1e6 / cnt
  printf "cfghub convert without --symbols          %6.3f s wall %6.3f s cpu  %5d MiB  (reading and writing alone)\n", tb, cb, mb
  printf "GNU addr2line -a -f -i -C                 %6.3f s wall %6.3f s cpu  %5d MiB  cfghub is %.1fx faster wall, %.1fx cpu (target >= 2)\n", g, cg, mg, g/c, cg/cc
  printf "llvm-addr2line -a -f -i -C                %6.3f s wall %6.3f s cpu  %5d MiB  cfghub is %.1fx faster wall, %.1fx cpu (target > 1)\n", l, cl, ml, l/c, cl/cc
  printf "opening the debug file (info of 1 address with --symbols minus without)  %.0f ms (target < 50)\n", (o-n)*1000
}'
