"""Thread churn: many threads that each burn a fixed amount of CPU, then exit.

Starts ``THREADS`` threads in turn, at most ``ALIVE`` alive at once, each spinning until its own
CPU clock has advanced ``MS`` milliseconds, so the total task-clock is known ahead (threads x ms,
plus the interpreter's own). With ``--gate`` it prints its pid and waits for a line on stdin first,
so a test can attach with ``--pid`` (or ``perf stat -p``) before any thread starts.

Usage: python churn.py THREADS MS ALIVE [--gate]
"""

from __future__ import annotations

import os
import sys
import threading
import time


def burn(ms: float, slots: threading.Semaphore) -> None:
    try:
        end = time.thread_time() + ms / 1000
        while time.thread_time() < end:
            pass
    finally:
        slots.release()


def main() -> int:
    threads, ms, alive = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    if "--gate" in sys.argv[4:]:
        print(os.getpid(), flush=True)
        sys.stdin.readline()
    slots = threading.Semaphore(alive)
    started = []
    for _ in range(threads):
        slots.acquire()
        thread = threading.Thread(target=burn, args=(ms, slots))
        thread.start()
        started.append(thread)
    for thread in started:
        thread.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
