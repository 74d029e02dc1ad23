"""Turning metric values into short cell text: units, n/a, deltas, confidence.

The UI computes no metric: these functions only choose how a value the engine produced is written
(a ratio as a percentage, an energy with an SI prefix). ``None`` (and a non-finite value) is always
``n/a``, never 0. Table cells stay within :data:`CELL_WIDTH` characters so 48 cores fit two
tables side by side at 160 columns. Pure functions, no Textual.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypeGuard

from sectormon.data.frames import MetricDelta, ScopeStats

NA = "n/a"
CELL_WIDTH = 6
CHANGE_MARK = "Δ"
"""Marks the plain change of a metric with no better direction (not an improvement)."""
LOW_COVERAGE = 0.5
"""A value counted under half of what the rotation allows is shown dimmed (see coverage_threshold)."""

RATIO_UNITS = frozenset({"ratio", "fraction", "frac", "share"})
"""Dimensionless 0..1 values, written as percentages (deltas as percentage points)."""

PERCENT_UNITS = frozenset({"%", "percent", "pct"})
PER_SECOND_UNITS = frozenset({"/s", "1/s", "per_s", "per second", "per_second", "hz", "events/s", "count/s"})
COUNT_UNITS = frozenset({"", "count", "counts", "events", "event", "number"})
SI_BASE_UNITS = {"w": "W", "watt": "W", "watts": "W", "j": "J", "joule": "J", "joules": "J"}
SCALED_ENERGY = {"nj": 1e-9, "uj": 1e-6, "µj": 1e-6, "mj": 1e-3}
SHORT_UNITS = {"cycles": "cyc", "cycle": "cyc", "inst/cycle": "", "ipc": ""}

_SI_LARGE = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SI_SMALL = ((1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"))


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _sci(value: float, decimals: int = 1) -> str:
    """Scientific form without padding: ``1.2e-4``, ``-4e-15``."""
    mantissa, _, exponent = f"{value:.{decimals}e}".partition("e")
    if mantissa.endswith(".0"):
        mantissa = mantissa[:-2]
    return f"{mantissa}e{int(exponent)}"


def _plain(value: float, width: int) -> str:
    """About three significant digits in at most ``width`` characters.

    Precision is dropped before the value is ever cut: the shortest form is returned when none
    fits, so a cell is never truncated into a different number.
    """
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if not math.isfinite(value):  # a finite ratio can overflow when written as a percentage
        return "∞" if value > 0 else "-∞"
    if magnitude >= 99.95:
        candidates = [f"{value:.0f}"]
    elif magnitude >= 9.995:
        candidates = [f"{value:.1f}", f"{value:.0f}"]
    elif magnitude >= 0.9995:
        candidates = [f"{value:.2f}", f"{value:.1f}"]
    elif magnitude >= 0.0995:
        candidates = [f"{value:.3f}", f"{value:.2f}", f"{value:.1f}"]
    elif magnitude >= 0.00995:  # 0.07 reads better than 7e-2, and keeps as many digits
        candidates = [f"{value:.4f}", f"{value:.3f}", f"{value:.2f}"]
    elif magnitude >= 0.001:
        candidates = [f"{value:.4f}", f"{value:.3f}"]
    else:
        candidates = []
    for text in candidates:
        if len(text) <= width:
            return text
    scientific = (_sci(value, 1), _sci(value, 0))
    for text in scientific:
        if len(text) <= width:
            return text
    return min((*candidates, *scientific), key=len)


def format_number(value: float, width: int = CELL_WIDTH) -> str:
    """A plain number in at most ``width`` characters; k/M/G/T for large values."""
    magnitude = abs(value)
    if magnitude >= 1e15:
        return _plain(value, width)
    for scale, prefix in _SI_LARGE:
        if magnitude >= scale * 0.9995:
            return _plain(value / scale, width - 1) + prefix
    return _plain(value, width)


def format_si(value: float, base: str, width: int = CELL_WIDTH) -> str:
    """An SI-prefixed value: ``1.23kW``, ``530µJ``; the unit is not counted in ``width``."""
    magnitude = abs(value)
    if magnitude == 0:
        return f"0{base}"
    if magnitude < 0.9995:
        for scale, prefix in _SI_SMALL:
            if magnitude >= scale * 0.9995:
                return f"{_plain(value / scale, width - 1)}{prefix}{base}"
        return f"{_sci(value)}{base}"
    return f"{format_number(value, width)}{base}"


def format_percent(value: float, width: int = CELL_WIDTH) -> str:
    """``12.3%``, ``0.12%``, ``0.004%``, ``4e-5%``: a tiny non-zero share keeps its digits, never
    a made-up ``0%`` (``<0.01%`` stood for values below 0.005 %, next to ``0.007%``)."""
    if value == 0:
        return "0%"
    return _plain(value, width - 1) + "%"


def unit_kind(unit: str) -> str:
    """Classify a profile's unit string: ratio, percent, per_s, count, si, energy or other."""
    key = unit.strip().lower()
    if key in RATIO_UNITS:
        return "ratio"
    if key in PERCENT_UNITS:
        return "percent"
    if key in PER_SECOND_UNITS:
        return "per_s"
    if key in COUNT_UNITS:
        return "count"
    if key in SI_BASE_UNITS:
        return "si"
    if key in SCALED_ENERGY:
        return "energy"
    return "other"


def format_value(
    value: float | None, unit: str = "", *, with_unit: bool = True, width: int = CELL_WIDTH
) -> str:
    """A metric value for display: ``12.3%``, ``35.2W``, ``1.23``, ``n/a``.

    ``with_unit=False`` (table cells) leaves the unit to the column header and keeps the text
    within :data:`CELL_WIDTH`; percent signs stay, they tell a ratio from a plain number.
    """
    if not _finite(value):
        return NA
    assert value is not None
    kind = unit_kind(unit)
    key = unit.strip().lower()
    if kind == "ratio":
        return format_percent(value * 100.0, width)
    if kind == "percent":
        return format_percent(value, width)
    if kind == "count":
        return format_number(value, width)
    if kind == "per_s":
        return f"{format_number(value)}/s" if with_unit else format_number(value, width)
    if kind == "si":
        return format_si(value, SI_BASE_UNITS[key]) if with_unit else format_number(value, width)
    if kind == "energy":
        joules = value * SCALED_ENERGY[key]
        return format_si(joules, "J") if with_unit else format_number(value, width)
    text = format_number(value, width)
    suffix = SHORT_UNITS.get(key, unit.strip())
    if with_unit and suffix:
        return f"{text} {suffix}"
    return text


def format_improvement(
    delta: MetricDelta | None,
    unit: str = "",
    *,
    relative: bool = False,
    width: int = CELL_WIDTH,
    mark_change: bool = True,
) -> str:
    """A baseline comparison in at most :data:`CELL_WIDTH` characters, ``+`` meaning better.

    The improvement is in the metric's unit; ratios are in percentage points (``+1.23`` =
    1.23 pp better). ``relative=True`` gives the PMU document's IPC improvement:
    improvement / |base| in percent (``+12.3%``). A metric with no better direction shows its
    plain change, marked ``Δ`` unless ``mark_change`` is off (a table marks its column instead).
    """
    if delta is None:
        return NA
    same = unchanged(delta)
    if relative:
        if not _finite(delta.relative):
            return NA
        assert delta.relative is not None
        return _signed(0.0 if same else delta.relative * 100.0, width - 1) + "%"
    scale = 100.0 if unit_kind(unit) == "ratio" else 1.0
    if not _finite(delta.improvement):
        if _finite(delta.delta):
            # A metric with no better direction (a count, a share): its plain change, marked Δ so
            # it does not read as better or worse; n/a said "inputs missing" there.
            assert delta.delta is not None
            if not mark_change:
                return _signed(0.0 if same else delta.delta * scale, width)
            return CHANGE_MARK + _signed(0.0 if same else delta.delta * scale, width - 1)
        return NA
    assert delta.improvement is not None
    return _signed(0.0 if same else delta.improvement * scale, width)


ROUNDING_NOISE = 1e-9
"""A change below this fraction of the larger side is float rounding, not a change: the same
counts summed in another order (a CMG's power, ``+4e-15`` W), shown as ``±0``."""


def unchanged(delta: MetricDelta) -> bool:
    """Whether both sides are known and differ by rounding only (:data:`ROUNDING_NOISE`)."""
    base, now = delta.base, delta.now
    if not (_finite(base) and _finite(now)):
        return False
    return abs(now - base) <= ROUNDING_NOISE * max(abs(base), abs(now))


def _signed(value: float, width: int) -> str:
    sign = "+" if value > 0 else "-" if value < 0 else "±"
    return sign + format_number(abs(value), width - 1)


def improvement_sign(delta: MetricDelta | None) -> int:
    """+1 better, -1 worse, 0 same or unknown: picks the cell's style."""
    if delta is None or not _finite(delta.improvement) or unchanged(delta):
        return 0
    assert delta.improvement is not None
    return (delta.improvement > 0) - (delta.improvement < 0)


def coverage_of(stats: ScopeStats, name: str) -> float | None:
    """The coverage the engine reported for a metric or event; ``None`` when it gave none."""
    value = stats.coverage.get(name)
    return float(value) if _finite(value) else None


def coverage_threshold(groups: Mapping[str, float]) -> float:
    """The coverage under which a value counts as low confidence, for this frame's rotation.

    Half of one rotation share: with N groups taking turns an event is counted about 1/N of the
    window at best, so "under half the window" would flag every value. Without rotation (one
    group, or no group information) this is exactly ``coverage < 0.5``.
    """
    shares = [float(v) for v in groups.values() if _finite(v) and v > 0]
    if len(shares) <= 1:
        return LOW_COVERAGE
    return LOW_COVERAGE * min(1.0, sum(shares) / len(shares))


def is_low_confidence(stats: ScopeStats, name: str, threshold: float = LOW_COVERAGE) -> bool:
    """Dim a value counted under ``threshold`` of the window, or whose inputs came from
    different groups (split)."""
    if name in stats.split:
        return True
    cov = coverage_of(stats, name)
    return cov is not None and cov < threshold


def format_coverage(value: float | None) -> str:
    if not _finite(value):
        return "?"
    assert value is not None
    return f"{value * 100.0:.0f}%"


def format_duration(seconds: float | None, span: float | None = None) -> str:
    """``m:ss`` (or ``h:mm:ss``) for the timeline; ``--:--`` when unknown.

    A recording shorter than 10 s (a simulated run lasts milliseconds of simulated time) is shown
    in seconds with an SI prefix, scaled by ``span`` (the duration) so both ends share one unit.
    """
    if not _finite(seconds):
        return "--:--"
    assert seconds is not None
    scale = span if _finite(span) else seconds
    if scale is not None and scale < 10:
        for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if scale >= factor or unit == "µs":
                return f"{seconds / factor:.2f}{unit}"
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def metric_value(stats: ScopeStats | None, name: str) -> float | None:
    """A metric of a scope, ``None`` when the scope or the metric is missing or not finite."""
    if stats is None:
        return None
    value = stats.metrics.get(name)
    return float(value) if _finite(value) else None


def sort_key(value: float | None, descending: bool) -> tuple[int, float]:
    """Rows sort by value with n/a always last, whichever the direction."""
    if value is None:
        return (1, 0.0)
    return (0, -value if descending else value)
