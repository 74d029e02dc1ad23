"""Workload with a known number of page faults, spread evenly over a given time.

Touches ``pages`` fresh 4 KiB pages of an anonymous mapping (huge pages disabled, so one write is one
fault) in small paced chunks over ``seconds``. Prints one JSON line with the pages touched and this
process's own minor-fault count (getrusage), so a test knows the truth.

Usage: python pagefaults.py PAGES SECONDS [--after-sigusr1] [--cpu-paced]

``--after-sigusr1``: map the region, then wait for SIGUSR1 before touching it (a test starts the
faults once a tool has attached).

``--cpu-paced``: one fault at a time, spread evenly over SECONDS of this process's CPU time
instead of in 5 ms chunks of wall-clock time. A count scaled by the thread's own running time
assumes faults come at an even rate in that time. Paced by the wall clock, a process that waited
for a CPU catches up in a burst with no spinning between; and in chunks, a rotation slice that
holds about one chunk of the process's CPU time (20 ms slices at a quarter of a CPU) counts a
whole chunk or none, so the estimate is a sample of a few hundred bursts (about 6 % spread).
"""

from __future__ import annotations

import json
import mmap
import resource
import signal
import sys
import time


def main() -> int:
    pages = int(sys.argv[1])
    seconds = float(sys.argv[2])
    flags = set(sys.argv[3:])
    unknown = flags - {"--after-sigusr1", "--cpu-paced"}
    if unknown:
        sys.exit(f"pagefaults.py: unknown option(s) {sorted(unknown)}")
    wait = "--after-sigusr1" in flags
    clock = time.process_time if "--cpu-paced" in flags else time.monotonic
    if wait:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # kept pending until waited for
    page = mmap.PAGESIZE
    region = mmap.mmap(-1, pages * page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        region.madvise(mmap.MADV_NOHUGEPAGE)
    if wait:
        signal.sigwait({signal.SIGUSR1})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    chunks = pages if "--cpu-paced" in flags else max(1, int(seconds / 0.005))
    per_chunk = -(-pages // chunks)
    start = clock()
    touched = 0
    for chunk in range(chunks):
        end = min(pages, touched + per_chunk)
        for index in range(touched, end):
            region[index * page] = 1
        touched = end
        deadline = start + (chunk + 1) * seconds / chunks
        while clock() < deadline:
            pass  # busy, so the process stays on CPU like a compute kernel
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    print(
        json.dumps({"pages": touched, "minflt_touching": after - before, "minflt_total": after}), flush=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
