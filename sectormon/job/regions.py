"""A merged job's regions: every node's regions side by side, and each region's job total.

Each node's engine made its regions from its own threads' readings (:mod:`sectormon.metrics.regions`),
so a job region keeps them as they are, under the node's keys (``node:HOST/thread:TID``,
``node:HOST/cmg:N``...), with each node's region total under ``nodes`` and MPI ranks under their
own numbers (a rank is job-wide). The job total adds the nodes' scaled counts (nodes hold
different CMGs, so a CMG-wide event is never counted twice); its time is the longest any node
spent inside (nodes run side by side, as threads do), and an event's coverage is the nodes'
coverage weighted by their time in the region: a node that did not count an event lowers its
coverage rather than adding a made-up 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sectormon.data.frames import RegionStats, ScopeStats
from sectormon.job.keys import node_key
from sectormon.metrics.formulas import MetricSet


class JobRegions:
    """Combines the nodes' regions of one frame or window (the profile's metrics)."""

    def __init__(self, metrics: MetricSet) -> None:
        self._metrics = metrics

    def combine(self, parts: Mapping[str, Mapping[str, RegionStats]]) -> dict[str, RegionStats]:
        """Region label -> the job's region, from each node's regions (by host), in the order the
        nodes first show them."""
        labels: dict[str, None] = {}
        for regions in parts.values():
            labels.update(dict.fromkeys(regions))
        return {
            label: self._region({h: regions[label] for h, regions in parts.items() if label in regions})
            for label in labels
        }

    def _region(self, present: Mapping[str, RegionStats]) -> RegionStats:
        first = next(iter(present.values()))
        seconds = max(r.seconds for r in present.values())

        def keyed(kind: str, field: str) -> dict[str, ScopeStats]:
            return {node_key(h, kind, k): v for h, r in present.items() for k, v in getattr(r, field).items()}

        return RegionStats(
            name=first.name,
            number=first.number,
            calls=sum(r.calls for r in present.values()),
            thread_count=sum(r.thread_count for r in present.values()),
            open=any(r.open for r in present.values()),
            seconds=seconds,
            total=self.summed([(r.total, r.seconds) for r in present.values()], seconds),
            threads=keyed("thread", "threads"),
            cores=keyed("core", "cores"),
            cmgs=keyed("cmg", "cmgs"),
            ranks=job_ranks(present),
            procs=keyed("proc", "procs"),
            nodes={h: r.total for h, r in present.items()},
        )

    def summed(self, parts: Sequence[tuple[ScopeStats, float]], seconds: float) -> ScopeStats:
        """The job scope of the nodes' ``parts`` (each node's scope and its seconds in the region):
        coverage over the nodes' own time inside it."""
        return summed_scope(self._metrics, parts, seconds, sum(part_seconds for _, part_seconds in parts))


def summed_scope(
    mset: MetricSet, parts: Sequence[tuple[ScopeStats, float]], seconds: float, span: float
) -> ScopeStats:
    """The nodes' ``parts`` (each a scope and its seconds) as one job scope over ``seconds``:
    counts add, each event's coverage is its time counted over ``span`` (the nodes' time)."""
    counts: dict[str, float] = {}
    covered: dict[str, float] = {}
    for stats, part_seconds in parts:
        coverage = stats.coverage
        for event, count in stats.counts.items():
            counts[event] = counts.get(event, 0.0) + count
            covered[event] = covered.get(event, 0.0) + coverage.get(event, 0.0) * part_seconds
    event_coverage = {e: (min(1.0, c / span) if span > 0 else 0.0) for e, c in covered.items()}
    return ScopeStats(
        counts=counts,
        rates={e: c / seconds for e, c in counts.items()} if seconds > 0 else {},
        metrics=mset.evaluate(counts, seconds, "total"),
        coverage={**event_coverage, **mset.coverage(event_coverage, "total")},
        split=mset.split_at("total"),
        seconds=seconds,
    )


def job_ranks(present: Mapping[str, RegionStats]) -> dict[str, ScopeStats]:
    """The region's MPI ranks: under their own number (ranks are job-wide), or under the node's
    key where two nodes name one rank (recordings of different jobs merged)."""
    hosts: dict[str, list[str]] = {}
    for host, region in present.items():
        for rank in region.ranks:
            hosts.setdefault(rank, []).append(host)
    out: dict[str, ScopeStats] = {}
    for host, region in present.items():
        for rank, stats in region.ranks.items():
            out[rank if len(hosts[rank]) == 1 else node_key(host, "rank", rank)] = stats
    return out
