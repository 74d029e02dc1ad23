"""A controllable child process for the perf tests: one command per stdin line, one reply line each.

Commands: ``tids`` (native ids of live threads), ``spawn`` (start a waiting thread; replies its tid),
``pin CPU`` (start a thread that binds itself to CPU; replies its tid), ``end`` (stop the newest
thread), ``touch N`` (fault in N fresh pages), ``spin MS`` (busy loop for MS ms of wall-clock time),
``burn MS`` (busy loop until the main thread has run MS ms on a CPU, however loaded the machine),
``exit CODE``.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
import time

threads: list[tuple[threading.Thread, threading.Event]] = []
keep: list[mmap.mmap] = []


def start_thread(cpu: int | None) -> int:
    ready = threading.Event()
    stop = threading.Event()
    box: list[int] = []

    def body() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        box.append(threading.get_native_id())
        ready.set()
        stop.wait()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    ready.wait()
    threads.append((thread, stop))
    return box[0]


def touch(pages: int) -> None:
    region = mmap.mmap(-1, pages * mmap.PAGESIZE)
    if hasattr(region, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
        region.madvise(mmap.MADV_NOHUGEPAGE)
    for offset in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
        region[offset] = 1
    keep.append(region)


def main() -> None:
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "tids":
            print(" ".join(str(t) for t in sorted(int(n) for n in os.listdir("/proc/self/task"))), flush=True)
        elif cmd == "spawn":
            print(start_thread(None), flush=True)
        elif cmd == "pin":
            print(start_thread(int(args[0])), flush=True)
        elif cmd == "end":
            thread, stop = threads.pop()
            stop.set()
            thread.join()
            print("ok", flush=True)
        elif cmd == "touch":
            touch(int(args[0]))
            print("ok", flush=True)
        elif cmd == "spin":
            end = time.perf_counter() + int(args[0]) / 1000
            while time.perf_counter() < end:
                pass
            print("ok", flush=True)
        elif cmd == "burn":
            end = time.thread_time() + int(args[0]) / 1000
            while time.thread_time() < end:
                pass
            print("ok", flush=True)
        elif cmd == "exit":
            sys.exit(int(args[0]))


if __name__ == "__main__":
    main()
