# Shared by the bench scripts that time whole commands: `source scripts/bench-lib.sh`.
# Needs GNU time (/usr/bin/time).

# best N CMD...: "wall cpu peak-MB" of the fastest of N runs (peak: its maximum resident set).
best() {
  local n=$1; shift
  local best="" cpu="" peak=""
  for _ in $(seq "$n"); do
    local tmp; tmp=$(mktemp)
    /usr/bin/time -f "%e %U %S %M" -o "$tmp" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; rm -f "$tmp"; return 1; }
    read -r t u s m < <(tail -1 "$tmp"); rm -f "$tmp"
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then
      best=$t; cpu=$(awk "BEGIN{print $u + $s}"); peak=$(awk "BEGIN{print $m / 1000}")
    fi
  done
  echo "$best $cpu $peak"
}
