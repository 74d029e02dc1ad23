"""``p`` in the monitor, the command's side: the next session's options (same as given, on the
chosen pid, the recording not written over), what the list says first, the options that cannot
attach, and ``monitor.run`` starting a real second session on a real child process."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sectormon.cli import build_parser
from sectormon.commands import monitor
from sectormon.commands.reattach import Reattach, recording_for
from sectormon.errors import SectormonError


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def options(*argv: str) -> argparse.Namespace:
    return build_parser(None).parse_args(list(argv))


def offer(*argv: str) -> Reattach:
    return Reattach(options(*argv), monitor._attach_check)


def test_the_next_recording_takes_the_pid_before_its_extensions_and_never_overwrites(tmp_path: Path) -> None:
    run = str(tmp_path / "run.jsonl.gz")
    assert recording_for(run, 42) == str(tmp_path / "run-pid42.jsonl.gz")
    (tmp_path / "run-pid42.jsonl.gz").write_bytes(b"")
    assert recording_for(run, 42) == str(tmp_path / "run-pid42-2.jsonl.gz")
    assert recording_for(str(tmp_path / "plain"), 7) == str(tmp_path / "plain-pid7")
    assert recording_for(str(tmp_path / ".jsonl"), 7) == str(tmp_path / ".jsonl-pid7")


def test_the_chosen_process_gets_the_options_as_given(child: subprocess.Popen[bytes], tmp_path: Path) -> None:
    record = str(tmp_path / "run.jsonl")
    given = options("--interval", "0.5", "--profile", "generic", "--record", record, "--", "sleep", "9")
    reattach = Reattach(given, monitor._attach_check)
    given.interval = 0.5  # the run reads the time options in place: the offer kept them as given
    assert reattach.next_options() is None  # nothing chosen yet
    assert reattach.request(child.pid) is None
    after = reattach.next_options()
    assert after is not None
    assert after.pid == (child.pid,) and after.command == [] and after.cpus is None and after.bind is None
    assert after.interval == "0.5" and after.profile == "generic"
    assert after.record == str(tmp_path / f"run-pid{child.pid}.jsonl")
    note = reattach.note()
    assert f"{record} is closed; the next session records to {tmp_path / 'run-pidPID.jsonl'}" in note
    assert "the command sectormon launched is stopped" in note and note.endswith(
        "Escape returns to the monitor."
    )


def test_a_process_that_ended_or_sectormon_itself_is_not_attached(child: subprocess.Popen[bytes]) -> None:
    reattach = offer("--pid", "1")
    child.kill()
    child.wait()
    assert reattach.request(child.pid) == f"pid {child.pid} has ended: pick another process"
    assert reattach.request(os.getpid()) is not None and reattach.next_options() is None


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--source", "sim"], "--source sim simulates its own threads"),
        (["--warmup", "0.1"], "--warmup set the simulated A64FX"),
    ],
)
def test_options_that_cannot_count_a_pid_refuse_before_the_list_opens(argv: list[str], said: str) -> None:
    refusal = offer(*argv).refusal()
    assert (
        refusal is not None and refusal.startswith("cannot attach with these options: ") and said in refusal
    )


def test_the_simulator_demo_and_a_pid_session_can_attach() -> None:
    assert offer().refusal() is None
    assert offer("--pid", "1", "--interval", "0.5").refusal() is None


def test_run_starts_the_next_session_on_the_chosen_process(
    child: subprocess.Popen[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first session (the simulator demo) asks to attach as its TUI would; ``run`` then opens
    a real perf session on the child with the same options and its own recording."""
    runs: list[dict[str, Any]] = []

    def run_session(session: Any, _output: object, *, attach: Reattach, **_kw: object) -> int:
        runs.append({"target": dict(session.header.target.fields), "record": session.recording_path()})
        session.discard()
        if len(runs) == 1:
            assert attach.request(child.pid) is None
        return 0

    monkeypatch.setattr(monitor, "run_session", run_session)
    record = str(tmp_path / "run.jsonl.gz")
    status = monitor.run(options("--headless", "--record", record, "--interval", "0.5", "--count", "1"))
    assert status == 0 and len(runs) == 2
    assert runs[0]["record"] == record and runs[0]["target"].get("pid") != child.pid
    assert runs[1]["target"]["pid"] == child.pid and runs[1]["target"]["mode"] == "pid"
    assert runs[1]["record"] == str(tmp_path / f"run-pid{child.pid}.jsonl.gz")


def test_a_chosen_process_that_ends_before_its_session_starts_is_one_line_of_error(
    child: subprocess.Popen[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_session(session: Any, _output: object, *, attach: Reattach, **_kw: object) -> int:
        session.discard()
        assert attach.request(child.pid) is None
        child.kill()
        child.wait()
        return 0

    monkeypatch.setattr(monitor, "run_session", run_session)
    with pytest.raises(SectormonError) as raised:
        monitor.run(options("--headless", "--record", str(tmp_path / "run.jsonl"), "--count", "1"))
    assert str(child.pid) in str(raised.value) and "\n" not in str(raised.value)
