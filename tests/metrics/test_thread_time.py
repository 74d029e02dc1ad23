"""Thread coverage's sums: the counted task time against the kernel's figure, less the exit
teardown of counted processes that ended (at most their system time, at most the shortfall)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.frames import ThreadTime
from sectormon.metrics.thread_time import ThreadTimeTracker

NS = 1_000_000_000


def _spans(spans: list[tuple[float, float, float]]) -> ThreadTimeTracker:
    """A tracker fed one slice per span: (counted s, kernel s, ended processes' system s) in it."""
    tracker = ThreadTimeTracker(0.0)
    kernel = ended = 0.0
    for counted_s, kernel_s, ended_s in spans:
        kernel += kernel_s
        ended += ended_s
        tracker.add(round(counted_s * NS), kernel, ended)
    return tracker


def test_without_ended_processes_the_comparison_is_the_plain_one() -> None:
    figure = _spans([(0.4, 0.5, 0.0), (0.4, 0.5, 0.0)]).run.figure()
    assert figure == ThreadTime(0.8, 1.0, 0.0)
    assert figure.coverage == pytest.approx(0.8)


def test_the_teardown_of_ended_processes_is_not_uncounted_work() -> None:
    """Short processes freeing much memory: 0.1 s of 1.0 s ran after their counters were gone."""
    figure = _spans([(0.45, 0.5, 0.3), (0.45, 0.5, 0.3)]).run.figure()
    assert figure is not None
    assert figure.teardown_s == pytest.approx(0.1)
    assert figure.coverage == pytest.approx(1.0)


def test_a_miss_beyond_the_ended_processes_system_time_still_shows() -> None:
    """0.6 s uncounted, of which at most 0.1 s can be teardown: the rest is work no counter saw."""
    figure = _spans([(0.4, 1.0, 0.1)]).run.figure()
    assert figure is not None
    assert figure.teardown_s == pytest.approx(0.1)
    assert figure.coverage == pytest.approx(0.4 / 0.9)


def test_nothing_counted_allows_no_teardown() -> None:
    """Only a counted process's exit runs after its counters: with none counted, all is missed."""
    figure = _spans([(0.0, 1.0, 0.5)]).run.figure()
    assert figure == ThreadTime(0.0, 1.0, 0.0)
    assert figure.coverage == 0.0


def test_the_allowance_is_taken_over_the_window_not_span_by_span() -> None:
    """A process counted in one span lands in its parent's figure when reaped, in the next: the
    first span reads above 1, the second far below; together they are fully counted."""
    tracker = _spans([(0.3, 0.05, 0.0), (0.05, 0.35, 0.2)])
    figure = tracker.run.figure()
    assert figure is not None
    assert figure.teardown_s == pytest.approx(0.05)
    assert figure.coverage == pytest.approx(1.0)


def test_intervals_take_their_own_spans() -> None:
    tracker = _spans([(0.45, 0.5, 0.3)])
    first = tracker.take_interval()
    tracker.add(round(0.5 * NS), 1.0, 0.3)  # nothing ended since: no allowance in this interval
    second = tracker.take_interval()
    assert first is not None and first.coverage == pytest.approx(1.0)
    assert second == ThreadTime(0.5, 0.5, 0.0)


@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=10.0),
            st.floats(min_value=0.0, max_value=10.0),
            st.floats(min_value=0.0, max_value=10.0),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_the_teardown_is_bounded_by_the_shortfall_and_the_ended_system_time(
    spans: list[tuple[float, float, float]],
) -> None:
    figure = _spans(spans).run.figure()
    assert figure is not None
    ended = sum(e for _, _, e in spans)
    assert 0.0 <= figure.teardown_s <= ended + 1e-9
    assert figure.teardown_s <= max(0.0, figure.kernel_s - figure.counted_s) + 1e-9
    if figure.coverage is not None:
        assert figure.coverage <= 1.0
        plain = min(1.0, figure.counted_s / figure.kernel_s)
        assert figure.coverage >= plain - 1e-9  # the allowance only ever forgives teardown


def test_the_teardown_survives_json() -> None:
    figure = ThreadTime(1.18, 1.29, 0.11)
    assert ThreadTime.from_json(figure.to_json()) == figure
    older = {"counted_s": 0.9, "kernel_s": 1.0}  # a frame written before the teardown was named
    assert ThreadTime.from_json(older) == ThreadTime(0.9, 1.0, 0.0)
