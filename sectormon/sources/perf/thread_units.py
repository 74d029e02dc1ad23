"""Counting units from thread lists: which threads are new, which were rebound, which ended.

A thread's counts are attributed to a core and a CMG by its CPU affinity: pinned to one CPU, that
core and its CMG; otherwise only the CMG that holds all its CPUs, if one does, and the process
total (PMU document section 6.7, note 1, which is why binding is asked for once). The thread list
changes at any time while rebinding is rare, so :class:`ThreadTracker` reads a new thread's
affinity at once and a known thread's only every few polls, and answers an unchanged list with the
very same ``alive`` tuple, which tells the sampler nothing changed. With each affinity read it
hands the thread to a :class:`~sectormon.sources.perf.thread_binding.BindingWatch` (the frames'
binding and migrations) and, under ``--bind``, pins a thread it sees for the first time
(:class:`~sectormon.sources.perf.thread_binding.Pinner`) before reading its affinity.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from sectormon.data.binding import ThreadBinding
from sectormon.data.readings import Unit, unit_key
from sectormon.host.threads import Lineage
from sectormon.sources.base import UnitsUpdate
from sectormon.sources.perf.thread_binding import BindingWatch, Pinner

BINDING_WARNING = (
    "some threads are not bound to a single CPU: per-core figures need thread binding "
    "(e.g. OMP_PROC_BIND=close OMP_PLACES=cores, numactl, taskset, or sectormon --bind LIST -- CMD; "
    "PMU document section 6.7 note 1); "
    "an unbound thread counts in no core, in its CMG only when all its CPUs are in that CMG, and "
    "always in the process total"
)

NO_LINEAGE = Lineage()
"""Where a thread belongs when nobody said: no process, no family."""


def thread_unit(
    tid: int,
    affinity: Iterable[int],
    cmg_of: Mapping[int, int],
    lineage: Lineage = NO_LINEAGE,
    *,
    inherit: bool = False,
) -> Unit:
    """The unit of a thread: pinned to one CPU -> that core and its CMG; else core None, and the
    CMG only when the whole affinity lies inside one CMG."""
    cpus = set(affinity)
    core: int | None = None
    if len(cpus) == 1:
        (core,) = cpus
        cmg = cmg_of.get(core)
    else:
        cmgs = {cmg_of.get(c) for c in cpus}
        cmg = next(iter(cmgs)) if len(cmgs) == 1 else None
    return Unit(
        "thread", tid, core=core, cmg=cmg, process=lineage.process, family=lineage.family, inherit=inherit
    )


class ThreadTracker:
    """Turns successive thread lists into :class:`UnitsUpdate`: new, rebound and ended threads.

    Threads passed with ``roots=True`` get inherited groups (``Unit.inherit``) and stay units after
    they exit while any thread is left: their groups go on summing the threads and processes they
    started, which may outlive them. ``watch`` follows each thread's binding (None: nobody asks);
    ``pinner`` pins each new thread (``--bind``).
    """

    def __init__(
        self,
        cmg_of: Mapping[int, int],
        affinity: Callable[[int], Iterable[int]] = os.sched_getaffinity,
        *,
        refresh_every: int = 1,
        watch: BindingWatch | None = None,
        pinner: Pinner | None = None,
        warn_unbound: bool = True,
    ) -> None:
        """``warn_unbound``: say :data:`BINDING_WARNING` once when a thread is not bound (False
        for a front end that shows no per-core figure, such as ``stat``)."""
        self._cmg_of = cmg_of
        self._affinity = affinity
        self._watch = watch
        self._pinner = pinner
        self._confirmed: set[int] = set()  # threads whose affinity a refresh read again
        self.refreshed = False  # the last update re-read every thread's affinity
        self._units: dict[int, Unit] = {}
        self._warned = not warn_unbound
        self._refresh_every = refresh_every
        self._polls = 0
        self._last_tids: list[int] = []
        self._last_alive: tuple[Unit, ...] = ()

    @property
    def units(self) -> tuple[Unit, ...]:
        return tuple(self._units.values())

    @property
    def polls(self) -> int:
        """Polls so far (:meth:`update` and :meth:`unchanged`)."""
        return self._polls

    @property
    def refresh_due(self) -> bool:
        """Whether the next poll re-reads every thread's affinity (it needs the thread list)."""
        return (self._polls + 1) % self._refresh_every == 0

    def unchanged(self) -> UnitsUpdate:
        """A poll whose caller knows the thread list is the same as last time (and no refresh is due).

        Returns the very same ``alive`` tuple, which tells the sampler nothing changed.
        """
        self._polls += 1
        self.refreshed = False
        return UnitsUpdate(alive=self._last_alive)

    def update(
        self, tids: Iterable[int], lineage: Mapping[int, Lineage] | None = None, *, roots: bool = False
    ) -> UnitsUpdate:
        """New threads get their affinity read at once; known ones every ``refresh_every`` polls.

        Rebinding is rare while the thread list changes at any time, so the sampler can poll the
        list every timeslice without paying one affinity syscall per thread each time. A thread
        whose affinity cannot be read has exited. ``lineage`` says where each thread belongs;
        ``roots``: the threads new in this update get inherited groups.
        """
        self._polls += 1
        refresh = self.refreshed = self._polls % self._refresh_every == 0
        ordered = sorted(set(tids))
        if not refresh and ordered == self._last_tids:
            # The common case at every timeslice: same threads, no affinity due. Nothing is new or
            # ended and the binding warning was already decided for exactly these units.
            return UnitsUpdate(alive=self._last_alive)
        current: dict[int, Unit] = {}
        listed: list[int] = []
        bindings: list[tuple[str, ThreadBinding]] = []
        for tid in ordered:
            known = self._units.get(tid)
            if known is not None and not refresh:
                current[tid] = known
                listed.append(tid)
                continue
            pinned = known is None and self._pinner is not None and self._pinner.pin(tid)
            try:
                cpus = self._affinity(tid)
            except OSError:
                if known is None:
                    self._forget(tid)  # pinned, then gone: its number may come back as a new thread
                elif known.inherit:
                    current[tid] = known
                continue
            where = lineage.get(tid, NO_LINEAGE) if lineage is not None else NO_LINEAGE
            inherit = known.inherit if known is not None else roots
            current[tid] = unit = thread_unit(tid, cpus, self._cmg_of, where, inherit=inherit)
            listed.append(tid)
            if known is not None:
                self._confirmed.add(tid)
            if self._watch is not None:
                binding = self._watch.read(tid, where.process, cpus, pinned=pinned)
                if binding is not None:
                    bindings.append((unit.key, binding))
        for tid, known in self._units.items():
            if listed and known.inherit and tid not in current:
                current[tid] = known  # an exited root: its groups count what it started, still running
        ended = tuple(unit_key("thread", tid) for tid in self._units if tid not in current)
        for tid in self._units:
            if tid not in current:
                self._forget(tid)
        self._units = current
        self._last_tids = listed  # threads whose affinity could not be read are not kept
        self._last_alive = tuple(current.values())
        warnings: tuple[str, ...] = ()
        if not self._warned and any(u.core is None for u in current.values()):
            self._warned = True
            warnings = (BINDING_WARNING,)
        return UnitsUpdate(alive=self._last_alive, ended=ended, warnings=warnings, bindings=tuple(bindings))

    def _forget(self, tid: int) -> None:
        self._confirmed.discard(tid)
        if self._watch is not None:
            self._watch.forget(tid)
        if self._pinner is not None:
            self._pinner.forget(tid)

    def bindings(self) -> Mapping[int, tuple[ThreadBinding, int | None]]:
        """Each counted thread's newest binding and its process, by tid, once a refresh has read
        its affinity again (empty without a watch): a thread is first seen when it starts (a
        command's main thread before its exec), before the program has had a chance to bind it."""
        if self._watch is None:
            return {}
        units = self._units
        confirmed = self._confirmed
        return {
            tid: (binding, units[tid].process)
            for tid, binding in self._watch.bindings().items()
            if tid in units and tid in confirmed
        }
