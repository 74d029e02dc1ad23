"""``--control`` and ``--delay``: descriptors opened and checked while the options are read, and a
one-line error (exit 2) for every bad value, before anything is launched."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.commands.options.control import control_fds, delay_seconds
from sectormon.errors import UsageError
from sectormon.session.options import UNTIL_ENABLED


@pytest.fixture
def fifos(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    ctl, ack = tmp_path / "ctl", tmp_path / "ack"
    os.mkfifo(ctl)
    os.mkfifo(ack)
    yield ctl, ack


def _close(fds: object) -> None:
    for fd in {getattr(fds, "ctl", None), getattr(fds, "ack", None)} - {None}:
        os.close(fd)  # type: ignore[arg-type]


def test_fifos_open_without_waiting_for_the_scripts_end(fifos: tuple[Path, Path]) -> None:
    ctl, ack = fifos
    fds = control_fds(f"fifo:{ctl},{ack}")
    assert fds is not None and fds.owned and fds.ack is not None
    try:
        # Read-write, as perf opens them: what a script writes reaches the control end.
        with open(ctl, "wb") as writer:
            writer.write(b"enable\n")
        assert os.read(fds.ctl, 64) == b"enable\n"
        assert os.get_inheritable(fds.ctl) is False  # a launched command does not get it
    finally:
        _close(fds)


def test_an_ack_fifo_is_optional(fifos: tuple[Path, Path]) -> None:
    fds = control_fds(f"fifo:{fifos[0]}")
    assert fds is not None and fds.ack is None
    _close(fds)


def test_inherited_descriptors_are_checked_and_left_open() -> None:
    read_end, write_end = os.pipe()
    try:
        fds = control_fds(f"fd:{read_end},{write_end}")
        assert fds is not None and (fds.ctl, fds.ack, fds.owned) == (read_end, write_end, False)
        with pytest.raises(UsageError, match=f"descriptor {write_end} is not open for reading"):
            control_fds(f"fd:{write_end}")
        with pytest.raises(UsageError, match=f"descriptor {read_end} is not open for writing"):
            control_fds(f"fd:{read_end},{read_end}")
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("ctl", "write fifo:CTL[,ACK] or fd:CTL[,ACK]"),
        ("pipe:ctl", "write fifo:CTL[,ACK] or fd:CTL[,ACK]"),
        ("fifo:", "write fifo:CTL[,ACK] or fd:CTL[,ACK]"),
        ("fifo:ctl,", "write fifo:CTL[,ACK] or fd:CTL[,ACK]"),
        ("fd:x", "'x' is not a descriptor number"),
        ("fd:999", "descriptor 999 is not open in sectormon"),
        ("fifo:/nonexistent/ctl", "create the named pipe first with mkfifo /nonexistent/ctl"),
    ],
)
def test_bad_control_values_name_the_fix(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=said.replace("[", r"\[").replace("]", r"\]")) as caught:
        control_fds(text)
    assert "\n" not in str(caught.value)


def test_a_regular_file_is_not_a_control_fifo(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("")
    with pytest.raises(UsageError, match="is not a named pipe"):
        control_fds(f"fifo:{path}")


def test_delay_in_seconds() -> None:
    assert delay_seconds(None) is None and delay_seconds(0) is None
    assert delay_seconds(200) == pytest.approx(0.2)
    assert delay_seconds(-1) == UNTIL_ENABLED


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--delay", "-2", "--", "true"], "--delay -2: give a whole number from -1 to"),
        (["-D", "0.5", "--", "true"], "--delay '0.5': give a whole number"),
        (["--delay", "-1", "--", "true"], "--delay -1 starts with counting off until an 'enable' arrives"),
        (["--delay", "100", "--source", "sim"], "--delay is for live perf sessions"),
        (["--control", "fifo:/nonexistent/ctl", "--", "true"], "create the named pipe first"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--json", *args]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_control_on_the_simulator_is_refused(
    fifos: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--json", "--source", "sim", "--control", f"fifo:{fifos[0]}"]) == 2
    assert "--control is for live perf sessions" in capsys.readouterr().err
