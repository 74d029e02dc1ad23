"""ScopeStats built from rows (the engine's way) is the ScopeStats of the same dicts.

The engine hands each scope its values as rows against shared key tuples, and the dicts are
built when first read (sectormon.data.frames.RowScopeStats). Whatever is read first, and
whether it is read at all before ``to_json``, every view must be the dicts ``dict(zip(keys,
values))`` would give, in the same order.
"""

from __future__ import annotations

import copy
import pickle
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.frames import RowScopeStats, ScopeStats, WindowStats

names = st.lists(
    st.sampled_from(["CPU_CYCLES", "INST_RETIRED", "L1D_CACHE", "L2D_CACHE_REFILL", "IPC"]), max_size=5
)
values = st.floats(allow_nan=False)


@st.composite
def rows(draw: st.DrawFn) -> tuple:
    """Keys and values as the engine passes them (coverage keys: events, then metrics)."""
    count_keys = tuple(draw(st.lists(st.sampled_from(["A", "B", "C", "D"]), unique=True, max_size=4)))
    counts = tuple(draw(values) for _ in count_keys)
    rates = None if draw(st.booleans()) else [draw(values) for _ in count_keys]
    metric_keys = tuple(draw(names))  # may repeat a key, and may share one with the events
    metrics = tuple(draw(st.none() | values) for _ in metric_keys)
    coverage_keys = count_keys + metric_keys
    coverage = tuple(draw(st.floats(0.0, 1.0)) for _ in coverage_keys)
    split = frozenset(draw(st.lists(st.sampled_from(metric_keys or ("x",)), max_size=2)))
    seconds = draw(st.floats(0.0, 100.0))
    return count_keys, counts, rates, metric_keys, metrics, coverage_keys, coverage, split, seconds


def eager(r: tuple) -> ScopeStats:
    count_keys, counts, rates, metric_keys, metrics, coverage_keys, coverage, split, seconds = r
    return ScopeStats(
        counts=dict(zip(count_keys, counts, strict=True)),
        rates=dict(zip(count_keys, rates, strict=True)) if rates is not None else {},
        metrics=dict(zip(metric_keys, metrics, strict=True)),
        coverage=dict(zip(coverage_keys, coverage, strict=True)),
        split=split,
        seconds=seconds,
    )


def items(stats: ScopeStats) -> list[list[tuple[str, object]]]:
    """Every view with its order (== on dicts ignores order)."""
    return [
        list(stats.counts.items()),
        list(stats.rates.items()),
        list(stats.metrics.items()),
        list(stats.coverage.items()),
    ]


@given(rows(), st.sampled_from(["counts", "rates", "metrics", "coverage", "to_json", "eq"]))
def test_rows_give_the_dicts_of_the_same_values_whatever_is_read_first(r: tuple, first: str) -> None:
    lazy = RowScopeStats(*r)
    reference = eager(r)
    if first == "to_json":
        assert list(lazy.to_json().items()) == list(reference.to_json().items())
    elif first == "eq":
        assert lazy == reference
    else:
        assert getattr(lazy, first) == getattr(reference, first)
    assert items(lazy) == items(reference)
    assert lazy.to_json() == reference.to_json()
    assert list(lazy.to_json()["coverage"]) == list(reference.to_json()["coverage"])
    assert (lazy.split, lazy.seconds) == (reference.split, reference.seconds)
    assert lazy == reference
    assert (lazy != reference) is False


@given(rows())
def test_to_json_before_and_after_the_dicts_are_built_is_the_same(r: tuple) -> None:
    lazy = RowScopeStats(*r)
    before = lazy.to_json()
    assert lazy.metrics is lazy.metrics  # built once, then kept
    after = lazy.to_json()
    assert before == after
    assert after["metrics"] is not lazy.metrics  # the JSON gets its own dicts
    assert ScopeStats.from_json(after) == lazy


def test_a_metric_named_like_an_event_takes_the_later_coverage_as_a_dict_would() -> None:
    lazy = RowScopeStats(("A",), (1.0,), None, ("A",), (2.0,), ("A", "A"), (0.5, 0.25), frozenset(), 1.0)
    assert lazy.coverage == {"A": 0.25}
    assert lazy.rates == {}


def test_fields_are_read_only() -> None:
    lazy = RowScopeStats((), (), None, (), (), (), (), frozenset(), 0.0)
    for field in ("counts", "rates", "metrics", "coverage", "split", "seconds"):
        with pytest.raises(AttributeError):
            setattr(lazy, field, {})
    with pytest.raises(TypeError):
        hash(lazy)


def test_threads_reading_at_once_see_the_same_content() -> None:
    keys = tuple(f"E{i}" for i in range(200))
    lazy = RowScopeStats(keys, range(200), None, keys, range(200), keys, [1.0] * 200, frozenset(), 1.0)
    seen: list[dict[str, float]] = []
    workers = [threading.Thread(target=lambda: seen.append(dict(lazy.counts))) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert seen == [dict(zip(keys, range(200), strict=True))] * 8


def test_windows_of_lazy_scopes_round_trip_through_json() -> None:
    r = (("A",), (3.0,), (1.5,), ("IPC",), (None,), ("A", "IPC"), (1.0, 1.0), frozenset({"IPC"}), 2.0)
    scope = RowScopeStats(*r)
    window = WindowStats(seconds=2.0, total=scope, cmgs={"0": scope}, cores={"1": scope})
    assert WindowStats.from_json(window.to_json()) == window
    assert repr(scope) == repr(eager(r))


@pytest.mark.parametrize("read_first", [False, True])
def test_copies_and_pickles_keep_the_content(read_first: bool) -> None:
    """Unbuilt scopes leave their dict slots unset: copy and pickle must still give equal stats."""
    r = (("A",), (1.0,), None, ("M",), (2.0,), ("A", "M"), (1.0, 0.5), frozenset({"M"}), 1.0)
    stats = RowScopeStats(*r)
    if read_first:
        assert stats.counts == {"A": 1.0}
    for other in (copy.copy(stats), copy.deepcopy(stats), pickle.loads(pickle.dumps(stats))):
        assert other == eager(r)
        assert items(other) == items(eager(r))


def test_proxied_figures_are_given_at_construction() -> None:
    """A ``--proxy`` scope says what it estimated, and how well, from the moment it exists."""
    r = (("A",), (1.0,), None, ("M",), (2.0,), ("A", "M"), (1.0, 0.5), frozenset(), 1.0)
    proxied = RowScopeStats(*r, {"A": 0.1, "M": None})
    assert proxied.proxy == frozenset({"A", "M"})
    assert proxied.proxy_error == {"A": 0.1, "M": None}
    assert proxied.to_json()["proxy"] == ["A", "M"]
    assert proxied.to_json()["proxy_error"] == {"A": 0.1, "M": None}
    assert ScopeStats.from_json(proxied.to_json()) == proxied
    assert proxied != RowScopeStats(*r)
    for none in (None, {}):
        plain = RowScopeStats(*r, none)
        assert (plain.proxy, plain.proxy_error) == (frozenset(), {})
        assert "proxy" not in plain.to_json() and "proxy_error" not in plain.to_json()
