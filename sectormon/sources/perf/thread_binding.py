"""Thread binding in a perf session: ``--bind`` pins a launched command's threads, and each
counted thread's affinity and migrations are followed for the frames.

:class:`Pinner` is ``likwid-pin -c``'s rule: the command's threads get the listed CPUs round
robin in the order sectormon meets them, the main thread the first CPU before its exec (the
command's threads then start on that CPU too, as threads inherit their creator's affinity), every
later one when the thread tracker first sees it. A thread is pinned once: what the program does
with its affinity afterwards is its own choice, which the frames show.

:class:`BindingWatch` turns each read of a thread's affinity (:mod:`.thread_units` reads it when
it finds the thread, and every few polls after) into a :class:`~sectormon.data.binding.ThreadBinding`
with its migrations since it was found (:mod:`sectormon.host.scheduling`). A move that a new
binding forces is not a migration in the sense the PMU document warns about, so after the
affinity changes (or sectormon pinned the thread) the moves are not counted until the thread has
run on a CPU of its new affinity; between two reads that see the change, moves before it are
discarded with it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sectormon.data.binding import LAST_CPU, SCHED, ThreadBinding
from sectormon.host.scheduling import thread_last_cpu, thread_migrations

ReadCount = Callable[[int | None, int], int | None]
"""``(pid, tid) ->`` a reading of the thread (its migration count, or the CPU it last ran on)."""


def pin_thread(tid: int, cpus: Iterable[int]) -> None:
    """``sched_setaffinity`` on thread ``tid`` (looked up at each call, so a test can stand in)."""
    os.sched_setaffinity(tid, cpus)


class Pinner:
    """``--bind LIST``: pins each thread it is given to the next CPU of ``cpus``, round robin."""

    def __init__(
        self,
        cpus: Sequence[int],
        set_affinity: Callable[[int, Iterable[int]], None] = pin_thread,
    ) -> None:
        if not cpus:
            raise ValueError("a Pinner needs at least one CPU")
        self.cpus = tuple(cpus)
        self._set_affinity = set_affinity
        self._pinned: dict[int, int] = {}  # tid -> its CPU
        self._turn = 0

    def pin(self, tid: int) -> bool:
        """Pin ``tid`` to the next CPU unless it was pinned already; whether sectormon pinned it
        (False: it ended first). Another error (a CPU the cgroup forbids) is raised."""
        if tid in self._pinned:
            return True
        cpu = self.cpus[self._turn % len(self.cpus)]
        try:
            self._set_affinity(tid, {cpu})
        except ProcessLookupError:
            return False
        self._turn += 1
        self._pinned[tid] = cpu
        return True

    def pinned(self, tid: int) -> bool:
        """Whether sectormon pinned ``tid``."""
        return tid in self._pinned

    def forget(self, tid: int) -> None:
        """``tid`` ended (the kernel may give its number to a new thread, which is pinned anew)."""
        self._pinned.pop(tid, None)


@dataclass(slots=True)
class _Watched:
    """A thread's binding so far: ``mark`` is the reading the count was last brought up to (the
    kernel's count, or the last CPU), ``None`` while unknown."""

    cpus: tuple[int, ...]
    source: str
    count: int | None
    mark: int | None
    settling: bool
    reported: ThreadBinding | None = None


class BindingWatch:
    """Each thread's newest binding, from the affinity reads it is handed (module docstring)."""

    def __init__(
        self, migrations: ReadCount = thread_migrations, last_cpu: ReadCount = thread_last_cpu
    ) -> None:
        self._migrations = migrations
        self._last_cpu = last_cpu
        self._watched: dict[int, _Watched] = {}

    def read(
        self, tid: int, pid: int | None, affinity: Iterable[int], *, pinned: bool = False
    ) -> ThreadBinding | None:
        """Thread ``tid`` (of process ``pid``) may run on ``affinity`` now; its binding when that
        differs from the one returned last (``None``: unchanged). ``pinned``: sectormon has just
        pinned it, so its moves count once it runs on one of those CPUs."""
        cpus = tuple(sorted(set(affinity)))
        watched = self._watched.get(tid)
        if watched is None:
            watched = self._watched[tid] = self._first(tid, pid, cpus, pinned)
        else:
            self._next(watched, tid, pid, cpus)
        binding = ThreadBinding(cpus, watched.count, watched.source if watched.count is not None else None)
        if binding == watched.reported:
            return None
        watched.reported = binding
        return binding

    def _first(self, tid: int, pid: int | None, cpus: tuple[int, ...], pinned: bool) -> _Watched:
        count = self._migrations(pid, tid)
        if count is not None:
            watched = _Watched(cpus, SCHED, 0, count, settling=pinned)
        else:
            cpu = self._last_cpu(pid, tid)
            watched = _Watched(cpus, LAST_CPU, None if cpu is None else 0, cpu, settling=pinned)
        if pinned:
            self._settle(watched, tid, pid)
        return watched

    def _next(self, watched: _Watched, tid: int, pid: int | None, cpus: tuple[int, ...]) -> None:
        if cpus != watched.cpus:
            watched.cpus = cpus
            watched.settling = True
        if watched.settling:
            self._settle(watched, tid, pid)
            return
        reading = (self._migrations if watched.source == SCHED else self._last_cpu)(pid, tid)
        if reading is None:
            return  # ended between its affinity read and this one: the count stands
        if watched.mark is None or watched.count is None:
            watched.count = watched.count or 0
        elif watched.source == SCHED:
            watched.count += max(0, reading - watched.mark)
        elif reading != watched.mark:
            watched.count += 1
        watched.mark = reading

    def _settle(self, watched: _Watched, tid: int, pid: int | None) -> None:
        """Start counting afresh from now; stop settling once the thread last ran inside its affinity."""
        cpu = self._last_cpu(pid, tid)
        reading = self._migrations(pid, tid) if watched.source == SCHED else cpu
        if reading is not None:
            watched.mark = reading
            if watched.count is None:
                watched.count = 0
        if cpu is not None and cpu in watched.cpus:
            watched.settling = False

    def forget(self, tid: int) -> None:
        """``tid`` ended."""
        self._watched.pop(tid, None)

    def bindings(self) -> Mapping[int, ThreadBinding]:
        """The newest binding of every thread read so far, by tid."""
        return {tid: w.reported for tid, w in self._watched.items() if w.reported is not None}
