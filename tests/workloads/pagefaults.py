"""Workload with a known number of page faults, spread evenly over a given time.

Touches ``pages`` fresh 4 KiB pages of an anonymous mapping (huge pages disabled, so one write is one
fault) in small paced chunks over ``seconds``. Prints one JSON line with the pages touched and this
process's own minor-fault count (getrusage), so a test knows the truth.

Usage: python pagefaults.py PAGES SECONDS [--after-sigusr1]

``--after-sigusr1``: map the region, then wait for SIGUSR1 before touching it (a test starts the
faults once a tool has attached).
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
    wait = sys.argv[3:] == ["--after-sigusr1"]
    if wait:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # kept pending until waited for
    page = mmap.PAGESIZE
    region = mmap.mmap(-1, pages * page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        region.madvise(mmap.MADV_NOHUGEPAGE)
    if wait:
        signal.sigwait({signal.SIGUSR1})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    chunks = max(1, int(seconds / 0.005))
    per_chunk = -(-pages // chunks)
    start = time.monotonic()
    touched = 0
    for chunk in range(chunks):
        end = min(pages, touched + per_chunk)
        for index in range(touched, end):
            region[index * page] = 1
        touched = end
        deadline = start + (chunk + 1) * seconds / chunks
        while time.monotonic() < deadline:
            pass  # busy, so the process stays on CPU like a compute kernel
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    print(
        json.dumps({"pages": touched, "minflt_touching": after - before, "minflt_total": after}), flush=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
