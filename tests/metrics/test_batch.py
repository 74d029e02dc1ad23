"""Batches summed elsewhere give the frames of add_slice, bit for bit (the parallel replay's premise).

A replay's reader process sums rows with RowAggregator and sends a RowBatch per frame interval
(split at marks) through marshal; the engine takes it with add_batch. These tests feed the same
random streams (every off-fast-path case of test_rows) both ways through FrameBuilder and
compare every frame.
"""

from __future__ import annotations

import json
import marshal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.data.readings import Mark, Slice
from sectormon.metrics.batch import RowAggregator, RowBatch, unwire, wire
from sectormon.metrics.engine import MetricsEngine
from sectormon.session.frame_builder import FrameBuilder
from sectormon.session.frame_clock import FrameClock
from tests.metrics.metrics_support import NS
from tests.metrics.test_rows import GROUPS, PROFILE, feeds
from tests.rows import row, share_layouts


def frames_by_rows(items: list[Slice | Mark], interval: float, unavailable: dict[str, str]) -> list[str]:
    builder = FrameBuilder(MetricsEngine(PROFILE, recent_seconds=0.6, unavailable=unavailable), interval)
    layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
    frames = []
    for item in items:
        frames += builder.feed(item if isinstance(item, Mark) else share_layouts(item, layouts))
    frames.append(builder.finish())
    return [json.dumps(f.to_json(), sort_keys=True) for f in frames]


def batches_of(
    items: list[Slice | Mark], interval: float, restarts: frozenset[int] = frozenset()
) -> list[RowBatch | Mark]:
    """What the reader process sends, through marshal as it travels. After the frames numbered
    in ``restarts`` a new aggregator takes over, as a parallel reader of the next span would."""
    layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
    clock = FrameClock(interval)
    rows = RowAggregator()
    out: list[RowBatch | Mark] = []
    frames = 0

    def send(batch: RowBatch) -> None:
        out.append(unwire(marshal.loads(marshal.dumps(wire(batch)))))

    for item in items:
        if isinstance(item, Mark):
            if rows.pending:
                send(rows.take(frame_due=False))
            out.append(item)
            continue
        rows.add(share_layouts(item, layouts))
        if clock.due(item.t):
            send(rows.take(frame_due=True))
            frames += 1
            if frames in restarts:
                rows = RowAggregator()
    if rows.pending:
        send(rows.take(frame_due=False))
    return out


def frames_by_batches(
    items: list[Slice | Mark],
    interval: float,
    unavailable: dict[str, str],
    restarts: frozenset[int] = frozenset(),
) -> list[str]:
    builder = FrameBuilder(MetricsEngine(PROFILE, recent_seconds=0.6, unavailable=unavailable), interval)
    frames = []
    for piece in batches_of(items, interval, restarts):
        frames += builder.feed(piece) if isinstance(piece, Mark) else builder.feed_batch(piece)
    frames.append(builder.finish())
    return [json.dumps(f.to_json(), sort_keys=True) for f in frames]


@settings(max_examples=150, deadline=None)
@given(
    feeds(),
    st.sampled_from([0.25, 0.5, 0.3, 2.0]),
    st.sampled_from([{}, {"L2": "not here"}, {"CW": "no uncore"}]),
)
@pytest.mark.slow
def test_batches_and_rows_give_identical_frames(
    feed: list[Slice | Mark | str], interval: float, unavailable: dict[str, str]
) -> None:
    items = [item for item in feed if not isinstance(item, str)]  # frames follow the clock here
    want = frames_by_rows(items, interval, unavailable)
    assert frames_by_batches(items, interval, unavailable) == want
    assert len(want) >= 1


def test_a_long_interval_folds_on_the_way_and_still_matches() -> None:
    """More slices in one interval than the fold cadence (pending rows folded early)."""
    items: list[Slice | Mark] = []
    for i in range(700):
        group = ("G1", "G2", "G3")[i % 3]
        counts = {e: (i * 7919 + k * 104729) % 10**9 + 1 for k, e in enumerate(GROUPS[group])}
        readings = tuple(
            row(f"thread:{tid}", tid % 2, 0, group, NS, NS if i % 4 else NS // 3, counts) for tid in (1, 2, 3)
        )
        items.append(Slice(0.01 * (i + 1), i, 0.01, group, readings))
        if i == 400:
            items.append(Mark(0.01 * (i + 1), "baseline"))
    assert frames_by_batches(items, 5.0, {}) == frames_by_rows(items, 5.0, {})


def test_a_batch_out_of_step_with_the_clock_is_refused() -> None:
    s = Slice(0.1, 0, 0.1, "G1", (row("thread:1", 0, 0, "G1", NS, NS, dict.fromkeys(GROUPS["G1"], 1)),))
    rows = RowAggregator()
    rows.add(s)
    builder = FrameBuilder(MetricsEngine(PROFILE), 1.0)
    with pytest.raises(ValueError, match="out of step"):
        builder.feed_batch(rows.take(frame_due=True))  # t=0.1 closes no 1 s frame


@settings(max_examples=150, deadline=None)
@given(
    feeds(),
    st.sampled_from([0.25, 0.5, 0.3]),
    st.frozensets(st.integers(1, 12)),
    st.sampled_from([{}, {"L2": "not here"}]),
)
@pytest.mark.slow
def test_aggregators_starting_at_any_frame_give_identical_frames(
    feed: list[Slice | Mark | str], interval: float, restarts: frozenset[int], unavailable: dict[str, str]
) -> None:
    """Parallel readers: a fresh aggregator (its own serials, knowing nothing of the slices before)
    takes over after some frames; units still current, ended, rebound or ignored map the same."""
    items = [item for item in feed if not isinstance(item, str)]
    assert frames_by_batches(items, interval, unavailable, restarts) == frames_by_rows(
        items, interval, unavailable
    )


def test_units_current_before_a_fresh_aggregator_keep_their_entity() -> None:
    """The first sighting of a unit by a new aggregator is no new entity in the engine (the
    frame's core count and the run totals show one entity per unit), unless it moved core."""

    def slice_of(t: float, index: int, core_of_2: int) -> Slice:
        readings = tuple(
            row(f"thread:{tid}", core, 0, "G1", NS, NS, dict.fromkeys(GROUPS["G1"], 10))
            for tid, core in ((1, 0), (2, core_of_2))
        )
        return Slice(t, index, 0.5, "G1", readings)

    items: list[Slice | Mark] = [slice_of(0.5 * (i + 1), i, 1 if i < 4 else 0) for i in range(8)]
    assert frames_by_batches(items, 1.0, {}, frozenset({1, 2, 3})) == frames_by_rows(items, 1.0, {})
    engine = MetricsEngine(PROFILE)
    for piece in batches_of(items, 1.0, frozenset({1, 2, 3})):
        assert isinstance(piece, RowBatch)
        engine.add_batch(piece)
    assert sorted(e.unit for e in engine._open.values()) == ["thread:1", "thread:2", "thread:2"]


def test_a_batch_naming_an_entity_it_never_entered_is_refused() -> None:
    s = Slice(0.1, 0, 0.1, "G1", (row("thread:1", 0, 0, "G1", NS, NS, dict.fromkeys(GROUPS["G1"], 1)),))
    rows = RowAggregator()
    rows.add(s)
    batch = rows.take(frame_due=False)
    engine = MetricsEngine(PROFILE)
    with pytest.raises(ValueError, match="never entered"):
        engine.add_batch(batch._replace(slices=[(*batch.slices[0][:6], (), None)]))
