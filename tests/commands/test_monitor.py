"""The live monitor's command line: what it refuses before anything starts."""

from __future__ import annotations

import pytest

from sectormon.cli import main


@pytest.mark.parametrize("argv", [["--", ""], ["--"], ["--", " "], ["--", "", "app"], [""]])
def test_an_empty_command_is_refused_not_replaced_by_the_simulator(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``sectormon --json -- "$APP"`` with APP unset monitored the simulated A64FX instead."""
    assert main(["--json", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("sectormon: no program name after --"), err
