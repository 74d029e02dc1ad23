"""What a process has mapped now, from ``/proc/PID/maps``: the mappings sampling did not see made.

Sampling learns of mappings from the kernel's MMAP2 records, which exist only for what was mapped
after the sampling events were opened. A running process (``--pid``), or every process on the CPUs
of ``--cpus``, had mapped its binary and libraries before: their mappings are read here once, as
the same :class:`~sectormon.data.samples.MapEvent` records the sampler produces, so attribution
treats both alike.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from sectormon.data.samples import MapEvent
from sectormon.host import roots

_MAPS_LINE = re.compile(r"([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]+) \S+ \d+\s*(.*)")


def parse_proc_maps(text: str, pid: int, time: int) -> Iterator[MapEvent]:
    """``/proc/PID/maps`` lines as :class:`MapEvent` (anonymous mappings get ``//anon``)."""
    for line in text.splitlines():
        match = _MAPS_LINE.fullmatch(line.rstrip())
        if not match:
            continue
        start, end, perms, offset, path = match.groups()
        prot = (1 if perms[0] == "r" else 0) | (2 if perms[1] == "w" else 0) | (4 if perms[2] == "x" else 0)
        yield MapEvent(time, pid, int(start, 16), int(end, 16), int(offset, 16), path or "//anon", prot)


def read_proc_maps(pid: int, time: int) -> list[MapEvent]:
    """The mappings of a running process now ([] when it is gone or not readable)."""
    try:
        text = Path(roots.procfs(pid, "maps")).read_text(errors="surrogateescape")
    except OSError:
        return []
    return list(parse_proc_maps(text, pid, time))


def all_proc_maps() -> list[MapEvent]:
    """Every process's mappings now (CPU-wide sampling sees processes that started before it)."""
    out: list[MapEvent] = []
    with contextlib.suppress(OSError):
        for name in os.listdir(roots.PROCFS_PATH):
            if name.isdigit():
                out += read_proc_maps(int(name), 0)
    return out
