"""Replay: same frames as feeding the stream directly; ranges, pacing and the TUI's ReplaySession."""

from __future__ import annotations

import dataclasses
import gc
import json
import threading
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.data.frames import EMPTY_SCOPE, Frame, ScopeStats, WindowStats
from sectormon.data.readings import Mark, Slice
from sectormon.io import RecordingError, RecordingWriter, open_recording
from sectormon.io.header_codec import header_from_json, header_to_json
from sectormon.io.jsonl import encode
from sectormon.session import replay as replay_module
from sectormon.session.control import ReplayControl
from sectormon.session.replay import ReplaySession, replay_frames, stream_header
from tests.io.recording_synth import header, stream


def write(path: Path, items: list[Slice | Mark], hdr: dict[str, Any]) -> Path:
    with RecordingWriter(path, hdr) as w:
        for item in items:
            if isinstance(item, Slice):
                w.write_slice(item)
            else:
                w.write_mark(item)
    return path


# ------------------------------------------------------------------------- fake builder (no engine)


def fake_frame(t: float, n: int, marks: tuple[str, ...] = (), final: bool = False) -> Frame:
    window = WindowStats(seconds=t, total=EMPTY_SCOPE, cmgs={}, cores={})
    total = ScopeStats(counts={"slices": float(n)}, rates={}, metrics={}, coverage={})
    return Frame(
        t=t,
        interval=0.1,
        overhead=0.0,
        total=total,
        cmgs={},
        cores={},
        threads={},
        recent=window,
        run=window,
        final=final,
        warnings=marks,
    )


class FakeBuilder:
    """One frame per slice; remembers the marks it was fed (in ``warnings``) to check their order."""

    def __init__(self, hdr: Mapping[str, Any], path: str) -> None:
        self.n = 0
        self.t = 0.0
        self.marks: list[str] = []

    skipped_last = False  # frames are never skipped here
    build_next = False

    def quiet(self, until: float) -> None:
        pass

    def seek_quietly(self, target: float | None) -> None:
        pass

    def feed(self, item: Slice | Mark) -> list[Frame]:
        if isinstance(item, Mark):
            self.marks.append(f"{item.kind}@{item.t:g}")
            return []
        self.n += 1
        self.t = item.t
        return [fake_frame(item.t, self.n, tuple(self.marks))]

    def finish(self, t: float | None = None) -> Frame:
        return fake_frame(self.t, self.n, tuple(self.marks), final=True)


class Collector:
    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.event = threading.Event()

    def __call__(self, frame: Frame) -> None:
        self.frames.append(frame)
        self.event.set()


def test_replay_frames_range_and_pacing(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(50), header())
    with open_recording(path) as s:
        everything = list(replay_frames(s, builder_factory=FakeBuilder))
    assert len(everything) == 51 and everything[-1].final
    slept: list[float] = []
    now = [100.0]

    def sleep(d: float) -> None:
        slept.append(d)
        now[0] += d

    with open_recording(path) as s:
        ranged = list(
            replay_frames(
                s,
                t_from=0.3,
                t_to=0.6,
                speed=2.0,
                builder_factory=FakeBuilder,
                sleep=sleep,
                clock=lambda: now[0],
            )
        )
    assert [f.t for f in ranged[:-1]] == [f.t for f in everything if 0.3 <= f.t <= 0.6]
    # Frames before --from were still fed: the counts carry on from the start.
    assert ranged[0].total.counts["slices"] == 15
    assert ranged[-1].final and ranged[-1].t == pytest.approx(0.6)
    assert sum(slept) == pytest.approx((0.6 - 0.3) / 2.0)


def test_replay_paces_the_cycle_collector_and_restores_it(tmp_path: Path) -> None:
    """Frames are built with the collector waiting for COLLECT_AFTER containers; the caller's
    thresholds come back when the replay ends, also when it is abandoned halfway."""
    path = write(tmp_path / "r.jsonl", stream(20), header())
    before = gc.get_threshold()
    seen: set[int] = set()
    with open_recording(path) as s:
        for frame in replay_frames(s, builder_factory=FakeBuilder):
            if not frame.final:  # the final frame is built inside too, and handed out after
                seen.add(gc.get_threshold()[0])
    assert seen == {max(replay_module.COLLECT_AFTER, before[0])} and gc.get_threshold() == before
    with open_recording(path) as s:
        frames = replay_frames(s, builder_factory=FakeBuilder)
        assert isinstance(frames, Generator)
        next(frames)
        assert gc.get_threshold()[0] == max(replay_module.COLLECT_AFTER, before[0])
        frames.close()
    assert gc.get_threshold() == before
    replay_module.final_frame(path, builder_factory=FakeBuilder)
    assert gc.get_threshold() == before


def test_header_without_profile_is_a_clear_error(tmp_path: Path) -> None:
    hdr = header()
    del hdr["profile"]
    path = write(tmp_path / "r.jsonl", stream(3), hdr)
    with open_recording(path) as s, pytest.raises(RecordingError, match=r":1: the header has no profile"):
        list(replay_frames(s))


def test_stream_header_is_the_live_header() -> None:
    hdr = {"schema": "sectormon/recording/1", "recording_started": 3.0, **header()}
    out = header_to_json(stream_header(header_from_json(hdr)))
    assert out["schema"] == "sectormon/header/1"
    assert "recording_started" not in out and out["profile"] == hdr["profile"]


@pytest.mark.parametrize("checkpoint_every", [30.0, 0.1])
def test_replay_session_plays_seeks_and_keeps_user_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkpoint_every: float
) -> None:
    monkeypatch.setattr(replay_module, "CHECKPOINT_EVERY", checkpoint_every)
    items = stream(40, marks={10: Mark(t=0.2, kind="bookmark", label="rec")})
    path = write(tmp_path / "r.jsonl.gz", items, header())
    session = ReplaySession(path, speed=1e6, paused=True, builder_factory=FakeBuilder)
    got = Collector()
    session.subscribe(got)
    assert session.duration() == pytest.approx(0.8)
    assert [m.kind for m in session.marks()] == ["bookmark", "end"]
    assert session.header.schema == "sectormon/header/1"
    session.start()
    try:
        session.seek_to(0.3)
        assert got.event.wait(10)
        assert got.frames[-1].t == pytest.approx(0.3) and got.frames[-1].total.counts["slices"] == 15
        assert session.position() == pytest.approx(0.3)
        session.mark_baseline()
        session.set_paused(False)
        assert session.wait(10)
        final = got.frames[-1]
        assert final.final and final.total.counts["slices"] == 40
        assert final.warnings == ("bookmark@0.2", "baseline@0.3", "end@0.8")
        # Seek back: replays from the start, the user's baseline goes back in at its time.
        got.event.clear()
        session.set_paused(True)
        session.seek(-0.6)
        assert got.event.wait(10)
        frame = got.frames[-1]
        assert frame.t == pytest.approx(0.2) and frame.total.counts["slices"] == 10
        assert frame.warnings == ()
        session.seek_to(0.5)
        deadline = threading.Event()
        for _ in range(100):
            if got.frames[-1].t == pytest.approx(0.5):
                break
            deadline.wait(0.05)
        assert got.frames[-1].warnings == ("bookmark@0.2", "baseline@0.3")
        assert [m.kind for m in session.marks()] == ["bookmark", "baseline", "end"]
        assert session.error() is None
    finally:
        session.stop()


def test_replay_session_reports_bad_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(5), header())
    text = path.read_text().splitlines()
    rec = json.loads(text[3])
    rec["readings"][0][4] = -rec["readings"][0][4]  # te < 0
    text[3] = encode(rec)  # the writer's compact layout: the timeline scan does not decode it
    path.write_text("\n".join(text) + "\n")
    errors: list[str] = []
    session = ReplaySession(path, speed=1e6, builder_factory=FakeBuilder, on_error=errors.append)
    session.start()
    assert session.wait(10)
    session.stop()
    assert errors == [session.error()] and ":4: reading 0" in errors[0]


# ---------------------------------------------------------------------------- with the real engine


def real_header() -> dict[str, Any]:
    from sectormon.profiles.codec import profile_to_dict
    from sectormon.profiles.resolve import load_profile

    return header(profile_to_dict(load_profile("generic")))


def direct_frames(hdr: dict[str, Any], items: list[Slice | Mark]) -> list[dict[str, Any]]:
    from sectormon.metrics.builder import build_engine
    from sectormon.profiles.codec import profile_from_dict
    from sectormon.session.frame_builder import FrameBuilder

    typed = header_from_json(hdr)
    builder = FrameBuilder(build_engine(profile_from_dict(hdr["profile"]), typed), hdr["options"]["interval"])
    frames = [f for item in items for f in builder.feed(item)]
    frames.append(builder.finish())
    return [json.loads(json.dumps(f.to_json())) for f in frames]


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_round_trip_replay_json_equals_direct_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    hdr = real_header()
    items = stream(
        400, marks={120: Mark(t=2.4, kind="baseline"), 300: Mark(t=6.0, kind="bookmark", label="x")}
    )
    expected = direct_frames(hdr, items)
    path = write(tmp_path / name, items, hdr)
    assert cli.main(["replay", str(path), "--json"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    written = header_from_json({"schema": "sectormon/recording/2", **hdr})
    assert out[0] == json.loads(json.dumps(header_to_json(stream_header(written))))
    assert out[1:] == expected
    assert len(expected) > 5 and expected[-1]["final"] and any(f["baseline"] for f in expected)


def wait_for(got: Collector, t: float) -> Frame:
    for _ in range(400):
        if got.frames and got.frames[-1].t == pytest.approx(t):
            return got.frames[-1]
        got.event.wait(0.05)
        got.event.clear()
    raise AssertionError(f"no frame at t={t}; last {got.frames[-1].t if got.frames else None}")


def test_replay_session_seeks_equal_full_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeks from engine snapshots give exactly the frames a straight replay gives."""
    monkeypatch.setattr(replay_module, "CHECKPOINT_EVERY", 1.0)
    hdr = real_header()
    items = stream(400)
    path = write(tmp_path / "r.jsonl.gz", items, hdr)
    session = ReplaySession(path, speed=1e6)
    got = Collector()
    session.subscribe(got)
    session.start()
    try:
        assert session.wait(30)
        assert len(session._checkpoints) >= 6
        plain = direct_frames(hdr, items)
        at = {f["t"]: f for f in plain if not f["final"]}
        session.set_paused(True)
        session.seek_to(5.0)
        assert json.loads(json.dumps(wait_for(got, 5.0).to_json())) == at[5.0]
        session.mark_baseline()  # at 5.0: snapshots after it are dropped, the mark goes back in later
        session.seek_to(2.0)
        assert json.loads(json.dumps(wait_for(got, 2.0).to_json())) == at[2.0]
        session.seek_to(7.0)
        with_mark = [*items[:250], Mark(t=5.0, kind="baseline"), *items[250:]]
        assert items[249].t == pytest.approx(5.0)
        expected = {f["t"]: f for f in direct_frames(hdr, with_mark)}
        frame = json.loads(json.dumps(wait_for(got, 7.0).to_json()))
        assert frame == expected[7.0] and frame["baseline"] is not None
    finally:
        session.stop()
    assert session.error() is None


def test_replay_from_to_keeps_windows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hdr = real_header()
    items = stream(400)
    expected = direct_frames(hdr, items)
    path = write(tmp_path / "r.jsonl", items, hdr)
    assert cli.main(["replay", str(path), "--json", "--from", "3", "--to", "6.5"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()][1:]
    assert out[:-1] == [f for f in expected if 3 <= f["t"] <= 6.5]
    assert out[-1]["final"] and out[-1]["t"] <= 6.5


def test_replay_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"schema":"sectormon/recording/9"}\n')
    assert cli.main(["replay", str(path), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"sectormon: {path}:1: record version") and "\n" not in err
    assert cli.main(["replay", str(path), "--json", "--speed", "0"]) == 2
    assert "--speed 0.0: give a speed from 0.01 to 10000" in capsys.readouterr().err


def test_replay_skip_bad_reports_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hdr = real_header()
    path = write(tmp_path / "r.jsonl", stream(100), hdr)
    text = path.read_text().splitlines()
    text[10] = "not json"
    path.write_text("\n".join(text) + "\n")
    assert cli.main(["replay", str(path), "--json"]) == 2
    assert ":11: not valid JSON" in capsys.readouterr().err
    assert cli.main(["replay", str(path), "--json", "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert "skipped 1 line(s)" in captured.err
    assert json.loads(captured.out.splitlines()[-1])["final"]


def _replay_session_is_a_replay_control(session: ReplaySession) -> ReplayControl:
    """Checked by mypy: ReplaySession implements the protocol the TUI drives."""
    return session


def _with_gaps(items: list[Slice | Mark]) -> list[Slice | Mark]:
    """``stream(400)`` (8 s) without the slices of (3.0, 4.5) and (6.04, 6.92): frames before a gap
    are the last ones up to a seek into it, which a quiet fast-forward cannot tell in advance. The
    slices are numbered without gaps, as a sampler that stalled would number them (missing indices
    would say slices were lost: tests/io/test_gaps.py)."""
    kept = [i for i in items if isinstance(i, Mark) or not (3.0 < i.t < 4.5 or 6.04 < i.t < 6.92)]
    slices = iter(range(len(kept)))
    return [i if isinstance(i, Mark) else dataclasses.replace(i, index=next(slices)) for i in kept]


@pytest.mark.parametrize("checkpoint_every", [30.0, 1.5])
def test_replay_session_quiet_seeks_show_the_frames_of_a_full_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkpoint_every: float
) -> None:
    """Seeks skip the frames nobody sees, yet show exactly the newest frame up to the target that a
    straight replay builds, across gaps in the slices, before the first frame and past the end."""
    from sectormon.metrics.engine import MetricsEngine

    monkeypatch.setattr(replay_module, "CHECKPOINT_EVERY", checkpoint_every)
    built: list[float] = []
    real_frame = MetricsEngine.frame

    def counted_frame(self: MetricsEngine, t: float) -> Frame:
        built.append(t)
        return real_frame(self, t)

    monkeypatch.setattr(MetricsEngine, "frame", counted_frame)
    opened: list[float | None] = []
    real_open = ReplaySession._open

    def counted_open(self: ReplaySession, target: float | None = None) -> Any:
        opened.append(target)
        return real_open(self, target)

    monkeypatch.setattr(ReplaySession, "_open", counted_open)
    hdr = real_header()
    items = _with_gaps(stream(400))
    expected = direct_frames(hdr, items)
    shown = {f["t"]: f for f in expected if not f["final"]}
    assert sorted(shown) == [1.0, 2.0, 3.0, 4.5, 5.0, 6.0, 7.0, 8.0]  # none in the gaps, one where they end
    built.clear()
    path = write(tmp_path / "r.jsonl", items, hdr)
    session = ReplaySession(path, speed=1e6, paused=True)
    got = Collector()
    session.subscribe(got)
    session.start()
    try:
        for target, frame_t in [
            (4.2, 3.0),  # into the first gap: the frame at 3.0 was skipped, replayed to it
            (6.5, 6.0),  # forward, into the second gap
            (0.5, 1.0),  # back, before the first frame: the first frame (not the one shown before)
            (7.5, 7.0),  # forward from the start
            (4.2, 3.0),  # back into the first gap
            (2.0, 2.0),  # exactly on a frame
            (3.9, 3.0),
            (5.0, 5.0),
            (99.0, "final"),  # past the end: the final frame
            (1.99, 1.0),
        ]:
            before = len(got.frames)
            built.clear()
            session.seek_to(target)
            if frame_t is None:
                for _ in range(100):
                    if session.position() == pytest.approx(target):
                        break
                    got.event.wait(0.02)
                assert len(got.frames) == before
                continue
            for _ in range(400):
                if len(got.frames) > before:
                    break
                got.event.wait(0.05)
                got.event.clear()
            frame = json.loads(json.dumps(got.frames[-1].to_json()))
            want = expected[-1] if frame_t == "final" else shown[frame_t]
            assert frame == want, f"seek to {target}"
            assert len(got.frames) == before + 1
            if target == 7.5:  # from the start: a full fast-forward builds seven frames
                assert built == [7.0]
            elif target == 6.5:  # from 4.2: 4.5, 5.0 and 6.0 are due; 5.0 is built for a snapshot
                assert built == ([5.0, 6.0] if checkpoint_every < 30 else [6.0])
        # Playing on from there (from a snapshot taken during a quiet pass) builds every frame.
        before = len(got.frames)
        session.set_paused(False)
        assert session.wait(30)
        played = [json.loads(json.dumps(f.to_json())) for f in got.frames[before:]]
        assert played == [f for f in expected if f["t"] > 1.99]
    finally:
        session.stop()
    assert session.error() is None
    assert opened[:2] == [None, 4.2]  # the first seek (forward) replayed to its frame


def _wait_for_position(session: ReplaySession, got: Collector, t: float) -> None:
    """Until the player has reached stream time ``t`` (or 4 s passed: the caller asserts)."""
    for _ in range(200):
        if session.position() == pytest.approx(t):
            return
        got.event.wait(0.02)
        got.event.clear()


def test_quick_relative_seeks_add_up(tmp_path: Path) -> None:
    """Three arrow presses sent at once move three seconds (each seek counted from the position,
    which a pending seek had not reached yet, so they moved one)."""
    path = write(tmp_path / "r.jsonl", stream(400), real_header())
    session = ReplaySession(path, speed=1e6, paused=True)
    got = Collector()
    session.subscribe(got)
    t0 = session.position()  # the first slice's time
    with session._cond:  # hold the player: the three seeks arrive before it takes any
        session.start()
        for _ in range(3):
            session.seek(1.0)
    _wait_for_position(session, got, t0 + 3.0)
    assert session.position() == pytest.approx(t0 + 3.0)
    session.seek(-0.5)
    session.seek(-0.5)
    _wait_for_position(session, got, t0 + 2.0)
    assert session.position() == pytest.approx(t0 + 2.0)
    session.stop()


def test_replay_session_hands_a_cut_file_s_warnings_to_its_screen(tmp_path: Path) -> None:
    """The TUI subscribes to warnings: a file cut by kill -9 or mid-line is said on screen (it was
    only printed on stderr, under the TUI)."""
    hdr = real_header()
    cut = write(tmp_path / "cut.jsonl", stream(50, end=False), hdr)
    whole = write(tmp_path / "whole.jsonl", stream(50), hdr)
    torn = tmp_path / "torn.jsonl"
    torn.write_text(whole.read_text()[:-30])
    for path, said in (
        (cut, "no end mark (the recording was cut"),
        (torn, "last line is incomplete"),
        (whole, None),
    ):
        printed: list[str] = []
        session = ReplaySession(path, speed=1e6, paused=True, on_warning=printed.append)
        shown: list[str] = []
        session.subscribe_warnings(shown.append)
        if said is None:
            assert shown == [] and printed == []
        else:
            assert len(shown) == 1 and said in shown[0] and printed == shown


def test_a_simulated_recording_plays_a_frame_a_second_at_1x(tmp_path: Path) -> None:
    """Its 10 ms played in 10 ms at 1x: 1x is one frame interval per wall second, and a seek step
    is one frame; a recording of this host keeps real time."""
    sim = Path(__file__).resolve().parents[2] / "recordings" / "scenario-a-sectors-on.jsonl.gz"
    session = ReplaySession(sim, paused=True)
    assert session.time_scale() == pytest.approx(0.00025)  # the recording's frame interval
    start = session.position()
    got = Collector()
    session.subscribe(got)
    session.start()
    session.seek(4.0)
    _wait_for_position(session, got, start + 4 * 0.00025)
    assert session.position() == pytest.approx(start + 4 * 0.00025)
    session.stop()
    host = ReplaySession(write(tmp_path / "r.jsonl", stream(10), real_header()), paused=True)
    assert host.time_scale() == 1.0
