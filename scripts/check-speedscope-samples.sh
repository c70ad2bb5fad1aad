#!/usr/bin/env bash
# Reads every file of speedscope's sample profiles that belongs to the formats of Chrome,
# Node, trace events and Java Flight Recorder (sample/profiles/{Chrome,node,trace-event,
# java-flight-recorder}, MIT-licensed) with `cfghub info`, and prints for each what it read or
# why it refused it. Exit 1 when a file is refused without naming what is unsupported (an
# input error or an undetected format), 0 otherwise.
#
# Usage: scripts/check-speedscope-samples.sh SPEEDSCOPE_CHECKOUT
#   (git clone https://github.com/jlfwong/speedscope)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:?usage: scripts/check-speedscope-samples.sh SPEEDSCOPE_CHECKOUT}
cargo build --release --quiet --bin cfghub
bad=0
while IFS= read -r -d '' f; do
  name=${f#"$root"/sample/profiles/}
  if out=$(target/release/cfghub -q info "$f" 2>&1); then
    printf '%-60s read: %s\n' "$name" "$(echo "$out" | sed -n 's/^format: *//p; s/^events: *//p' | paste -sd' ')"
  else
    first=$(echo "$out" | head -1)
    printf '%-60s refused: %s\n' "$name" "${first#cfghub: }"
    case "$first" in *"which cfghub does not read"*) ;; *) bad=1 ;; esac
  fi
done < <(find "$root"/sample/profiles/{Chrome,node,trace-event,java-flight-recorder} -type f ! -name '.*' -print0 | sort -z)
exit $bad
