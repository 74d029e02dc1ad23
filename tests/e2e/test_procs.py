"""The ``procs`` scope end to end: a job script's two children, named by the MPI rank their
environment gives (``OMPI_COMM_WORLD_RANK`` and ``PMI_RANK``), each with its own counts."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import first_frame, read_jsonl, sectormon_command

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]

# Each child waits for the go file before its work: a process's counts of its own start when a
# poll finds it; what it ran before is in its parent's inherited totals. The test creates the file
# once a frame shows both ranks (a fixed wait lost part of the work to the parent under load).
BUSY = (
    "import os, sys, time\n"
    "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
    "t = time.thread_time()\n"
    "while time.thread_time() - t < 0.5: pass\n"
)


def _ranks(frame: dict[str, Any]) -> set[int]:
    return {proc["rank"] for proc in frame.get("procs", {}).values() if proc["rank"] is not None}


def test_procs_scope_carries_the_ranks_of_two_children(tmp_path: Path) -> None:
    python, busy, go = shlex.quote(sys.executable), shlex.quote(BUSY), shlex.quote(str(tmp_path / "go"))
    job = f"OMPI_COMM_WORLD_RANK=0 {python} -c {busy} {go} & PMI_RANK=1 {python} -c {busy} {go} & wait"
    out = tmp_path / "frames.jsonl"
    monitor = subprocess.Popen(
        [sectormon_command(), "--json", "-o", str(out), "--profile", "generic", "--interval", "0.2",
         "--", "sh", "-c", job],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        first_frame(out, lambda frame: _ranks(frame) == {0, 1})
        (tmp_path / "go").touch()
        _, stderr = monitor.communicate(timeout=60)
    finally:
        if monitor.poll() is None:
            monitor.kill()
            monitor.wait()
    assert monitor.returncode == 0, stderr
    final = read_jsonl(out.read_text())[-1]
    assert final["final"] is True
    by_rank = {proc["rank"]: proc for proc in final["procs"].values() if proc["rank"] is not None}
    assert set(by_rank) == {0, 1}
    for proc in by_rank.values():
        assert proc["command"].startswith("python")
        assert proc["counts"]["TASK_CLOCK"] / 1e9 == pytest.approx(0.5, rel=0.1)
    assert final["thread_coverage"] == pytest.approx(1.0, abs=0.05)
