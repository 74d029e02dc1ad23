"""What one read of the TUI's thread list (``T``) costs: ``ThreadTable.snapshot`` of a process with N
threads (this one, its extra threads waiting), from the real procfs.

The list reads two small files per thread (``stat`` and ``status``); it is read once a second while
it is open (``REFRESH_SECONDS`` in ``sectormon/ui/screens/threads.py``), not with every frame. This
prints the median and the 90th percentile of N reads, in milliseconds, and the share of one core
that a read a second takes.

Usage: python benchmarks/bench_thread_list.py [--threads 48] [--reads 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

from sectormon.host.thread_table import ThreadTable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=48, help="threads of the process read (default 48)")
    parser.add_argument("--reads", type=int, default=200, help="snapshots timed (default 200)")
    args = parser.parse_args()
    stop = threading.Event()
    waiting = [threading.Thread(target=stop.wait) for _ in range(args.threads - 1)]
    for thread in waiting:
        thread.start()
    table = ThreadTable()
    times: list[float] = []
    rows = []
    try:
        for _ in range(args.reads):
            start = time.perf_counter()
            rows = table.snapshot([os.getpid()])
            times.append(time.perf_counter() - start)
    finally:
        stop.set()
        for thread in waiting:
            thread.join()
    times.sort()
    median = statistics.median(times)
    p90 = times[int(len(times) * 0.9) - 1]
    print(
        f"{len(rows)} threads, {args.reads} reads: median {median * 1e3:.2f} ms "
        f"({median / len(rows) * 1e6:.0f} µs per thread), p90 {p90 * 1e3:.2f} ms; "
        f"one read a second: {median * 100:.2f} % of a core"
    )


if __name__ == "__main__":
    main()
