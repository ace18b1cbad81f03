#!/usr/bin/env bash
# Runs the caller's ladder (src/ladder.rs): each rung adds one thing
# logbus's direct path does on the caller's thread, with the format floor
# below and logbus itself above, in alternating rounds (rounds.sh), then
# counts each rung's instructions a call under callgrind (deterministic,
# where the wall clock on a shared machine is not).
#
#   benches/peers/ladder.sh [ROUNDS] [RECORDS]     (defaults: 5, 1000000)
#   LADDER=deferred benches/peers/ladder.sh ...
#
# LADDER picks the ladder: `formatted` (the default: the `ladder-*` rungs
# of `log::info!`, topped by `logbus-block`) or `deferred` (the
# `ladder-args*` rungs of `logbus::info!`, whose caller copies a template's
# address and its arguments and lets the consumer format, topped by
# `logbus-macro`). Both have `floor-format` below. The consumer's knobs
# (LADDER_BATCH, LADDER_SPIN; src/ladder.rs, `consume`) pass through.
# LADDER_COUNT=0 skips the instruction counts (callgrind runs each rung
# for 200,000 records, which loads the machine for minutes).
#
# Needs cargo and python3 (valgrind optional).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
rounds="${1:-5}"
records="${2:-1000000}"
case "${LADDER:-formatted}" in
  formatted)
    rungs=(ladder-ring ladder-stack ladder-slot ladder-seq ladder-route ladder-gate ladder-light ladder-log)
    top=logbus-block
    ;;
  deferred)
    rungs=(ladder-args ladder-args-slot ladder-args-seq ladder-args-route ladder-args-gate ladder-args-light)
    top=logbus-macro
    ;;
  *)
    echo "LADDER=$LADDER: not a ladder (formatted, deferred)" >&2
    exit 2
    ;;
esac
"$here/rounds.sh" "$rounds" "$records" floor-format "${rungs[@]}" "$top"

[ "${LADDER_COUNT:-1}" = 0 ] && exit 0
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
