"""The binding check of a sector-cache run: which threads break the PMU document's binding rule.

Sector cache is a per-PE/CMG feature, so thread-to-CPU binding is mandatory, and the L2 sector
registers are shared by a CMG (PMU document section 6.7, notes 1 and 6). On a sector-cache run
(on an A64FX: the only host whose profile has the sector events, as ``--profile a64fx`` is refused
elsewhere) the perf source warns, naming the threads by tid and command:

- ``unbound``: a thread that may run on more than one CPU;
- ``migrating``: a thread that moved between CPUs since sectormon found it (not counting the move
  a new binding forced, see :mod:`.thread_binding`);
- ``spread``: a process whose CMG-confined threads (bound ones, or those whose CPUs all lie in
  one CMG) are in more than one CMG (a thread that may run in several CMGs is ``unbound``).

Each thread is named once per kind (a process once for ``spread``); threads found by one review
share one warning per kind. :func:`binding_problems` is the rule itself, on plain values, so it is
tested with any topology.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sectormon.data.binding import SCHED, ThreadBinding
from sectormon.host.scheduling import thread_name
from sectormon.host.topology import format_cpu_list

UNBOUND, MIGRATING, SPREAD = "unbound", "migrating", "spread"

MAX_NAMED = 8
"""Threads named in one warning; the rest are counted ("and 12 more")."""

BIND_FIX = (
    "bind every thread to one CPU: OMP_PROC_BIND=close OMP_PLACES=cores (OpenMP), numactl or "
    "taskset, or sectormon --bind LIST -- CMD"
)

ThreadFacts = Mapping[int, tuple[ThreadBinding, int | None]]
"""Each counted thread's binding and process (pid; ``None``: unknown), by tid."""


@dataclass(frozen=True, slots=True)
class Problems:
    """Threads that break the rule, by kind: tids for ``unbound`` and ``migrating``; for
    ``spread``, each spread process's confined threads by CMG."""

    unbound: tuple[int, ...] = ()
    migrating: tuple[int, ...] = ()
    spread: Mapping[int, Mapping[int, tuple[int, ...]]] = field(default_factory=dict)


def binding_problems(threads: ThreadFacts, cmg_of: Mapping[int, int]) -> Problems:
    """What breaks the binding rule among ``threads`` on a host whose CPU -> CMG map is ``cmg_of``."""
    unbound: list[int] = []
    migrating: list[int] = []
    cmgs_of_process: dict[int, dict[int, list[int]]] = {}
    for tid in sorted(threads):
        binding, pid = threads[tid]
        if not binding.bound:
            unbound.append(tid)
        if binding.migrations:
            migrating.append(tid)
        cmgs = {cmg_of.get(cpu) for cpu in binding.cpus}
        cmg = cmgs.pop() if len(cmgs) == 1 else None
        if pid is not None and cmg is not None:
            cmgs_of_process.setdefault(pid, {}).setdefault(cmg, []).append(tid)
    spread = {
        pid: {cmg: tuple(tids) for cmg, tids in sorted(by_cmg.items())}
        for pid, by_cmg in sorted(cmgs_of_process.items())
        if len(by_cmg) > 1
    }
    return Problems(tuple(unbound), tuple(migrating), spread)


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


class BindingCheck:
    """Says what :func:`binding_problems` finds, once per thread and kind (module docstring)."""

    def __init__(
        self,
        cmg_of: Mapping[int, int],
        cmg_label: Callable[[int], str],
        name_of: Callable[[int | None, int], str | None] = thread_name,
    ) -> None:
        self._cmg_of = cmg_of
        self._cmg_label = cmg_label
        self._name_of = name_of
        self._said: set[tuple[str, int]] = set()

    def review(self, threads: ThreadFacts) -> tuple[str, ...]:
        """The warnings for what ``threads`` break that was not said before."""
        found = binding_problems(threads, self._cmg_of)
        warnings: list[str] = []
        unbound = self._new(UNBOUND, found.unbound)
        if unbound:
            named = [
                f"{self._thread(tid, threads)} on CPUs {format_cpu_list(threads[tid][0].cpus)}"
                for tid in unbound
            ]
            warnings.append(
                f"sector cache: threads not bound to one CPU: {_listed(named)}; an unbound thread's counts "
                "belong to no core, and the L2 sector settings it runs under change as it moves (PMU "
                f"document section 6.7, note 1): {BIND_FIX}"
            )
        migrating = self._new(MIGRATING, found.migrating)
        if migrating:
            named = [f"{self._thread(tid, threads)} {self._moves(threads[tid][0])}" for tid in migrating]
            warnings.append(
                f"sector cache: threads that moved between CPUs since sectormon found them: "
                f"{_listed(named)}; a moving thread's figures mix the cores it ran on (PMU document "
                f"section 6.7, note 1): {BIND_FIX}"
            )
        for pid in self._new(SPREAD, tuple(found.spread)):
            where = [
                f"{self._cmg_label(cmg)}: {_listed([str(tid) for tid in tids])}"
                for cmg, tids in found.spread[pid].items()
            ]
            warnings.append(
                f"sector cache: process {pid} ({self._name_of(pid, pid) or 'ended'}) has threads in "
                f"{len(where)} CMGs ({'; '.join(where)}); the L2 sector registers are shared per CMG, so "
                "each CMG's settings and the other processes there mix into its figures (PMU document "
                "section 6.7, notes 1 and 6): keep each process in one CMG (e.g. one MPI rank per CMG, "
                "OMP_PLACES within it, or --bind with CPUs of one CMG)"
            )
        return tuple(warnings)

    def _new(self, kind: str, idents: tuple[int, ...]) -> list[int]:
        """``idents`` not said for ``kind`` yet (now said)."""
        new = [ident for ident in idents if (kind, ident) not in self._said]
        self._said.update((kind, ident) for ident in new)
        return new

    def _thread(self, tid: int, threads: ThreadFacts) -> str:
        return f"{tid} ({self._name_of(threads[tid][1], tid) or 'ended'})"

    @staticmethod
    def _moves(binding: ThreadBinding) -> str:
        how = "by the kernel's count" if binding.migrations_from == SCHED else "seen by polling, at least"
        return f"{binding.migrations} time{'s' if binding.migrations != 1 else ''} ({how})"
