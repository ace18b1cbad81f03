#!/usr/bin/env bash
# Runs the stand-alone fan-out experiment (src/bin/fanout_limit.rs): each
# shape with 1 to 4 readers, readers writing files and not, in alternating
# rounds; the raw lines go to fanout-raw.txt and the medians (with the
# range over the rounds) are printed. With valgrind, it also counts the
# caller's instructions per call (deterministic, where the wall clock on a
# shared machine is not).
#
#   benches/peers/fanout.sh [ROUNDS] [RECORDS]     (defaults: 7, 1000000)
#
# Needs cargo and python3 (valgrind optional).
set -euo pipefail

source "$(dirname "$0")/experiment.sh"
rounds="${1:-7}"
records="${2:-1000000}"
bin="$(build_bin fanout_limit)"
raw="$here/fanout-raw.txt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

configs=()
for shape in broadcast copies shared; do
  for readers in 1 2 3 4; do
    for write in 1 0; do configs+=("$shape:$readers:$write"); done
  done
done
: >"$raw"
for round in $(seq 1 "$rounds"); do
  order=("${configs[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((k = ${#configs[@]} - 1; k >= 0; k--)); do order+=("${configs[k]}"); done
  fi
  for config in "${order[@]}"; do
    IFS=: read -r shape readers write <<<"$config"
    if [ "$write" = 1 ]; then
      "$bin" "$shape" "$readers" "$records" "$work/out" >>"$raw"
    else
      FANOUT_NOWRITE=1 "$bin" "$shape" "$readers" "$records" "$work/out" >>"$raw"
    fi
    rm -rf "$work/out"
  done
  echo "round $round of $rounds done" >&2
done

calls=""
if command -v valgrind >/dev/null; then
  for shape in broadcast copies shared; do
    entry=call_bytes
    [ "$shape" = shared ] && entry=call_shared
    for readers in 1 2 3 4; do
      FANOUT_NOWRITE=1 valgrind --tool=callgrind --callgrind-out-file="$work/cg" \
        "--toggle-collect=fanout_limit::$entry" "$bin" "$shape" "$readers" 100000 "$work/out" \
        >/dev/null 2>"$work/vg"
      total="$(callgrind_annotate "$work/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
      calls+="$shape $readers $total"$'\n'
      rm -rf "$work/out" "$work/cg"
    done
  done
fi

python3 - "$raw" "$calls" <<'PY'
import statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(p.split("=", 1) for p in line.split()[1:])
    rows.setdefault((kv["shape"], int(kv["readers"]), kv["write"]), []).append(kv)
def cell(rs, key):
    v = [float(r[key]) for r in rs]
    return f"{st.median(v):.0f} ({min(v):.0f}-{max(v):.0f})"
print("| shape | readers | files | p50 ns | mean ns | of which waiting ns | p99.9 ns |")
print("|---|---:|---|---:|---:|---:|---:|")
for (shape, readers, write), rs in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
    files = "yes" if write == "true" else "no"
    print(f"| {shape} | {readers} | {files} | {cell(rs, 'p50')} | {cell(rs, 'mean')} | {cell(rs, 'wait_ns')} | {cell(rs, 'p999')} |")
instructions = {}
for line in sys.argv[2].splitlines():
    shape, readers, total = line.split()
    instructions[(shape, int(readers))] = int(total) / 100000
if instructions:
    print()
    print("| shape | instructions a call, 1 / 2 / 3 / 4 readers | per extra reader |")
    print("|---|---:|---:|")
    for shape in ("broadcast", "copies", "shared"):
        counts = [instructions.get((shape, k)) for k in (1, 2, 3, 4)]
        if None in counts:
            continue
        print(f"| {shape} | {' / '.join(f'{c:.0f}' for c in counts)} | {(counts[3] - counts[0]) / 3:.0f} |")
PY
