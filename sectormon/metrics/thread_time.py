"""Thread coverage: the CPU time of the target that was counted, against what the kernel says it used.

Rotation coverage says how much of the window each event was counted on the units that were
counted; it cannot see a thread that was never counted (found late, left out for want of fds, a
child process not followed). A per-task counter's ``time_enabled`` advances only while its thread
runs, so the longest ``time_enabled`` of a thread's readings in a slice is the CPU time counted on
it; the kernel's own figure for the whole target (``Slice.target_cpu_s``, from
``/proc/PID/stat``'s utime+stime+cutime+cstime, which include exited threads and reaped children)
is the reference. Their ratio over the same span of slices is the thread coverage.

The kernel's figure is read every few slices, not at each one: a span runs from one reading to the
next, and a window's thread coverage sums the spans that ended in it. A span with a slice whose
counted time is unknown (missing slices, a reader that started after the span began) is left out
rather than guessed.

One part of the kernel's figure no counter can see: the exit teardown of a process, which the
kernel runs after it has detached the process's counters (freeing its address space; on current
kernels, perf_event_exit_task comes before exit_mm). A process counted from its first instruction
by inherited counters cannot be missed, so a shortfall is put down to teardown as far as the
system time of such processes that ended in the window can hold it
(``Slice.target_ended_system_s``, from :mod:`sectormon.host.cpu_time`), and only the rest counts
as work no counter saw. Where nothing counted ended, the comparison is the plain one; a thread
left out or a child not followed (whose time is no counted process's) shows in full. The
allowance is taken over the window's sums, not span by span: a process's counted time and its
kernel time (in its parent's figure once it is reaped) can fall into different spans.
"""

from __future__ import annotations

from collections.abc import Iterable

from sectormon.data.frames import ThreadTime
from sectormon.data.readings import Row


def counted_task_ns(rows: Iterable[Row]) -> int:
    """The CPU time counted on thread units in one slice: per thread, its longest ``time_enabled``
    (each of its groups counting in the slice was enabled whenever the thread ran)."""
    longest: dict[str, int] = {}
    get = longest.get
    for unit, _core, _cmg, _group, te, _tr, _names, _values in rows:
        if te > get(unit, 0) and unit.startswith("thread:"):
            longest[unit] = te
    return sum(longest.values())


class ThreadTimeTracker:
    """Sums counted task time and the kernel's CPU time span by span (module docstring)."""

    __slots__ = ("_ended_at", "_kernel_at", "_pending_ns", "_valid", "interval", "run")

    def __init__(self, start_cpu_s: float | None = None) -> None:
        """``start_cpu_s``: the target's CPU time when counting began, when known (a command
        launched by the session: 0, it was held before exec until its counters were on), so the
        first span starts with the session instead of at the first reading."""
        self._kernel_at = start_cpu_s  # the last kernel reading: where the open span began
        self._ended_at = 0.0  # the ended processes' system time at that reading
        self._pending_ns = 0  # counted in the open span
        self._valid = True  # every slice of the open span had its counted time
        self.interval = _Sums()
        self.run = _Sums()

    @property
    def tracking(self) -> bool:
        """Whether a span is open: the counted time of each slice is wanted from now on."""
        return self._kernel_at is not None

    def add(self, task_ns: int | None, target_cpu_s: float | None, ended_system_s: float = 0.0) -> None:
        """One slice: its counted task time (``None``: unknown) and the kernel's figure read at its
        end (``None``: not read in this slice) with the system time of the counted processes that
        ended so far."""
        if self._kernel_at is not None:
            if task_ns is None:
                self._valid = False
            else:
                self._pending_ns += task_ns
        if target_cpu_s is None:
            return
        if self._kernel_at is not None and self._valid and target_cpu_s >= self._kernel_at:
            counted = self._pending_ns / 1e9
            kernel = target_cpu_s - self._kernel_at
            ended = max(0.0, ended_system_s - self._ended_at)
            self.interval.add(counted, kernel, ended)
            self.run.add(counted, kernel, ended)
        self._kernel_at = target_cpu_s
        self._ended_at = ended_system_s
        self._pending_ns = 0
        self._valid = True

    def lose_span(self) -> None:
        """Slices are missing (a gap in a recording): the open span's counted time is unknown."""
        if self._kernel_at is not None:
            self._valid = False

    def take_interval(self) -> ThreadTime | None:
        """The spans that ended since the last call (a frame's interval)."""
        out = self.interval.figure()
        self.interval = _Sums()
        return out


class _Sums:
    __slots__ = ("counted", "ended", "kernel", "spans")

    def __init__(self) -> None:
        self.counted = 0.0
        self.kernel = 0.0
        self.ended = 0.0  # system time of counted processes that ended: the teardown's bound
        self.spans = 0

    def add(self, counted: float, kernel: float, ended: float) -> None:
        self.counted += counted
        self.kernel += kernel
        self.ended += ended
        self.spans += 1

    def figure(self) -> ThreadTime | None:
        """The window's figure; the teardown takes what the shortfall and the ended processes'
        system time allow (nothing when nothing was counted: no counted process ran)."""
        if not self.spans:
            return None
        shortfall = self.kernel - self.counted
        teardown = min(self.ended, shortfall) if self.counted > 0 and shortfall > 0 else 0.0
        return ThreadTime(self.counted, self.kernel, teardown)
