"""The collector's pause during a start (sectormon.commands.startup) and the main entry's use of it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from sectormon import cli
from sectormon.commands import startup


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, whatever the test did to it."""
    was_enabled = gc.isenabled()
    try:
        yield
    finally:
        startup.done()
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_a_paused_start_freezes_its_objects_and_collects_again(collector: None) -> None:
    gc.enable()
    startup.pause()
    assert not gc.isenabled()
    made_during_the_start = [object() for _ in range(10)]
    startup.done()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made_during_the_start)
    gc.unfreeze()
    startup.done()  # a second end changes nothing
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_collector_turned_off_by_the_caller_stays_off(collector: None) -> None:
    gc.disable()
    startup.pause()
    startup.done()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


def test_main_pauses_only_for_the_process_command_line(
    collector: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gc.enable()
    seen: list[bool] = []
    monkeypatch.setattr(cli, "_main", lambda argv: seen.append(gc.isenabled()) or 0)
    monkeypatch.setattr("sys.argv", ["sectormon", "--version"])
    assert cli.main() == 0
    assert cli.main(["--version"]) == 0
    assert seen == [False, True]  # paused under the process's own argv, not for a caller's
    assert gc.isenabled()  # and collecting again once main returns
