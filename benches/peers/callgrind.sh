#!/usr/bin/env bash
# Where the instructions go, per phase: runs one peer logger under
# callgrind and sums the exclusive instruction counts by phase. By default it
# collects only inside logbus's entry points (the caller's path, formatting
# included; the worker is not counted): `log` for `log::info!`,
# `__private::log_deferred` for `logbus::info!` (logbus-macro). SIDE=worker
# counts the worker thread instead (drain, settle, render, write), per
# record. Deterministic, so it compares two commits where wall-clock timings
# on a shared machine cannot.
#
#   benches/peers/callgrind.sh [LOGGER] [RECORDS]   (defaults: logbus-block, 200000)
#   SIDE=worker benches/peers/callgrind.sh          (the worker thread's instructions)
#   BIN=path/to/logbus-peers benches/peers/callgrind.sh   (another build, e.g. a base's)
#   SCOPE=call benches/peers/callgrind.sh logbus-macro   (the whole call: the
#       call site's own code and the `log` crate's part too, through the
#       harness's `call_log`/`call_macro`/`call_kv`; logbus loggers only)
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

# Each entry point toggles collection on and off: they must not nest.
case "${SCOPE:-backend}" in
  backend) toggles=(
    "--toggle-collect=logbus::log_backend::<impl logbus::broker::BrokerShared>::log"
    "--toggle-collect=logbus::__private::log_deferred"
  ) ;;
  call) toggles=("--toggle-collect=logbus_peers::call_log" "--toggle-collect=logbus_peers::call_macro" "--toggle-collect=logbus_peers::call_kv") ;;
  *) echo "SCOPE is backend or call" >&2; exit 2 ;;
esac

export PEERS_NO_PROBE=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
side="${SIDE:-caller}"
case "$side" in
  caller)
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "${toggles[@]}" \
      "$bin" --logger "$logger" --threads 1 --records "$records" --out "$work/out" >/dev/null 2>"$work/valgrind.txt"
    profile="$work/cg.out"
    ;;
  worker)
    # One profile per thread; the worker's is the one that writes batches.
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/cg.out" \
      "$bin" --logger "$logger" --threads 1 --records "$records" --out "$work/out" >/dev/null 2>"$work/valgrind.txt"
    profile="$(grep -l 'Worker>::write_batch' "$work"/cg.out-* | head -n 1)"
    [ -n "$profile" ] || { echo "no worker thread in the profile" >&2; exit 1; }
    ;;
  *) echo "SIDE is caller or worker, not $side" >&2; exit 2 ;;
esac
callgrind_annotate --threshold=100 --auto=no "$profile" 2>/dev/null | sed -n '/Ir  *file:function/,$p' | tail -n +3 |
  awk '/^-/{exit} {print}' >"$work/flat.txt"

python3 - "$work/flat.txt" "$records" "$side" <<'PY'
import re, sys
path, records, side = sys.argv[1], int(sys.argv[2]), sys.argv[3]
caller_phases = [
    ("the call site (level check, arguments, format_args!)", r"logbus_peers::call_"),
    ("the log crate (its Record, the logger's dispatch)", r"^log::|as log::Log>"),
    ("format: core::fmt and the arguments' Display", r"core::fmt|pad_integral"),
    ("format: the size-bounded writer and copies", r"Bounded as core::fmt::Write|memmove|memcpy"),
    ("route cache (view, lookup, hash)", r"route::|hashbrown"),
    ("record fill (recycled record, location, thread, key-values)", r"producer::|log_backend::fill|deferred::"),
    ("clock (SystemTime::now)", r"SystemTime|Timespec|clock_gettime"),
    ("gate (enter, fence, leave) and waker", r"PublishGate|LaneGate|publish::leave|gate::|waker|Waker"),
    ("queue push (lane, budget, overflow)", r"queue::|lane::|budget|LaneEnd"),
    ("choosing subscriptions", r"Chosen"),
]
worker_phases = [
    ("format: a deferred message (logbus-macro)", r"deferred::|core::fmt|pad_integral|OnceLock|Once::"),
    ("render: the timestamp", r"timestamp::|duration_since|sub_timespec"),
    ("render: escaping", r"escape::"),
    ("render: the layout's pieces", r"layout::|format::text"),
    ("copies (memcpy)", r"memmove|memcpy"),
    ("write(2) and the kernel side", r"__libc_write|write_all|::write\b|syscall"),
    ("destination, framing, render loop", r"destination::|render::|framing|append_batch|lines::"),
    ("settle and hand-back", r"settle::|recycle::|HandBack|drop_in_place"),
    ("drain (merge, lanes, take)", r"queue::|lane::|drain::|take_batch"),
    ("allocator", r"malloc|free|realloc"),
]
phases = caller_phases if side == "caller" else worker_phases
glue = "publish glue inlined in publish_in/publish_usual/log" if side == "caller" else "the worker loop and the rest"
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
where = "per log call on the caller's thread" if side == "caller" else "per record on the worker thread"
print(f"{total / records:.0f} instructions {where} ({records} records)")
for name, n in sorted(sums.items(), key=lambda kv: -kv[1]):
    print(f"{n / records:7.0f}  {100 * n / total:5.1f}%  {name}")
PY
