#!/usr/bin/env bash
# Runs some loggers of the peer harness (the working tree's build) in
# alternating rounds, each run its own process, and prints their table
# (report.py's format): for comparing variants of logbus with each other,
# e.g. the journal on and off.
#
#   benches/peers/rounds.sh ROUNDS RECORDS LOGGER...
#   benches/peers/rounds.sh 5 1000000 logbus logbus-journal
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
rounds="${1:?usage: rounds.sh ROUNDS RECORDS LOGGER...}"
records="${2:?usage: rounds.sh ROUNDS RECORDS LOGGER...}"
shift 2
loggers=("$@")
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
export TZ=UTC
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$here" && cargo build --release --quiet)
bin="$CARGO_TARGET_DIR/release/logbus-peers"
for round in $(seq 1 "$rounds"); do
  order=("${loggers[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((i = ${#loggers[@]} - 1; i >= 0; i--)); do order+=("${loggers[i]}"); done
  fi
  for threads in 1 4; do
    for logger in "${order[@]}"; do
      out="$work/out"
      line="$("$bin" --logger "$logger" --threads "$threads" --records "$records" --out "$out" 2>/dev/null | grep '^RESULT')" || {
        echo "FAILED: $logger threads=$threads round=$round" >&2
        continue
      }
      echo "round=$round $line" >>"$work/raw"
      rm -rf "$out"
    done
  done
  echo "round $round of $rounds done" >&2
done
python3 "$here/report.py" "$work/raw" "$work/report.md" "$rounds" "$records" | grep '^|'
