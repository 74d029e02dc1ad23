"""A skipped frame leaves the engine as a built one does: every later frame is the same.

MetricsEngine.skip_frame closes an interval without computing its stats (a replay's frames before
``--from``, compare's run to the final frame). These tests skip random frames of the random feeds
of test_rows (thread churn, layout changes, unknown units and their warnings, baseline
marks) and compare every frame that is built, and the final one, with a run that builds them all.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.data.frames import Frame
from sectormon.data.readings import Mark, Slice
from sectormon.metrics.engine import MetricsEngine
from sectormon.session.frame_builder import FrameBuilder
from tests.metrics.metrics_support import NS
from tests.metrics.test_batch import batches_of
from tests.metrics.test_rows import GROUPS, PROFILE, feeds
from tests.rows import row


def _text(frame: Frame) -> str:
    return json.dumps(frame.to_json(), sort_keys=True)


def frames_skipping(
    feed: list[Slice | Mark | str], skip: list[bool], unavailable: dict[str, str]
) -> list[str | None]:
    """Every frame of ``feed`` (``None`` where ``skip`` says to skip it), then the final frame."""
    engine = MetricsEngine(PROFILE, recent_seconds=0.6, unavailable=unavailable)
    out: list[str | None] = []
    t = 0.0
    for item in feed:
        if item == "frame":
            if skip[len(out) % len(skip)]:
                engine.skip_frame(t)
                out.append(None)
            else:
                out.append(_text(engine.frame(t)))
        elif isinstance(item, Mark):
            engine.add_mark(item)
        elif isinstance(item, Slice):
            engine.add_slice(item)
            t = item.t
    out.append(_text(engine.final_frame(t)))
    return out


@settings(max_examples=200, deadline=None)
@given(
    feeds(),
    st.lists(st.booleans(), min_size=1, max_size=8),
    st.sampled_from([{}, {"L2": "not here"}, {"CW": "no uncore"}]),
)
@pytest.mark.slow
def test_skipped_frames_change_no_later_frame(
    feed: list[Slice | Mark | str], skip: list[bool], unavailable: dict[str, str]
) -> None:
    every = frames_skipping(feed, [False], unavailable)
    some = frames_skipping(feed, skip, unavailable)
    assert len(some) == len(every)
    assert [f for f in some if f is not None] == [
        e for f, e in zip(some, every, strict=True) if f is not None
    ]
    assert some[-1] == every[-1]


def _stream(n: int = 40) -> list[Slice | Mark]:
    """Threads on two cores with multiplexing, a unit the engine ignores, a tid that ends and a
    baseline mark half way."""
    items: list[Slice | Mark] = []
    for i in range(n):
        group = ("G1", "G2", "G3")[i % 3]
        counts = {e: (i * 7919 + k * 104729) % 10**9 + 1 for k, e in enumerate(GROUPS[group])}
        units = ["thread:1", "thread:2", "bogus"] if i < 25 else ["thread:1", "thread:3"]
        readings = tuple(
            row(u, k % 2, 0, group, NS, NS if (i + k) % 4 else NS // 3, counts) for k, u in enumerate(units)
        )
        items.append(Slice(0.1 * (i + 1), i, 0.1, group, readings, ended=("thread:2",) if i == 24 else ()))
        if i == 18:
            items.append(Mark(0.1 * (i + 1), "baseline"))
    return items


def _builder() -> FrameBuilder:
    return FrameBuilder(MetricsEngine(PROFILE, recent_seconds=0.6), 0.5)


def test_a_quiet_builder_gives_the_frames_from_its_start_on() -> None:
    items = _stream()
    full = _builder()
    want = [f for item in items for f in full.feed(item)] + [full.finish()]
    for until in (0.0, 0.5, 1.2, 2.0, 3.9, math.inf):
        quiet = _builder()
        quiet.quiet(until)
        got = [f for item in items for f in quiet.feed(item)] + [quiet.finish()]
        expected = [f for f in want[:-1] if f.t >= until] + [want[-1]]
        assert [_text(f) for f in got] == [_text(f) for f in expected], until
        assert quiet.frames == len(expected) - 1


def test_a_quiet_builder_fed_batches_gives_the_same_frames() -> None:
    """The reader-process path (feed_batch) skips frames the same way."""
    items = _stream()
    full = _builder()
    want = [f for item in items for f in full.feed(item)] + [full.finish()]
    quiet = _builder()
    quiet.quiet(2.0)
    got: list[Frame] = []
    for piece in batches_of(items, 0.5):
        got += quiet.feed(piece) if isinstance(piece, Mark) else quiet.feed_batch(piece)
    got.append(quiet.finish())
    assert [_text(f) for f in got] == [_text(f) for f in want if f.t >= 2.0 or f.final]


def test_a_baseline_set_before_any_slice_is_taken_from_a_skipped_frame() -> None:
    """A baseline marked before the first slice is the first frame's recent window: skipping that
    frame must still take it (the frame is built, unseen)."""
    items: list[Slice | Mark] = [Mark(0.0, "baseline"), *_stream(20)]
    full = _builder()
    want = [f for item in items for f in full.feed(item)] + [full.finish()]
    quiet = _builder()
    quiet.quiet(1.5)
    got = [f for item in items for f in quiet.feed(item)] + [quiet.finish()]
    assert want[-1].baseline is not None
    assert [_text(f) for f in got] == [_text(f) for f in want if f.t >= 1.5 or f.final]


def test_warnings_of_a_skipped_frame_go_with_it() -> None:
    """A frame carries the warnings raised since the last one: a skipped frame's are dropped with
    it, as a built frame nobody reads would drop them, not carried into the next."""
    items = _stream(12)
    full = _builder()
    want = [f for item in items for f in full.feed(item)]
    assert want[0].warnings and not want[1].warnings
    quiet = _builder()
    quiet.quiet(0.6)
    got = [f for item in items for f in quiet.feed(item)]
    assert not got[0].warnings and _text(got[0]) == _text(want[1])


@settings(max_examples=150, deadline=None)
@given(
    drop=st.sets(st.integers(0, 39), max_size=25),
    target=st.floats(0.0, 4.5),
    build_at=st.sets(st.integers(0, 39), max_size=4),
)
@pytest.mark.slow
def test_a_seeking_builder_builds_only_the_frame_to_show(
    drop: set[int], target: float, build_at: set[int]
) -> None:
    """FrameBuilder.seek_quietly fed every slice up to ``target`` (some dropped: gaps, multiplexed
    reads, a baseline) builds, exactly as a full replay does, the next frame due after
    ``build_next`` is set and the newest frame up to ``target``, unless the slices stop before the
    next frame would be due (``skipped_last``: the caller replays to it); no other frame."""
    items = [item for k, item in enumerate(_stream()) if k not in drop]
    upto = [item for item in items if item.t <= target]
    full = _builder()
    seeking = _builder()
    seeking.seek_quietly(target)
    built: list[Frame] = []
    due: list[Frame] = []
    asked = False
    for k, item in enumerate(upto):
        if k in build_at:
            seeking.build_next = asked = True
        now_due = full.feed(item)
        frames = seeking.feed(item)
        assert [_text(f) for f in frames] == [_text(f) for f in now_due][: len(frames)]
        if now_due and asked:
            assert frames
            asked = False
        built += frames
        due += now_due
    if due and not seeking.skipped_last:
        assert built[-1].t == due[-1].t
    if seeking.skipped_last:  # only when no slice up to the target reached the next frame
        assert seeking.clock.reaches_next(target) and (not built or built[-1].t < due[-1].t)
    assert len(built) <= len([k for k in build_at if k < len(upto)]) + 1
    seeking.seek_quietly(None)  # plays normally again: the rest are the full replay's frames
    rest = [item for item in items if item.t > target]
    assert [_text(f) for item in rest for f in seeking.feed(item)] == [
        _text(f) for item in rest for f in full.feed(item)
    ]
