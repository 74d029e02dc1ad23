"""A recording the user stops (the TUI's `r`) ends like one the session stops: with its end mark;
and a recording keeps the session's warnings, which its readers say again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sectormon.data.frames import Frame
from sectormon.data.readings import Mark, Unit
from sectormon.io import open_recording
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import plan_rotation, select_groups
from sectormon.session.header import build_header
from sectormon.session.live import LiveSession as Session
from sectormon.session.options import SessionOptions
from sectormon.sources.base import UnitsUpdate
from tests.rotation.fake_source import FakeSource


class WarningSource(FakeSource):
    """Warns once at 0.3 s, as the thread tracker does about a thread it cannot count."""

    warned = False

    def poll_units(self) -> UnitsUpdate:
        update = super().poll_units()
        if self.t >= 0.3 and not self.warned:
            self.warned = True
            return dataclasses.replace(update, warnings=("thread 9 is not counted (EMFILE)",))
        return update


def _session(
    stop_at: float,
    *,
    source_type: type[FakeSource] = FakeSource,
    record: str | None = None,
    startup_warnings: tuple[str, ...] = (),
) -> Session:
    profile = Profile("t", "test", 8, {"A": EventDef("A", "ra")}, (GroupDef("G", ("A",)),), ())
    plan = plan_rotation(profile, select_groups(profile, None), {})
    unit = Unit("thread", 1, core=0, cmg=0)
    source = source_type({unit.key: (unit, 0.0, 10.0)}, {"A": 1000.0}, stop_at=stop_at)
    options = SessionOptions(interval=0.1, timeslice=0.01, record=record)
    header = build_header(source=source, profile=profile, plan=plan, options=options)
    return Session(
        source=source,
        profile=profile,
        plan=plan,
        options=options,
        header=header,
        notes=startup_warnings,
        on_warning=lambda _message: None,
    )


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
        assert not stream.warnings
    assert isinstance(items[-1], Mark) and items[-1].kind == "end"
    assert [type(i).__name__ for i in items].count("Mark") == 1  # nothing after the end mark
    ts = [i.t for i in items]
    assert ts[0] >= 0.1 and ts[-1] <= 0.31 + 1e-9  # only the slices between the two toggles


def test_the_session_warnings_are_kept_in_the_recording(tmp_path: Path) -> None:
    """Those given before the recording started (its first lines) and those given during it, in
    time order, each said again by a replay with its line; nothing is written after the end mark."""
    path = tmp_path / "run.jsonl"
    session = _session(
        0.6, source_type=WarningSource, record=str(path), startup_warnings=("event B is not supported",)
    )
    session.run()
    with open_recording(path) as stream:
        items = list(stream)
        warnings = stream.warnings
    assert isinstance(items[-1], Mark) and items[-1].kind == "end"
    assert len(warnings) == 2
    assert warnings[0] == f"{path}:2: the live session warned at t=0 s: event B is not supported"
    late = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "EMFILE" in line)
    # t: the last slice's time when the tracker warned at 0.3 s of the fake clock
    assert (
        warnings[1] == f"{path}:{late}: the live session warned at t=0.29 s: thread 9 is not counted (EMFILE)"
    )


class FailingSource(FakeSource):
    """The sampler's source fails at 0.3 s (a counter read that raises, a lost target)."""

    def poll_units(self) -> UnitsUpdate:
        if self.t >= 0.3:
            raise RuntimeError("the PMU went away")
        return super().poll_units()


def test_a_session_that_fails_says_so_in_its_recording_before_the_end_mark(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    session = _session(5.0, source_type=FailingSource, record=str(path))
    with pytest.raises(RuntimeError, match="the PMU went away"):
        session.run()
    with open_recording(path) as stream:
        items = list(stream)
        warnings = stream.warnings
    assert isinstance(items[-1], Mark) and items[-1].kind == "end"  # still a whole recording
    assert len(warnings) == 1 and warnings[0].endswith(": sampling stopped: the PMU went away")
    marks = [line for line in path.read_text().splitlines() if '"kind":"warning"' in line]
    assert marks and path.read_text().splitlines()[-2] == marks[-1]  # right before the end mark
