"""Bookmarks set in a replay are kept beside the recording and shown again by the next replay
(they were lost on quit, although the help called them marks in the recording)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectormon.data.readings import Mark
from sectormon.errors import SectormonError
from sectormon.io.bookmarks import BookmarkFile, bookmarks_path
from sectormon.session.replay import ReplaySession
from tests.io.recording_synth import header, stream, write


def _session(path: Path) -> ReplaySession:
    from tests.session.test_replay import FakeBuilder  # the replay tests' engine stand-in

    return ReplaySession(path, speed=1e6, paused=True, builder_factory=FakeBuilder)


def test_a_replay_bookmark_is_kept_beside_the_recording_and_shown_next_time(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.jsonl.gz", stream(20, marks={5: Mark(t=0.1, kind="bookmark", label="live")}), header()
    )
    before = path.read_bytes()
    first = _session(path)
    first.seek_to(0.2)
    first._position = 0.2  # the thread is not started: the position is where the seek went
    first.bookmark("bookmark 2")
    assert first.bookmarks_file() == str(tmp_path / "run.jsonl.gz.bookmarks.jsonl")
    assert [(m.kind, m.label) for m in first.marks()] == [
        ("bookmark", "live"),
        ("bookmark", "bookmark 2"),
        ("end", ""),
    ]
    first.stop()
    assert path.read_bytes() == before  # the recording itself is never changed
    lines = bookmarks_path(path).read_text().splitlines()
    assert [json.loads(line)["label"] for line in lines] == ["bookmark 2"]
    again = _session(path)
    assert [(m.t, m.label) for m in again.marks() if m.kind == "bookmark"] == [
        (0.1, "live"),
        (0.2, "bookmark 2"),
    ]
    again.stop()


def test_an_unwritable_bookmark_file_keeps_the_bookmark_for_this_replay_and_says_so(tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", stream(5), header())
    bookmarks_path(path).mkdir()  # a folder where the file goes: unwritable, even for root
    session = _session(path)
    with pytest.raises(
        SectormonError, match=r"^kept for this replay only: cannot write .*run\.jsonl\.bookmarks\.jsonl"
    ):
        session.bookmark("bookmark 1")
    assert [m.label for m in session.marks() if m.kind == "bookmark"] == ["bookmark 1"]
    session.stop()


def test_a_bad_line_in_the_bookmark_file_is_skipped_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", stream(5), header())
    good = json.dumps({"schema": "sectormon/mark/2", "t": 0.1, "kind": "bookmark", "label": "b1", "data": {}})
    baseline = json.dumps(
        {"schema": "sectormon/mark/2", "t": 0.1, "kind": "baseline", "label": "", "data": {}}
    )
    bookmarks_path(path).write_text(f"{good}\nnot json\n{baseline}\n[1]\n\n{good}\n")
    kept = BookmarkFile(path)
    assert [m.label for m in kept.marks] == ["b1", "b1"]
    assert [w.split(": ")[0] for w in kept.warnings] == [f"{bookmarks_path(path)}:{n}" for n in (2, 3, 4)]
    warnings: list[str] = []
    from tests.session.test_replay import FakeBuilder

    session = ReplaySession(path, builder_factory=FakeBuilder, on_warning=warnings.append)
    assert sum(1 for w in warnings if "not a bookmark record" in w) == 3
    session.stop()
