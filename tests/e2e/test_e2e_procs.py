"""The ``procs`` scope end to end: a job script's two children, named by the MPI rank their
environment gives (``OMPI_COMM_WORLD_RANK`` and ``PMI_RANK``), each with its own counts."""

from __future__ import annotations

import shlex
import sys

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]

# Each child waits before its work: a process's counts of its own start when a poll finds it
# (every 0.1 s at most); what it ran before is in its parent's inherited totals.
BUSY = "import time\ntime.sleep(0.3)\nt = time.thread_time()\nwhile time.thread_time() - t < 0.5: pass\n"


def test_procs_scope_carries_the_ranks_of_two_children() -> None:
    python, busy = shlex.quote(sys.executable), shlex.quote(BUSY)
    job = f"OMPI_COMM_WORLD_RANK=0 {python} -c {busy} & PMI_RANK=1 {python} -c {busy} & wait"
    run = run_sectormon("--json", "--profile", "generic", "--", "sh", "-c", job, timeout=60)
    assert run.returncode == 0, run.stderr
    final = read_jsonl(run.stdout)[-1]
    assert final["final"] is True
    by_rank = {proc["rank"]: proc for proc in final["procs"].values() if proc["rank"] is not None}
    assert set(by_rank) == {0, 1}
    for proc in by_rank.values():
        assert proc["command"].startswith("python")
        assert proc["counts"]["TASK_CLOCK"] / 1e9 == pytest.approx(0.5, rel=0.1)
    assert final["thread_coverage"] == pytest.approx(1.0, abs=0.05)
