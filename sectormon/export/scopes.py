"""The scopes a scrape exports and the labels that say which each is.

Every series of a scope carries the endpoint's constant labels (host, profile, source, sector),
``scope`` (its kind) and every scope label the endpoint exports: a scope kind fills the labels it
knows and leaves the others empty, as OpenMetrics asks of one family's series. A scope kind with
labels of its own adds their names to the label names (as processes do, :data:`PROC_LABELS`)
and yields its scopes from :meth:`ScopeLabels.scopes`.

A marked region's scopes (:meth:`ScopeLabels.region_scopes`) are the same kinds with a ``region``
label (:data:`REGION_LABELS`): ``{scope="total",region="solve"}`` is the region over all its
threads, ``{scope="cmg",cmg="0",region="solve"}`` its part in CMG 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from sectormon.data.frames import Frame, ProcessScope, RegionStats, ScopeStats

CORE_LABELS = ("cmg", "core")
"""The labels of CMG and core scopes (a core is labelled with its CMG too)."""

THREAD_LABELS = ("thread",)
"""The labels thread scopes add, exported with ``--openmetrics-threads`` only (cardinality)."""

PROC_LABELS = ("pid", "comm", "rank")
"""The labels process scopes add, on every scope's series once a process has been counted
(empty outside the ``proc`` scope: Prometheus treats an empty label as no label)."""

REGION_LABELS = ("region",)
"""The label region scopes add (a region's label, ``name`` or ``name#N``), on every scope's series
once a region has been counted (empty outside region scopes), as :data:`PROC_LABELS` are."""

DEFAULT_PROCS = 48
"""Processes exported by default: an A64FX node runs at most one MPI rank per core (48)."""


class ScopeId(NamedTuple):
    """Which scope: its kind and the scope labels it sets (the others are empty). A tuple: it
    keys the counters and the series of every scope at every scrape, and hashes in C."""

    scope: str
    labels: tuple[tuple[str, str], ...] = ()


def cmg_of_core(topology: Mapping[str, Any]) -> dict[str, str]:
    """Core -> CMG from a header's ``topology.cmgs``."""
    cmgs = topology.get("cmgs")
    out: dict[str, str] = {}
    if isinstance(cmgs, Mapping):
        for cmg, cpus in cmgs.items():
            if isinstance(cpus, list):
                for cpu in cpus:
                    out[str(cpu)] = str(cmg)
    return out


class ScopeLabels:
    """The scopes of a frame in the order a scrape lists them, and each one's label mapping."""

    def __init__(
        self, constant: Mapping[str, str], topology: Mapping[str, Any], *, threads: bool, procs: int
    ) -> None:
        """``threads``: thread scopes too; ``procs``: at most this many process scopes
        (:func:`exported_procs`)."""
        self._constant = dict(constant)
        self._cmg_of_core = cmg_of_core(topology)
        self._threads = threads
        self._procs = procs
        self._names: tuple[str, ...] = (*self._constant, "scope", *CORE_LABELS)
        if threads:
            self._names += THREAD_LABELS

    def scopes(self, frame: Frame) -> Iterator[tuple[ScopeId, ScopeStats]]:
        yield ScopeId("total"), frame.total
        for cmg, stats in frame.cmgs.items():
            yield ScopeId("cmg", (("cmg", cmg),)), stats
        for core, stats in frame.cores.items():
            yield ScopeId("core", (("cmg", self._cmg_of_core.get(core, "")), ("core", core))), stats
        if self._threads:
            for tid, stats in frame.threads.items():
                yield ScopeId("thread", (("thread", tid),)), stats
        for pid in exported_procs(frame, self._procs):
            yield ScopeId("proc", _proc_labels(pid, frame.processes)), frame.procs[pid]

    def region_scopes(
        self, frame: Frame, regions: Mapping[str, RegionStats]
    ) -> Iterator[tuple[ScopeId, ScopeStats]]:
        """The scopes of ``regions`` (a frame's interval regions): each region's total, CMGs,
        cores, threads (when exported) and processes (as many as :meth:`scopes` exports), each
        labelled with the region."""
        for label, region in regions.items():
            tag = ("region", label)
            yield ScopeId("total", (tag,)), region.total
            for cmg, stats in region.cmgs.items():
                yield ScopeId("cmg", (("cmg", cmg), tag)), stats
            for core, stats in region.cores.items():
                yield ScopeId("core", (("cmg", self._cmg_of_core.get(core, "")), ("core", core), tag)), stats
            if self._threads:
                for tid, stats in region.threads.items():
                    yield ScopeId("thread", (("thread", tid), tag)), stats
            for pid in ordered_procs(region.procs, frame.processes, self._procs):
                yield ScopeId("proc", (*_proc_labels(pid, frame.processes), tag)), region.procs[pid]

    def labels(self, scope_id: ScopeId, *, with_procs: bool, with_regions: bool = False) -> dict[str, str]:
        """Every exported label of the scope's series, its own set and the others empty
        (``with_procs``: the process labels too, once a process has been counted;
        ``with_regions``: the region label, once a region has been counted)."""
        own = dict(scope_id.labels)
        names = self._names
        if with_procs:
            names += PROC_LABELS
        if with_regions:
            names += REGION_LABELS
        labels = {name: own.get(name, "") for name in names}
        labels.update(self._constant)
        labels["scope"] = scope_id.scope
        return labels


def exported_procs(frame: Frame, limit: int) -> list[str]:
    """The processes of ``frame`` a scrape exports, at most ``limit``: those with an MPI rank by
    rank, then the others by pid. The order depends on the processes alone, not on their counts,
    so a process keeps its series from scrape to scrape."""
    return ordered_procs(frame.procs, frame.processes, limit)


def ordered_procs(pids: Iterable[str], processes: Mapping[str, ProcessScope], limit: int) -> list[str]:
    """At most ``limit`` of ``pids``: those with an MPI rank (``processes`` says) by rank, then the
    others by pid."""
    if limit <= 0:
        return []

    def order(pid: str) -> tuple[int, int, int]:
        info = processes.get(pid)
        rank = info.rank if info is not None else None
        return (0, rank, int(pid)) if rank is not None else (1, 0, int(pid))

    return sorted(pids, key=order)[:limit]


def _proc_labels(pid: str, processes: Mapping[str, ProcessScope]) -> tuple[tuple[str, str], ...]:
    """A process scope's own labels: pid, command and MPI rank (empty when unknown)."""
    info = processes.get(pid)
    command = info.command if info is not None else ""
    rank = "" if info is None or info.rank is None else str(info.rank)
    return (("pid", pid), ("comm", command), ("rank", rank))
