#!/usr/bin/env bash
# Syslog over TCP to a real rsyslogd on loopback: records/s until rsyslogd
# stored them all, from 1 and 4 threads, the appender against a plain socket
# writer sending the same octet-counted frames; and the caller's cost per
# log call with the syslog appender and with the file appender (drop-oldest,
# in bursts of 512 records across the threads with a flush between them, so
# the queue has room and the caller never waits; only the publishing is
# timed). Each run starts its own rsyslogd
# (benches/syslog/main.rs); rounds alternate the writers.
#
#   benches/syslog/run.sh [ROUNDS] [RECORDS]      (default 3 rounds of 1,000,000)
#
# Needs rsyslogd (apt-get install rsyslog). Prints every run as a JSON line,
# then medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
RECORDS=${2:-1000000}
export PATH="$PATH:/usr/sbin:/sbin"
command -v rsyslogd >/dev/null || { echo "rsyslogd not found: apt-get install rsyslog" >&2; exit 1; }

cargo bench -q -p logbus-benches --features syslog --bench syslog --no-run
raw=$(mktemp)
for round in $(seq "$ROUNDS"); do
  for threads in 1 4; do
    if (( round % 2 )); then order="plain logbus"; else order="logbus plain"; fi
    for writer in $order; do
      cargo bench -q -p logbus-benches --features syslog --bench syslog -- \
        --writer "$writer" --threads "$threads" --records "$RECORDS" | tail -1 | tee -a "$raw"
    done
    for writer in logbus-drop file; do
      cargo bench -q -p logbus-benches --features syslog --bench syslog -- --writer "$writer" \
        --threads "$threads" --records "$RECORDS" --burst $((512 / threads)) | tail -1 | tee -a "$raw"
    done
  done
done

python3 - "$raw" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(writer, threads, key):
    xs = [r[key] for r in runs if r["writer"] == writer and r["threads"] == threads]
    return statistics.median(xs) if xs else float("nan")
print()
print("| threads | plain writer rec/s | logbus rec/s | ratio | caller ns/call: logbus Block (flood) | syslog, bursts | file, bursts | dropped in bursts: syslog / file |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in (1, 4):
    p, l = med("plain", t, "records_per_s"), med("logbus", t, "records_per_s")
    rec = med("logbus-drop", t, "records")
    print(f"| {t} | {p/1e6:.3f} M | {l/1e6:.3f} M | {l/p:.2f}x | {med('logbus', t, 'caller_ns_per_call'):.0f} "
          f"| {med('logbus-drop', t, 'caller_ns_per_call'):.0f} | {med('file', t, 'caller_ns_per_call'):.0f} "
          f"| {med('logbus-drop', t, 'dropped')/rec:.1%} / {med('file', t, 'dropped')/rec:.1%} |")
PY
rm -f "$raw"
