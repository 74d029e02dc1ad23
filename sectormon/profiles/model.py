"""The validated, immutable form of a profile (event catalog + groups + metrics).

The YAML files in this package are built into these types by :mod:`sectormon.profiles.build`.
Everything A64FX-specific (codes, scopes, nJ factors, errata formulas) lives in the YAML, not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sectormon.data.samples import LatencyBucket

SCOPES = ("pe", "cmg")
BETTER = ("lower", "higher", "none")
METRIC_SCOPES = ("any", "core", "cmg", "total")


@dataclass(frozen=True, slots=True)
class EventDef:
    """One countable event.

    ``name`` is the identifier formulas use (``CPU_CYCLES``, ``TASK_CLOCK``). ``spec`` is what the
    perf wrapper opens: a generic perf name (``task-clock``), a raw code (``r11``) or a PMU form
    (``armv8_pmuv3_0/event=0x11/``). ``scope`` is ``pe`` (counts what its own core/thread does) or
    ``cmg`` (counts the whole CMG whichever PE opened it: open once per CMG).
    ``nj_per_count`` is set for energy events (already resolved for the detected part variant).
    """

    name: str
    spec: str
    description: str = ""
    code: int | None = None
    scope: str = "pe"
    unit: str = "count"
    nj_per_count: float | None = None


@dataclass(frozen=True, slots=True)
class GroupDef:
    """A set of events counted together in one timeslice (at most the profile's counter limit)."""

    name: str
    events: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True, slots=True)
class MetricDef:
    """A derived metric: a formula over event names, constants and ``SECONDS`` (window length).

    ``better`` gives the sign convention of comparisons: ``lower`` means improvement = base - other
    (miss and stall rates, energy), ``higher`` means other - base (IPC). ``scope`` restricts where
    the metric is meaningful (``cmg`` for formulas over CMG-wide events).
    """

    name: str
    formula: str
    unit: str = ""
    description: str = ""
    better: str = "none"
    scope: str = "any"
    group_hint: str = ""


@dataclass(frozen=True, slots=True)
class SamplingDef:
    """What ``sectormon hotspots`` samples by default: a catalog event, every ``period`` events."""

    event: str
    period: int


@dataclass(frozen=True, slots=True)
class Profile:
    """A complete, validated profile.

    ``constants`` are numbers formulas may use by name (e.g. ``NJ_EA_CORE``); the loader derives
    ``NJ_<EVENT>`` for every event that has ``nj_per_count``. ``sampling`` and ``latency_buckets``
    are the defaults of sampled attribution (``sectormon hotspots``). ``rotate_software``: the
    events that need no PMU counter rotate with their groups too (else they are always counted).
    """

    name: str
    description: str
    counters: int
    events: Mapping[str, EventDef]
    groups: tuple[GroupDef, ...]
    metrics: tuple[MetricDef, ...]
    constants: Mapping[str, float] = field(default_factory=dict)
    source: str = ""
    variant: str = ""
    sampling: SamplingDef | None = None
    latency_buckets: tuple[LatencyBucket, ...] = ()
    rotate_software: bool = False

    def event(self, name: str) -> EventDef:
        return self.events[name]

    def group(self, name: str) -> GroupDef:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)

    def metric(self, name: str) -> MetricDef:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(name)

    def pe_events(self, group: GroupDef) -> tuple[str, ...]:
        """The group's events that are opened per thread/core."""
        return tuple(e for e in group.events if self.events[e].scope == "pe")

    def cmg_events(self, group: GroupDef) -> tuple[str, ...]:
        """The group's events that are opened once per CMG, in a group of their own."""
        return tuple(e for e in group.events if self.events[e].scope == "cmg")
