"""The scopes a scrape exports and the labels that say which each is.

Every series of a scope carries the endpoint's constant labels (host, profile, source, sector),
``scope`` (its kind) and every scope label the endpoint exports: a scope kind fills the labels it
knows and leaves the others empty, as OpenMetrics asks of one family's series. A scope kind with
labels of its own adds them to :attr:`ScopeLabels.names` and yields its scopes from
:meth:`ScopeLabels.scopes`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from sectormon.frames import Frame, ScopeStats

CORE_LABELS = ("cmg", "core")
"""The labels of CMG and core scopes (a core is labelled with its CMG too)."""

THREAD_LABELS = ("thread",)
"""The labels thread scopes add, exported with ``--openmetrics-threads`` only (cardinality)."""


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

    def __init__(self, constant: Mapping[str, str], topology: Mapping[str, Any], *, threads: bool) -> None:
        self._constant = dict(constant)
        self._cmg_of_core = cmg_of_core(topology)
        self._threads = threads
        self.names: tuple[str, ...] = (*self._constant, "scope", *CORE_LABELS)
        if threads:
            self.names += THREAD_LABELS

    def scopes(self, frame: Frame) -> Iterator[tuple[ScopeId, ScopeStats]]:
        yield ScopeId("total"), frame.total
        for cmg, stats in frame.cmgs.items():
            yield ScopeId("cmg", (("cmg", cmg),)), stats
        for core, stats in frame.cores.items():
            yield ScopeId("core", (("cmg", self._cmg_of_core.get(core, "")), ("core", core))), stats
        if self._threads:
            for tid, stats in frame.threads.items():
                yield ScopeId("thread", (("thread", tid),)), stats

    def labels(self, scope_id: ScopeId) -> dict[str, str]:
        """Every exported label of the scope's series, its own set and the others empty."""
        own = dict(scope_id.labels)
        labels = {name: own.get(name, "") for name in self.names}
        labels.update(self._constant)
        labels["scope"] = scope_id.scope
        return labels
