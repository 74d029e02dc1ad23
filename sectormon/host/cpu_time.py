"""The kernel's account of the CPU time a target used: the reference of thread coverage.

``/proc/PID/stat`` holds a process's user and system time (``utime``, ``stime``: every thread,
those that ended too) and its reaped children's (``cutime``, ``cstime``), in clock ticks. Summed
over the target's processes they are what the target ran, whether sectormon counted it or not.
A launched command that has ended is sectormon's own reaped child: its whole time, its reaped
descendants' included, is then in sectormon's ``RUSAGE_CHILDREN``.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterable

from sectormon.host import roots

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Ticks per second of ``/proc/PID/stat``'s times (USER_HZ, 100 on Linux): their resolution."""


def stat_cpu_ticks(stat: bytes) -> int | None:
    """utime + stime + cutime + cstime of a ``/proc/PID/stat`` line, in clock ticks (``None``: not
    such a line). The command (field 2) may hold spaces and parentheses: fields are counted
    after its last ``)``."""
    _, sep, rest = stat.rpartition(b")")
    fields = rest.split()
    if not sep or len(fields) < 15:
        return None
    try:
        return sum(int(value) for value in fields[11:15])
    except ValueError:
        return None


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class TargetCpuClock:
    """The CPU seconds the target's processes have used, as the kernel counts them.

    ``pids`` gives the processes counted now, the root first. The root's last figure is kept when
    it can no longer be read (a process given by ``--pid`` that ended); ``reaped_root`` says the
    root is sectormon's child and has been reaped, so its whole time is in ``RUSAGE_CHILDREN``
    (measured from this object's creation, before the command starts). Another process that ended
    was reaped by its parent, whose ``cutime`` now holds it.
    """

    def __init__(
        self,
        pids: Callable[[], Iterable[int]],
        *,
        reaped_root: Callable[[], bool] = lambda: False,
    ) -> None:
        self._pids = pids
        self._reaped_root = reaped_root
        self._children_before = _children_seconds()
        self._root_ticks = 0

    def _ticks(self, pid: int) -> int | None:
        try:
            with open(roots.procfs(pid, "stat"), "rb") as handle:
                return stat_cpu_ticks(handle.read())
        except OSError:  # ended (or not ours to read)
            return None

    def seconds(self) -> float:
        """The target's CPU seconds so far."""
        root, *others = self._pids()
        ticks = self._ticks(root)
        if ticks is None and self._reaped_root():
            root_s = _children_seconds() - self._children_before
        else:
            self._root_ticks = ticks = self._root_ticks if ticks is None else ticks
            root_s = ticks / CLOCK_TICKS
        return root_s + sum(filter(None, map(self._ticks, others))) / CLOCK_TICKS
