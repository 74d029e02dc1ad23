"""Formatting of values, deltas and bars: n/a for None, never a made-up 0, cells within 6 chars."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.frames import MetricDelta, ScopeStats
from sectormon.ui.bars import bar_segments, segment_widths
from sectormon.ui.cells import LOW_MARK, delta_cell, metric_cell
from sectormon.ui.format import (
    CELL_WIDTH,
    NA,
    coverage_threshold,
    format_coverage,
    format_duration,
    format_improvement,
    format_number,
    format_value,
    improvement_sign,
    is_low_confidence,
    sort_key,
    unit_kind,
)

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
TABLE_UNITS = ("ratio", "", "W", "nJ", "nJ/inst", "cycles", "/s", "count", "1/cycle", "inst/cycle", "%")


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.0312, "ratio", "3.12%"),
        (0.5, "ratio", "50.0%"),
        (1.0, "ratio", "100%"),
        (0.00001, "ratio", "0.001%"),  # not "<0.01%", next to "0.007%" for a larger value
        (0.00007, "ratio", "0.007%"),
        (0.00004, "ratio", "0.004%"),
        (4e-7, "ratio", "4e-5%"),
        (0.0, "ratio", "0%"),
        (1.234, "inst/cycle", "1.23"),
        (35.2, "W", "35.2W"),
        (0.0012, "W", "1.20mW"),
        (5.3e9, "nJ", "5.30J"),
        (250.3, "cycles", "250 cyc"),
        (123456, "count", "123k"),
        (1520.0, "/s", "1.52k/s"),
        (None, "W", NA),
        (math.nan, "ratio", NA),
        (math.inf, "", NA),
    ],
)
def test_format_value(value: float | None, unit: str, text: str) -> None:
    assert format_value(value, unit) == text


def test_units_go_to_the_header_in_tables() -> None:
    assert format_value(35.2, "W", with_unit=False) == "35.2"
    assert format_value(0.25, "ratio", with_unit=False) == "25.0%"
    assert unit_kind("nJ") == "energy"
    assert unit_kind("weird-unit") == "other"


plausible = st.floats(min_value=-1e12, max_value=1e12).filter(lambda v: v == 0 or abs(v) >= 1e-30)


@given(value=plausible, unit=st.sampled_from(TABLE_UNITS))
def test_table_cells_fit_and_never_lie(value: float, unit: str) -> None:
    """Any plausible value fits a 6-character cell (7 for a tiny negative share), never n/a or 0."""
    text = format_value(value, unit, with_unit=False)
    assert text != NA
    tiny_negative_share = text.startswith("-") and "e-" in text and text.endswith("%")  # -4e-20%
    assert len(text) <= CELL_WIDTH + (1 if tiny_negative_share else 0)
    if value != 0:
        assert text not in ("0", "0%", "-0", "+0")


@given(value=finite)
def test_any_finite_value_is_shown(value: float) -> None:
    text = format_value(value, "ratio", with_unit=False)
    assert text != NA and len(text) <= 8


@given(value=st.floats(min_value=1e-300, max_value=1e300))
def test_numbers_keep_their_magnitude(value: float) -> None:
    """Dropping precision is fine, changing the order of magnitude is not."""
    text = format_number(value)
    scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(text[-1], 1.0)
    shown = float(text[:-1]) * scale if text[-1] in "kMGT" else float(text)
    assert shown == pytest.approx(value, rel=0.5)


def test_improvement_sign_and_units() -> None:
    better = MetricDelta(base=0.10, now=0.08, delta=-0.02, improvement=0.02, relative=0.2)
    assert format_improvement(better, "ratio") == "+2.00"  # percentage points
    assert format_improvement(better, "ratio", relative=True) == "+20.0%"
    worse = MetricDelta(base=1.2, now=1.0, delta=-0.2, improvement=-0.2, relative=-1 / 6)
    assert format_improvement(worse, "inst/cycle", relative=True) == "-16.7%"
    assert format_improvement(MetricDelta(None, 1.0, None, None, None), "ratio") == NA
    # no better direction (a count, a share): the plain change, marked so it reads as neither
    assert format_improvement(MetricDelta(684e3, 689e3, 5e3, None, None), "count") == "Δ+5.0k"
    assert format_improvement(MetricDelta(0.5, 0.48, -0.02, None, None), "ratio") == "Δ-2.00"
    assert improvement_sign(MetricDelta(684e3, 689e3, 5e3, None, None)) == 0
    assert format_improvement(MetricDelta(0.0, 1.0, 1.0, 1.0, None), "", relative=True) == NA
    assert format_improvement(None, "") == NA


def test_rounding_is_no_change_and_small_changes_stay_plain() -> None:
    """The same counts summed in another order differ by ~1e-15: that is ±0 and neither better
    nor worse; a real change of 0.07 % reads as such, not as 7e-2."""
    noise = MetricDelta(base=32.5, now=32.5 + 4e-15, delta=4e-15, improvement=-4e-15, relative=-1.2e-16)
    assert format_improvement(noise, "W") == "±0"
    assert format_improvement(noise, "W", relative=True) == "±0%"
    assert improvement_sign(noise) == 0
    zero = MetricDelta(base=0.0, now=0.0, delta=0.0, improvement=0.0, relative=None)
    assert format_improvement(zero, "ratio") == "±0"
    small = MetricDelta(base=1.0, now=1.0007, delta=7e-4, improvement=7e-4, relative=7e-4)
    assert format_improvement(small, "inst/cycle", relative=True) == "+0.07%"
    assert improvement_sign(small) == 1
    assert format_improvement(MetricDelta(1e-12, 2e-12, 1e-12, -1e-12, -1.0), "J") == "-1e-12"
    assert format_number(0.07, 4) == "0.07" and format_number(0.123, 3) == "0.1"
    assert format_number(0.005, 4) == "5e-3"  # 0.01 would change the value by half


def test_cells_mark_low_confidence_and_na() -> None:
    stats = ScopeStats(
        counts={},
        rates={},
        metrics={"a": 0.5, "b": 0.5, "c": None, "d": 0.5},
        coverage={"a": 1.0, "b": 0.3, "c": 1.0, "d": 0.9},
        split=frozenset({"d"}),
    )
    assert metric_cell(stats, "a", "ratio").text == "50.0%"
    assert metric_cell(stats, "a", "ratio").roles == ()
    low = metric_cell(stats, "b", "ratio")
    assert low.text == LOW_MARK + "50.0%" and "low" in low.roles
    assert len(metric_cell(ScopeStats({}, {}, {"x": 0.00259}, {"x": 0.1}), "x", "ratio").text) <= CELL_WIDTH
    assert metric_cell(stats, "c", "ratio").text == NA
    assert metric_cell(stats, "missing", "ratio").text == NA
    assert "low" in metric_cell(stats, "d", "ratio").roles
    assert is_low_confidence(stats, "d") and not is_low_confidence(stats, "a")
    delta = delta_cell(MetricDelta(1.0, 1.1, 0.1, 0.1, 0.1), "", relative=True)
    assert delta.text == "+10.0%" and "better" in delta.roles
    assert "worse" in delta_cell(MetricDelta(1.0, 1.1, 0.1, -0.1, -0.1), "", relative=False).roles


def test_low_confidence_threshold_follows_the_rotation() -> None:
    assert coverage_threshold({}) == 0.5  # no rotation information: coverage < 0.5
    assert coverage_threshold({"sw": 1.0}) == 0.5
    six = {f"SC{i}": 1 / 6 for i in range(6)}
    assert coverage_threshold(six) == pytest.approx(0.5 / 6)
    stats = ScopeStats(counts={}, rates={}, metrics={"a": 0.123456}, coverage={"a": 0.05})
    low = metric_cell(stats, "a", "", coverage_threshold(six))
    assert low.text == "~0.123" and len(low.text) <= CELL_WIDTH  # the mark costs precision, not width
    assert (
        metric_cell(ScopeStats({}, {}, {"a": 0.1}, {"a": 0.15}), "a", "", coverage_threshold(six)).roles == ()
    )


def test_small_helpers() -> None:
    assert format_coverage(0.456) == "46%"
    assert format_coverage(None) == "?"
    assert format_duration(65.4) == "1:05"
    assert format_duration(3725) == "1:02:05"
    assert format_duration(None) == "--:--"
    # short (simulated) recordings: one SI unit for both ends of the timeline
    assert format_duration(0.00125, 0.00422) == "1.25ms"
    assert format_duration(0.00422, 0.00422) == "4.22ms"
    assert format_duration(2.5, 8.0) == "2.50s"
    values = [3.0, None, 1.0, 2.0]
    assert sorted(values, key=lambda v: sort_key(v, True)) == [3.0, 2.0, 1.0, None]
    assert sorted(values, key=lambda v: sort_key(v, False)) == [1.0, 2.0, 3.0, None]


def test_stacked_bar_widths() -> None:
    assert segment_widths([1 / 3, 1 / 3, 1 / 3], 30) == [10, 10, 10]
    assert segment_widths([0.5, None, 0.25], 20) == [10, 0, 5]
    assert segment_widths([0.9, 0.5], 10) == [9, 1]  # clamped to the bar for drawing
    runs = bar_segments([0.25, 0.25], "ab", 8)
    assert runs == [("aa", 0), ("bb", 1), ("····", 2)]


@given(st.lists(st.one_of(st.none(), st.floats(min_value=-1, max_value=2)), max_size=4), st.integers(1, 60))
def test_bars_never_overflow(fractions: list[float | None], width: int) -> None:
    widths = segment_widths(fractions, width)
    assert len(widths) == len(fractions)
    assert all(w >= 0 for w in widths)
    assert sum(widths) <= width
