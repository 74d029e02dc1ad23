"""The frames' region scopes: a table of (region, thread) readings turned into counts, rates,
metrics and coverage per region, over all its threads and per thread, core, CMG, rank and process.

Each (region, thread) reading holds its groups' deltas with their own enabled/running times
(:class:`~sectormon.data.regions.GroupDelta`), so every count is scaled by its own group and an
event counted by several groups takes the group that ran longest. Threads add up, with one
exception: an event the profile scopes to a CMG counts the whole CMG whichever thread reads it, so
a CMG's value is the reading of one thread there (the one that spent longest in the region), a
total adds CMGs, never threads, and thread and core rows leave them out, as the frames do. A
scope's time is the longest any of its threads spent inside the region (threads run side by side),
and its rates are per that time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from sectormon.data.frames import RegionStats, ScopeStats
from sectormon.data.regions import ThreadRegion, best_by_event, region_label
from sectormon.metrics.formulas import MetricSet

_NS = 1e9


@dataclass(frozen=True, slots=True)
class _Reading:
    """One (region, thread) reading's events as scaled counts with their present/running ns."""

    region: ThreadRegion
    cmg: int | None
    events: Mapping[str, tuple[float, int, int]]


class RegionScopes:
    """Builds :class:`RegionStats` for the regions of a set of readings (one frame interval, or the
    run); ``cmg_events``: the profile's CMG-wide events; ``cmg_of``: CPU -> CMG (the topology)."""

    def __init__(self, metrics: MetricSet, cmg_events: Iterable[str], cmg_of: Mapping[int, int]) -> None:
        self._metrics = metrics
        self._cmg_events = frozenset(cmg_events)
        self._cmg_of = dict(cmg_of)

    def build(self, readings: Iterable[ThreadRegion]) -> dict[str, RegionStats]:
        """Region label -> its stats, in the order regions were first marked."""
        grouped: dict[tuple[str, int], list[_Reading]] = {}
        for region in readings:
            grouped.setdefault(region.key, []).append(
                _Reading(region, self._cmg_of.get(region.last_cpu), best_by_event(region.groups))
            )
        return {region_label(*key): self._region(key, rows) for key, rows in grouped.items()}

    def _region(self, key: tuple[str, int], rows: list[_Reading]) -> RegionStats:
        def split(by: Callable[[_Reading], object], level: str) -> dict[str, ScopeStats]:
            parts: dict[str, list[_Reading]] = {}
            for row in rows:
                label = by(row)
                if label is not None:
                    parts.setdefault(str(label), []).append(row)
            return {label: self._scope(part, level) for label, part in parts.items()}

        return RegionStats(
            name=key[0],
            number=key[1],
            calls=sum(r.region.calls for r in rows),
            thread_count=len({(r.region.pid, r.region.tid) for r in rows}),
            open=any(r.region.open for r in rows),
            seconds=max(r.region.seconds for r in rows),
            total=self._scope(rows, "total"),
            threads=split(lambda r: r.region.tid, "thread"),
            cores=split(lambda r: r.region.last_cpu if r.region.last_cpu >= 0 else None, "core"),
            cmgs=split(lambda r: r.cmg, "cmg"),
            ranks=split(lambda r: r.region.rank, "total"),
            procs=split(lambda r: r.region.pid, "total"),
        )

    def _scope(self, rows: list[_Reading], level: str) -> ScopeStats:
        summed, present, running = self._summed(rows)
        if level in ("thread", "core"):
            # As in the frames: a CMG-wide event is the CMG's, never a thread's or a core's.
            summed = {e: v for e, v in summed.items() if e not in self._cmg_events}
        seconds = max(r.region.seconds for r in rows)
        coverage = {e: (min(1.0, running[e] / present[e]) if present[e] else 0.0) for e in summed}
        # An event no group of the scope counted while inside is unknown (n/a), not 0.
        counts = {e: v for e, v in summed.items() if running[e] > 0}
        metric_coverage = self._metrics.coverage(coverage, level)
        return ScopeStats(
            counts=counts,
            rates={e: v / seconds for e, v in counts.items()} if seconds > 0 else {},
            metrics=self._metrics.evaluate(counts, seconds, level),
            coverage={**coverage, **metric_coverage},
            seconds=seconds,
        )

    def _summed(self, rows: list[_Reading]) -> tuple[dict[str, float], dict[str, int], dict[str, int]]:
        """Counts and present/running ns per event: threads add, CMG-wide events once per CMG."""
        counts: dict[str, float] = {}
        present: dict[str, int] = {}
        running: dict[str, int] = {}
        per_cmg: dict[tuple[str, int | None], tuple[float, float, int, int]] = {}
        for row in rows:
            for event, (value, present_ns, running_ns) in row.events.items():
                if event in self._cmg_events:
                    seconds = row.region.seconds
                    held = per_cmg.get((event, row.cmg))
                    if held is None or seconds > held[0]:
                        per_cmg[event, row.cmg] = (seconds, value, present_ns, running_ns)
                    continue
                counts[event] = counts.get(event, 0.0) + value
                present[event] = present.get(event, 0) + present_ns
                running[event] = running.get(event, 0) + running_ns
        for (event, _cmg), (_seconds, value, present_ns, running_ns) in per_cmg.items():
            counts[event] = counts.get(event, 0.0) + value
            present[event] = present.get(event, 0) + present_ns
            running[event] = running.get(event, 0) + running_ns
        return counts, present, running


def cmg_of_topology(topology: Mapping[str, object]) -> dict[int, int]:
    """CPU -> CMG from a header's topology (``{"cmgs": {"0": [cpus...]}}``); what is not a
    number is left out (a damaged recording's header gives fewer CMGs, never an error)."""
    cmgs = topology.get("cmgs")
    out: dict[int, int] = {}
    if isinstance(cmgs, Mapping):
        for cmg, cpus in cmgs.items():
            if isinstance(cpus, list) and str(cmg).isdigit():
                out.update((cpu, int(cmg)) for cpu in cpus if type(cpu) is int)
    return out
