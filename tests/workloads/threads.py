"""A multi-threaded target whose threads start and exit during the run.

Each worker burns CPU and touches fresh pages for its lifetime, then exits; workers are started in
waves. Prints its pid on the first line (so a test can attach with --pid), then a JSON summary of
the thread ids it ran when it ends.

Usage: python threads.py WAVES THREADS_PER_WAVE WAVE_SECONDS [PIN]
With PIN=1 each worker binds itself to one CPU (os.sched_setaffinity) so per-core figures apply.
With WORKLOAD_GATE=1 in the environment the first wave starts when a line arrives on stdin (else
after WORKLOAD_START_DELAY seconds, default 0.5).
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import threading
import time


def worker(seconds: float, pin: int | None, tids: list[int]) -> None:
    if pin is not None:
        os.sched_setaffinity(0, {pin})
    tids.append(threading.get_native_id())
    region = mmap.mmap(-1, 256 * mmap.PAGESIZE)
    end = time.monotonic() + seconds
    index = 0
    while time.monotonic() < end:
        region[(index % 256) * mmap.PAGESIZE] = 1
        index += 1


def main() -> int:
    waves, per_wave, wave_seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    pin = len(sys.argv) > 4 and sys.argv[4] == "1"
    cpus = sorted(os.sched_getaffinity(0))
    print(os.getpid(), flush=True)
    if os.environ.get("WORKLOAD_GATE"):
        sys.stdin.readline()  # the test says go once its tool counts this process
    else:
        time.sleep(float(os.environ.get("WORKLOAD_START_DELAY", "0.5")))
    tids: list[int] = []
    for wave in range(waves):
        threads = [
            threading.Thread(target=worker, args=(wave_seconds, cpus[i % len(cpus)] if pin else None, tids))
            for i in range(per_wave)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        del wave
    print(json.dumps({"tids": tids}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
