"""What the region table says, as immutable records: one per (region, thread), and their totals.

A region is its name and number (fapp's identity; LIKWID's and sectormon's own markers use number
0). The library accumulates raw deltas per group with the group's own enabled/running times, so a
count is scaled by its own group (``value * enabled / running``) and its coverage is
``running / enabled``: under rotation a region sees each group only part of the time, and says so.
The integration step moves what frames need to ``data/``; until then the records live here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupDelta:
    """One counter group's deltas inside a region: raw values in ``events`` order, times in ns.

    ``thread_ns`` is the marking thread's CPU time inside the region (0: unknown). A group the
    kernel multiplexed was enabled throughout but ran for part of it (``time_running <
    time_enabled``); a group the sampler rotated by enabling and disabling it was enabled for part
    of the thread's time (``time_enabled < thread_ns``). Either way it stands for the larger of the
    two: a group that counted throughout is never scaled (the library reads the thread's clock
    inside the groups' span, so then ``thread_ns <= time_enabled``).
    """

    events: tuple[str, ...]
    values: tuple[int, ...]
    time_enabled: int
    time_running: int
    thread_ns: int = 0

    @property
    def present_ns(self) -> int:
        """The time the group's counts stand for."""
        return max(self.time_enabled, self.thread_ns)

    @property
    def coverage(self) -> float:
        """The share of the region this group counted (0 when it never ran)."""
        present = self.present_ns
        return min(1.0, self.time_running / present) if present else 0.0

    def scaled(self) -> tuple[float, ...]:
        """Values scaled to the whole region (raw when the group counted throughout)."""
        present = self.present_ns
        if self.time_running >= present:
            return tuple(float(v) for v in self.values)
        if not self.time_running:
            return tuple(0.0 for _ in self.values)
        factor = present / self.time_running
        return tuple(v * factor for v in self.values)


def _best_by_event(groups: Iterable[GroupDelta]) -> dict[str, tuple[float, int, int]]:
    """Event -> (scaled count, enabled ns, running ns), from the group that ran longest where
    several count it."""
    best: dict[str, tuple[float, int, int]] = {}
    for group in groups:
        for event, value in zip(group.events, group.scaled(), strict=True):
            if event not in best or group.time_running > best[event][2]:
                best[event] = (value, group.present_ns, min(group.time_running, group.present_ns))
    return best


@dataclass(frozen=True, slots=True)
class ThreadRegion:
    """One region in one thread: calls (entries, the open one included), open or closed, deltas.

    ``open``: the last entry has not stopped (the thread is inside the region, or ended inside it);
    its counts so far are included when sectormon could still read the thread's groups
    (``open_counted``). ``rank`` is the MPI rank the process's environment named (None: not MPI);
    ``last_cpu`` the CPU of the last stop (-1: not stopped yet); ``wall_ns`` the wall time of the
    closed entries.
    """

    name: str
    number: int
    pid: int
    tid: int
    rank: int | None
    last_cpu: int
    calls: int
    open: bool
    open_counted: bool
    wall_ns: int
    groups: tuple[GroupDelta, ...]
    thread_exited: bool = False

    @property
    def key(self) -> tuple[str, int]:
        return (self.name, self.number)

    def counts(self) -> dict[str, float]:
        """Event -> count scaled by its own group's times."""
        return {event: value for event, (value, _, _) in _best_by_event(self.groups).items()}

    def coverage(self) -> dict[str, float]:
        """Event -> the share of the region its group counted."""
        return {
            event: (running / enabled if enabled else 0.0)
            for event, (_, enabled, running) in _best_by_event(self.groups).items()
        }


@dataclass(frozen=True, slots=True)
class RegionTotal:
    """A region summed over its threads: scaled counts add, coverage is running over enabled time."""

    name: str
    number: int
    calls: int
    threads: int
    open: bool
    counts: dict[str, float]
    coverage: dict[str, float]


@dataclass(frozen=True, slots=True)
class RegionSnapshot:
    """The whole table at one read: every (region, thread), the bounds met, the unpaired calls."""

    threads: tuple[ThreadRegion, ...]
    overflow: frozenset[str]
    unpaired: int
    dropped: int

    def of(self, name: str, number: int = 0) -> tuple[ThreadRegion, ...]:
        return tuple(r for r in self.threads if r.name == name and r.number == number)

    def totals(self) -> dict[tuple[str, int], RegionTotal]:
        """(name, number) -> the region over all its threads, in first-seen order."""
        grouped: dict[tuple[str, int], list[ThreadRegion]] = {}
        for reading in self.threads:
            grouped.setdefault(reading.key, []).append(reading)
        return {key: _total(key, rows) for key, rows in grouped.items()}


def _total(key: tuple[str, int], rows: list[ThreadRegion]) -> RegionTotal:
    counts: dict[str, float] = {}
    enabled: dict[str, int] = {}
    running: dict[str, int] = {}
    for row in rows:
        for event, (value, enabled_ns, running_ns) in _best_by_event(row.groups).items():
            counts[event] = counts.get(event, 0.0) + value
            enabled[event] = enabled.get(event, 0) + enabled_ns
            running[event] = running.get(event, 0) + running_ns
    coverage = {e: (running[e] / enabled[e] if enabled[e] else 0.0) for e in enabled}
    return RegionTotal(
        name=key[0],
        number=key[1],
        calls=sum(r.calls for r in rows),
        threads=len({(r.pid, r.tid) for r in rows}),
        open=any(r.open for r in rows),
        counts=counts,
        coverage=coverage,
    )
