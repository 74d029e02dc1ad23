"""The installed `sectormon` TUI in a real terminal (tmux): what a person would see and type."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import sectormon_command, wait_until, workload

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")]

RECORDING = Path(__file__).resolve().parents[2] / "recordings" / "scenario-a-sectors-on.jsonl.gz"

ROTATING = Path(__file__).resolve().parents[1] / "fixtures" / "profiles" / "generic-rotating.yaml"


class Terminal:
    """One tmux session running a command; the pane stays open after it exits to show its status.

    Each on a tmux server of its own (``-S``, its socket removed at close): parallel tests sharing
    the default server raced, one starting a session as another's last session shut that server down."""

    def __init__(self, command: list[str], width: int = 160, height: int = 50) -> None:
        self.name = f"sectormon-e2e-{uuid.uuid4().hex[:8]}"
        self.socket = Path(tempfile.gettempdir()) / f"{self.name}.tmux"
        self.tmux = ["tmux", "-S", str(self.socket)]
        shell = f"{shlex.join(command)}; echo SECTORMON-EXIT=$?; sleep 60"
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), shell],
            check=True,
            env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True, check=True
        ).stdout

    def send(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)
        time.sleep(0.3)  # a lone Escape followed at once by a key would read as Alt+key

    def wait_for(self, *needles: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(n in screen for n in needles):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{needles} not on screen after {timeout} s:\n{screen}")

    def wait_gone(self, needle: str, timeout: float = 30.0) -> str:
        """Wait until ``needle`` has left the screen (a closed dialog is redrawn a frame later)."""
        deadline = time.monotonic() + timeout
        screen = self.screen()
        while needle in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = self.screen()
        assert needle not in screen, f"{needle!r} still on screen after {timeout} s:\n{screen}"
        return screen

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], check=False, capture_output=True)
        self.socket.unlink(missing_ok=True)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def test_live_dashboard_of_a_command_on_this_host(terminals: list[Terminal]) -> None:
    term = Terminal(
        [
            sectormon_command(),
            "--profile",
            str(ROTATING),  # the software events rotate, so the rotation bar has groups to show
            "--interval",
            "0.3",
            "--",
            *workload("threads.py", 30, 2, 1.0),
        ]
    )
    terminals.append(term)
    screen = term.wait_for("source perf", "profile generic", "unbound")
    assert "groups" in screen and "SW1" in screen
    assert "n/a" in screen  # no hardware PMU here: IPC and miss rates are n/a, not 0
    term.send("?")
    term.wait_for("Keys", "baseline")
    term.send("Escape")
    term.wait_gone("Keys")
    term.send("b")
    term.wait_for("baseline")
    term.send("q")
    term.wait_for("SECTORMON-EXIT=0", timeout=20)


def test_replay_with_timeline_controls(terminals: list[Terminal]) -> None:
    term = Terminal([sectormon_command(), "replay", str(RECORDING)])
    terminals.append(term)
    term.wait_for("source sim", "profile a64fx", "CMG0")
    term.send("Space")
    term.wait_for("paused")
    term.send("]")
    term.wait_for("2x")
    term.send("End")
    term.send("q")
    term.wait_for("SECTORMON-EXIT=0", timeout=20)


def test_default_demo_switches_the_sector_cache_live(terminals: list[Terminal]) -> None:
    term = Terminal([sectormon_command()])
    terminals.append(term)
    term.wait_for("source sim", "scenario-a", "sector preset on")
    term.send("c")
    # The header shows the configuration now, and the tables go on (drawn after the header).
    term.wait_for("sector preset off", "L1D dm")
    term.send("q")
    term.wait_for("SECTORMON-EXIT=0", timeout=20)


def _sectormon_pid(command_line: str) -> int:
    """The pid of the sectormon process whose arguments end with ``command_line``."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            text = " ".join(a.decode(errors="replace") for a in args if a)
            if "bin/sectormon" in text and text.endswith(command_line) and "tmux" not in text:
                return int(proc.name)
        time.sleep(0.1)
    raise AssertionError(f"no sectormon process running {command_line!r}")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "ctrl-c"])
def test_a_signal_or_ctrl_c_quits_like_q(terminals: list[Terminal], tmp_path: Path, how: str) -> None:
    """kill, a closed terminal or Ctrl-C: the terminal is restored, the recording gets its end
    mark and the launched command is stopped (SIGTERM left the screen raw, the file cut and the
    command orphaned; Ctrl-C only showed Textual's hint)."""
    recording = tmp_path / "run.jsonl"
    marker = uuid.uuid4().hex[:8]
    child = f"import time; time.sleep(120)  # {marker}"
    command = [
        sectormon_command(),
        "--profile",
        "generic",
        "--record",
        str(recording),
        "--",
        "python3",
        "-c",
        child,
    ]
    term = Terminal(command)
    terminals.append(term)
    term.wait_for("source perf", "REC")
    if how == "ctrl-c":
        term.send("C-c")
    else:
        os.kill(_sectormon_pid(child), getattr(signal, how))
    if how != "SIGHUP":
        screen = term.wait_for("SECTORMON-EXIT=0", timeout=20)
        assert "source perf" not in screen  # the alternate screen is gone

    def last_record() -> dict[str, Any] | None:
        text = recording.read_text()
        lines = text[: text.rfind("\n") + 1].splitlines()
        return json.loads(lines[-1]) if lines else None

    wait_until(lambda: (last_record() or {}).get("kind") == "end", "the recording's end mark")

    def orphans() -> list[Path]:  # the command itself, not the tmux shell that launched sectormon
        return [
            p
            for p in Path("/proc").iterdir()
            if p.name.isdigit()
            and _cmdline(p).startswith(b"python3\0-c\0")
            and marker.encode() in _cmdline(p)
            and "Z" not in _state(p)
        ]

    # The command is stopped after the end mark is written (SIGTERM, then SIGKILL 2 s later).
    wait_until(lambda: not orphans(), "the launched command ended with sectormon", timeout=30)


def _state(proc: Path) -> str:
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_a_launched_command_neither_draws_over_the_tui_nor_takes_its_keys(terminals: list[Terminal]) -> None:
    """Its output goes to a log shown after the TUI ends, its stdin is /dev/null (like a job's)."""
    child = (
        "import sys, time\n"
        "for i in range(4):\n"
        "    print('CHATTY-OUT', i, flush=True); print('CHATTY-ERR', i, file=sys.stderr, flush=True)\n"
        "    time.sleep(0.3)\n"
        "print('STDIN-GOT', repr(sys.stdin.read(3)))\n"
    )
    term = Terminal([sectormon_command(), "--profile", "generic", "--", "python3", "-c", child])
    terminals.append(term)
    term.wait_for("source perf")
    term.send("x", "y", "k")  # keys the monitor does not bind
    screen = term.wait_for("session ended")
    assert "CHATTY" not in screen
    term.send("q")
    screen = term.wait_for("SECTORMON-EXIT=0", timeout=20)
    assert "sectormon: the command's output:" in screen
    assert all(f"CHATTY-OUT {i}" in screen and f"CHATTY-ERR {i}" in screen for i in range(4))
    assert "STDIN-GOT ''" in screen  # the keys typed were the TUI's
