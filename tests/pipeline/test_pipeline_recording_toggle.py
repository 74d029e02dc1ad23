"""A recording the user stops (the TUI's `r`) ends like one the session stops: with its end mark."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon.frames import Frame
from sectormon.io import open_recording
from sectormon.pipeline import Session, SessionOptions, build_header
from sectormon.profiles.loader import profile_to_dict
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.readings import Mark, Unit
from sectormon.schedule import plan_rotation, select_groups
from tests.sampler.fake_source import FakeSource


def _session(stop_at: float) -> Session:
    profile = Profile("t", "test", 8, {"A": EventDef("A", "ra")}, (GroupDef("G", ("A",)),), ())
    plan = plan_rotation(profile, select_groups(profile, None), {})
    unit = Unit("thread", 1, core=0, cmg=0)
    source = FakeSource({unit.key: (unit, 0.0, 10.0)}, {"A": 1000.0}, stop_at=stop_at)
    options = SessionOptions(interval=0.1, timeslice=0.01)
    header = build_header(
        source=source,
        profile=profile,
        plan=plan,
        options=options,
        topology={},
        cpu_model="test",
        profile_dict=profile_to_dict(profile),
    )
    return Session(source=source, profile=profile, plan=plan, options=options, header=header)


def test_a_recording_stopped_mid_session_has_its_end_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # `r` records into the current directory
    session = _session(stop_at=0.6)
    paths: list[str | None] = []

    def toggle(frame: Frame) -> None:
        if session.frames in (1, 3):  # on after the first frame, off after the third
            paths.append(session.toggle_recording())

    session.subscribe(toggle)
    session.run()
    assert paths[1] is None and paths[0] is not None
    with open_recording(tmp_path / Path(paths[0]).name) as stream:
        items = list(stream)
        assert not stream.warnings and stream.missing_end_warning() is None
    assert isinstance(items[-1], Mark) and items[-1].kind == "end"
    assert [type(i).__name__ for i in items].count("Mark") == 1  # nothing after the end mark
    ts = [i.t for i in items]
    assert ts[0] >= 0.1 and ts[-1] <= 0.31 + 1e-9  # only the slices between the two toggles
