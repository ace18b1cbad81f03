#!/usr/bin/env python3
"""How long this machine holds a busy thread off its core: one spinning
process pinned to each CPU reads the clock in a loop for SECONDS and counts
the gaps of GAP_US or more between two reads. Where the kernel's tracefs is
writable (root), it also records the scheduler's switches meanwhile and
names the thread that ran in each gap it saw; the gaps left unnamed are
time the hypervisor gave to other guests (or an interrupt handler).

    benches/peers/stalls.py [SECONDS] [GAP_US]       (defaults: 5, 200)

A one-thread flood under drop-oldest loses records when its worker's core
is taken for longer than the queue takes to fill (8,192 records at 8 M
calls a second: about 1 ms) while the caller's is not (`drops.py`).
"""

import os
import re
import sys
import time
from multiprocessing import Barrier, Process, Queue
from pathlib import Path

TRACING = Path("/sys/kernel/tracing")
SWITCH = re.compile(
    r"\[(\d+)\].*?\s(\d+\.\d+): sched_switch: prev_comm=(.+?) prev_pid=(\d+) .*"
    r"==> next_comm=(.+?) next_pid=(\d+)")


def spin(cpu: int, seconds: float, gap_ns: int, start: Barrier, results: Queue) -> None:
    """Reads the clock on `cpu` for `seconds` once every spinner and the
    trace are ready; puts its pid and the gaps."""
    os.sched_setaffinity(0, {cpu})
    start.wait()
    gaps = []
    last = time.perf_counter_ns()
    end = last + int(seconds * 1e9)
    while last < end:
        now = time.perf_counter_ns()
        if now - last >= gap_ns:
            gaps.append((now - last) // 1000)
        last = now
    results.put((cpu, os.getpid(), gaps))


def tracing(on: bool) -> bool:
    """Turns the scheduler's switch events on (clearing the buffer) or off."""
    try:
        if on:
            (TRACING / "trace").write_text("")
            (TRACING / "events/sched/sched_switch/enable").write_text("1")
        (TRACING / "tracing_on").write_text("1" if on else "0")
        if not on:
            (TRACING / "events/sched/sched_switch/enable").write_text("0")
        return True
    except OSError:
        return False


def preemptions(pids: set[int], gap_us: int) -> list[tuple[int, str]]:
    """The spinners' times off their core of `gap_us` or more, from the
    trace, with the thread that ran first in each."""
    off: dict[str, tuple[float, str]] = {}
    found = []
    for line in (TRACING / "trace").read_text(errors="replace").splitlines():
        m = SWITCH.search(line)
        if not m:
            continue
        _, t, _, prev_pid, next_comm, next_pid = m.groups()
        if int(prev_pid) in pids:
            off[prev_pid] = (float(t), next_comm)
        if int(next_pid) in pids and next_pid in off:
            since, who = off.pop(next_pid)
            gap = round((float(t) - since) * 1e6)
            if gap >= gap_us:
                found.append((gap, who))
    return found


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    gap_us = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    cpus = sorted(os.sched_getaffinity(0))
    results: Queue = Queue()
    start = Barrier(len(cpus) + 1)
    spinners = [
        Process(target=spin, args=(cpu, seconds, gap_us * 1000, start, results)) for cpu in cpus
    ]
    for p in spinners:
        p.start()
    traced = tracing(True)
    start.wait()
    got = [results.get() for _ in spinners]
    for p in spinners:
        p.join()
    if traced:
        tracing(False)
    for cpu, _, gaps in sorted(got):
        over_ms = sum(1 for g in gaps if g >= 1000)
        longest = max(gaps, default=0)
        print(f"cpu{cpu}: {len(gaps)} gaps of {gap_us} us or more in {seconds:g} s, "
              f"{over_ms} of 1 ms or more, longest {longest} us")
    if traced:
        seen = preemptions({pid for _, pid, _ in got}, gap_us)
        by_thread: dict[str, list[int]] = {}
        for gap, who in seen:
            by_thread.setdefault(who, []).append(gap)
        total = sum(len(g) for _, _, g in got)
        print(f"{len(seen)} of the {total} gaps were the guest's scheduler running another thread:")
        for who, gaps in sorted(by_thread.items(), key=lambda kv: -len(kv[1])):
            print(f"  {who}: {len(gaps)}, {min(gaps)}-{max(gaps)} us")
    else:
        print("(tracefs not writable: run as root to name the threads that took the core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
