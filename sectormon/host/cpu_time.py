"""The kernel's account of the CPU time a target used: the reference of thread coverage.

``/proc/PID/stat`` holds a process's user and system time (``utime``, ``stime``: every thread,
those that ended too) and its reaped children's (``cutime``, ``cstime``), in clock ticks. Summed
over the target's processes they are what the target ran, whether sectormon counted it or not.
A launched command that has ended is sectormon's own reaped child: its whole time, its reaped
descendants' included, is then in sectormon's ``RUSAGE_CHILDREN``.

That figure holds one thing no counter can see: a process's exit teardown. The kernel detaches a
task's counters early in its exit (before it frees its address space, on current kernels), so
freeing the memory of a process that mapped much of it is system time after its last count. A
process that ended is in the figure with that teardown; so beside the total the clock keeps the
system time of the ended processes that were counted (the bound of their teardown, which
:mod:`sectormon.metrics.thread_time` allows for): with children followed, every reaped one (the
inherited counters counted them from their first instruction), else only the root itself.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterable
from typing import NamedTuple

from sectormon.host import roots

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Ticks per second of ``/proc/PID/stat``'s times (USER_HZ, 100 on Linux): their resolution."""


class TargetCpu(NamedTuple):
    """One reading of the target's CPU seconds so far: ``total`` (user and system, ended threads
    and reaped children included) and ``ended_system``, the part of it that is system time of
    counted processes that ended (their exit teardown is in there, uncountable)."""

    total: float
    ended_system: float = 0.0


class StatTimes(NamedTuple):
    """The CPU times of one ``/proc/PID/stat`` line, in clock ticks."""

    utime: int
    stime: int
    cutime: int
    cstime: int

    @property
    def total(self) -> int:
        return self.utime + self.stime + self.cutime + self.cstime


def stat_times(stat: bytes) -> StatTimes | None:
    """utime, stime, cutime and cstime of a ``/proc/PID/stat`` line (``None``: not such a line).
    The command (field 2) may hold spaces and parentheses: fields are counted after its last
    ``)``."""
    _, sep, rest = stat.rpartition(b")")
    fields = rest.split()
    if not sep or len(fields) < 15:
        return None
    try:
        return StatTimes(*(int(value) for value in fields[11:15]))
    except ValueError:
        return None


def process_times(pid: int) -> StatTimes | None:
    """The CPU times of process ``pid`` now (``None``: it has gone, or is not ours to read). Its
    zombie still has them: a parent reads its child's own times there before reaping it."""
    try:
        with open(roots.procfs(pid, "stat"), "rb") as handle:
            return stat_times(handle.read())
    except OSError:
        return None


def _children_usage() -> tuple[float, float]:
    """User and system seconds of sectormon's reaped children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


class TargetCpuClock:
    """The CPU seconds the target's processes have used, as the kernel counts them.

    ``pids`` gives the processes counted now, the root first. The root's last figure is kept when
    it can no longer be read (a process given by ``--pid`` that ended); ``reaped_root`` says the
    root is sectormon's child and has been reaped, so its whole time is in ``RUSAGE_CHILDREN``
    (measured from this object's creation, before the command starts). Another process that ended
    was reaped by its parent, whose ``cutime`` now holds it. ``children_counted``: the target's
    child processes are counted (followed through inherited counters), so the system time of
    those reaped is teardown-bound like the root's own (module docstring); without it, a reaped
    child is time no counter saw, all of it, and the reaped root's own system time is its
    ``root_final`` times (read from its zombie), else its last reading.
    """

    def __init__(
        self,
        pids: Callable[[], Iterable[int]],
        *,
        reaped_root: Callable[[], bool] = lambda: False,
        root_final: Callable[[], StatTimes | None] = lambda: None,
        children_counted: bool = True,
    ) -> None:
        self._pids = pids
        self._reaped_root = reaped_root
        self._root_final = root_final
        self._children_counted = children_counted
        self._children_before = _children_usage()
        self._root = StatTimes(0, 0, 0, 0)

    def read(self) -> TargetCpu:
        """The target's CPU seconds so far."""
        root, *others = self._pids()
        times = process_times(root)
        if times is None and self._reaped_root():
            user, system = _children_usage()
            user -= self._children_before[0]
            system -= self._children_before[1]
            total_ticks = (user + system) * CLOCK_TICKS
            if self._children_counted:
                ended_ticks: float = system * CLOCK_TICKS
            else:  # the root's own system time: its children's was never counted
                ended_ticks = (self._root_final() or self._root).stime
        else:
            self._root = times = self._root if times is None else times
            total_ticks = times.total
            ended_ticks = times.cstime if self._children_counted else 0
        for pid in others:
            other = process_times(pid)
            if other is not None:
                total_ticks += other.total
                ended_ticks += other.cstime if self._children_counted else 0
        return TargetCpu(total_ticks / CLOCK_TICKS, ended_ticks / CLOCK_TICKS)
