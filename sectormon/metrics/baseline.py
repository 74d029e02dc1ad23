"""Metric deltas against a baseline, with the PMU document's sign conventions.

``base`` is the reference (sector cache off), ``now`` the run being judged (on). ``delta`` is
always ``now - base``; ``improvement`` is positive when ``now`` is better: ``base - now`` for
``better: lower`` (the document's ΔL1D_miss_rate = off - on) and ``now - base`` for ``better:
higher`` (ΔIPC = on - off). ``relative`` is ``improvement / |base|``, so IPC_improvement [%] is
``relative * 100``. A :class:`Snapshot` is the baseline the engine keeps: the metric values of
the window marked, compared with each frame's recent window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sectormon.data.frames import Baseline, MetricDelta, WindowStats


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


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The metric values of the window marked as baseline (``t_from`` to ``t_to``).

    ``after_change``: the configuration change the window starts at, which cut it short (a
    window never mixes two configurations); ``None`` when it was not cut.
    """

    t_from: float
    t_to: float
    after_change: float | None
    total: Mapping[str, float | None]
    cmgs: Mapping[str, Mapping[str, float | None]]
    cores: Mapping[str, Mapping[str, float | None]]

    @classmethod
    def of(cls, window: WindowStats, t_to: float, restarted_at: float | None) -> Snapshot:
        """``window``, ending at ``t_to``, kept as baseline; ``restarted_at``: the last
        configuration change (``None``: none)."""
        t_from = t_to - window.seconds
        cut = restarted_at is not None and abs(t_from - restarted_at) <= 1e-9 * max(1.0, abs(restarted_at))
        return cls(
            t_from=t_from,
            t_to=t_to,
            after_change=restarted_at if cut else None,
            total=dict(window.total.metrics),
            cmgs={k: dict(v.metrics) for k, v in window.cmgs.items()},
            cores={k: dict(v.metrics) for k, v in window.cores.items()},
        )

    def against(self, recent: WindowStats, better: Mapping[str, str]) -> Baseline:
        """The deltas of ``recent`` against this baseline (``better``: per metric, which way)."""
        return Baseline(
            t_from=self.t_from,
            t_to=self.t_to,
            after_change=self.after_change,
            total=scope_deltas(self.total, recent.total.metrics, better),
            cmgs=keyed_deltas(self.cmgs, {k: v.metrics for k, v in recent.cmgs.items()}, better),
            cores=keyed_deltas(self.cores, {k: v.metrics for k, v in recent.cores.items()}, better),
        )
