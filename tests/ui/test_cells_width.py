"""A table cell never fills its column: values and baseline changes stay within CELL_WIDTH, so a
7-column cell always keeps the space that separates it from the column before."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from sectormon.data.frames import MetricDelta, ScopeStats
from sectormon.ui.cells import column_label, scope_cells
from sectormon.ui.format import CELL_WIDTH
from sectormon.ui.layout import Column

MAGNITUDES = st.floats(min_value=1e-9, max_value=1e12)
VALUES = st.one_of(
    st.just(0.0),
    MAGNITUDES,
    MAGNITUDES.map(lambda x: -x),
    st.sampled_from([0.0499, -0.0499, 0.001, -0.00051, 99.95, -123.4, 1e-9]),
)
"""Every size a counter-derived metric takes in practice (a 6-column cell cannot write 4e-206
with its sign and its low-confidence mark; such a value fills its column, it is never cut)."""
UNITS = st.sampled_from(["ratio", "W", "cycles", "", "1/s", "inst/cycle", "nJ"])


def _stats(low: bool) -> ScopeStats:
    coverage = 0.01 if low else 1.0
    return ScopeStats({}, {}, {"m": 1.0}, {"m": coverage}, (), 1.0)


@given(VALUES, VALUES, UNITS, st.sampled_from(["higher", "lower", "none"]), st.booleans())
def test_a_baseline_change_fits_its_cell(base: float, now: float, unit: str, better: str, low: bool) -> None:
    """~Δ-0.05 (a low-confidence change of SCE or ¬sec0) took 7 columns and ran into the column
    before it at 80 columns."""
    assume(unit != "ratio" or max(abs(base), abs(now)) <= 10)  # shares: 0..1, 1000 % at most
    sign = {"higher": 1.0, "lower": -1.0, "none": None}[better]
    improvement = None if sign is None else sign * (now - base)
    relative = None if improvement is None or base == 0 else improvement / abs(base)
    delta = MetricDelta(base, now, now - base, improvement, relative)
    for metric in ("m", "IPC"):
        cells = scope_cells(
            _stats(low),
            [Column("m", "m"), Column(metric, metric)],
            {"m": unit},
            {"m": delta, "IPC": delta},
            0.5,
        )
        for cell in cells:
            assert len(cell.text) <= CELL_WIDTH, cell.text


@given(VALUES, UNITS, st.booleans())
def test_a_value_fits_its_cell(value: float, unit: str, low: bool) -> None:
    assume(value >= 0)  # a metric's value (its change, above, has a sign)
    assume(unit != "ratio" or value <= 10)
    stats = ScopeStats({}, {}, {"m": value}, {"m": 0.01 if low else 1.0}, (), 1.0)
    (cell,) = scope_cells(stats, [Column("m", "m")], {"m": unit}, None, 0.5)
    assert len(cell.text) <= CELL_WIDTH, cell.text


def test_a_directionless_change_is_marked_once_in_its_label() -> None:
    assert column_label(Column("SCE_usage_ratio", "SCE"), "none", deltas=True) == "ΔSCE"
    assert column_label(Column("SCE_usage_ratio", "SCE"), "none", deltas=False) == "SCE"
    assert column_label(Column("IPC", "IPC"), "higher", deltas=True) == "IPC"
