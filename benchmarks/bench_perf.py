"""How much the perf wrapper costs per sampler operation, against the bare syscalls in the same run.

A 3-event software group (task-clock, page-faults, context-switches) on this thread. Each operation
through the wrapper is timed next to its bare peer on the same fd: ``os.read`` for a group read (the
wrapper adds decoding and id matching) and ``fcntl.ioctl`` for enable/disable (the wrapper goes
through its ctypes binding and errno check). Enable and disable are timed alternately, each on a
group in the opposite state, as the sampler's rotation does.
Run: ``python benchmarks/bench_perf.py``.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable

from sectormon.perf import abi
from sectormon.perf.events import parse_event
from sectormon.perf.group import PerfGroup

N = 20_000
REPEATS = 5


def per_call_us(fn: Callable[[], object]) -> float:
    """Best-of-REPEATS mean time of one call, in microseconds."""
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter_ns()
        for _ in range(N):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / N / 1000)
    return best


def toggle_us(enable: Callable[[], object], disable: Callable[[], object]) -> tuple[float, float]:
    """Best-of-REPEATS mean µs of (enable a disabled group, disable an enabled group)."""
    best_on = best_off = float("inf")
    clock = time.perf_counter_ns
    for _ in range(REPEATS):
        on = off = 0
        for _ in range(N):
            t0 = clock()
            enable()
            t1 = clock()
            disable()
            t2 = clock()
            on += t1 - t0
            off += t2 - t1
        best_on, best_off = min(best_on, on / N / 1000), min(best_off, off / N / 1000)
    return best_on, best_off


def main() -> None:
    group = PerfGroup([parse_event(e) for e in ("task-clock", "page-faults", "context-switches")], pid=0)
    fd, size = group.leader_fd, group.read_size

    def bare_enable() -> None:
        fcntl.ioctl(fd, abi.PERF_EVENT_IOC_ENABLE, 0)  # the leader alone, like PerfGroup

    def bare_disable() -> None:
        fcntl.ioctl(fd, abi.PERF_EVENT_IOC_DISABLE, 0)

    group.enable()
    read_wrapped = per_call_us(group.read)
    read_bare = per_call_us(lambda: os.read(fd, size))
    group.disable()
    on_wrapped, off_wrapped = toggle_us(group.enable, group.disable)
    on_bare, off_bare = toggle_us(bare_enable, bare_disable)
    group.close()

    rows = [
        ("read", read_wrapped, "os.read", read_bare),
        ("enable", on_wrapped, "fcntl.ioctl", on_bare),
        ("disable", off_wrapped, "fcntl.ioctl", off_bare),
    ]
    print(f"perf wrapper, 3-event software group, best of {REPEATS} x {N} calls (µs per call)")
    print(f"{'operation':<10}{'wrapper':>10}  {'bare peer':<12}{'bare':>10}{'ratio':>9}")
    for name, wrapped, peer, bare in rows:
        print(f"{name:<10}{wrapped:>10.2f}  {peer:<12}{bare:>10.2f}{wrapped / bare:>8.2f}x")


if __name__ == "__main__":
    main()
