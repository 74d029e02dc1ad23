"""A two-thread target for the binding check: the main thread binds itself, the worker does not.

The main thread starts the worker first (so the worker keeps the affinity the process started
with), then binds itself to the first CPU of that affinity; both burn CPU for SECONDS. Under
``sectormon --bind`` the process starts pinned, so both end up bound. Prints one JSON line on
stdout at the end: the tid of the main thread and of the worker, each one's affinity then, and
the worker's command name (``comm``, as sectormon names threads).

Usage: python binding.py SECONDS
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time


def burn(until: float, box: dict[str, object] | None = None) -> None:
    if box is not None:
        box["tid"] = tid = threading.get_native_id()
        with open(f"/proc/self/task/{tid}/comm") as comm:
            box["comm"] = comm.read().strip()
    while time.monotonic() < until:
        pass
    if box is not None:
        box["cpus"] = sorted(os.sched_getaffinity(0))


def main() -> int:
    seconds = float(sys.argv[1])
    until = time.monotonic() + seconds
    worker: dict[str, object] = {}
    thread = threading.Thread(target=burn, args=(until, worker), name="worker")
    thread.start()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    burn(until)
    thread.join()
    main_thread = {"tid": threading.get_native_id(), "cpus": sorted(os.sched_getaffinity(0))}
    print(json.dumps({"main": main_thread, "worker": worker}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
