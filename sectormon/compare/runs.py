"""Baseline vs tuned run: every metric per scope with delta, improvement and the section-3 effects.

Both sides arrive as ``RunMetrics`` (``compare/sides.py``), so the comparison does not care where a
run came from. It follows the PMU document (sections 3 and 6.6): ``delta = other - base``, an
improvement signed by the metric's ``better`` direction, the relative change, section 3.8's
``IPC_improvement`` and the L2 effectiveness. A metric only one side can compute is n/a on the
other, never 0. Rendering is ``compare/render.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sectormon.compare.hotspots import HotspotShift
from sectormon.data.run_metrics import REPORT_PREFIX, RunMetrics
from sectormon.errors import UsageError
from sectormon.metrics.baseline import metric_delta as baseline_delta
from sectormon.profiles.model import MetricDef

COMPARE_SCHEMA = "sectormon/compare/2"
IPC_METRIC = "IPC"
IPC_METRICS = (IPC_METRIC, REPORT_PREFIX + IPC_METRIC)
"""Where IPC_improvement comes from, first choice first: section 3's IPC, else the CPU PA report's."""
L2_MISS_CORRECTED = "L2_miss_count_corrected"
L2_MISS_RAW = "L2_MISS_COUNT"


@dataclass(frozen=True, slots=True)
class Row:
    """One metric of one scope, both sides."""

    metric: str
    base: float | None
    other: float | None
    delta: float | None
    improvement: float | None
    relative: float | None
    better: str = "none"
    unit: str = ""
    coverage_base: float | None = None
    coverage_other: float | None = None
    proxy_base: bool = False
    proxy_other: bool = False
    """Whether each side's value is estimated from ``--proxy`` stand-ins (docs/perf.md)."""
    error_base: float | None = None
    error_other: float | None = None
    """A proxied side's error bound: the relative half-width of its 95 % interval (``None``:
    unknown, or not proxied)."""

    @property
    def proxied_sides(self) -> list[str]:
        return [side for side, flag in (("base", self.proxy_base), ("other", self.proxy_other)) if flag]

    def to_json(self) -> dict[str, Any]:
        proxied = self.proxied_sides
        return {
            "base": self.base,
            "other": self.other,
            "delta": self.delta,
            "improvement": self.improvement,
            "relative": self.relative,
            "better": self.better,
            "unit": self.unit,
            "coverage_base": self.coverage_base,
            "coverage_other": self.coverage_other,
            **({"proxy": proxied} if proxied else {}),
            **({"proxy_error": {side: self.error(side) for side in proxied}} if proxied else {}),
        }

    def error(self, side: str) -> float | None:
        """The error bound of ``side`` (``base`` or ``other``)."""
        return self.error_base if side == "base" else self.error_other


@dataclass(frozen=True, slots=True)
class ScopeComparison:
    scope: str
    rows: tuple[Row, ...]
    ipc_improvement: float | None = None
    ipc_source: str = ""
    l2_effectiveness: float | None = None
    l2_source: str = ""

    def row(self, metric: str) -> Row:
        for r in self.rows:
            if r.metric == metric:
                return r
        raise KeyError(metric)

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": {r.metric: r.to_json() for r in self.rows},
            "IPC_improvement": self.ipc_improvement,
            "IPC_improvement_source": self.ipc_source or None,
            "L2_effectiveness": self.l2_effectiveness,
            "L2_effectiveness_source": self.l2_source or None,
        }


@dataclass(frozen=True)
class Comparison:
    """``mixed``: what makes the two sides unlike (profiles, sources), said before the tables and
    first in ``warnings``."""

    base: RunMetrics
    other: RunMetrics
    scopes: tuple[ScopeComparison, ...]
    warnings: tuple[str, ...] = field(default=())
    mixed: tuple[str, ...] = field(default=())
    hotspots: HotspotShift | None = None
    """How the hot spots moved, when both sides were recorded with ``--sample``."""

    def scope(self, name: str) -> ScopeComparison:
        for s in self.scopes:
            if s.scope == name:
                return s
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        def side(run: RunMetrics) -> dict[str, Any]:
            return {"label": run.label, "kind": run.kind, "info": dict(run.info)}

        return {
            "schema": COMPARE_SCHEMA,
            "base": side(self.base),
            "other": side(self.other),
            "scopes": {s.scope: s.to_json() for s in self.scopes},
            "warnings": list(self.warnings),
            **({"hotspots": self.hotspots.to_json()} if self.hotspots is not None else {}),
        }


# ------------------------------------------------------------------------------------ arithmetic


def metric_delta(
    base: float | None, other: float | None, better: str
) -> tuple[float | None, float | None, float | None]:
    """``(delta, improvement, relative)`` with the PMU document's sign convention; n/a stays n/a.

    The same convention as the live baseline (:func:`sectormon.metrics.baseline.metric_delta`);
    for a metric without a better direction, ``relative`` is the plain change over ``|base|``.
    """
    result = baseline_delta(base, other, better)
    relative = result.relative
    if relative is None and result.improvement is None and result.delta is not None and base:
        relative = result.delta / abs(base)
    return result.delta, result.improvement, relative


def ipc_improvement(base: float | None, other: float | None) -> float | None:
    """``(IPC_other - IPC_base) / IPC_base * 100`` in percent (section 3.8)."""
    if base is None or other is None or base == 0:
        return None
    return (other - base) / base * 100.0


def scope_ipc_improvement(
    base: Mapping[str, float | None], other: Mapping[str, float | None]
) -> tuple[float | None, str]:
    """IPC_improvement of one scope and the metric it came from (:data:`IPC_METRICS`, first that
    both sides have), ``(None, "")`` when neither is on both sides."""
    for name in IPC_METRICS:
        b, o = _num(base.get(name)), _num(other.get(name))
        if b is not None and o is not None:
            return ipc_improvement(b, o), name
    return None, ""


def _l2_miss(run: RunMetrics, scope: str, name: str) -> float | None:
    """A side's L2 miss count: the profile metric (``L2_miss_count_corrected``) or the raw event count.

    Both a recording's frames and a fapp directory's :func:`sectormon.fapp.run_metrics` carry the
    profile's corrected metric, so the errata correction is the profile's formula on both sides.
    """
    value = _num(run.metrics.get(scope, {}).get(name))
    if value is not None or name == L2_MISS_CORRECTED:
        return value
    return _num(run.counts.get(scope, {}).get(name))


def l2_effectiveness(base: RunMetrics, other: RunMetrics, scope: str) -> tuple[float | None, str]:
    """L2 miss count other / base: the errata-corrected metric when both sides have it, else raw counts."""
    for name in (L2_MISS_CORRECTED, L2_MISS_RAW):
        b = _l2_miss(base, scope, name)
        o = _l2_miss(other, scope, name)
        if b is not None and o is not None:
            return (o / b if b != 0 else None), name
    return None, ""


_SCOPE_ORDER = {"total": 0, "cmg": 1, "core": 2, "thread": 3, "rank": 4}


def scope_sort_key(scope: str) -> tuple[int, int, str]:
    kind, _, ident = scope.partition(":")
    rank = _SCOPE_ORDER.get(kind, len(_SCOPE_ORDER))
    return (rank, int(ident) if ident.lstrip("-").isdigit() else 1 << 30, scope)


def _ordered_union(*names: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for group in names:
        for name in group:
            seen.setdefault(name, None)
    return list(seen)


def scope_matches(scope: str, patterns: Iterable[str]) -> bool:
    """``total``, ``cmg`` (every CMG), ``cmg:1``, ``core``, ``thread:3``...: exact or by kind."""
    pats = list(patterns)
    if not pats:
        return True
    kind = scope.partition(":")[0]
    return any(p in (scope, kind) for p in pats)


def compare_runs(
    base: RunMetrics,
    other: RunMetrics,
    *,
    info: Mapping[str, MetricDef] | None = None,
    scopes: Iterable[str] = (),
    warnings: Iterable[str] = (),
    mixed: Iterable[str] = (),
) -> Comparison:
    """Every metric present on either side, for every scope present on either side."""
    info = info or {}
    patterns = list(scopes)
    names = sorted(set(base.metrics) | set(other.metrics), key=scope_sort_key)
    unknown = [p for p in patterns if not any(scope_matches(scope, [p]) for scope in names)]
    if unknown:
        kinds = sorted({scope.partition(":")[0] for scope in names})
        raise UsageError(
            f"--scope {', '.join(unknown)}: no such scope in these runs; "
            f"choose from {', '.join(kinds)} or one of {', '.join(names[:8])}"
            + (" ..." if len(names) > 8 else "")
        )
    out: list[ScopeComparison] = []
    for scope in names:
        if not scope_matches(scope, patterns):
            continue
        bm = base.metrics.get(scope, {})
        om = other.metrics.get(scope, {})
        bc = base.coverage.get(scope, {})
        oc = other.coverage.get(scope, {})
        rows = []
        for metric in _ordered_union(bm, om):
            meta = info.get(metric) or MetricDef(metric, "")
            b, o = _num(bm.get(metric)), _num(om.get(metric))
            delta, improvement, relative = metric_delta(b, o, meta.better)
            rows.append(
                Row(
                    metric=metric,
                    base=b,
                    other=o,
                    delta=delta,
                    improvement=improvement,
                    relative=relative,
                    better=meta.better,
                    unit=meta.unit,
                    coverage_base=_num(bc.get(metric)) if scope in base.metrics else None,
                    coverage_other=_num(oc.get(metric)) if scope in other.metrics else None,
                    proxy_base=metric in base.proxy.get(scope, ()),
                    proxy_other=metric in other.proxy.get(scope, ()),
                    error_base=base.proxy_error.get(scope, {}).get(metric),
                    error_other=other.proxy_error.get(scope, {}).get(metric),
                )
            )
        l2, l2_source = l2_effectiveness(base, other, scope)
        ipc, ipc_source = scope_ipc_improvement(bm, om)
        out.append(
            ScopeComparison(
                scope=scope,
                rows=tuple(rows),
                ipc_improvement=ipc,
                ipc_source=ipc_source,
                l2_effectiveness=l2,
                l2_source=l2_source,
            )
        )
    said = tuple(mixed)
    return Comparison(base=base, other=other, scopes=tuple(out), warnings=(*said, *warnings), mixed=said)


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
