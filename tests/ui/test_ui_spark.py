"""Text sparklines: the right size, scaled from the series' own lowest to highest point."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sectormon.ui.bars import SPARK_GLYPHS, spark_rows


@given(
    st.lists(st.floats(-1e6, 1e6), max_size=300),
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
    assert _column_heights([5.0, 5.0], 2, 3) == [1, 1]  # a constant series is a flat floor


def test_more_points_than_columns_keep_the_largest_of_each_bucket() -> None:
    values = [0.0] * 10 + [9.0] + [0.0] * 9
    heights = _column_heights(values, 4, 1)
    assert heights.count(8) == 1 and heights.count(1) == 3  # the spike survives the squeeze
