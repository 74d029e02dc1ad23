"""The hot-path constructors build exactly what the dataclass constructors build."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sectormon.readings import (
    GroupValues,
    Reading,
    Slice,
    SliceRows,
    make_group_values,
    make_reading,
)

counts = st.dictionaries(st.text(min_size=1, max_size=8), st.integers(0, 2**64 - 1), max_size=8)
optional_cpu = st.none() | st.integers(0, 4096)


@given(
    st.text(max_size=12),
    optional_cpu,
    optional_cpu,
    st.text(max_size=6),
    st.integers(0),
    st.integers(0),
    counts,
)
def test_make_reading_equals_reading(
    unit: str, core: int | None, cmg: int | None, group: str, te: int, tr: int, c: dict[str, int]
) -> None:
    fast = make_reading(unit, core, cmg, group, te, tr, c)
    assert fast == Reading(unit, core, cmg, group, te, tr, c)
    assert type(fast) is Reading


@given(
    st.tuples(st.integers(0, 2**64 - 1)) | st.lists(st.integers(0), max_size=8).map(tuple),
    st.integers(0),
    st.integers(0),
)
def test_make_group_values_equals_group_values(values: tuple[int, ...], te: int, tr: int) -> None:
    assert make_group_values(values, te, tr) == GroupValues(values, te, tr)


@given(st.lists(st.tuples(st.text(max_size=6), optional_cpu, counts), max_size=6))
def test_slice_rows_round_trip(parts: list[tuple[str, int | None, dict[str, int]]]) -> None:
    readings = tuple(Reading(u, core, None, "G", 5, 4, c) for u, core, c in parts)
    s = Slice(t=1.0, index=3, duration=0.02, group="G", readings=readings, overhead_s=0.5, ended=("x",))
    assert SliceRows.from_slice(s).to_slice() == s
