"""The threads of the counted processes as a table (the TUI's thread list, ``T`` on the cores view).

One :class:`ThreadRow` per thread: what htop shows of a thread plus where it may run, since binding
matters for the sector cache (PMU document section 6.7). Everything comes from procfs under
:mod:`sectormon.host.roots`, two small reads per thread: ``/proc/PID/task/TID/stat`` (name, state,
CPU times, the CPU it last ran on) and ``status`` (``Cpus_allowed_list``, the affinity). No psutil
and no ``sched_getaffinity``: both need a live thread, and tests give a fake tree. CPU % is the
thread's CPU time over the wall time between two snapshots of one :class:`ThreadTable`, so the
first snapshot has none (``None``: n/a, never a made-up 0).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sectormon.files.text import is_ascii_digits
from sectormon.host import roots
from sectormon.host.cpu_time import CLOCK_TICKS, stat_times
from sectormon.host.scheduling import last_cpu
from sectormon.host.topology import CpuListError, format_cpu_list, parse_cpu_list

_AFFINITY = b"Cpus_allowed_list:"


@dataclass(frozen=True, slots=True)
class ThreadRow:
    """One thread of process ``pid``: ``state`` the kernel's letter (R running, S sleeping, D in
    uninterruptible wait...), ``cpu_percent`` of one core, ``affinity`` the CPUs it may run on
    (``None``: unreadable), ``last_cpu`` the one it ran on last (``None``: unknown)."""

    tid: int
    pid: int
    name: str
    state: str
    cpu_percent: float | None
    last_cpu: int | None
    affinity: tuple[int, ...] | None

    @property
    def bound(self) -> bool | None:
        """Whether the thread may run on one CPU only (``None``: affinity unknown)."""
        return None if self.affinity is None else len(self.affinity) == 1

    @property
    def affinity_text(self) -> str:
        """The affinity as a compact CPU list (``0-3,8``), ``n/a`` when unknown."""
        return "n/a" if self.affinity is None else format_cpu_list(self.affinity)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(64 * 1024)  # a status file is about 1.5 KiB, a stat line under 1 KiB
    except OSError:  # the thread ended between the listing and the read, or is not ours to read
        return None


def affinity_of(status: bytes) -> tuple[int, ...] | None:
    """The CPUs of a ``status`` image's ``Cpus_allowed_list`` (``None``: no such line, or bad)."""
    for line in status.splitlines():
        if line.startswith(_AFFINITY):
            try:
                return parse_cpu_list(line[len(_AFFINITY) :].decode("ascii", "replace").strip())
            except CpuListError:
                return None
    return None


def name_and_state(stat: bytes) -> tuple[str, str] | None:
    """The command (field 2, in parentheses, which it may hold itself) and state of a ``stat`` line."""
    head, sep, rest = stat.rpartition(b")")
    _, paren, name = head.partition(b"(")
    fields = rest.split()
    if not (sep and paren and fields):
        return None
    return name.decode(errors="replace"), fields[0].decode("ascii", "replace")


class ThreadTable:
    """Successive snapshots of the threads of some processes, each with the CPU % since the one before."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[int, int] = {}  # tid -> CPU ticks at the previous snapshot
        self._last_t: float | None = None

    def snapshot(self, pids: Iterable[int]) -> list[ThreadRow]:
        """The threads of ``pids`` now, by pid then tid; a process gone has none."""
        now = self._clock()
        elapsed = None if self._last_t is None else now - self._last_t
        rows: list[ThreadRow] = []
        seen: dict[int, int] = {}
        for pid in sorted(set(pids)):
            for tid in _tids(pid):
                row = self._row(pid, tid, elapsed, seen)
                if row is not None:
                    rows.append(row)
        self._last, self._last_t = seen, now
        return rows

    def _row(self, pid: int, tid: int, elapsed: float | None, seen: dict[int, int]) -> ThreadRow | None:
        stat = _read(roots.procfs(pid, "task", tid, "stat"))
        named = name_and_state(stat) if stat is not None else None
        if stat is None or named is None:
            return None  # ended since the listing
        times = stat_times(stat)
        percent = None
        if times is not None:
            ticks = seen[tid] = times.utime + times.stime
            before = self._last.get(tid)
            if before is not None and elapsed:
                percent = max(0.0, (ticks - before) / CLOCK_TICKS / elapsed * 100.0)
        status = _read(roots.procfs(pid, "task", tid, "status"))
        return ThreadRow(
            tid=tid,
            pid=pid,
            name=named[0],
            state=named[1],
            cpu_percent=percent,
            last_cpu=last_cpu(stat),
            affinity=affinity_of(status) if status is not None else None,
        )


def _tids(pid: int) -> list[int]:
    try:
        names = os.listdir(roots.procfs(pid, "task"))
    except OSError:  # gone, or not ours
        return []
    return sorted(int(n) for n in names if is_ascii_digits(n))
