"""Builders for small hand-made profiles, readings and slices used by the metrics tests.

Imported by the test modules beside it (pytest puts this directory on ``sys.path``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sectormon.data.readings import Row, Slice
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile
from tests.rows import row

NS = 1_000_000_000


def make_profile(
    groups: Mapping[str, Sequence[str]],
    metrics: Mapping[str, str | tuple[str, str] | tuple[str, str, str]] | None = None,
    *,
    cmg_events: Sequence[str] = (),
    extra_events: Sequence[str] = (),
    constants: Mapping[str, float] | None = None,
) -> Profile:
    """A profile from group -> events and metric -> formula | (formula, better) | (formula, better, scope)."""
    names: list[str] = []
    for members in groups.values():
        for e in members:
            if e not in names:
                names.append(e)
    names += [e for e in extra_events if e not in names]
    events = {n: EventDef(n, n.lower(), scope="cmg" if n in cmg_events else "pe") for n in names}
    mdefs = []
    for name, spec in (metrics or {}).items():
        formula, better, scope = (spec, "none", "any") if isinstance(spec, str) else (*spec, "any")[:3]
        mdefs.append(MetricDef(name, formula, better=better, scope=scope))
    return Profile(
        name="test",
        description="",
        counters=8,
        events=events,
        groups=tuple(GroupDef(g, tuple(ev)) for g, ev in groups.items()),
        metrics=tuple(mdefs),
        constants=dict(constants or {}),
        source="test.yaml",
    )


def reading(
    unit: str,
    group: str,
    counts: Mapping[str, int],
    *,
    te: int = NS,
    tr: int | None = None,
    core: int | None = 0,
    cmg: int | None = 0,
) -> Row:
    return row(unit, core, cmg, group, te, te if tr is None else tr, dict(counts))


@dataclass
class Feed:
    """Builds consecutive slices of a fixed duration (t advances by ``duration`` per slice)."""

    duration: float = 1.0
    t: float = 0.0
    index: int = 0
    overhead: float = 0.0

    def slice(
        self,
        group: str,
        readings: Sequence[Row],
        *,
        ended: Sequence[str] = (),
        duration: float | None = None,
        overhead_step: float = 0.0,
    ) -> Slice:
        dur = self.duration if duration is None else duration
        self.t += dur
        self.overhead += overhead_step
        s = Slice(
            t=self.t,
            index=self.index,
            duration=dur,
            group=group,
            rows=tuple(readings),
            overhead_s=self.overhead,
            ended=tuple(ended),
        )
        self.index += 1
        return s


def multiplex_scale(count: int, time_enabled: int, time_running: int) -> float:
    """perf stat's correction for the kernel's multiplexing (count * enabled / running), the
    reference the engine is checked against."""
    if time_running <= 0 or time_enabled <= 0:
        return float(count)
    return count * (time_enabled / time_running)


def running_fraction(time_enabled: int, time_running: int) -> float:
    """Fraction of its enabled time a group was on the PMU; 1.0 when nothing was enabled."""
    if time_enabled <= 0:
        return 1.0
    return min(1.0, max(0.0, time_running / time_enabled))
