"""Proxy counting (``--proxy N``): per CMG, N units stand in for all of them.

When counters are scarce (every open group costs fds, reads and ioctls on every unit), a subset of
units counts the rotating groups and the others count only what needs no counter: the idea of the
ARM CCN-502 document's "a subset stands in for all". Pure logic, no I/O: the session's setting
(:func:`proxy_setting`; the record the header carries is :class:`sectormon.data.proxy.ProxySetting`),
the factor that scales the stand-ins' counts to their CMG
(:func:`cmg_factor`) and the bound of that estimate (:func:`half_width`); which units stand in is
:mod:`sectormon.rotation.stand_ins`. The engine applies it
(:mod:`sectormon.metrics.proxy_scale`); docs/perf.md says what it costs and guarantees.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sectormon.data.proxy import TASK_TIME, UNITS, ProxySetting
from sectormon.data.readings import Unit
from sectormon.errors import UsageError
from sectormon.profiles.model import EventDef

TASK_TIME_EVENT = EventDef(
    name="proxy task time",
    spec="task-clock",
    description="each unit's task time: the reference that --proxy scales the stand-ins' counts by",
)
"""Opened on every unit in the always-on group when the profile has no always-on per-PE event
(a profile of PMU events only, such as the A64FX one), on a source that counts software events: the
reference is then task time, not presence. Presence assumes every unit of a CMG ran as much as its
stand-ins; on a loaded machine the scheduler gives threads unequal shares, which put a presence
estimate far off, while per second of task time the same threads did the same work (bench_sampler
in docs/perf-tuning.md, "``--proxy 1`` under load"). Its name is no identifier: no formula or profile
event can take it, and the engine counts only its ``time_enabled``."""


def proxy_setting(
    per_cmg: int, events: Sequence[str], *, timed: bool, stand_ins: Sequence[Unit]
) -> ProxySetting:
    """The setting of a session: ``events`` (the rotating per-PE ones) are proxied; every unit's
    task time is the reference when ``timed`` (every unit reads an always-on per-PE group, whose
    ``time_enabled`` is its task time), else its presence."""
    return ProxySetting(
        per_cmg=per_cmg,
        reference=TASK_TIME if timed else UNITS,
        events=tuple(dict.fromkeys(events)),
        stand_ins=tuple(u.key for u in stand_ins),
        described=describe_stand_ins(per_cmg, stand_ins),
    )


def check_per_cmg(value: int | None) -> int | None:
    """``--proxy N``: a whole number of stand-ins per CMG, at least 1."""
    if value is not None and value < 1:
        raise UsageError(f"--proxy {value}: give at least 1 stand-in per CMG, e.g. --proxy 1")
    return value


def describe_stand_ins(per_cmg: int, units: Sequence[Unit]) -> str:
    """The header's words for the stand-ins: ``proxy 1/CMG: cpus 0,12,24,36`` or
    ``proxy 1/CMG: tid 1234 (CMG0), tid 1250 (CMG1)``."""
    head = f"proxy {per_cmg}/CMG"
    if not units:
        return f"{head}: no unit yet"
    if all(u.kind == "cpu" for u in units):
        return f"{head}: cpus " + ",".join(str(u.ident) for u in units)
    named = [f"tid {u.ident}" + (f" (CMG{u.cmg})" if u.cmg is not None else "") for u in units]
    return f"{head}: " + ", ".join(named)


def cmg_factor(all_reference: float, stand_in_reference: float) -> float | None:
    """What the stand-ins' count of a CMG is multiplied by: the CMG's reference (task time or
    present seconds of all its units) over the stand-ins'. ``None``: the stand-ins have none while
    other units do (a stand-in that never ran), so no estimate; 1.0 when no unit has any."""
    if stand_in_reference > 0.0:
        return all_reference / stand_in_reference if all_reference > stand_in_reference else 1.0
    return 1.0 if all_reference <= 0.0 else None


_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
"""Student's t at 97.5 % for 1..30 degrees of freedom (a two-sided 95 % interval)."""


def t_quantile(df: int) -> float:
    """Student's t at 97.5 % with ``df >= 1`` degrees of freedom: from the table up to 30, beyond
    it the Cornish-Fisher expansion around the normal 1.96 (within 0.001 of the exact value)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)


def ratio_variance(references: Sequence[float], counts: Sequence[float], units: int) -> float | None:
    """The variance of a proxied estimate (the stand-ins' counts times all units' reference over
    the stand-ins'), the ratio estimator of a total from a sample of ``n = len(references)`` of
    ``units`` units: ``units² (1 - n/units) / n · s²``, with ``s²`` the spread of the stand-ins'
    counts around the common rate (``counts[k] - rate · references[k]``, over ``n - 1``).
    The stand-ins' spread is all that tells how much the per-unit rate varies between units, so
    with fewer than two stand-ins the variance is unknown (``None``), unless every unit was
    counted (0: nothing is estimated). ``s²`` is at least the mean count per unit, the spread of
    Poisson counts at one rate: two stand-ins that happened to count alike do not prove that
    the units they stand for did. ``None`` too when the stand-ins counted nothing while other
    units ran (their rate of 0 says nothing of the others' spread)."""
    n = len(references)
    if n >= units:
        return 0.0
    if n < 2:
        return None
    total_ref = sum(references)
    total = sum(counts)
    if total_ref <= 0.0 or total <= 0.0:
        return None
    rate = total / total_ref
    spread = sum((c - rate * r) ** 2 for r, c in zip(references, counts, strict=True)) / (n - 1)
    spread = max(spread, total / n)
    return units * units * (1.0 - n / units) / n * spread


def half_width(references: Sequence[float], counts: Sequence[float], units: int) -> float | None:
    """The absolute half-width of the 95 % interval of a proxied estimate from the stand-ins'
    ``references`` and ``counts`` among ``units`` units: ``t(n-1) · sqrt(variance)``
    (:func:`ratio_variance`; Student's t for the few stand-ins the spread is estimated from).
    0 when every unit was counted, ``None`` when the variance is unknown."""
    variance = ratio_variance(references, counts, units)
    if variance is None or variance <= 0.0:
        return variance
    return t_quantile(len(references) - 1) * math.sqrt(variance)
