"""Launching a command gated: its exec, a failed exec, its end and how that end reads."""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys
from pathlib import Path

import pytest

from sectormon.sources.perf.launch import ExecFailed, GatedCommand, describe_exit, shell_status


@pytest.mark.parametrize(
    ("code", "words", "status"),
    [
        (0, "the command exited with status 0", 0),
        (3, "the command exited with status 3", 3),
        (-signal.SIGKILL, "the command was killed by SIGKILL (exit status 137)", 137),
        (-99, "the command was killed by signal 99 (exit status 227)", 227),
    ],
)
def test_an_end_in_words_and_as_a_shell_says_it(code: int, words: str, status: int) -> None:
    assert describe_exit(code) == words
    assert shell_status(code) == status


def test_a_failed_exec_is_an_os_error_with_its_errno(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus"
    bogus.write_bytes(b"\x00\x01not an executable\n")
    bogus.chmod(bogus.stat().st_mode | stat.S_IXUSR)
    command = GatedCommand([str(bogus)], dict(os.environ), (None, None, None))
    command.launch()
    assert command.gated
    with pytest.raises(ExecFailed) as failed:
        command.release()
    assert failed.value.errno == errno.ENOEXEC and failed.value.strerror == os.strerror(errno.ENOEXEC)
    assert command.reap(block=False)  # reaped by the failed release
    assert command.exit_code == 127 and not command.stopped


def test_a_running_command_ended_by_the_session_is_stopped(tmp_path: Path) -> None:
    fifo = tmp_path / "up"
    os.mkfifo(fifo)
    code = f"open({str(fifo)!r}, 'w').close(); import time; time.sleep(60)"
    command = GatedCommand([sys.executable, "-c", code], dict(os.environ), (None, None, None))
    command.launch()
    command.release()
    with fifo.open() as up:  # opened once the command runs
        up.read()
    command.end()
    assert command.stopped and command.exit_code == -signal.SIGTERM
    command.kill()  # after its end: nothing left to kill
