#!/usr/bin/env bash
# The stand-alone worker experiment (src/bin/worker_limit.rs): every shape,
# with the counter read per record and per batch, writing the file and
# discarding the buffer, then the live ring at three slot sizes, in
# alternating rounds; prints the median and the range of each
# configuration's nanoseconds a record, and the instructions a record under
# callgrind (deterministic; needs valgrind). About 4 minutes for 7 rounds.
#
#   benches/peers/worker.sh [ROUNDS] [RECORDS]   (defaults: 7, 1000000)
set -euo pipefail

source "$(dirname "$0")/experiment.sh"
rounds="${1:-7}"
records="${2:-1000000}"
bin="$(build_bin worker_limit)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

shapes=(bytes checked owned logbus)
for round in $(seq 1 "$rounds"); do
  order=("${shapes[@]}")
  if ((round % 2 == 0)); then order=(logbus owned checked bytes); fi
  for shape in "${order[@]}"; do
    for clock in record batch; do
      for write in yes no; do
        if [ "$write" = no ]; then nowrite=1; else nowrite=; fi
        CLOCK=$clock NOWRITE=$nowrite "$bin" "$shape" "$records" "$work" >>"$work/raw"
      done
    done
  done
  for slot in 64 128 256; do
    for write in yes no; do
      if [ "$write" = no ]; then nowrite=1; else nowrite=; fi
      SLOT=$slot NOWRITE=$nowrite "$bin" live "$records" "$work" >>"$work/raw"
    done
  done
done
if command -v valgrind >/dev/null; then
  for shape in "${shapes[@]}"; do
    for clock in record batch; do
      CLOCK=$clock NOWRITE=1 valgrind --tool=callgrind --callgrind-out-file="$work/cg" \
        "$bin" "$shape" 100000 "$work" >/dev/null 2>&1
      total=$(callgrind_annotate "$work/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
      # Five passes of 100,000 records.
      echo "INSTR shape=$shape clock=$clock instructions=$((total / 500000))" >>"$work/raw"
    done
  done
fi
python3 - "$work/raw" <<'PY'
import statistics, sys
runs, instr = {}, {}
for line in open(sys.argv[1]):
    kv = dict(p.split("=", 1) for p in line.split()[1:])
    if line.startswith("INSTR"):
        instr[(kv["shape"], kv["clock"])] = kv["instructions"]
    else:
        how = kv.get("clock") or "slot " + kv["slot"]
        runs.setdefault((kv["shape"], how, kv["write"]), []).append(float(kv["ns_per_record"]))
        if "idle_ns_per_record" in kv:
            runs.setdefault(("idle", how, kv["write"]), []).append(float(kv["idle_ns_per_record"]))
print("| shape | counter read | instructions a record | ns a record, written | ns a record, discarded |")
print("|---|---|---:|---:|---:|")
for shape in ["bytes", "checked", "owned", "logbus"]:
    for clock in ["record", "batch"]:
        cell = lambda w: (lambda v: f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})")(runs[(shape, clock, w)])
        print(f"| {shape} | {clock} | {instr.get((shape, clock), 'n/a')} | {cell('yes')} | {cell('no')} |")
print()
print("| live: slots written on another core | busy ns a record, written | waiting | busy ns a record, discarded | waiting |")
print("|---|---:|---:|---:|---:|")
for slot in ["64", "128", "256"]:
    cell = lambda k, w: (lambda v: f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})")(runs[(k, "slot " + slot, w)])
    print(f"| {slot}-byte slots | {cell('live', 'yes')} | {cell('idle', 'yes')} | {cell('live', 'no')} | {cell('idle', 'no')} |")
PY
