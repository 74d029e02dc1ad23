"""Metric deltas against a baseline, with the PMU document's sign conventions.

``base`` is the reference (sector cache off), ``now`` the run being judged (on). ``delta`` is
always ``now - base``; ``improvement`` is positive when ``now`` is better: ``base - now`` for
``better: lower`` (the document's ΔL1D_miss_rate = off - on) and ``now - base`` for ``better:
higher`` (ΔIPC = on - off). ``relative`` is ``improvement / |base|``, so IPC_improvement [%] is
``relative * 100``.
"""

from __future__ import annotations

from collections.abc import Mapping

from sectormon.data.frames import MetricDelta


def metric_delta(base: float | None, now: float | None, better: str) -> MetricDelta:
    """One metric compared with its baseline value; ``None`` wherever a side is n/a."""
    if base is None or now is None:
        return MetricDelta(base=base, now=now, delta=None, improvement=None, relative=None)
    delta = now - base
    if better == "lower":
        improvement: float | None = base - now
    elif better == "higher":
        improvement = delta
    else:
        improvement = None
    relative = improvement / abs(base) if improvement is not None and base != 0 else None
    return MetricDelta(base=base, now=now, delta=delta, improvement=improvement, relative=relative)


def scope_deltas(
    base: Mapping[str, float | None], now: Mapping[str, float | None], better: Mapping[str, str]
) -> dict[str, MetricDelta]:
    """Deltas of every metric present on both sides (in ``now``'s order)."""
    return {
        name: metric_delta(base[name], value, better.get(name, "none"))
        for name, value in now.items()
        if name in base
    }


def keyed_deltas(
    base: Mapping[str, Mapping[str, float | None]],
    now: Mapping[str, Mapping[str, float | None]],
    better: Mapping[str, str],
) -> dict[str, dict[str, MetricDelta]]:
    """:func:`scope_deltas` for every CMG/core key present on both sides."""
    return {key: scope_deltas(base[key], metrics, better) for key, metrics in now.items() if key in base}
