"""Every text from input printed to stderr has its control characters escaped: a recording's
warning label holding an OSC sequence and ``\\nsectormon: fake`` retitled the terminal and faked
a sectormon line. One test per printer: the commands' warnings (replay, compare, merge), the live
session's (the simulator with a hostile profile), argparse's usage line and the shared printer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.data.readings import Mark
from sectormon.files.text import print_message, print_warning
from sectormon.io.jsonl import encode_mark

HOSTILE = "x\x1b]0;pwned\x07\r\nsectormon: fake\u2028y"


def assert_one_line_each(err: str, count: int | None = None) -> list[str]:
    """stderr as lines: each a sectormon line, none faked, no ESC/BEL/CR byte; ``count`` of them
    quoting the hostile text."""
    assert "\x1b" not in err and "\x07" not in err and "\r" not in err and "\u2028" not in err
    lines = err.splitlines()
    assert all(line.startswith("sectormon") for line in lines), lines
    assert not any(line.startswith("sectormon: fake") for line in lines), lines
    if count is not None:
        assert sum("pwned" in line for line in lines) == count, lines
    return lines


def hostile_recording(folder: Path, name: str = "run.jsonl", host: str = "vm") -> Path:
    """A simulator recording with a ``warning`` mark (what the live session warned about, said
    again by every reader of the file) whose label is hostile."""
    path = folder / name
    assert cli.main(["sim", "--json", "--count", "3", "--record", str(path)]) == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["host"] = host
    lines[0] = json.dumps(header)
    t = json.loads(lines[2])["t"]
    lines.insert(2, encode_mark(Mark(t=t, kind="warning", label=HOSTILE)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_shared_printer_escapes_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    print_warning(HOSTILE)
    print_message(f"merged into {HOSTILE}")
    lines = assert_one_line_each(capsys.readouterr().err, 2)
    assert lines[0] == r"sectormon: warning: x\x1b]0;pwned\x07\x0d\x0asectormon: fake\u2028y"


def test_replay_json_says_a_recorded_warning_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = hostile_recording(tmp_path)
    capsys.readouterr()
    assert cli.main(["replay", "--json", str(path)]) == 0
    assert_one_line_each(capsys.readouterr().err, 1)


def test_compare_says_a_recorded_warning_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = hostile_recording(tmp_path)
    capsys.readouterr()
    assert cli.main(["compare", str(path), str(path)]) == 0
    err = capsys.readouterr().err
    assert_one_line_each(err)
    assert "pwned" in err


def test_merge_says_a_recorded_warning_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = hostile_recording(tmp_path, "a.jsonl", host="node0")
    second = hostile_recording(tmp_path, "b.jsonl", host="node1" + HOSTILE)
    capsys.readouterr()
    status = cli.main(["merge", "-o", str(tmp_path / "job.jsonl"), str(first), str(second)])
    err = capsys.readouterr().err
    assert status in (0, 2)  # a host name with control characters may be refused: in one line
    assert_one_line_each(err)
    assert "pwned" in err


def test_a_live_session_warning_quoting_a_profile_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = Path(__file__).resolve().parents[2] / "sectormon" / "profiles" / "a64fx.yaml"
    text = profile.read_text(encoding="utf-8")
    text = text.replace("events:\n", "events:\n  BOGUS: {code: 0x7ff0, scope: pe, unit: count, desc: x}\n", 1)
    text = text.replace(
        "groups:\n", "groups:\n  " + json.dumps(HOSTILE) + ": {desc: x, events: [BOGUS]}\n", 1
    )
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(text, encoding="utf-8")
    assert cli.main(["sim", "--profile", str(hostile), "--json", "--count", "1"]) == 0
    assert_one_line_each(capsys.readouterr().err, 1)


def test_a_usage_error_quoting_the_argument_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sim", "--kernel", HOSTILE])
    assert exit_.value.code == 2
    assert_one_line_each(capsys.readouterr().err, 1)


@pytest.mark.parametrize("command", ["check", "events"])
@pytest.mark.parametrize("option", ["--sysfs-root", "--procfs-root"])
def test_a_fake_root_with_a_name_too_long_is_one_line_and_exit_2(
    command: str, option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, option, str(tmp_path / ("x" * 300))])
    assert exit_.value.code == 2
    lines = assert_one_line_each(capsys.readouterr().err)
    assert len(lines) == 1 and "the name is too long" in lines[0]


def test_a_theme_name_too_long_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["sim", "--json", "--count", "1", "--theme", "t" * 300])
    assert status == 2
    lines = assert_one_line_each(capsys.readouterr().err)
    assert len(lines) == 1 and "--theme: no theme named" in lines[0]
