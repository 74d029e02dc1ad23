"""A family's values written at once (orjson) are prometheus_client's ``floatToGoString``, any input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.utils import floatToGoString

from sectormon.export import values as values_module
from sectormon.export.values import go_float, go_floats

# Every notation either writer switches at: repr's exponent below 1e-4 and from 1e16, orjson's
# positional values down to 1e-5, prometheus_client's Go exponent from 1e6; integers (counts)
# and values whose digits look like a small one (10.00001).
EDGES = [
    0.0,
    -0.0,
    1e-4,
    9.999e-5,
    5e-05,
    1e-05,
    9.9e-06,
    1e-07,
    5e-324,
    10.00001,
    0.1 + 0.2,
    999999.9999999999,
    1e6,
    -1e6,
    1234567.0,
    1000000.5,
    1e15 + 0.5,
    9007199254740993.0,
    9999999999999998.0,
    1e16,
    1.5e16,
    1.7976931348623157e308,
    -2.5e7,
    math.inf,
    -math.inf,
    math.nan,
]


def reference(values: tuple[float, ...]) -> list[str]:
    return [floatToGoString(value) for value in values]


def test_the_edges_are_prometheus_clients() -> None:
    for value in EDGES:
        assert go_floats((value,)) == reference((value,)), value
        assert go_floats((value, 0.5, 2e6)) == reference((value, 0.5, 2e6)), value
    assert go_floats(tuple(EDGES)) == reference(tuple(EDGES))
    assert go_floats(()) == []


@given(st.lists(st.floats(), max_size=40))
def test_any_floats_are_prometheus_clients(values: list[float]) -> None:
    assert go_floats(tuple(values)) == reference(tuple(values))


positional = st.floats(min_value=1e-4, max_value=1e16, exclude_max=True) | st.integers(
    min_value=0, max_value=2**53
).map(float)


@given(st.lists(st.tuples(positional, st.booleans()), min_size=1, max_size=40))
def test_values_written_at_once_are_prometheus_clients(signed: list[tuple[float, bool]]) -> None:
    values = tuple(-value if negative else value for value, negative in signed)
    assert go_floats(values) == reference(values)


@given(st.floats())
def test_go_float_is_prometheus_clients(value: float) -> None:
    assert go_float(value) == floatToGoString(value)


def test_positional_values_are_not_written_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The values of a scrape (ratios, rates, counts up to 1e16) take the one call, not the loop."""

    def one_by_one(value: float) -> str:
        raise AssertionError(f"{value} was written one by one")

    monkeypatch.setattr(values_module, "go_float", one_by_one)
    values = (0.2, 0.49997197449327124, 1.0, -3.5, 0.0, 123456.7, 5.43758731097e11, 1e15 + 0.5, 0.0001)
    assert go_floats(values) == reference(values)
