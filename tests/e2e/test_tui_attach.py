"""``p`` in the installed TUI under tmux: the process list over a live session, its tree, a filter,
Enter attaching the monitor to another real process (a second session, its own recording), the
thread list (``T``) of the new target, at 80x24 and 160x50."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import sectormon_command
from tests.e2e.test_tui import Terminal

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")]


@pytest.fixture
def sleepers() -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    """Two processes to count, each with a token of its own in its command line."""
    started = []
    for _ in range(2):
        token = f"attach{uuid.uuid4().hex[:10]}"
        started.append(
            (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", token]), token)
        )
    yield started
    for process, _token in started:
        process.kill()
        process.wait()


def _target_pid(path: Path) -> int:
    with gzip.open(path, "rt") as handle:
        return int(json.loads(handle.readline())["target"]["pid"])


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
def test_p_attaches_the_monitor_to_another_process(
    sleepers: list[tuple[subprocess.Popen[bytes], str]], tmp_path: Path, size: tuple[int, int]
) -> None:
    (first, _), (second, token) = sleepers
    record = tmp_path / "run.jsonl.gz"
    command = [sectormon_command(), "--pid", str(first.pid), "--interval", "0.3", "--record", str(record)]
    term = Terminal(command, *size)
    try:
        term.wait_for(f"pid {first.pid}")
        term.send("p")
        term.wait_for("processes", "Enter ends this session")
        term.send("t")
        term.wait_for("tree")
        term.send("/")
        term.send(*token[-8:])
        term.send("Enter")
        term.wait_for("1 of ", str(second.pid))  # the command line is cut at 80 columns: the pid says it
        term.send("Enter")
        term.wait_for(f"pid {second.pid}", timeout=60)
        term.send("T")
        term.wait_for("threads", "AFFINITY", str(second.pid))
        term.send("Escape")
        term.wait_gone("AFFINITY")
        term.send("q")
        screen = term.wait_for("SECTORMON-EXIT=0", timeout=30)
        assert f"attaching to pid {second.pid}" in screen
    finally:
        term.close()
    assert _target_pid(record) == first.pid
    assert _target_pid(tmp_path / f"run-pid{second.pid}.jsonl.gz") == second.pid
