"""Ctrl-C during ``compare`` (or a replay) that reads with reader processes: exit 130, no traceback
from a reader, no reader left behind.

A terminal sends SIGINT to its whole foreground process group; the test starts sectormon in a
process group of its own and signals that group the same way, at several moments of a reader's
life (interpreter start-up, imports, reading).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import sectormon_command

REPO = Path(__file__).resolve().parents[2]
RECORDING = REPO / "recordings" / "scenario-a-sectors-on.jsonl.gz"


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _session_of(pid: int) -> int | None:
    """The session of a reader process once it runs the reader (between fork and exec it is
    still the parent's copy), ``None`` when it is gone."""
    for _ in range(1000):
        try:
            if b"replay_worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return os.getsid(pid)
        except OSError:
            return None
    return None


@pytest.mark.e2e
@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05, 0.1, 0.2])
def test_ctrl_c_during_compare_is_quiet_and_stops_the_readers(delay: float) -> None:
    env = dict(os.environ, SECTORMON_REPLAY_WORKER="2")  # a reader process even for a small file
    proc = subprocess.Popen(
        [sectormon_command(), "compare", str(RECORDING), str(RECORDING)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
        env=env,
    )
    children: list[int] = []
    deadline = time.monotonic() + 30
    while not children and proc.poll() is None and time.monotonic() < deadline:
        children = _children(proc.pid)
    assert children, "compare started no reader process"
    reader_sessions = {_session_of(c) for c in children} - {None}
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at the terminal does
    _, err = proc.communicate(timeout=30)
    text = err.decode(errors="replace")
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    # 0: it had finished before the signal; -SIGINT: the signal came while the interpreter was
    # shutting down, after its handler was gone (what a shell reports as ^C too).
    assert proc.returncode in (0, 130, -signal.SIGINT), text
    # A terminal's Ctrl-C reaches the readers only through the group: they are not in it.
    assert proc.pid not in reader_sessions
    for child in children:
        for _ in range(100):
            if not Path(f"/proc/{child}").exists() or "Z" in _state(child):
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"reader process {child} outlived compare")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"
