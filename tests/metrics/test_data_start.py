"""The run, and the first interval, start where the data start: a session whose sampler starts
late (the TUI starts it once it is up) showed group shares adding up to 75 % on its ended screen."""

from __future__ import annotations

import pytest

from sectormon.metrics.engine import MetricsEngine
from tests.metrics.metrics_support import Feed, make_profile, reading

LATE = 0.34  # seconds of the session clock before the first slice began (the TUI's start-up)


def _late_engine() -> tuple[MetricsEngine, Feed]:
    profile = make_profile({"G1": ["A"], "G2": ["B"]}, {"a_rate": "A / SECONDS"})
    engine = MetricsEngine(profile)  # stream time 0 is the session's start, as live
    feed = Feed(duration=0.02, t=LATE)
    return engine, feed


def _feed_until(engine: MetricsEngine, feed: Feed, t: float) -> None:
    while feed.t < t - 1e-9:
        group, event = ("G1", "A") if feed.index % 2 == 0 else ("G2", "B")
        engine.add_slice(feed.slice(group, [reading("thread:1", group, {event: 100}, te=20_000_000)]))


def test_the_first_interval_starts_with_the_first_slice() -> None:
    engine, feed = _late_engine()
    _feed_until(engine, feed, 1.0)
    frame = engine.frame(1.0)
    assert frame.interval == pytest.approx(1.0 - LATE)
    assert sum(frame.groups.values()) == pytest.approx(1.0)
    assert frame.total.seconds == pytest.approx(1.0 - LATE)


def test_the_final_frame_covers_the_data_and_its_shares_add_up() -> None:
    engine, feed = _late_engine()
    _feed_until(engine, feed, 1.0)
    engine.frame(1.0)
    _feed_until(engine, feed, 2.0)
    final = engine.final_frame(2.0)
    assert final.interval == pytest.approx(2.0 - LATE)
    assert sum(final.groups.values()) == pytest.approx(1.0)  # was (2 - 0.34) / 2 = 0.83
    assert final.groups == pytest.approx({"G1": 0.5, "G2": 0.5}, abs=0.01)  # 42 and 41 slices
    # A is counted half the time, 100 a slice: 100 per 0.02 s slice, per second of the data.
    assert final.total.metrics["a_rate"] == pytest.approx(100 / 0.02)


def test_a_recording_started_mid_session_keeps_its_start() -> None:
    """recording_started is the end of the slice before the recording: the first recorded slice
    begins there, so nothing moves."""
    profile = make_profile({"G1": ["A"]}, {"a_rate": "A / SECONDS"})
    engine = MetricsEngine(profile, start=5.0)
    feed = Feed(duration=0.5, t=5.0)
    for _ in range(4):
        engine.add_slice(feed.slice("G1", [reading("thread:1", "G1", {"A": 10}, te=500_000_000)]))
    final = engine.final_frame(7.0)
    assert final.interval == pytest.approx(2.0)
