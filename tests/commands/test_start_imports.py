"""What a quick start leaves out: modules that ``sectormon stat``, ``--version`` and ``--pid`` must
not import.

A start takes as long as the modules it imports (issue 31: ``sectormon stat`` within 4x ``perf
stat``, measured by benchmarks/bench_start.py). These tests pin that as a state, not as a time:
each command runs in a fresh interpreter, and what it imported is read from ``sys.modules`` once
the command has ended.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.regions.regions_helpers import need_perf

REPO = Path(__file__).resolve().parents[2]

NEVER_ON_A_COUNTED_RUN = (
    "textual",  # the TUI
    "sectormon.ui",
    "prometheus_client",  # --openmetrics
    "sectormon.export.server",
    "psutil",  # the process list and --proxy's thread times
    "sectormon.io.recording",  # --record
    "sectormon.io.reader",  # replay
    "difflib",  # the did-you-mean of a misspelt name
    "platform",  # os.uname and sys.version say what the header needs
    "secrets",  # os.urandom names the region markers' socket
    "hashlib",
    "sectormon.sources.sim.source",  # the monitor's parser shows the simulator's defaults alone
    "sectormon.sim.trace",
)
"""Modules that a run counting this host imports only when an option or a mistake asks for them."""

NEVER_ON_STAT = (  # the monitor's parser has the simulator's options, and they import the simulator
    *NEVER_ON_A_COUNTED_RUN,
    "sectormon.commands.monitor",  # the monitor's options bring the simulator's
    "sectormon.commands.options.sim",
    "sectormon.sim",
    "sectormon.sources.sim",
    "sectormon.io",  # stat writes no JSON stream unless --json
    "tempfile",  # files written whole (-o FILE), a command's log under the TUI, the simulator's traces
)


def imported(argv: Sequence[str], watched: Sequence[str], tmp_path: Path) -> list[str]:
    """The modules of ``watched`` (packages: any module under them) that ``sectormon ARGV`` imported."""
    out = tmp_path / "imported.json"
    code = (
        "import json, sys\n"
        "from sectormon.cli import main\n"
        f"status = main({list(argv)!r})\n"
        f"watched = {list(watched)!r}\n"
        "found = sorted(w for w in watched if any(m == w or m.startswith(w + '.') for m in sys.modules))\n"
        f"open({str(out)!r}, 'w').write(json.dumps(found))\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(out.read_text())
    return found


def test_the_version_imports_no_command(tmp_path: Path) -> None:
    watched = (
        "sectormon.commands.front_end",
        "sectormon.commands.monitor",
        "sectormon.session.live",
        "yaml",
        "shutil",
        "difflib",
    )
    assert imported(["--version"], watched, tmp_path) == []


NEVER_ON_QUICK_STAT = (  # sectormon.commands.stat_quick: perf's own habit, without the engine
    *NEVER_ON_STAT,
    "argparse",
    "typing",
    "dataclasses",
    "yaml",
    "sectormon.profiles.model",
    "sectormon.session",
    "sectormon.rotation",
    "sectormon.metrics",
    "sectormon.regions.server",  # until a thread of the program marks
    "sectormon.perf.group",
)


@pytest.mark.syscall
def test_stat_of_a_command_imports_neither_the_monitor_nor_the_optional_parts(tmp_path: Path) -> None:
    need_perf()
    argv = ["stat", "--profile", "generic", "-e", "task-clock", "--", "true"]  # the engine's way
    assert imported(argv, NEVER_ON_STAT, tmp_path) == []


@pytest.mark.syscall
def test_the_quick_stat_imports_nothing_of_the_engine(tmp_path: Path) -> None:
    need_perf()
    argv = ["stat", "-e", "task-clock,page-faults", "-x", ",", "--", "true"]
    assert imported(argv, NEVER_ON_QUICK_STAT, tmp_path) == []


@pytest.mark.syscall
def test_the_json_stream_of_a_pid_imports_no_optional_part(tmp_path: Path) -> None:
    need_perf()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        argv = ["--json", "--count", "1", "--interval", "0.05", "--timeslice", "0.05"]
        assert imported([*argv, "--pid", str(sleeper.pid)], NEVER_ON_A_COUNTED_RUN, tmp_path) == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_check_fails_when_a_watched_module_is_imported(tmp_path: Path) -> None:
    """The helper sees an import (a test that cannot fail would pin nothing)."""
    assert imported(["--version"], ("sectormon.cli", "sectormon.commands"), tmp_path) == [
        "sectormon.cli",
        "sectormon.commands",
    ]
