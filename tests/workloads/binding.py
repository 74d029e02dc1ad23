"""A two-thread target for the binding check: the main thread binds itself, the worker does not.

The main thread starts the worker first (so the worker keeps the affinity the process started
with), then binds itself to the first CPU of that affinity; both burn CPU for SECONDS. Under
``sectormon --bind`` the process starts pinned, so both end up bound. Prints one JSON line on
stdout at the end: the tids of the main thread and the worker, and each one's affinity then.

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
        box["tid"] = threading.get_native_id()
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
