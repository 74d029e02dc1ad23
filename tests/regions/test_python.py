"""Python targets: ``with sectormon.regions.region(...)`` and ``@region(...)`` through the same library."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sectormon.regions import region
from tests.regions.regions_helpers import counting

TARGET = textwrap.dedent(
    """
    import mmap, os, threading
    from sectormon.regions import region

    PAGE = os.sysconf("SC_PAGESIZE")

    def touch(pages):
        block = mmap.mmap(-1, pages * PAGE)
        block.madvise(mmap.MADV_NOHUGEPAGE)
        for i in range(pages):
            block[i * PAGE] = 1
        block.close()

    @region("decorated", 3)
    def work():
        touch(400)

    with region("solve"):
        touch(2000)
    for _ in range(2):
        work()
    thread = threading.Thread(target=lambda: region("in_thread")(touch)(300))
    thread.start()
    thread.join()
    print("ok")
    """
)


def run_target(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TARGET], env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.syscall
def test_python_regions_count_their_pages_per_thread() -> None:
    with counting() as endpoint:
        run = run_target({**os.environ, **endpoint.environment()})
        snapshot = endpoint.read()
    assert (run.returncode, run.stdout, run.stderr) == (0, "ok\n", "")
    (solve,) = snapshot.of("solve")
    (decorated,) = snapshot.of("decorated", 3)
    (in_thread,) = snapshot.of("in_thread")
    assert (solve.calls, decorated.calls, in_thread.calls) == (1, 2, 1)
    assert in_thread.tid != solve.tid == solve.pid
    # the interpreter's own allocations inside the region add a few faults
    assert solve.counts()["page-faults"] == pytest.approx(2000, rel=0.02)
    assert decorated.counts()["page-faults"] == pytest.approx(800, rel=0.02)
    assert in_thread.counts()["page-faults"] == pytest.approx(300, rel=0.05)


def test_outside_sectormon_a_python_region_does_nothing() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECTORMON_")}
    run = run_target(env)
    assert (run.returncode, run.stdout, run.stderr) == (0, "ok\n", "")
    with region("here"):
        pass  # in the test process itself: no sectormon around it either
