"""What following the threads' binding costs the sampler: one affinity refresh of N threads
(every 25 polls, 0.5 s at the default 20 ms slice) without and with the binding watch.

Workload: N sleeping threads of this process (default 48, an A64FX node's cores). Timed: the
thread tracker's refresh (``ThreadTracker.update`` with a refresh due: one ``sched_getaffinity``
per thread) with no watch, and with :class:`BindingWatch` (plus one read of
``/proc/PID/task/TID/sched`` per thread, or of its ``stat`` where the kernel has no sched file),
alternating, median of R runs, in µs per refresh and per thread, and the watch's extra share of a
core at the default cadence.

Run: ``.venv/bin/python benchmarks/bench_binding.py [--threads N] [--repeat R]``. The machine's
load shows in wall-clock figures: note ``uptime`` beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sectormon.host.threads import Lineage
from sectormon.sources.perf.thread_binding import BindingWatch
from sectormon.sources.perf.thread_units import ThreadTracker

REFRESH_EVERY_S = 25 * 0.02  # AFFINITY_REFRESH_POLLS at the default timeslice


def refresh_us(tracker: ThreadTracker, tids: list[int], lineage: dict[int, Lineage]) -> float:
    start = time.perf_counter()
    tracker.update(tids, lineage)  # refresh_every=1: every update re-reads every thread
    return (time.perf_counter() - start) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=48)
    parser.add_argument("--repeat", type=int, default=201)
    args = parser.parse_args()
    stop = threading.Event()
    ready: list[int] = []
    started = threading.Barrier(args.threads + 1)

    def sleeper() -> None:
        ready.append(threading.get_native_id())
        started.wait()
        stop.wait()

    workers = [threading.Thread(target=sleeper, daemon=True) for _ in range(args.threads)]
    for worker in workers:
        worker.start()
    started.wait()
    pid = os.getpid()
    tids = sorted(ready)
    lineage = {tid: Lineage(process=pid, family=pid) for tid in tids}
    cmg_of = {cpu: 0 for cpu in os.sched_getaffinity(0)}
    plain = ThreadTracker(cmg_of)
    watched = ThreadTracker(cmg_of, watch=BindingWatch())
    for tracker in (plain, watched):
        tracker.update(tids, lineage)  # first sight: every thread is new
    without: list[float] = []
    with_watch: list[float] = []
    for _ in range(args.repeat):
        without.append(refresh_us(plain, tids, lineage))
        with_watch.append(refresh_us(watched, tids, lineage))
    stop.set()
    base, full = statistics.median(without), statistics.median(with_watch)
    source = next(iter(watched.bindings().values()))[0].migrations_from
    print(f"{args.threads} threads, median of {args.repeat}, migrations from {source}")
    print(f"refresh without the watch: {base:8.0f} us ({base / args.threads:.1f} us per thread)")
    print(f"refresh with the watch:    {full:8.0f} us ({full / args.threads:.1f} us per thread)")
    extra = (full - base) / 1e6 / REFRESH_EVERY_S
    print(f"the watch's extra cost at one refresh per {REFRESH_EVERY_S:g} s: {100 * extra:.3f} % of a core")


if __name__ == "__main__":
    main()
