"""A damaged header is one line naming the field, from every reader (replay, compare, the TUI's
scan); NaN and Infinity are not JSON, in and out."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.io import RecordingError, open_recording
from sectormon.io.jsonl import encode
from sectormon.io.strict_json import dumps
from sectormon.session.replay import ReplaySession
from tests.e2e.helpers import run_sectormon
from tests.io.recording_synth import stream
from tests.session.test_replay import real_header, write


def recording(tmp_path: Path, header_line: str | None = None, **changes: Any) -> Path:
    """A replayable recording whose header has ``changes`` (dotted keys reach into ``options``),
    or whose header line is ``header_line`` as written."""
    hdr = real_header()
    for key, value in changes.items():
        if key.startswith("options_"):
            hdr["options"][key[len("options_") :]] = value
        else:
            hdr[key] = value
    path = write(tmp_path / "r.jsonl", stream(60), real_header())
    lines = path.read_text().splitlines()
    lines[0] = header_line if header_line is not None else encode({"schema": "sectormon/recording/2", **hdr})
    path.write_text("\n".join(lines) + "\n")
    return path


DAMAGE: list[tuple[dict[str, Any], str]] = [
    *(({"options": bad}, "header field 'options' must be an object") for bad in (0, None, [], "x")),
    *(
        ({"options_recent_seconds": bad}, "header field 'options.recent_seconds' must be a number of seconds")
        for bad in (0, -1, "10", None, 1e300)
    ),
    *(
        ({"options_interval": bad}, "header field 'options.interval' must be a number of seconds")
        for bad in (0, -0.5, True, [1])
    ),
    ({"options_count": -3}, "header field 'options.count' must be null or a number of frames"),
    ({"unavailable": None}, "header field 'unavailable' must be an object of event -> reason"),
    ({"unavailable": {"EA_L2": 7}}, "header field 'unavailable' must be an object of event -> reason"),
    ({"recording_started": 1e308}, "header field 'recording_started' must be a number of seconds"),
    ({"recording_started": -1}, "header field 'recording_started' must be a number of seconds"),
    ({"profile": []}, "header field 'profile' must be the recorded profile"),
    ({"source": "perf"}, "header field 'source' must be an object"),
    ({"topology": 0}, "header field 'topology' must be an object"),
    ({"host": 5}, "header field 'host' must be a string"),
    ({"skipped_groups": "SC1"}, "header field 'skipped_groups' must be a list of group names"),
]


@pytest.mark.parametrize(("changes", "problem"), DAMAGE)
def test_a_damaged_header_field_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], problem: str
) -> None:
    path = recording(tmp_path, **changes)
    expected = f"sectormon: {path}:1: {problem}"
    for args in (["replay", str(path), "--json"], ["compare", str(path), str(path), "--json"]):
        assert cli.main(args) == 2, args
        out, err = capsys.readouterr()
        assert err.startswith(expected) and err.count("\n") == 1, err
        assert "restore it from a copy" in err
        assert out == ""
    with pytest.raises(RecordingError, match=problem.replace("(", r"\(")):
        ReplaySession(path)


@pytest.mark.parametrize(
    "token",
    ['"host":Infinity', '"host":-Infinity', '"recording_started":NaN', '"options":{"recent_seconds":NaN}'],
)
def test_nan_and_infinity_in_the_header_are_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], token: str
) -> None:
    header_line = encode({"schema": "sectormon/recording/2", **real_header()})[:-1] + "," + token + "}"
    path = recording(tmp_path, header_line=header_line)
    assert cli.main(["compare", str(path), str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"{path}:1: the header line is not valid JSON (" in err and "is not a JSON number" in err


def test_nan_in_a_slice_or_a_mark_is_a_bad_line(tmp_path: Path) -> None:
    path = recording(tmp_path)
    lines = path.read_text().splitlines()
    lines[5] = lines[5].replace('"t":', '"t":NaN,"x":', 1)
    lines[-1] = lines[-1].replace('"data":{}', '"data":{"v":Infinity}')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match=r"r\.jsonl:6: not valid JSON \(NaN is not a JSON number\)"):
        list(open_recording(path))
    with open_recording(path, skip_bad=True) as s:
        list(s)
    assert s.skipped == 2


def test_the_shipped_and_golden_headers_pass() -> None:
    repo = Path(__file__).resolve().parents[2]
    paths = [*(repo / "recordings").glob("*.jsonl.gz"), *(repo / "tests/fixtures/golden").glob("*.jsonl.gz")]
    assert len(paths) >= 6
    for path in paths:
        with open_recording(path) as s:
            assert s.header.options.fields


def test_one_object_writers_write_null_for_non_finite_numbers() -> None:
    value = {"a": math.inf, "b": [math.nan, 1.5], "c": (-math.inf, 2), "d": {"e": "NaN"}}
    text = dumps(value)
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": [None, 2], "d": {"e": "NaN"}}
    assert dumps({"x": 1.0}, sort_keys=True) == json.dumps({"x": 1.0})


@pytest.mark.e2e
def test_damaged_headers_through_the_command(tmp_path: Path) -> None:
    cases = [
        ({"options": None}, "header field 'options'"),
        ({"options_recent_seconds": -1}, "header field 'options.recent_seconds'"),
        ({"unavailable": None}, "header field 'unavailable'"),
        ({"recording_started": 1e308}, "header field 'recording_started'"),
    ]
    for i, (changes, problem) in enumerate(cases):
        case_dir = tmp_path / str(i)
        case_dir.mkdir()
        path = recording(case_dir, **changes)
        for args in (["replay", str(path), "--json"], ["compare", str(path), str(path), "--json"]):
            done = run_sectormon(*args, timeout=60)
            assert done.returncode == 2 and done.stdout == "", (args, done.stderr)
            assert done.stderr.count("\n") == 1 and problem in done.stderr, done.stderr
