#!/usr/bin/env bash
# Runs the caller's ladder (src/ladder.rs): each rung adds one thing
# logbus's direct path does on the caller's thread, with the format floor
# below and logbus itself (`logbus-block`) above, in alternating rounds
# (rounds.sh), then counts each rung's instructions a call under callgrind
# (deterministic, where the wall clock on a shared machine is not).
#
#   benches/peers/ladder.sh [ROUNDS] [RECORDS]     (defaults: 5, 1000000)
#
# Needs cargo and python3 (valgrind optional).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
rounds="${1:-5}"
records="${2:-1000000}"
rungs=(ladder-ring ladder-stack ladder-slot ladder-seq ladder-route ladder-gate ladder-light ladder-log)
"$here/rounds.sh" "$rounds" "$records" floor-format "${rungs[@]}" logbus-block

command -v valgrind >/dev/null || { echo "valgrind not found: no instruction counts (apt-get install valgrind)" >&2; exit 0; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
bin="$CARGO_TARGET_DIR/release/logbus-peers"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo
echo "| rung | instructions a call |"
echo "|---|---:|"
for rung in "${rungs[@]}"; do
  toggle="logbus_peers::ladder::call"
  [ "$rung" = ladder-log ] && toggle="logbus_peers::ladder::call_log"
  valgrind --tool=callgrind --callgrind-out-file="$work/cg" "--toggle-collect=$toggle" \
    "$bin" --logger "$rung" --threads 1 --records 200000 --out "$work/out" >/dev/null 2>"$work/vg"
  total="$(callgrind_annotate "$work/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
  echo "| $rung | $((total / 200000)) |"
  rm -rf "$work/out" "$work/cg"
done
