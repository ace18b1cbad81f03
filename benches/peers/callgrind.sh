#!/usr/bin/env bash
# Where the caller's instructions go, per phase of a log call: runs one peer
# logger under callgrind, collecting only inside logbus's `log` (the caller's
# path, formatting included; the worker is not counted), and sums the
# exclusive instruction counts by phase. Deterministic, so it compares two
# commits where wall-clock timings on a shared machine cannot.
#
#   benches/peers/callgrind.sh [LOGGER] [RECORDS]   (defaults: logbus-block, 200000)
#   BIN=path/to/logbus-peers benches/peers/callgrind.sh   (another build, e.g. a base's)
#
# Needs valgrind (apt-get install valgrind) and python3.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
logger="${1:-logbus-block}"
records="${2:-200000}"
command -v valgrind >/dev/null || { echo "valgrind not found: apt-get install valgrind" >&2; exit 1; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
if [ -n "${BIN:-}" ]; then
  bin="$BIN"
else
  (cd "$here" && cargo build --release --quiet)
  bin="$CARGO_TARGET_DIR/release/logbus-peers"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
  "--toggle-collect=logbus::log_backend::<impl logbus::broker::BrokerShared>::log" \
  "$bin" --logger "$logger" --threads 1 --records "$records" --out "$work/out" >/dev/null 2>"$work/valgrind.txt"
callgrind_annotate --threshold=100 --auto=no "$work/cg.out" 2>/dev/null | sed -n '/Ir  *file:function/,$p' | tail -n +3 |
  awk '/^-/{exit} {print}' >"$work/flat.txt"

python3 - "$work/flat.txt" "$records" <<'PY'
import re, sys
path, records = sys.argv[1], int(sys.argv[2])
phases = [
    ("format: core::fmt and the arguments' Display", r"core::fmt|pad_integral"),
    ("format: the size-bounded writer and copies", r"Bounded as core::fmt::Write|memmove|memcpy"),
    ("route cache (view, lookup, hash)", r"route::|hashbrown"),
    ("record fill (recycled record, location, thread, key-values)", r"producer::|log_backend::fill"),
    ("clock (SystemTime::now)", r"SystemTime|Timespec|clock_gettime"),
    ("gate (enter, fence, leave) and waker", r"PublishGate|gate::|waker|Waker"),
    ("queue push (lane, budget, overflow)", r"queue::|lane::|budget|LaneEnd"),
    ("choosing subscriptions", r"Chosen"),
]
glue = "publish glue inlined in publish_in/log"
total, sums = 0, {}
for line in open(path):
    m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)", line)
    if not m:
        continue
    n = int(m.group(1).replace(",", ""))
    function = re.split(r"\.(?:rs|S|c):", m.group(2), maxsplit=1)[-1]
    total += n
    name = next((p for p, rx in phases if re.search(rx, function)), glue)
    sums[name] = sums.get(name, 0) + n
print(f"{total / records:.0f} instructions per log call on the caller's thread ({records} records)")
for name, n in sorted(sums.items(), key=lambda kv: -kv[1]):
    print(f"{n / records:7.0f}  {100 * n / total:5.1f}%  {name}")
PY
