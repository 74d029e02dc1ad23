"""A recording toggled on mid-session replays with the live run's rates (review item)."""

from __future__ import annotations

import pytest

from sectormon.data.readings import Slice
from sectormon.io.header_codec import header_from_json
from sectormon.metrics.builder import build_engine
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile
from sectormon.session.frame_builder import FrameBuilder
from tests.rows import row


def _profile() -> Profile:
    events = {"A": EventDef("A", "ra")}
    metrics = (MetricDef("a_rate", "A / SECONDS", unit="1/s"),)
    return Profile("t", "test", 4, events, (GroupDef("G", ("A",)),), metrics)


def _slices(start: int, stop: int) -> list[Slice]:
    """0.1 s slices counting 100 A each (1000 per second)."""
    return [
        Slice(
            t=(i + 1) / 10,
            index=i,
            duration=0.1,
            group="G",
            rows=(row("thread:1", 0, 0, "G", 100_000_000, 100_000_000, {"A": 100}),),
        )
        for i in range(start, stop)
    ]


def test_frames_of_a_recording_started_mid_session_match_the_live_rates() -> None:
    profile = _profile()
    header = {"options": {"interval": 0.5, "recent_seconds": 10.0}, "recording_started": 1.0}
    builder = FrameBuilder(build_engine(profile, header_from_json(header)), 0.5, start=1.0)
    frames = [f for s in _slices(10, 30) for f in builder.feed(s)]  # the recording holds t = 1.0 .. 3.0
    first = frames[0]
    assert first.t == pytest.approx(1.5)
    assert first.interval == pytest.approx(0.5)  # not 1.5: the data starts at 1.0
    assert first.total.metrics["a_rate"] == pytest.approx(1000.0)
    final = builder.finish()
    assert final.interval == pytest.approx(2.0)
    assert final.total.metrics["a_rate"] == pytest.approx(1000.0)
    assert final.run.total.metrics["a_rate"] == pytest.approx(1000.0)
