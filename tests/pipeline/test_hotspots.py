"""Hot spots through the whole pipeline: a sampling session on the simulated A64FX, its recording,
and every way of replaying it gives the same hot-spot tables, frame for frame."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from sectormon.data.frames import Frame
from sectormon.io.header_codec import header_to_json
from sectormon.io.reader import open_recording
from sectormon.profiles.resolve import load_profile
from sectormon.session.options import SessionRequest
from sectormon.session.replay import ReplaySession, final_frame, replay_frames
from sectormon.session.setup import open_session
from sectormon.sources.base import SampleRequest
from sectormon.sources.sim.source import SimOptions, build_sim_source

PROFILE = load_profile("a64fx")
OPTIONS = SimOptions(sector_cache=False, sizes={"passes": "900"}, threads=2)


def live(tmp_path: Path, *, record: bool = True) -> tuple[list[Frame], Path]:
    path = tmp_path / "sampled.jsonl"
    source = build_sim_source(OPTIONS, loop=False)
    request = SessionRequest(
        interval=50e-6, record=str(path) if record else None, sample=SampleRequest("L1D_CACHE_REFILL", 17)
    )
    session = open_session(source, PROFILE, request)
    frames: list[Frame] = []
    session.subscribe(frames.append)
    session.run()
    return frames, path


def hotspots(frames: list[Frame]) -> list[dict[str, Any]]:
    out = []
    for frame in frames:
        assert frame.hotspots is not None
        out.append(frame.hotspots.to_json())
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Frame], Path]:
    return live(tmp_path_factory.mktemp("hotspots"))


def test_every_frame_has_its_windows_samples_and_the_header_says_what_was_sampled(
    recorded: tuple[list[Frame], Path],
) -> None:
    frames, path = recorded
    assert len(frames) > 5 and frames[-1].final
    windows = [f.hotspots.interval.samples for f in frames[:-1] if f.hotspots is not None]
    assert all(n > 0 for n in windows)
    final = frames[-1].hotspots
    assert final is not None
    assert sum(windows) <= final.run.samples  # the final frame adds the samples after the last frame
    assert final.run.scale == pytest.approx(1.0, abs=0.05)
    with open_recording(path) as stream:
        settings = header_to_json(stream.header)["hotspots"]
    assert settings["event"] == {"name": "L1D_CACHE_REFILL", "spec": "sim:0x0003"}
    assert (settings["period"], settings["source"]) == (17, "sim")


def test_a_replay_gives_the_live_runs_hot_spots_frame_for_frame(recorded: tuple[list[Frame], Path]) -> None:
    frames, path = recorded
    with open_recording(path) as stream:
        replayed = list(replay_frames(stream))
    assert hotspots(replayed) == hotspots(frames)
    assert [json.dumps(f.to_json()) for f in replayed] == [json.dumps(f.to_json()) for f in frames]


def test_a_replay_from_a_later_time_cuts_the_windows_it_skips(recorded: tuple[list[Frame], Path]) -> None:
    frames, path = recorded
    t_from = frames[len(frames) // 2].t
    with open_recording(path) as stream:
        replayed = list(replay_frames(stream, t_from=t_from))
    expected = [f for f in frames if f.t >= t_from]
    assert len(replayed) == len(expected)
    assert hotspots(replayed) == hotspots(expected)


def test_the_final_frame_of_compare_re_aggregates_the_samples(recorded: tuple[list[Frame], Path]) -> None:
    frames, path = recorded
    _, final, _ = final_frame(path)
    assert final.hotspots is not None and frames[-1].hotspots is not None
    assert final.hotspots.to_json() == frames[-1].hotspots.to_json()
    assert final.hotspots.run == frames[-1].hotspots.run  # every row, not only the JSON's top


def test_a_seek_back_in_the_tui_replay_shows_the_live_frames_hot_spots(
    recorded: tuple[list[Frame], Path],
) -> None:
    frames, path = recorded
    shown: list[Frame] = []
    session = ReplaySession(path, speed=math.inf, time_scale=1.0)
    session.subscribe(shown.append)
    session.start()
    assert session.wait(60)
    target = frames[len(frames) // 3]
    before = len(shown)
    session.seek_to(target.t)
    deadline = time.monotonic() + 60
    while len(shown) == before and time.monotonic() < deadline:
        time.sleep(0.01)
    session.stop()
    assert shown[before].t == target.t
    assert shown[before].hotspots is not None and target.hotspots is not None
    assert shown[before].hotspots.to_json() == target.hotspots.to_json()


def test_without_sample_frames_carry_no_hot_spots_and_the_header_no_record(tmp_path: Path) -> None:
    source = build_sim_source(SimOptions(sizes={"passes": "300"}), loop=False)
    session = open_session(source, PROFILE, SessionRequest(interval=50e-6))
    frames: list[Frame] = []
    session.subscribe(frames.append)
    session.run()
    assert frames and all(f.hotspots is None and "hotspots" not in f.to_json() for f in frames)
    assert "hotspots" not in header_to_json(session.header)
