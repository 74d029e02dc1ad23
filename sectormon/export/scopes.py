"""The scopes a scrape exports and the labels that say which each is.

Every series of a scope carries the endpoint's constant labels (host, profile, source, sector),
``scope`` (its kind) and every scope label the endpoint exports: a scope kind fills the labels it
knows and leaves the others empty, as OpenMetrics asks of one family's series. A scope kind with
labels of its own adds their names to the label names (as processes do, :data:`PROC_LABELS`)
and yields its scopes from :meth:`ScopeLabels.scopes`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from sectormon.data.frames import Frame, ScopeStats

CORE_LABELS = ("cmg", "core")
"""The labels of CMG and core scopes (a core is labelled with its CMG too)."""

THREAD_LABELS = ("thread",)
"""The labels thread scopes add, exported with ``--openmetrics-threads`` only (cardinality)."""

PROC_LABELS = ("pid", "comm", "rank")
"""The labels process scopes add, on every scope's series once a process has been counted
(empty outside the ``proc`` scope: Prometheus treats an empty label as no label)."""

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
            info = frame.processes.get(pid)
            command = info.command if info is not None else ""
            rank = "" if info is None or info.rank is None else str(info.rank)
            yield ScopeId("proc", (("pid", pid), ("comm", command), ("rank", rank))), frame.procs[pid]

    def labels(self, scope_id: ScopeId, *, with_procs: bool) -> dict[str, str]:
        """Every exported label of the scope's series, its own set and the others empty
        (``with_procs``: the process labels too, once a process has been counted)."""
        own = dict(scope_id.labels)
        names = (*self._names, *PROC_LABELS) if with_procs else self._names
        labels = {name: own.get(name, "") for name in names}
        labels.update(self._constant)
        labels["scope"] = scope_id.scope
        return labels


def exported_procs(frame: Frame, limit: int) -> list[str]:
    """The processes of ``frame`` a scrape exports, at most ``limit``: those with an MPI rank by
    rank, then the others by pid. The order depends on the processes alone, not on their counts,
    so a process keeps its series from scrape to scrape."""
    if limit <= 0 or not frame.procs:
        return []

    def order(pid: str) -> tuple[int, int, int]:
        info = frame.processes.get(pid)
        rank = info.rank if info is not None else None
        return (0, rank, int(pid)) if rank is not None else (1, 0, int(pid))

    return sorted(frame.procs, key=order)[:limit]
