"""A homogeneous multi-threaded target: N threads (the main thread one of them) hash a 1 MiB buffer
for S seconds. hashlib releases the GIL on large buffers, so the threads run in parallel and the
scheduler shares the CPUs evenly among them: every thread does the same work in the same way.
With ``--main-waits`` the main thread starts THREADS workers and only waits for them, as the main
thread of a typical threaded program does.

Usage: python hashing.py THREADS SECONDS [--main-waits]
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time

BUFFER = b"x" * (1 << 20)


def work(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hashlib.sha256(BUFFER).digest()


def main() -> int:
    threads, seconds = int(sys.argv[1]), float(sys.argv[2])
    main_waits = sys.argv[3:] == ["--main-waits"]
    workers = threads if main_waits else threads - 1
    others = [threading.Thread(target=work, args=(seconds,)) for _ in range(workers)]
    for thread in others:
        thread.start()
    if not main_waits:
        work(seconds)
    for thread in others:
        thread.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
