"""Workload in phases, each touching a known number of fresh pages when told to.

For every ``PAGES`` argument it reads one line from stdin, touches that many fresh 4 KiB pages of
an anonymous mapping (huge pages disabled, so one write is one fault), and prints one JSON line
with the phase, its pages, this process's own minor faults over the phase (getrusage) and the
seconds since the process was created when the phase ended (``/proc``, to 10 ms). Between
phases it only waits: a test drives a counter's control between two phases and knows which pages
fell in which span. It prints ``ready`` once its mappings are made, before the first phase.

``--region NAME``: each phase's page touches are marked as the region NAME
(:func:`sectormon.regions.region`).

Usage: python phases.py [--region NAME] PAGES [PAGES...]
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import resource
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager


def since_created() -> float:
    """Seconds since this process was created (its fork, before any exec), from /proc."""
    with open("/proc/self/stat") as stat:
        started = int(stat.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as uptime:
        now = float(uptime.read().split()[0])
    return now - started / os.sysconf("SC_CLK_TCK")


def main() -> int:
    args = sys.argv[1:]
    marked: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext
    if args[:1] == ["--region"]:
        from sectormon.regions import region as marker

        name = args[1]
        marked = lambda: marker(name)  # noqa: E731
        args = args[2:]
    phases = [int(arg) for arg in args]
    page = mmap.PAGESIZE
    regions = []
    for pages in phases:
        region = mmap.mmap(-1, max(1, pages) * page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            region.madvise(mmap.MADV_NOHUGEPAGE)
        regions.append(region)
    print("ready", flush=True)
    for index, (pages, region) in enumerate(zip(phases, regions, strict=True)):
        if not sys.stdin.readline():
            return 1  # told nothing more: the driver went away
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        with marked():
            for offset in range(0, pages * page, page):
                region[offset] = 1
        after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        report = {"phase": index, "pages": pages, "minflt": after - before, "elapsed": since_created()}
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
