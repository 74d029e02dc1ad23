"""What each slice says about the target's processes: those first seen, the process of each thread
unit opened, the threads whose binding was read or changed, and now and then the kernel's CPU time
of the whole target.

The sampler notes these as it polls and opens units and hands them over with the next slice; the
engine builds the process rows and the thread coverage from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sectormon.data.binding import ThreadBinding
from sectormon.data.readings import ProcessInfo, Unit
from sectormon.host.cpu_time import TargetCpu
from sectormon.sources.base import Source

TARGET_CPU_EVERY = 0.25
"""Seconds of source time between reads of the kernel's CPU time of the target (one /proc read per
process; thread coverage is computed between reads, so they need not follow every slice)."""

SliceProcesses = tuple[
    tuple[ProcessInfo, ...],
    tuple[tuple[str, int], ...],
    TargetCpu | None,
    tuple[tuple[str, ThreadBinding], ...],
]
"""A slice's ``processes``, ``unit_processes``, the kernel's account of the target's CPU time and
the slice's ``bindings``."""


class ProcessFacts:
    """The process facts gathered since the last slice."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._processes: list[ProcessInfo] = []  # since the last slice: processes first seen
        self._unit_processes: list[tuple[str, int]] = []  # ... and the pid of each thread opened
        self._bindings: dict[str, ThreadBinding] = {}  # ... and each thread's newest binding read
        self._target_cpu_at = -TARGET_CPU_EVERY  # source time of the last kernel CPU reading

    def seen(self, processes: Sequence[ProcessInfo]) -> None:
        """Processes a poll found for the first time."""
        self._processes += processes

    def bound(self, bindings: Iterable[tuple[str, ThreadBinding]]) -> None:
        """Thread bindings a poll read first or found changed (the newest one of a unit wins)."""
        self._bindings.update(bindings)

    def opened(self, units: Iterable[Unit]) -> None:
        """Units whose groups were just opened (a thread's process is noted)."""
        self._unit_processes += [(u.key, u.process) for u in units if u.process is not None]

    def take(self, now: float, stopping: bool) -> SliceProcesses:
        """What the slice ending at ``now`` says; the target's CPU time when a reading is due
        (always at the last slice)."""
        processes, self._processes = tuple(self._processes), []
        unit_processes, self._unit_processes = tuple(self._unit_processes), []
        bindings, self._bindings = tuple(self._bindings.items()), {}
        target_cpu = None
        if stopping or now - self._target_cpu_at >= TARGET_CPU_EVERY:
            target_cpu = self._source.target_cpu()
            self._target_cpu_at = now
        return processes, unit_processes, target_cpu, bindings
