"""Text sparklines: the right size, scaled from the series' own lowest to highest point."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sectormon.ui.bars import SPARK_GLYPHS, spark_rows


@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=300),
    st.integers(0, 200),
    st.integers(0, 8),
)
def test_rows_have_the_size_asked_for(values: list[float], width: int, height: int) -> None:
    rows = spark_rows(values, width, height)
    assert len(rows) == height
    for text, upper in rows:
        assert len(text) == width and len(upper) == width
        assert set(text) <= set(SPARK_GLYPHS)


def _column_heights(values: list[float], width: int, height: int) -> list[int]:
    rows = spark_rows(values, width, height)
    return [sum(SPARK_GLYPHS.index(text[c]) for text, _ in rows) for c in range(width)]


def test_the_highest_point_fills_the_column_and_the_lowest_is_a_floor() -> None:
    heights = _column_heights([1.0, 3.0, 2.0], 3, 2)
    assert heights == [1, 16, 9]  # 2 rows of 8 eighths: lowest 1, highest 16, middle halfway
    assert _column_heights([0.0, 0.0], 2, 3) == [1, 1]  # constant zero: a flat floor


def test_a_range_tiny_next_to_its_values_is_not_magnified_to_the_full_height() -> None:
    """IPC 1.98-1.99 was drawn from the floor to the top, as big swings: a range under 5 % of
    the values is drawn that small, around mid-height; a constant is a flat line there."""
    heights = _column_heights([1.98, 1.99, 1.98, 1.99], 4, 4)
    assert max(heights) - min(heights) <= 0.25 * 32  # 0.5 % of the value: a fifth of the height
    assert all(8 <= h <= 24 for h in heights)
    assert len(set(_column_heights([5.0, 5.0], 2, 3))) == 1
    assert 8 <= _column_heights([5.0, 5.0], 2, 3)[0] <= 16  # mid-height, not read as zero
    rows = spark_rows([1.98, 1.99], 2, 2)
    assert not any(any(upper) for _, upper in rows)  # no "high" colour for noise
    # A real change (50 % -> 100 %) still fills the height.
    assert _column_heights([0.5, 1.0], 2, 2) == [1, 16]


def test_extreme_values_draw_without_overflow() -> None:
    heights = _column_heights([-1.7e308, 1.7e308, 0.0], 3, 2)
    assert heights[0] == 1 and heights[1] == 16


def test_more_points_than_columns_keep_the_largest_of_each_bucket() -> None:
    values = [0.0] * 10 + [9.0] + [0.0] * 9
    heights = _column_heights(values, 4, 1)
    assert heights.count(8) == 1 and heights.count(1) == 3  # the spike survives the squeeze
