#!/usr/bin/env python3
"""Paired rounds of prebuilt harness binaries: the first is the base.

    benches/peers/paired.py --rounds 24 --threads 1 \\
        --loggers logbus logbus-block -- base-bin new-bin [other-bin ...]
    benches/peers/paired.py --records 50000 --gap-ns 20000 ...   (a steady rate:
        the worker's CPU time per record, cpu_bg, is the figure to read)

Each round runs every logger once from every binary, back to back, each run
its own process; the binaries' order rotates from round to round (with two:
AB, BA, AB, ...), so that each runs in each place as often as the others
over a multiple of their number of rounds; with three or more it also
reverses after each full rotation, so that each follows each as often.
A shared VM's speed drifts by tens of percent within minutes, so a figure is
compared only with the base's in the same round (with --fast-below NS, only
in rounds where both runs' cross-core probes, the harness's xcore_ns, read
below NS: the host's fast state): for each logger, figure and
binary, the median of the paired differences and how many rounds the binary
beat the base in (a sign test's two-sided p-value beside it; ties count for
neither). Build the binaries first (each checkout's `cargo build --release
--bin logbus-peers` in benches/peers, copied out).
"""

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

FIGURES = [("p50", True), ("p50f", True), ("mean", True), ("p999", True), ("rate", False), ("ratio", False),
           ("cpu_bg", True)]
RESULT = re.compile(
    r"^RESULT .*p50=(?P<p50>\d+) .*p999=(?P<p999>\d+) .*rate=(?P<rate>\d+) "
    r"lines=\d+ ratio=(?P<ratio>[\d.]+|NaN) .*mean=(?P<mean>[\d.]+) .*cpu_bg=(?P<cpu_bg>[\d.]+)",
    re.M,
)
XCORE = re.compile(r"^RESULT .*\bxcore_ns=([\d.]+)", re.M)
# The median finer than the clock's step; older harness builds lack it.
P50F = re.compile(r"^RESULT .*\bp50f=([\d.]+)", re.M)


def sign_test(wins, losses):
    """Two-sided p-value of `wins` against `losses` if either were as likely."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def median(rows, figure):
    """The median of `figure` over `rows`."""
    return statistics.median(row[figure] for row in rows)


def run(binary, logger, threads, records, gap, out):
    try:
        done = subprocess.run(
            [binary, "--logger", logger, "--threads", str(threads), "--records", str(records),
             "--out", out] + (["--gap-ns", str(gap)] if gap else []),
            capture_output=True, text=True, env={**os.environ, "TZ": "UTC"},
        )
    except OSError as error:
        sys.exit(f"paired.py: cannot run {binary}: {error}")
    shutil.rmtree(out, ignore_errors=True)
    match = RESULT.search(done.stdout)
    if done.returncode != 0 or match is None:
        sys.exit(f"paired.py: {binary} --logger {logger} failed:\n{done.stdout}{done.stderr}")
    row = {k: float(v) for k, v in match.groupdict().items()}
    # The host's state (`xcore_ns`, the harness's cross-core probe); older
    # harness builds lack it.
    xcore = XCORE.search(done.stdout)
    row["xcore"] = float(xcore.group(1)) if xcore else math.nan
    p50f = P50F.search(done.stdout)
    row["p50f"] = float(p50f.group(1)) if p50f else math.nan
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--gap-ns", type=int, default=0,
                        help="the harness's --gap-ns: a steady rate instead of a flood")
    parser.add_argument("--loggers", nargs="+", default=["logbus", "logbus-block"])
    parser.add_argument("--fast-below", type=float, default=0,
                        help="compare only the pairs whose two runs' cross-core probes "
                             "(xcore_ns) read below this: the host's fast state")
    parser.add_argument("binaries", nargs="+", help="the base first")
    args = parser.parse_args()
    if len(args.binaries) < 2:
        parser.error("give a base binary and at least one to compare with it")
    binaries = [os.path.abspath(b) for b in args.binaries]
    n = len(binaries)
    # Results by logger and the binary's place in the list (a binary may be
    # given twice, as a check of the method: A against A).
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            order = list(range(n))[r % n:] + list(range(n))[:r % n]
            if n > 2 and (r // n) % 2:
                order.reverse()
            for logger in args.loggers:
                for i in order:
                    out = os.path.join(work, "out")
                    results.setdefault((logger, i), []).append(
                        run(binaries[i], logger, args.threads, args.records, args.gap_ns, out))
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    gap = f", a call every {args.gap_ns} ns at most" if args.gap_ns else ""
    print(f"{args.rounds} paired rounds, {args.threads} thread(s), {args.records} records{gap}")
    probes = [row["xcore"] for rows in results.values() for row in rows
              if not math.isnan(row["xcore"])]
    if probes:
        slow = sum(1 for x in probes if args.fast_below and x >= args.fast_below)
        print(f"cross-core probe (xcore_ns): median {statistics.median(probes):.0f}, "
              f"range {min(probes):.0f}-{max(probes):.0f}"
              + (f"; {slow} of {len(probes)} runs at {args.fast_below:.0f} or more, "
                 f"their pairs left out" if args.fast_below else ""))

    def in_state(base, other):
        """Whether a pair is compared: both runs in the fast state, if asked."""
        return not args.fast_below or all(
            r["xcore"] < args.fast_below for r in (base, other) if not math.isnan(r["xcore"]))

    for i, binary in enumerate(binaries):
        print(f"binary {i}: {binary}" + (" (the base)" if i == 0 else ""))
    print()
    print("| logger | binary | figure | base median | its median | median of differences "
          "| better in | p |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for logger in args.loggers:
        for i in range(1, n):
            pairs = [(o, t) for o, t in zip(results[(logger, 0)], results[(logger, i)])
                     if in_state(o, t)]
            if not pairs:
                continue
            ours, theirs = [o for o, _ in pairs], [t for _, t in pairs]
            for figure, lower_is_better in FIGURES:
                diffs = [t[figure] - o[figure] for o, t in zip(ours, theirs)
                         if not (math.isnan(t[figure]) or math.isnan(o[figure]))]
                if not diffs:
                    continue
                wins = sum(1 for d in diffs if (d < 0) == lower_is_better and d != 0)
                losses = sum(1 for d in diffs if d != 0) - wins
                scale = 1e6 if figure == "rate" else 1
                fmt = ".3f" if figure in ("rate", "ratio") else ".1f" if figure == "p50f" else ".0f"
                print(f"| {logger} | {i} | {figure} | {median(ours, figure) / scale:{fmt}} "
                      f"| {median(theirs, figure) / scale:{fmt}} "
                      f"| {statistics.median(diffs) / scale:+{fmt}} "
                      f"| {wins}/{len(diffs)} | {sign_test(wins, losses):.3f} |")
    print()
    print("better in: rounds won of those compared (ties count for neither side, and not in p)")


if __name__ == "__main__":
    main()
