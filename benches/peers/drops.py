#!/usr/bin/env python3
"""Where a drop-oldest flood lost its records: runs a prebuilt harness binary
N times (one logger, 1,000,000 calls each by default) and, for every run that
dropped records, reads which ones are missing from the file it wrote and
sorts them by shape.

    benches/peers/drops.py [--rounds 30] [--logger logbus] [--threads 1] \\
        [--records 1000000] [--capacity 8192] BIN

Shapes of the missing `request N` numbers:

- `start`: request 0 is missing, so the first take came after the queue had
  filled once: the worker was not running for the flood's first
  `capacity` calls;
- `lap`: runs of at most 32 records, about one a lap of the queue
  (`capacity` + 16 calls apart when the caller evicts 16 at a time): the
  worker stayed a full queue behind, taking as fast as the caller pushed;
- `stall`: a run of more than 32: the worker took nothing while the caller
  pushed the run's length, and the queue's capacity too if the queue was
  empty when it stopped. The line gives the runs' lengths and, for the
  longest, that time at the run's rate: how long the worker was held off
  its core, at most.

Each run's line has the harness's cross-core probe (`xcore_ns`; 250 or more
is the host's slow state, `benches/README.md`). Build BIN first
(`cargo build --release --bin logbus-peers` in benches/peers).
"""

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REQUEST = re.compile(rb"request (\d+) ")
LAP_MOST = 32


def missing_runs(log: Path, records: int) -> list[tuple[int, int]]:
    """The missing request numbers below `records`, as (first, last) runs."""
    seen = bytearray(records)
    with log.open("rb") as lines:
        for line in lines:
            m = REQUEST.search(line)
            if m and int(m.group(1)) < records:
                seen[int(m.group(1))] = 1
    runs: list[list[int]] = []
    for n in range(records):
        if seen[n]:
            continue
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return [(a, b) for a, b in runs]


def classify(runs, capacity: int, rate: float) -> dict:
    """Counts of each shape, the stalls' lengths, and the longest's time at
    most, in milliseconds."""
    shape = {"start": 0, "lap": 0, "stall": 0, "stalls": [], "longest_ms": 0.0}
    for first, last in runs:
        length = last - first + 1
        if first == 0:
            shape["start"] += length
        elif length <= LAP_MOST:
            shape["lap"] += length
        else:
            shape["stall"] += length
            shape["stalls"].append(length)
    if shape["stalls"]:
        shape["longest_ms"] = (max(shape["stalls"]) + capacity) / rate * 1e3
    return shape


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bin")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--logger", default="logbus")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--capacity", type=int, default=8192)
    args = parser.parse_args()
    totals = {"runs": 0, "dropped_runs": 0, "start_runs": 0, "start": 0, "lap": 0, "stall": 0,
              "stall_runs": 0, "longest_ms": 0.0}
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run(
                [args.bin, "--logger", args.logger, "--threads", str(args.threads),
                 "--records", str(args.records), "--out", out],
                capture_output=True, text=True, check=True)
            text = done.stdout + done.stderr
            dropped = int(re.search(r"dropped (\d+)", text).group(1))
            rate = float(re.search(r" rate=(\d+)", text).group(1))
            xcore = re.search(r"xcore_ns=(\d+)", text).group(1)
            totals["runs"] += 1
            line = f"round {round_ + 1:3d}  xcore_ns={xcore:>4}  dropped {dropped:6d}"
            if dropped:
                totals["dropped_runs"] += 1
                logs = sorted(Path(out).glob("*.log"))
                shape = classify(missing_runs(logs[0], args.records), args.capacity, rate)
                for key in ("start", "lap", "stall"):
                    totals[key] += shape[key]
                totals["start_runs"] += shape["start"] > 0
                totals["stall_runs"] += shape["stall"] > 0
                totals["longest_ms"] = max(totals["longest_ms"], shape["longest_ms"])
                line += f"  start {shape['start']}  lap {shape['lap']}  stall {shape['stall']}"
                if shape["stalls"]:
                    runs = " ".join(str(n) for n in shape["stalls"])
                    line += f"  (runs of {runs}; longest up to {shape['longest_ms']:.2f} ms)"
            print(line, flush=True)
    print(f"{totals['dropped_runs']} of {totals['runs']} runs dropped: "
          f"{totals['start_runs']} from the start, {totals['stall_runs']} with a stall "
          f"(longest up to {totals['longest_ms']:.2f} ms); records missing: "
          f"start {totals['start']}, lap {totals['lap']}, stall {totals['stall']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
