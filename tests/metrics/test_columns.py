"""Column-wise metric evaluation (many scopes at once) equals per-scope evaluation, value for value."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.metrics.formulas import MetricSet
from sectormon.profiles.resolve import load_profile

PROFILE = load_profile("a64fx")
METRICS = MetricSet(PROFILE)
EVENTS = tuple(PROFILE.events)
VALUE = st.none() | st.just(0.0) | st.floats(min_value=0, max_value=1e15, allow_nan=False)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.fixed_dictionaries({e: VALUE for e in EVENTS}), min_size=1, max_size=10),
    st.floats(min_value=1e-6, max_value=100),
)
def test_columns_equal_per_scope_evaluation(scopes: list[dict[str, float | None]], seconds: float) -> None:
    n = len(scopes)
    columns = {e: [s[e] for s in scopes] for e in EVENTS}
    names = METRICS.names_at(None)
    result = METRICS.evaluate_columns(columns, seconds, n)
    for i, scope in enumerate(scopes):
        single = METRICS.evaluate({k: v for k, v in scope.items() if v is not None}, seconds)
        for name, column in zip(names, result, strict=True):
            assert _same(column[i], single.get(name)), (name, column[i], single.get(name))
