"""Everything a target runs is counted, as ``perf stat`` counts it, through the installed command.

Each test runs the same workload under ``perf stat`` and under ``sectormon --json`` and compares the
totals of the final frame: short-lived threads (inherited counters), job scripts and interpreter
shims (process trees), a command and an attached ``--pid``. Heavy thread churn must never stop the
run.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import perf_available, read_jsonl, sectormon_command, workload
from tests.workloads.peer import PERF_EVENTS, attach_gated, json_args, perf_value

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.syscall,
    pytest.mark.skipif(
        not perf_available(),
        reason="needs `perf stat` as the peer (apt-get install linux-perf, or linux-tools-$(uname -r))",
    ),
]

TIMEOUT = 240.0


def _sectormon_value(frames: list[dict[str, Any]], name: str) -> float:
    """The final frame's whole-run count of ``name`` (task-clock in ms, like perf stat's)."""
    assert frames and frames[-1]["final"] is True, "no final frame"
    count = float(frames[-1]["run"]["total"]["counts"][name])
    return count / 1e6 if name == "TASK_CLOCK" else count


def _sectormon_args(out: Path, *extra: str) -> list[str]:
    return json_args([sectormon_command()], out, *extra)


def _check(returncode: int, stderr: str) -> None:
    assert returncode == 0, stderr
    assert "not supported" not in stderr and "Traceback" not in stderr, stderr


def run_command(tmp_path: Path, name: str, argv: Sequence[str]) -> tuple[float, float]:
    """``name`` counted by perf stat and by sectormon on ``-- argv``, in that order."""
    peer = subprocess.run(
        ["perf", "stat", "-x,", "-e", PERF_EVENTS[name], "--", *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert peer.returncode == 0, peer.stderr
    out = tmp_path / "command.jsonl"
    ours = subprocess.run(
        [*_sectormon_args(out), "--", *argv], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    _check(ours.returncode, ours.stderr)
    return perf_value(peer.stderr, PERF_EVENTS[name]), _sectormon_value(read_jsonl(out.read_text())[1:], name)


def run_attached(tmp_path: Path, name: str, gated: Sequence[str]) -> tuple[float, float]:
    """``name`` counted by ``perf stat -p`` and by ``sectormon --pid`` on a gated workload."""
    peer, peer_err = attach_gated(
        ["perf", "stat", "-x,", "-e", PERF_EVENTS[name], "-p", "{pid}"], gated, None, TIMEOUT
    )
    assert peer == 0, peer_err
    out = tmp_path / "attached.jsonl"
    ours, ours_err = attach_gated(_sectormon_args(out, "--pid", "{pid}"), gated, out, TIMEOUT)
    _check(ours, ours_err)
    return perf_value(peer_err, PERF_EVENTS[name]), _sectormon_value(read_jsonl(out.read_text())[1:], name)


def _within(peer: float, ours: float, tolerance: float) -> None:
    assert abs(ours - peer) <= tolerance * peer, f"sectormon {ours:.1f} vs perf stat {peer:.1f}"


CHURN = [(1000, 3), (200, 29), (20, 280)]


@pytest.mark.slow
@pytest.mark.parametrize(("threads", "ms"), CHURN, ids=[f"{n}x{ms}ms" for n, ms in CHURN])
def test_short_threads_of_a_command_are_all_counted(tmp_path: Path, threads: int, ms: int) -> None:
    """Threads started one after another, each for a few ms of CPU: task-clock within 5 %."""
    _within(*run_command(tmp_path, "TASK_CLOCK", workload("churn.py", threads, ms, 1)), 0.05)


@pytest.mark.slow
@pytest.mark.parametrize(("threads", "ms"), CHURN, ids=[f"{n}x{ms}ms" for n, ms in CHURN])
def test_short_threads_of_an_attached_pid_are_all_counted(tmp_path: Path, threads: int, ms: int) -> None:
    """The same churn in a process attached with --pid before its threads start: within 5 %."""
    _within(*run_attached(tmp_path, "TASK_CLOCK", workload("churn.py", threads, ms, 1, "--gate")), 0.05)


def test_short_threads_quick(tmp_path: Path) -> None:
    """A short churn, command and --pid, for the default run."""
    _within(*run_command(tmp_path, "TASK_CLOCK", workload("churn.py", 300, 3, 1)), 0.05)
    _within(*run_attached(tmp_path, "TASK_CLOCK", workload("churn.py", 300, 3, 1, "--gate")), 0.05)


def test_a_job_script_counts_its_children(tmp_path: Path) -> None:
    """``sh -c 'python3 w.py & python3 w.py; wait'``: both interpreters count, within 5 %."""
    work = shlex.join(workload("churn.py", 4, 150, 2))
    _within(*run_command(tmp_path, "TASK_CLOCK", ["sh", "-c", f"{work} & {work}; wait"]), 0.05)


def _shim(tmp_path: Path) -> Path:
    """A pyenv-style shim: a bash script whose helper processes run before it execs the interpreter."""
    (tmp_path / "version").write_text("system\n")
    shim = tmp_path / "python3"
    shim.write_text(
        "#!/usr/bin/env bash\n"
        "set -e\n"
        'version="$(cat "$(dirname "$0")/version")"\n'
        'prefix="$(printf %s "$version" | tr -d " " | sed -e "s/^/py-/")"\n'
        'test -n "$prefix"\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    shim.chmod(0o755)
    return shim


@pytest.mark.slow
def test_page_faults_through_an_interpreter_shim(tmp_path: Path) -> None:
    """30,000 pages touched behind a shim: its helper processes' faults count too, within 2 %."""
    argv = [str(_shim(tmp_path)), str(Path(workload("pagefaults.py")[1])), "30000", "1"]
    _within(*run_command(tmp_path, "PAGE_FAULTS", argv), 0.02)


@pytest.mark.slow
def test_page_faults_with_the_interpreter_start_up(tmp_path: Path) -> None:
    """The interpreter itself, its start-up burst of faults included: within 2 %."""
    _within(*run_command(tmp_path, "PAGE_FAULTS", workload("pagefaults.py", 30000, 1)), 0.02)


def _heavy_churn(tmp_path: Path, run: int) -> None:
    """3,000 short threads, up to 100 alive at once: the run ends by itself, nothing aborted."""
    out = tmp_path / f"churn{run}.jsonl"
    if run % 2:
        ours, stderr = attach_gated(
            _sectormon_args(out, "--pid", "{pid}"), workload("churn.py", 3000, 1, 100, "--gate"), out, TIMEOUT
        )
    else:
        done = subprocess.run(
            [*_sectormon_args(out), "--", *workload("churn.py", 3000, 1, 100)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        ours, stderr = done.returncode, done.stderr
    _check(ours, stderr)
    frames = read_jsonl(out.read_text())[1:]
    assert _sectormon_value(frames, "TASK_CLOCK") > 3000 * 1 * 0.9, "the threads' work is missing"


@pytest.mark.slow
@pytest.mark.parametrize("run", range(20))
def test_heavy_thread_churn_never_aborts(tmp_path: Path, run: int) -> None:
    _heavy_churn(tmp_path, run)


@pytest.mark.parametrize("run", range(2))
def test_heavy_thread_churn_quick(tmp_path: Path, run: int) -> None:
    _heavy_churn(tmp_path, run)


def test_no_children_counts_the_command_alone(tmp_path: Path) -> None:
    """With --no-children a job script's child is left out (the shell alone is counted), while its
    threads would still be: the single-process view of before."""
    work = shlex.join(workload("churn.py", 2, 200, 1))
    out = tmp_path / "alone.jsonl"
    done = subprocess.run(
        [*_sectormon_args(out, "--no-children"), "--", "sh", "-c", f"{work}; true"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        env=dict(os.environ),
    )
    _check(done.returncode, done.stderr)
    assert _sectormon_value(read_jsonl(out.read_text())[1:], "TASK_CLOCK") < 100, "the child was counted"
