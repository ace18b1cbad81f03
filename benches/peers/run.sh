#!/usr/bin/env bash
# Runs the peer comparison: every logger x {1, 4} threads, each run its own
# process, in alternating rounds; writes the medians to RESULTS.md.
#
#   benches/peers/run.sh [ROUNDS] [RECORDS]      (defaults: 3, 1000000)
#   LOGGERS="floor-format logbus-block logbus-macro" benches/peers/run.sh 3 1000000
#       (some loggers only: the table is printed, RESULTS.md left alone)
#
# Needs cargo and python3. Builds the release binary once. report.py turns
# results-raw.txt into RESULTS.md (it can be re-run alone), each figure the
# median of the runs in the host's fast state where a logger has any
# (FAST_ONLY=0 for every run; "Twenty-fifth session" in benches/README.md).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
rounds="${1:-3}"
records="${2:-1000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
export TZ=UTC # spdlog-rs and log4rs format local time; make it UTC

(cd "$here" && cargo build --release --quiet)
bin="$CARGO_TARGET_DIR/release/logbus-peers"

loggers=(
  floor-format floor-bufwriter logbus logbus-block logbus-3 logbus-3-block logbus-macro logbus-kv tracing-lossy
  tracing-blocking slog-async spdlog-async ftlog fast_log flexi_logger-async log4rs fern
)
results="$here/RESULTS.md"
raw="$here/results-raw.txt"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -n "${LOGGERS:-}" ]; then
  read -r -a loggers <<<"$LOGGERS"
  results="$work/RESULTS.md"
  raw="$work/results-raw.txt"
fi
: >"$raw"

for round in $(seq 1 "$rounds"); do
  # Alternate the order between rounds so that no logger always runs first
  # or right after the same neighbour.
  if ((round % 2 == 0)); then
    order=($(printf '%s\n' "${loggers[@]}" | tac))
  else
    order=("${loggers[@]}")
  fi
  for threads in 1 4; do
    for logger in "${order[@]}"; do
      out="$work/$logger-$threads-$round"
      line="$("$bin" --logger "$logger" --threads "$threads" --records "$records" --out "$out" 2>/dev/null | grep '^RESULT')" || {
        echo "FAILED: $logger threads=$threads round=$round" >&2
        continue
      }
      echo "round=$round $line" | tee -a "$raw"
      rm -rf "$out"
    done
  done
done

FAST_ONLY="${FAST_ONLY:-1}" python3 "$here/report.py" "$raw" "$results" "$rounds" "$records"
