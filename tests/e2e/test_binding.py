"""Binding through the installed command: --bind pins a launched program's threads, every frame
says per thread whether it is bound and how often it migrated, a recording keeps that, and a bad
--bind is one line and exit status 2."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon, workload

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]

NOT_BOUND = "some threads are not bound to a single CPU"


def needs_two_cpus() -> None:
    if not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")


def monitor(*options: str) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """Frames, stderr and the workload's report (its stdout goes to stderr under --json)."""
    done = run_sectormon("--json", "--interval", "0.5", *options, "--", *workload("binding.py", 1.5))
    assert done.returncode == 0, done.stderr
    report = next(json.loads(line) for line in done.stderr.splitlines() if line.startswith('{"main"'))
    records = read_jsonl(done.stdout)
    assert records[0]["target"].get("bind") == ([0, 1] if "--bind" in options else None)
    frames = [r for r in records if r["schema"].startswith("sectormon/frame/")]
    return frames, done.stderr, report


def bindings(frame: dict[str, Any], report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {who: frame["threads"][str(report[who]["tid"])]["binding"] for who in ("main", "worker")}


def test_bind_pins_both_threads_and_the_frames_say_so(tmp_path: Path) -> None:
    needs_two_cpus()
    recording = tmp_path / "bound.jsonl"
    frames, stderr, report = monitor("--bind", "0,1", "--record", str(recording))
    assert (report["main"]["cpus"], report["worker"]["cpus"]) == ([0], [1])
    final = bindings(frames[-1], report)
    assert final["main"] == {"bound": True, "cpus": [0], "migrations": 0, "migrations_from": "sched"}
    assert final["worker"]["bound"] is True and final["worker"]["cpus"] == [1]
    assert NOT_BOUND not in stderr and not any(f.get("warnings") for f in frames)

    replayed = run_sectormon("replay", "--json", str(recording))
    assert replayed.returncode == 0, replayed.stderr
    last = [r for r in read_jsonl(replayed.stdout) if r["schema"].startswith("sectormon/frame/")][-1]
    assert bindings(last, report) == final  # the recording keeps them


def test_without_bind_the_unbound_worker_shows_and_is_warned_about() -> None:
    needs_two_cpus()
    frames, stderr, report = monitor()
    assert report["worker"]["cpus"] == [0, 1]
    final = bindings(frames[-1], report)
    assert final["worker"]["bound"] is False and final["worker"]["cpus"] == [0, 1]
    assert final["worker"]["migrations"] is not None and final["worker"]["migrations"] >= 0
    assert NOT_BOUND in stderr


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--bind", "0,4096", "--", "true"], "sectormon: --bind: CPU 4096 is not an online compute CPU"),
        (["--bind", "0-", "--", "true"], "sectormon: --bind: bad CPU list '0-'"),
        (["--bind", "0", "--pid", str(os.getpid())], "sectormon: --bind pins the threads of a command"),
        (["--bind", "0"], "sectormon: --bind pins a launched command's threads; the simulator has none"),
    ],
)
def test_a_bad_bind_is_one_line_and_exit_2(options: list[str], said: str) -> None:
    done = run_sectormon("--json", *options)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith(said)
