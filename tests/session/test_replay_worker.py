"""The replay's reader process: the same frames, errors, warnings and counts as one process.

Each test replays a recording with the reader process forced on (``SECTORMON_REPLAY_WORKER=1``)
and checks it against the one-process replay (or the frames built directly): the child is a real
second interpreter running :func:`sectormon.session.replay_worker.main`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import pytest

from sectormon import cli
from sectormon.data.readings import Mark
from sectormon.errors import SectormonError
from sectormon.io import RecordingError, open_recording
from sectormon.session import replay_worker
from sectormon.session.replay import final_frame, frame_builder, replay_frames
from tests.io.recording_synth import stream
from tests.session.test_replay import direct_frames, real_header, write

ITEMS = stream(400, marks={120: Mark(t=2.4, kind="baseline"), 300: Mark(t=6.0, kind="bookmark", label="x")})


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """Forces the reader process on and records every child started."""
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "1")
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc: subprocess.Popen[bytes] = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    monkeypatch.setattr(replay_worker.subprocess, "Popen", popen)
    return started


def frames_json(path: Path, **kwargs: Any) -> list[dict[str, Any]]:
    with open_recording(path) as s:
        return [json.loads(json.dumps(f.to_json())) for f in replay_frames(s, **kwargs)]


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_worker_replay_equals_direct_frames(
    tmp_path: Path, name: str, worker: list[subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    hdr = real_header()
    path = write(tmp_path / name, ITEMS, hdr)
    expected = direct_frames(hdr, ITEMS)
    assert cli.main(["replay", str(path), "--json"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()][1:]
    assert out == expected
    assert len(worker) == 1 and worker[0].returncode == 0  # the child read it, and ended well
    assert any(f["baseline"] for f in expected)


def test_worker_from_to_equals_one_process(
    tmp_path: Path, worker: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    hdr = real_header()
    path = write(tmp_path / "r.jsonl", ITEMS, hdr)
    got = frames_json(path, t_from=3.0, t_to=6.5)
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
    assert got == frames_json(path, t_from=3.0, t_to=6.5)
    assert len(worker) == 1 and got[-1]["final"] and got[-1]["t"] <= 6.5
    # Both skip the frames before --from unbuilt; the frames after are those of a run building all.
    every = direct_frames(hdr, [item for item in ITEMS if item.t <= 6.5])
    assert got == [f for f in every if 3.0 <= f["t"] <= 6.5] and len(got) < len(every)


def test_worker_reports_bad_lines_warnings_and_counts_as_one_process(
    tmp_path: Path, worker: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "r.jsonl", ITEMS, real_header())
    lines = path.read_text().splitlines()
    lines[10] = "not json"
    lines[40] = '{"schema":"sectormon/mark/2","t":1.0,"kind":"odd"}'
    lines[45] = '{"schema":"sectormon/mark/2","t":1.0,"kind":"warning","label":"a thread is not counted"}'
    cut = "\n".join(lines) + "\n" + lines[50][:30]  # and a truncated last line

    path.write_text(cut)
    results = {}
    for switch in ("1", "0"):
        monkeypatch.setenv(replay_worker.ENV_SWITCH, switch)
        with pytest.raises(RecordingError) as failed:
            frames_json(path)
        with open_recording(path, skip_bad=True) as s:
            frames = [json.dumps(f.to_json()) for f in replay_frames(s)]
            results[switch] = (str(failed.value), frames, s.skipped, s.warnings, s.last_line)
    assert results["1"] == results["0"]
    message, _frames, skipped, warnings, last_line = results["1"]
    assert message.startswith(f"{path}:11: not valid JSON") and "--skip-bad" in message
    assert skipped == 2 and last_line == len(lines) + 1
    assert any("unknown mark kind 'odd'" in w for w in warnings)
    assert f"{path}:46: the live session warned at t=1 s: a thread is not counted" in warnings
    assert any("last line is incomplete" in w for w in warnings)
    assert len(worker) == 2


def test_compare_side_through_the_worker_is_the_same(
    tmp_path: Path, worker: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    hdr = real_header()
    path = write(tmp_path / "r.jsonl.gz", ITEMS, hdr)
    _, by_worker, stream_a = final_frame(path)
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
    _, alone, stream_b = final_frame(path)
    assert by_worker.to_json() == alone.to_json()
    # final_frame builds no frame before the last; it is the last frame of a run building all.
    assert json.loads(json.dumps(alone.to_json())) == direct_frames(hdr, ITEMS)[-1]
    assert stream_a.last_line == stream_b.last_line and len(worker) == 1


def test_an_empty_recording_is_still_an_error(tmp_path: Path, worker: list[subprocess.Popen[bytes]]) -> None:
    path = write(tmp_path / "r.jsonl", [Mark(t=0.0, kind="end")], real_header())
    with pytest.raises(RecordingError, match="no slices"):
        final_frame(path)


def test_stopping_early_kills_the_child(tmp_path: Path, worker: list[subprocess.Popen[bytes]]) -> None:
    items = stream(3000)
    path = write(tmp_path / "r.jsonl", items, real_header())
    with open_recording(path) as s:
        frames = cast(Generator[Any, None, None], replay_frames(s))
        next(frames)
        frames.close()  # as a closed pipe (| head) or an exception in the caller does
    (child,) = worker
    assert child.returncode is not None  # reaped, not left running


def test_a_child_that_dies_is_a_clear_error(
    tmp_path: Path, worker: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "r.jsonl", ITEMS, real_header())
    # An "interpreter" that exits at once with status 3, as a child killed by the OOM killer would.
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(SectormonError, match=r"reader process ended early \(exit status 3\).*WORKER=0"):
        frames_json(path)


def test_a_child_error_is_raised_here(tmp_path: Path, worker: list[subprocess.Popen[bytes]]) -> None:
    path = write(tmp_path / "r.jsonl", ITEMS, real_header())
    with open_recording(path) as s:
        frame_builder(s.header, s.path)
        path.unlink()  # the child opens the file by name: another file is there now
        path.write_text("garbage\n" * 10)
        with pytest.raises(RecordingError, match="first line is not JSON"):
            list(replay_frames(s))


@pytest.mark.parametrize("reader_process", [False, True])
def test_a_recording_without_its_end_mark_is_said_to_be_cut(
    tmp_path: Path,
    reader_process: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """kill -9 leaves whole lines and no end mark: replay and compare say the run was cut, once,
    whichever process read the file; a complete recording gets no such word."""
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "1" if reader_process else "0")
    hdr = real_header()
    cut = write(tmp_path / "cut.jsonl", stream(300, end=False), hdr)
    whole = write(tmp_path / "whole.jsonl", stream(300), hdr)
    for path, is_cut in ((cut, True), (whole, False)):
        with open_recording(path) as s:
            for _ in replay_frames(s):
                pass
            assert s.end_seen is not is_cut
            warned = any("no end mark" in w for w in s.warnings)
        assert warned is is_cut
        assert cli.main(["replay", str(path), "--json"]) == 0
        err = capsys.readouterr().err
        assert err.count("no end mark (the recording was cut") == int(is_cut), err
    assert cli.main(["compare", str(whole), str(cut)]) == 0
    err = capsys.readouterr().err
    assert err.count("no end mark") == 1 and f"{cut}:301: no end mark" in err, err  # its last line
    with monkeypatch.context() as on_a_terminal:  # the text report's own warning lines suffice there
        on_a_terminal.setattr(sys.stdout, "isatty", lambda: True)
        assert cli.main(["compare", str(whole), str(cut)]) == 0
    out, err = capsys.readouterr()
    assert out.count("no end mark") == 1 and "no end mark" not in err
    # --to stops reading before the end: nothing to say about the end mark
    assert cli.main(["replay", str(cut), "--json", "--to", "1.0"]) == 0
    assert "no end mark" not in capsys.readouterr().err
    # a cut last line already says the recording was cut
    text = cut.read_text()
    cut.write_text(text[: len(text) - 40])
    assert cli.main(["replay", str(cut), "--json"]) == 0
    err = capsys.readouterr().err
    assert "last line is incomplete (the recording was cut)" in err and "no end mark" not in err


def test_compare_skip_bad_says_what_it_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hdr = real_header()
    whole = write(tmp_path / "whole.jsonl", stream(300), hdr)
    bad = tmp_path / "bad.jsonl"
    lines = whole.read_text().splitlines(keepends=True)
    bad.write_text("".join([*lines[:50], "{not json\n", *lines[50:]]))
    assert cli.main(["compare", str(whole), str(bad), "--skip-bad"]) == 0
    err = capsys.readouterr().err
    assert f"{bad}: skipped 1 malformed line(s) (--skip-bad)" in err, err


@pytest.mark.parametrize("value", ["abc", "-1", "1.5"])
def test_a_bad_reader_switch_is_refused_by_name(
    tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(replay_worker.ENV_SWITCH, value)
    path = write(tmp_path / "r.jsonl", ITEMS, real_header())
    assert cli.main(["replay", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert f"{replay_worker.ENV_SWITCH}={value!r}: give 0" in err and err.count("\n") == 1
