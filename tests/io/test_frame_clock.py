"""The frame clock: a gap of any length costs one step, and the clock after a slice depends on that
slice's time alone (reader processes that start mid-file must agree with the one that read it all)."""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.data.readings import Mark, Slice
from sectormon.io import open_recording
from sectormon.io.jsonl import MAX_SECONDS
from sectormon.session.frame_clock import FrameClock
from sectormon.session.replay import final_frame, replay_frames
from tests.rows import row
from tests.session.test_replay import real_header, write


# A clock that stepped through the gap took minutes to hours here: the timeouts stop that.
@pytest.mark.timeout(10)
@pytest.mark.parametrize("interval", [1.0, 0.25, 0.00025, 1e-9])
def test_a_gap_to_the_largest_time_is_one_step(interval: float) -> None:
    clock = FrameClock(interval)
    start = time.perf_counter()
    assert clock.due(1.5 * interval)
    assert clock.due(MAX_SECONDS)
    assert not clock.due(MAX_SECONDS)  # the same slice time never closes two frames
    assert clock.due(MAX_SECONDS + 2 * interval) or interval < 1e-7  # below float resolution
    assert time.perf_counter() - start < 0.01


times = st.lists(st.one_of(st.floats(0, 50), st.floats(0, MAX_SECONDS)), min_size=1, max_size=30).map(sorted)


@pytest.mark.timeout(30)
@settings(max_examples=300, deadline=None)
@given(interval=st.sampled_from([1.0, 0.25, 0.1, 0.00025, 3e-5]), ts=times)
def test_the_clock_after_a_slice_is_a_function_of_its_time(interval: float, ts: list[float]) -> None:
    """Fed any slices, the clock is where a new clock fed only the last frame-closing one is."""
    clock = FrameClock(interval)
    for t in ts:
        if clock.due(t):
            fresh = FrameClock(interval)
            assert fresh.due(t)
            assert fresh._next == clock._next


@settings(max_examples=300, deadline=None)
@given(
    interval=st.sampled_from([1.0, 0.25, 0.1]),
    steps=st.lists(st.integers(1, 10**6), min_size=1, max_size=20),
    offset=st.floats(0.01, 0.99),
)
def test_a_frame_is_due_when_a_multiple_of_the_interval_is_reached(
    interval: float, steps: list[int], offset: float
) -> None:
    """The exact rule (away from rounding): due when some ``k * interval`` lies in ``(last frame's
    reach, t]``; missed multiples make one frame."""
    clock = FrameClock(interval)
    exact = Fraction(interval)
    k_next = 1
    k = 0
    for step in steps:
        k += step
        t = float((k + Fraction(offset)) * exact)  # between two multiples, never on one
        due = k >= k_next
        assert clock.due(t) == due
        if due:
            k_next = k + 1


def _recording_with_a_jump(path: Path, jump_to: float) -> Path:
    """A generic-profile recording whose last slice is far in the future (a valid ``t``)."""
    hdr = real_header()
    hdr["options"]["interval"] = 0.25
    items: list[Slice | Mark] = []
    for i, t in enumerate([0.1, 0.2, 0.3, jump_to]):
        reading = row("thread:1", 0, 0, "SW1", 10**8, 10**8, {"TASK_CLOCK": 10**8, "PAGE_FAULTS": 3})
        items.append(Slice(t=t, index=i, duration=0.1, group="SW1", rows=(reading,)))
    items.append(Mark(t=jump_to, kind="end"))
    return write(path, items, hdr)


@pytest.mark.timeout(10)
@pytest.mark.parametrize("jump_to", [1e8, MAX_SECONDS])
def test_replay_and_compare_over_a_huge_gap_take_no_time(tmp_path: Path, jump_to: float) -> None:
    path = _recording_with_a_jump(tmp_path / "r.jsonl", jump_to)
    with open_recording(path) as stream:
        frames = list(replay_frames(stream))
    _, final, _ = final_frame(path)
    assert [f.t for f in frames] == [0.3, jump_to, jump_to]
    assert final.t == jump_to
