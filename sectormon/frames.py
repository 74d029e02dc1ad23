"""Frames: one tick's results, what every sink renders (TUI, JSON stream, compare).

A frame is immutable and JSON-able. Its scope dictionaries are keyed by strings: cores by CPU
number (``"12"``, or ``"unbound"`` for threads not pinned to one CPU), CMGs by id (``"0"``),
threads by tid.

A metric whose inputs are missing, unsupported or whose denominator is zero is ``None`` (rendered
``n/a``), never 0. Every event and metric carries its coverage (0..1, the fraction of the window it
was counted; for a metric the minimum over its inputs) and metrics whose inputs were counted in
different groups are listed in ``split``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FRAME_SCHEMA = "sectormon/frame/1"
HEADER_SCHEMA = "sectormon/header/1"

WINDOWS = ("interval", "recent", "run")


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """Counts, rates, metrics and confidence of one scope (a core, a CMG, a thread or the total)."""

    counts: Mapping[str, float]
    rates: Mapping[str, float]
    metrics: Mapping[str, float | None]
    coverage: Mapping[str, float]
    split: frozenset[str] = frozenset()
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "rates": dict(self.rates),
            "metrics": dict(self.metrics),
            "coverage": dict(self.coverage),
            "split": sorted(self.split),
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScopeStats:
        return cls(
            counts=dict(data.get("counts", {})),
            rates=dict(data.get("rates", {})),
            metrics=dict(data.get("metrics", {})),
            coverage=dict(data.get("coverage", {})),
            split=frozenset(data.get("split", ())),
            seconds=float(data.get("seconds", 0.0)),
        )


EMPTY_SCOPE = ScopeStats(counts={}, rates={}, metrics={}, coverage={})


@dataclass(frozen=True, slots=True)
class WindowStats:
    """All scopes of one window (the last N seconds, or the whole run)."""

    seconds: float
    total: ScopeStats
    cmgs: Mapping[str, ScopeStats]
    cores: Mapping[str, ScopeStats]

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "total": self.total.to_json(),
            "cmgs": {k: v.to_json() for k, v in self.cmgs.items()},
            "cores": {k: v.to_json() for k, v in self.cores.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WindowStats:
        return cls(
            seconds=float(data["seconds"]),
            total=ScopeStats.from_json(data["total"]),
            cmgs={k: ScopeStats.from_json(v) for k, v in data.get("cmgs", {}).items()},
            cores={k: ScopeStats.from_json(v) for k, v in data.get("cores", {}).items()},
        )


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """One metric compared with the baseline, with the PMU document's sign convention.

    ``improvement`` is positive when the current run is better: base - now for lower-is-better
    metrics (miss/stall rates, energy), now - base for higher-is-better (IPC). ``relative`` is
    improvement / |base| (``None`` when base is 0 or either side is n/a).
    """

    base: float | None
    now: float | None
    delta: float | None
    improvement: float | None
    relative: float | None

    def to_json(self) -> dict[str, float | None]:
        return {
            "base": self.base,
            "now": self.now,
            "delta": self.delta,
            "improvement": self.improvement,
            "relative": self.relative,
        }


@dataclass(frozen=True, slots=True)
class Baseline:
    """Deltas of the current ``recent`` window against the window marked as baseline."""

    t_from: float
    t_to: float
    total: Mapping[str, MetricDelta]
    cmgs: Mapping[str, Mapping[str, MetricDelta]]
    cores: Mapping[str, Mapping[str, MetricDelta]]

    def to_json(self) -> dict[str, Any]:
        def scope(d: Mapping[str, MetricDelta]) -> dict[str, Any]:
            return {k: v.to_json() for k, v in d.items()}

        return {
            "t_from": self.t_from,
            "t_to": self.t_to,
            "total": scope(self.total),
            "cmgs": {k: scope(v) for k, v in self.cmgs.items()},
            "cores": {k: scope(v) for k, v in self.cores.items()},
        }


@dataclass(frozen=True, slots=True)
class Frame:
    """One tick: the last interval per core/CMG/thread/total, plus the rolling and whole-run windows.

    ``overhead`` is the sampler's own CPU use over the interval, as a fraction of one core.
    ``groups`` maps each group to its coverage in the interval; ``active_group`` is the group
    running at the end of the interval (the rotation indicator).
    """

    t: float
    interval: float
    overhead: float
    total: ScopeStats
    cmgs: Mapping[str, ScopeStats]
    cores: Mapping[str, ScopeStats]
    threads: Mapping[str, ScopeStats]
    recent: WindowStats
    run: WindowStats
    groups: Mapping[str, float] = field(default_factory=dict)
    active_group: str = ""
    baseline: Baseline | None = None
    final: bool = False
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema": FRAME_SCHEMA,
            "t": self.t,
            "interval": self.interval,
            "overhead": self.overhead,
            "active_group": self.active_group,
            "groups": dict(self.groups),
            "total": self.total.to_json(),
            "cmgs": {k: v.to_json() for k, v in self.cmgs.items()},
            "cores": {k: v.to_json() for k, v in self.cores.items()},
            "threads": {k: v.to_json() for k, v in self.threads.items()},
            "recent": self.recent.to_json(),
            "run": self.run.to_json(),
            "baseline": self.baseline.to_json() if self.baseline else None,
            "final": self.final,
        }
        if self.warnings:
            data["warnings"] = list(self.warnings)
        return data


class FrameClock:
    """When a frame is due, from slice end times alone (live, replay and a replay's reader process
    must agree to the slice, so this is the one place that decides).

    A frame is due at the first slice whose end time reaches the next multiple of ``interval``
    after ``start``; missed multiples are skipped (one frame covers the gap).
    """

    def __init__(self, interval: float, start: float = 0.0) -> None:
        if interval <= 0:
            raise ValueError("interval must be > 0")
        self.interval = interval
        self._next = (int(start / interval) + 1) * interval

    def due(self, t: float) -> bool:
        """Whether a slice ending at ``t`` closes a frame (and if so, move to the next one)."""
        slack = 1e-9 * self.interval
        if t + slack < self._next:
            return False
        while self._next <= t + slack:
            self._next += self.interval
        return True
