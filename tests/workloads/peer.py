"""Counting a workload with ``perf stat`` and with sectormon side by side: shared by the process-tree
end-to-end tests and ``benchmarks/bench_tree.py``, so both read the peer and attach the same way."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from tests.e2e.helpers import perf_fds

PERF_EVENTS = {"TASK_CLOCK": "task-clock", "PAGE_FAULTS": "page-faults"}
"""sectormon's generic event names and ``perf stat``'s for the same counts."""


def json_args(sectormon: Sequence[str], out: Path, *extra: str) -> list[str]:
    """``sectormon --json -o OUT`` with the generic profile at 0.5 s frames, then ``extra``."""
    return [*sectormon, "--json", "-o", str(out), "--profile", "generic", "--interval", "0.5", *extra]


def perf_value(stderr: str, event: str) -> float:
    """The count of ``event`` in ``perf stat -x,`` output (task-clock in ms, as perf prints it)."""
    for line in stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] == event:
            return float(fields[0])
    raise ValueError(f"perf stat printed no {event}: {stderr}")


def final_count(out: Path, name: str) -> float | None:
    """The whole-run count of ``name`` in the final frame of a ``--json -o`` stream (task-clock in
    ms, like perf stat's); ``None`` when the stream has no final frame."""
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    if len(lines) < 2 or not lines[-1].get("final"):
        return None
    count = float(lines[-1]["run"]["total"]["counts"][name])
    return count / 1e6 if name == "TASK_CLOCK" else count


def attach_gated(
    tool: list[str], gated: Sequence[str], ready: Path | None, timeout: float | None = None
) -> tuple[int, str]:
    """Start ``gated`` (a workload that prints its pid and waits for a line), attach ``tool``
    (``{pid}`` in its arguments) to it, let the workload go once the tool counts, wait for both;
    the tool's exit status and stderr. ``ready``: a file the tool writes its header to."""
    work = subprocess.Popen(list(gated), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert work.stdin is not None and work.stdout is not None
    pid = work.stdout.readline().strip()
    counter = subprocess.Popen(
        [arg.replace("{pid}", pid) for arg in tool], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while ready is not None and time.monotonic() < deadline and counter.poll() is None:
        if ready.exists() and ready.read_text().count("\n") >= 1:
            break  # the header is out: the session is open
        time.sleep(0.05)
    # perf stat says nothing when it is attached: its counters are open once it holds perf fds.
    while time.monotonic() < deadline and counter.poll() is None and not perf_fds(counter.pid):
        time.sleep(0.02)
    work.stdin.write("go\n")
    work.stdin.close()
    work.wait(timeout=timeout)
    _, stderr = counter.communicate(timeout=timeout)
    return counter.returncode, stderr
