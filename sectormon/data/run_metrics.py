"""A run reduced to metric tables: what `sectormon compare` compares, whatever the run came from.

A recording yields its final frame's whole-run window; a fapp directory yields the profile's
and the CPU PA report's per-thread and CMG-total values. Scope keys: ``total``, ``cmg:<id>``,
``core:<cpu>`` (or ``core:unbound``), ``thread:<tid>``. Metric keys: the profile's metric names;
a vendor report's metrics (Fujitsu's CPU PA report) carry :data:`REPORT_PREFIX`, so the
report's ``IPC`` (``report:IPC``) is never taken for the profile's ``IPC``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REPORT_PREFIX = "report:"
"""Metric keys of Fujitsu's CPU PA report: ``report:IPC``, ``report:Execution time (s)``, ..."""


@dataclass(frozen=True, slots=True)
class RunMetrics:
    """Metric values (``None`` = n/a), their coverage and the scaled counts, per scope."""

    label: str
    kind: str
    metrics: Mapping[str, Mapping[str, float | None]]
    coverage: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    counts: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    proxy: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per scope, the metrics and events estimated from ``--proxy`` stand-ins (absent: none)."""
    proxy_error: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    """Per scope, each proxied figure's error bound (relative 95 % half-width; ``None``: unknown)."""

    def scopes(self) -> tuple[str, ...]:
        return tuple(self.metrics)
