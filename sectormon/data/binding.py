"""Where a counted thread may run and how often it moved: the binding facts frames carry per thread.

Sector cache is a per-core, per-CMG feature, so the PMU document asks for every thread to be bound
(section 6.7, note 1). The perf source reads each thread's affinity and migration count
(:mod:`sectormon.sources.perf.thread_binding`); slices carry a thread's :class:`ThreadBinding`
when it changed, recordings keep it, and the engine hands the newest one of each thread to the
frames (``Frame.bindings``), whose JSON shows it as the thread's ``binding`` object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCHED = "sched"
"""Migrations from the kernel's own count, ``se.nr_migrations`` of /proc/PID/task/TID/sched."""

LAST_CPU = "last_cpu"
"""Migrations seen as the CPU the thread last ran on (field 39 of its stat) changing between two
reads: a lower bound, since a thread can move and come back between reads (kernels without
``CONFIG_SCHED_DEBUG`` have no sched file)."""

MIGRATION_SOURCES = (SCHED, LAST_CPU)


@dataclass(frozen=True, slots=True)
class ThreadBinding:
    """A thread's affinity (``cpus``, sorted) and its migrations since sectormon found it, not
    counting the moves a new binding forced (``None``: unknown), with where that count came from
    (:data:`SCHED` or :data:`LAST_CPU`; ``None`` with an unknown count)."""

    cpus: tuple[int, ...]
    migrations: int | None = None
    migrations_from: str | None = None

    @property
    def bound(self) -> bool:
        """Pinned to exactly one CPU."""
        return len(self.cpus) == 1

    def record(self) -> dict[str, Any]:
        """The slice record's form (``bound`` follows from ``cpus``, so it is not stored)."""
        return {
            "cpus": list(self.cpus),
            "migrations": self.migrations,
            "migrations_from": self.migrations_from,
        }

    def to_json(self) -> dict[str, Any]:
        """The frame's form: the record with ``bound`` first."""
        return {"bound": self.bound, **self.record()}
