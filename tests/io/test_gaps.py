"""Slices missing from a recording (deleted lines): a warning naming the line and the lost time,
and coverage that shows the time nothing was counted; repeated lines and impossible counts are bad
lines; a whole garbage last line is not a cut."""

from __future__ import annotations

import gzip
import json
import math
import re
import time
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.data.frames import Frame
from sectormon.data.readings import GAP, Mark, Slice
from sectormon.io import RecordingError, open_recording, read_recording
from sectormon.io.jsonl import encode
from sectormon.io.reader import scan_recording
from sectormon.session import replay_worker
from sectormon.session.replay import ReplaySession, final_frame, replay_frames
from tests.e2e.helpers import run_sectormon
from tests.io.recording_synth import stream
from tests.session.test_replay import real_header, write
from tests.session.test_replay_spans import churn, outcome, spans  # noqa: F401 - spans is a fixture

REPO = Path(__file__).resolve().parents[2]
SHIPPED_ON = REPO / "recordings" / "scenario-a-sectors-on.jsonl.gz"


def without_indices(items: list[Slice | Mark], lo: int, hi: int) -> list[Slice | Mark]:
    """``items`` without the slices of index ``lo..hi`` (their lines deleted)."""
    return [i for i in items if isinstance(i, Mark) or not lo <= i.index <= hi]


def frames_of(path: Path) -> list[Frame]:
    with open_recording(path) as s:
        return list(replay_frames(s))


def test_deleted_slice_lines_are_a_warning_naming_the_line_and_the_lost_time(tmp_path: Path) -> None:
    """101 slice lines deleted (index 44..144 of 400, 0.02 s each): the reader says where and how
    long, and the whole run's coverage falls by the 2.02 s lost."""
    hdr = real_header()
    items = stream(400)
    whole = write(tmp_path / "whole.jsonl", items, hdr)
    cut = write(tmp_path / "cut.jsonl", without_indices(items, 44, 144), hdr)
    rec = read_recording(cut)
    gap_line = 2 + 44  # the header, 44 slices, then the slice of index 145
    [warning] = rec.warnings
    assert warning.startswith(f"{cut}:{gap_line}: 101 slice(s) missing before this line: index 44..144")
    assert "2.02 s of t=0.88..2.9 s not in the file" in warning
    [gap] = [m for m in rec.marks if m.kind == GAP]
    assert gap.t == pytest.approx(0.88) and gap.data["seconds"] == pytest.approx(2.02)
    assert scan_recording(cut).warnings == rec.warnings
    assert [m.kind for m in scan_recording(cut).marks] == [GAP, "end"]

    full = frames_of(whole)[-1].run.total
    lossy = frames_of(cut)[-1].run.total
    assert set(full.coverage) == set(lossy.coverage)
    for name, covered in full.coverage.items():
        # the same fraction of the slices that remain was counted, over the whole 8 s
        assert lossy.coverage[name] == pytest.approx(covered * (8.0 - 2.02) / 8.0, rel=0.05), name
    assert max(lossy.coverage.values()) < 0.7  # 0.9 without the gap: the lost time did not show


def test_a_frame_over_a_gap_shows_it_and_the_others_do_not(tmp_path: Path) -> None:
    hdr = real_header()
    items = stream(400)
    whole = frames_of(write(tmp_path / "whole.jsonl", items, hdr))
    cut = frames_of(write(tmp_path / "cut.jsonl", without_indices(items, 44, 144), hdr))
    by_t = {f.t: f for f in whole if not f.final}
    over_gap = [f for f in cut if f.t == pytest.approx(2.92)]  # from 0 (no frame before) to 2.92
    assert len(over_gap) == 1 and max(over_gap[0].total.coverage.values()) < 0.3
    later = [f for f in cut if f.t >= 4.0 and not f.final]
    assert len(later) == 5
    for frame in later:
        assert frame.total.coverage == by_t[frame.t].total.coverage


@pytest.mark.parametrize("readers", ["2", "3"])
def test_reader_processes_find_the_same_gaps_as_one_process(
    tmp_path: Path,
    spans: list[list[str]],  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
    readers: str,
) -> None:
    """Gaps inside spans and right at their starts (every few slices) give the frames, warnings
    and coverage of a replay in one process."""
    items = [i for i in churn(600) if isinstance(i, Mark) or i.index % 13 not in (5, 6, 7)]
    path = write(tmp_path / "r.jsonl", items, real_header())
    shared = outcome(path, monkeypatch, readers)
    assert len(spans) == int(readers)
    assert shared == outcome(path, monkeypatch, "0")
    frames, _, warnings, _ = shared
    assert sum("slice(s) missing before this line" in w for w in warnings) == 600 // 13
    assert max(json.loads(frames[-1])["run"]["total"]["coverage"].values()) < 0.8


def test_seeks_from_snapshots_after_a_gap_show_the_frames_of_a_full_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay that resumes from an engine snapshot reads the slice it stopped at for its index,
    so a gap right after it is found again."""
    from sectormon.session import replay as replay_module

    monkeypatch.setattr(replay_module, "CHECKPOINT_EVERY", 0.5)
    hdr = real_header()
    items = without_indices(stream(400), 150, 170)
    path = write(tmp_path / "r.jsonl", items, hdr)
    expected = {f.t: json.dumps(f.to_json()) for f in frames_of(path) if not f.final}
    session = ReplaySession(path, speed=1e6, paused=True)
    shown: list[Frame] = []
    session.subscribe(shown.append)
    session.start()
    try:
        for target in (7.5, 3.5, 4.2, 1.2, 6.1):
            before = len(shown)
            session.seek_to(target)
            deadline = time.monotonic() + 10
            while len(shown) == before and time.monotonic() < deadline:
                time.sleep(0.01)
            frame = shown[-1]
            assert frame.t == math.floor(target) or frame.t == pytest.approx(3.42)
            assert json.dumps(frame.to_json()) == expected[frame.t], target
    finally:
        session.stop()


def test_a_repeated_slice_line_is_a_bad_line(tmp_path: Path) -> None:
    items = stream(10)
    path = write(tmp_path / "r.jsonl", items, real_header())
    lines = path.read_text().splitlines()
    lines.insert(5, lines[4])
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match=r":6: slice index 3 does not follow index 3 \(a line repeated"):
        read_recording(path)
    rec = read_recording(path, skip_bad=True)
    assert rec.skipped == 1 and len(rec.slices) == 10 and not rec.warnings


def test_a_gap_mark_written_in_a_file_is_ignored(tmp_path: Path) -> None:
    """Only the reader makes gap marks: one in the file cannot lower coverage."""
    items: list[Slice | Mark] = stream(100)
    plain = frames_of(write(tmp_path / "plain.jsonl", items, real_header()))
    forged = Mark(t=0.5, kind=GAP, data={"seconds": 100.0, "first_index": 0, "last_index": 0})
    items.insert(30, forged)
    path = write(tmp_path / "r.jsonl", items, real_header())
    rec = read_recording(path)
    assert not rec.marks[:-1] and any("unknown mark kind 'gap' ignored" in w for w in rec.warnings)
    assert frames_of(path)[-1].run == plain[-1].run


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda r: r["readings"][0][7].__setitem__(0, 2**64), "counts must be below 2^64"),
        (lambda r: r["readings"][0][7].__setitem__(0, 2**64 + 5), "counts must be below 2^64"),
        (lambda r: r["readings"][0].__setitem__(5, r["readings"][0][4] + 1), "exceeds 'te'"),
    ],
)
def test_impossible_counts_and_times_are_bad_lines(tmp_path: Path, edit: Any, problem: str) -> None:
    path = write(tmp_path / "r.jsonl", stream(5), real_header())
    lines = path.read_text().splitlines()
    record = json.loads(lines[3])
    edit(record)
    lines[3] = encode(record)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match=rf"r\.jsonl:4: reading 0: .*{re.escape(problem)}"):
        read_recording(path)
    assert cli.main(["replay", str(path), "--json"]) == 2


def test_a_whole_garbage_last_line_stops_replay_with_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "r.jsonl", stream(5), real_header())
    with path.open("ab") as f:
        f.write(b"garbage that is no JSON at all\n")
    assert cli.main(["replay", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}:8: not valid JSON" in err and "was cut" not in err


# ------------------------------------------------------------------------------ the shipped one


def _shipped_without_slice_lines(tmp_path: Path, first: int, last: int) -> Path:
    """The shipped sectors-on recording with its ``first``-th to ``last``-th slice lines (1-based)
    deleted, gzip-compressed like the original."""
    lines = gzip.decompress(SHIPPED_ON.read_bytes()).decode().splitlines()
    slice_lines = [i for i, line in enumerate(lines) if '"schema":"sectormon/slice/' in line]
    drop = set(slice_lines[first - 1 : last])
    kept = [line for i, line in enumerate(lines) if i not in drop]
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(kept) + "\n").encode(), mtime=0))
    return path


@pytest.mark.e2e
def test_shipped_recording_without_slice_lines_100_to_160_replays_and_says_so(tmp_path: Path) -> None:
    path = _shipped_without_slice_lines(tmp_path, 100, 160)
    done = run_sectormon("replay", str(path), "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1
    assert f"{path}:101: 61 slice(s) missing before this line: index 99..159" in done.stderr
    assert "0.00061 s of t=0.00099..0.0016 s not in the file" in done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["final"] and max(final["run"]["total"]["coverage"].values()) < 0.9
    compared = run_sectormon("compare", str(SHIPPED_ON), str(path), "--json", timeout=60)
    assert compared.returncode == 0, compared.stderr
    assert "61 slice(s) missing" in " ".join(json.loads(compared.stdout)["warnings"])


@pytest.mark.parametrize("readers", ["0", "1"])
def test_shipped_recording_without_slice_lines_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, readers: str
) -> None:
    monkeypatch.setenv(replay_worker.ENV_SWITCH, readers)
    path = _shipped_without_slice_lines(tmp_path, 100, 160)
    _, final, stream_ = final_frame(path)
    assert any("61 slice(s) missing" in w for w in stream_.warnings)
    assert max(final.run.total.coverage.values()) < 0.9
