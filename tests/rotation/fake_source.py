"""A deterministic in-memory Source: a fake clock, scripted units, counters that grow at known rates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sectormon.data.readings import Unit
from sectormon.perf.group import GroupValues
from sectormon.perf.probe import ProbeResult
from sectormon.profiles.model import EventDef
from sectormon.sources.base import SourceBase, UnitsUpdate


@dataclass
class FakeGroup:
    """Counts ``rate[event]`` per second of fake time while enabled."""

    source: FakeSource
    unit: Unit
    events: tuple[str, ...]
    enabled_at: float | None = None
    totals: dict[str, float] = field(default_factory=dict)
    time_enabled: float = 0.0
    closed: bool = False

    def enable(self) -> None:
        assert not self.closed
        self.enabled_at = self.source.t

    def disable(self) -> None:
        if self.enabled_at is None:
            return
        begin, end = self.enabled_at, self.source.t
        alive = self.source.run_span(self.unit, begin, end)
        for name in self.events:
            self.totals[name] = self.totals.get(name, 0.0) + alive * self.source.rates.get(name, 0.0)
        self.time_enabled += alive
        self.enabled_at = None

    def reset(self) -> None:
        self.totals.clear()

    def read(self) -> GroupValues:
        ns = round(self.time_enabled * 1e9)
        return GroupValues(tuple(round(self.totals.get(n, 0.0)) for n in self.events), ns, ns)

    def close(self) -> None:
        self.closed = True


class FakeSource(SourceBase):
    """Units follow a script: ``lifetimes[key] = (unit, start, end)`` in fake seconds."""

    kind = "fake"
    default_timeslice = 0.01
    default_interval = 0.1

    def __init__(
        self,
        lifetimes: Mapping[str, tuple[Unit, float, float]],
        rates: Mapping[str, float],
        *,
        cmg_units: Sequence[Unit] = (),
        stop_at: float | None = None,
        unsupported: Sequence[str] = (),
        busy: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    ) -> None:
        """``busy[key]``: a thread's share of each second on a CPU, as ``(from_t, share)`` steps
        (its counts and task time follow it; units not listed run all the time); with ``busy``
        the source tells threads' CPU seconds (:meth:`units_cpu_seconds`)."""
        self.t = 0.0
        self.lifetimes = dict(lifetimes)
        self.rates = dict(rates)
        self._cmg_units = tuple(cmg_units)
        self.stop_at = stop_at
        self.unsupported = set(unsupported)
        self.busy = dict(busy) if busy is not None else None
        self.cpu_before: dict[str, float] = {}  # CPU seconds threads ran before the session
        self.groups: list[FakeGroup] = []
        self._seen: set[str] = set()
        self._ended: set[str] = set()

    def alive_span(self, unit: Unit, begin: float, end: float) -> float:
        """Seconds of [begin, end] during which the unit existed (a task's time stops at exit)."""
        _unit, start, stop = self.lifetimes.get(unit.key, (unit, 0.0, float("inf")))
        return max(0.0, min(end, stop) - max(begin, start))

    def run_span(self, unit: Unit, begin: float, end: float) -> float:
        """Seconds of [begin, end] the unit ran: alive, times its busy share."""
        steps = self.busy.get(unit.key) if self.busy is not None else None
        if not steps:
            return self.alive_span(unit, begin, end)
        total = 0.0
        for at, (start, share) in enumerate(steps):
            stop = steps[at + 1][0] if at + 1 < len(steps) else float("inf")
            total += share * self.alive_span(unit, max(begin, start), min(end, stop))
        return total

    def units_cpu_seconds(self, units: Sequence[Unit]) -> dict[str, float]:
        if self.busy is None:
            return {}
        return {
            u.key: self.cpu_before.get(u.key, 0.0) + self.run_span(u, 0.0, self.t)
            for u in units
            if u.kind == "thread"
        }

    def start(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def wait_until(self, t: float) -> None:
        self.t = max(self.t, round(t, 12))

    def poll_units(self) -> UnitsUpdate:
        alive = []
        ended = []
        for key, (unit, start, end) in self.lifetimes.items():
            if start <= self.t < end:
                alive.append(unit)
                self._seen.add(key)
            elif self.t >= end and key in self._seen and key not in self._ended:
                self._ended.add(key)
                ended.append(key)
        return UnitsUpdate(alive=tuple(alive), ended=tuple(ended))

    def cmg_units(self) -> tuple[Unit, ...]:
        return self._cmg_units

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> FakeGroup:
        group = FakeGroup(self, unit, tuple(e.name for e in events))
        self.groups.append(group)
        return group

    def probe(self, events: Sequence[EventDef]) -> dict[str, ProbeResult]:
        return {
            e.name: ProbeResult(e.name, "unsupported" if e.name in self.unsupported else "counts", "ENOENT")
            for e in events
        }

    def finished(self) -> bool:
        return self.stop_at is not None and self.t >= self.stop_at - 1e-12

    def describe(self) -> dict[str, Any]:
        return {"target": {"mode": "fake"}, "sector_config": {}}

    def cpu_description(self) -> str:
        return "test"

    def topology_json(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        for group in self.groups:
            group.close()
