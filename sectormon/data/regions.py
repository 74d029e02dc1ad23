"""What a program's marked regions counted, as immutable records: one per (region, thread).

The marker library's table (:mod:`sectormon.regions.table`) is read into a
:class:`RegionSnapshot`; slices carry it to the engine, recordings keep it, and the engine turns it
into the frames' region scopes. A region is its name and number (fapp's identity; LIKWID's and
sectormon's own markers use number 0). The library accumulates raw deltas per group with the
group's own enabled/running times, so a count is scaled by its own group and its coverage is the
group's running time over the time it stands for: under rotation a region sees each group only part
of the time, and says so. Every figure is cumulative since the thread first marked, so the newest
snapshot is the whole run and two snapshots' difference an interval (:meth:`ThreadRegion.minus`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace


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

    def minus(self, before: GroupDelta) -> GroupDelta:
        """What the group counted since ``before`` (an earlier reading of the same group)."""
        return GroupDelta(
            self.events,
            tuple(max(0, v - b) for v, b in zip(self.values, before.values, strict=False)),
            max(0, self.time_enabled - before.time_enabled),
            max(0, self.time_running - before.time_running),
            max(0, self.thread_ns - before.thread_ns),
        )

    def scaled(self) -> tuple[float, ...]:
        """Values scaled to the whole region (raw when the group counted throughout)."""
        present = self.present_ns
        if self.time_running >= present:
            return tuple(float(v) for v in self.values)
        if not self.time_running:
            return tuple(0.0 for _ in self.values)
        factor = present / self.time_running
        return tuple(v * factor for v in self.values)


def best_by_event(groups: Iterable[GroupDelta]) -> dict[str, tuple[float, int, int]]:
    """Event -> (scaled count, present ns, running ns), from the group that ran longest where
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

    @property
    def seconds(self) -> float:
        """The time the region's counts stand for in this thread, in seconds: the longest any of
        its groups stands for (wall time of the closed entries when no group counted)."""
        present = max((g.present_ns for g in self.groups), default=0)
        return (present or self.wall_ns) / 1e9

    def minus(self, before: ThreadRegion) -> ThreadRegion:
        """What this (region, thread) counted since ``before``, an earlier reading of it."""
        paired = [
            g.minus(b) if b.events == g.events else g
            for g, b in zip(self.groups, before.groups, strict=False)
        ]
        groups = (*paired, *self.groups[len(paired) :])
        return replace(
            self,
            calls=max(0, self.calls - before.calls),
            wall_ns=max(0, self.wall_ns - before.wall_ns),
            groups=groups,
        )

    def counts(self) -> dict[str, float]:
        """Event -> count scaled by its own group's times."""
        return {event: value for event, (value, _, _) in best_by_event(self.groups).items()}

    def coverage(self) -> dict[str, float]:
        """Event -> the share of the region its group counted."""
        return {
            event: (running / enabled if enabled else 0.0)
            for event, (_, enabled, running) in best_by_event(self.groups).items()
        }


@dataclass(frozen=True, slots=True)
class RegionSnapshot:
    """The whole table at one read: every (region, thread), the bounds met, the unpaired calls."""

    threads: tuple[ThreadRegion, ...]
    overflow: frozenset[str]
    unpaired: int
    dropped: int

    def of(self, name: str, number: int = 0) -> tuple[ThreadRegion, ...]:
        return tuple(r for r in self.threads if r.name == name and r.number == number)


EMPTY = RegionSnapshot((), frozenset(), 0, 0)


def table_news(before: RegionSnapshot, now: RegionSnapshot) -> list[str]:
    """What went wrong in the table since ``before``, as the warnings that say it once."""
    news = []
    if now.overflow - before.overflow:
        news.append(
            "the region table is full ("
            + ", ".join(sorted(now.overflow))
            + "): what did not fit is not counted (docs/regions.md, Bounds)"
        )
    if now.unpaired > before.unpaired:
        news.append(
            f"{now.unpaired} unpaired region marker call(s) ignored "
            "(a stop without its start, or a start of a region already open)"
        )
    return news


"""No region marked (yet)."""


def region_label(name: str, number: int) -> str:
    """How frames, the TUI and ``--region`` name a region: its name, with ``#number`` when the
    number is not 0 (fapp's ``("kernel", 2)`` is ``kernel#2``; LIKWID tags are number 0)."""
    return name if number == 0 else f"{name}#{number}"


def changes(now: RegionSnapshot, before: RegionSnapshot) -> tuple[ThreadRegion, ...]:
    """The (region, thread) readings of ``now`` that moved since ``before``, as what they
    counted in between (a reading new since ``before`` as it is)."""
    earlier = {(r.name, r.number, r.pid, r.tid): r for r in before.threads}
    moved: list[ThreadRegion] = []
    for reading in now.threads:
        old = earlier.get((reading.name, reading.number, reading.pid, reading.tid))
        if old is None:
            moved.append(reading)
        elif old != reading:
            moved.append(reading.minus(old))
    return tuple(moved)


@dataclass(frozen=True, slots=True)
class RegionsReading:
    """The region table as a recording keeps it: read at stream time ``t``, with the slice it
    came with (``index``); a replay meets it just before that slice, as the live engine did."""

    t: float
    index: int
    snapshot: RegionSnapshot
