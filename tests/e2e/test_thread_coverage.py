"""Thread coverage end to end: the share of the target's CPU time that was counted, checked against
the target's own account of which threads ran how long (real perf counters, real /proc)."""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sectormon.data.frames import EMPTY_SCOPE, Frame, ThreadTime, WindowStats
from sectormon.ui.context import thread_coverage_note
from tests.e2e.helpers import first_frame, read_jsonl, sectormon_command, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.syscall, pytest.mark.timing]  # early threads found in time

BUSY_S = 0.4
EARLY = LATE = 3

# Threads started before the test lowers sectormon's fd limit are counted; those started after
# it find no fd and are left out. Every thread waits at a barrier after its busy loop, so none
# ends (which would free fds and let a late one be counted) before all the work is done. The
# target writes each worker's CPU time by its tid and the process's own total.
TARGET = """
import json, os, resource, sys, threading, time
ready, go, out = sys.argv[1:4]
busy, n_early, n_late = float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
times = {}
finished = threading.Barrier(n_early + n_late)
def work(wait):
    while wait and not os.path.exists(go):
        time.sleep(0.01)
    start = time.thread_time()
    while time.thread_time() - start < busy:
        pass
    times[threading.get_native_id()] = time.thread_time()
    finished.wait()
early = [threading.Thread(target=work, args=(True,)) for _ in range(n_early)]
for t in early:
    t.start()
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
late = [threading.Thread(target=work, args=(False,)) for _ in range(n_late)]
for t in late:
    t.start()
for t in early + late:
    t.join()
usage = resource.getrusage(resource.RUSAGE_SELF)
json.dump({"threads": times, "total": usage.ru_utime + usage.ru_stime}, open(out, "w"))
"""


def _run(tmp_path: Path, *, limit_fds: bool) -> tuple[dict[str, Any], dict[str, Any], str]:
    ready, go, truth, frames = (tmp_path / name for name in ("ready", "go", "truth.json", "frames.jsonl"))
    proc = subprocess.Popen(
        [sectormon_command(), "--json", "-o", str(frames), "--profile", "generic", "--interval", "0.5",
         "--", sys.executable, "-c", TARGET, str(ready), str(go), str(truth),
         str(BUSY_S), str(EARLY), str(LATE)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(ready.exists, "the early threads started")
        # The early threads (they wait for go) are found and counted: a frame has their rows.
        first_frame(frames, lambda frame: len(frame["threads"]) > EARLY)
        if limit_fds:
            limit = len(os.listdir(f"/proc/{proc.pid}/fd")) + 1  # one to spare: no group fits
            resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (limit, limit))
        go.touch()
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    return read_jsonl(frames.read_text())[-1], json.loads(truth.read_text()), stderr


def _true_counted_share(final: dict[str, Any], truth: dict[str, Any]) -> tuple[float, int]:
    """The share of the target's CPU time on threads sectormon counted (a thread whose counted
    task-clock is under half its CPU time was left out), and how many were left out."""
    left_out = [
        cpu
        for tid, cpu in truth["threads"].items()
        if final["threads"].get(tid, {}).get("counts", {}).get("TASK_CLOCK", 0.0) / 1e9 < cpu / 2
    ]
    return (truth["total"] - sum(left_out)) / truth["total"], len(left_out)


def test_threads_that_find_no_fd_are_still_counted_in_their_process(tmp_path: Path) -> None:
    """Threads opened with no fd left get no row of their own, but the inherited groups of the
    command's main thread (which take no fd) count them: thread coverage stays near 1 and the
    total is the process's own account."""
    final, truth, stderr = _run(tmp_path, limit_fds=True)
    assert sum("EMFILE" in line for line in stderr.splitlines()) == 1
    assert sum("pid" in line and "totals" in line for line in stderr.splitlines() if "EMFILE" in line) == 1
    _, left_out = _true_counted_share(final, truth)
    assert left_out == LATE  # no thread rows of their own
    assert final["thread_coverage"] == pytest.approx(1.0, abs=0.05)
    assert final["run"]["total"]["counts"]["TASK_CLOCK"] / 1e9 == pytest.approx(truth["total"], rel=0.05)


BUSY = "import time\nt = time.thread_time()\nwhile time.thread_time() - t < 0.4: pass\n"


def test_child_processes_left_out_show_in_thread_coverage(tmp_path: Path) -> None:
    """With --no-children a job script's two children run uncounted: the counted share is the
    shell's own (about 0), and thread coverage says so within 5 points."""
    frames = tmp_path / "frames.jsonl"
    python, busy = shlex.quote(sys.executable), shlex.quote(BUSY)
    done = subprocess.run(
        [sectormon_command(), "--json", "-o", str(frames), "--profile", "generic", "--no-children",
         "--", "sh", "-c", f"{python} -c {busy}; {python} -c {busy}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    final = read_jsonl(frames.read_text())[-1]
    counted = final["run"]["total"]["counts"]["TASK_CLOCK"] / 1e9
    assert final["thread_time"]["kernel_s"] >= 0.8
    assert counted < 0.05  # the shell alone
    assert final["thread_coverage"] == pytest.approx(counted / final["thread_time"]["kernel_s"], abs=0.05)
    assert final["thread_coverage"] < 0.1


def test_a_fully_counted_run_has_thread_coverage_near_one(tmp_path: Path) -> None:
    final, truth, _ = _run(tmp_path, limit_fds=False)
    share, left_out = _true_counted_share(final, truth)
    assert left_out == 0 and share == 1.0
    assert final["thread_coverage"] == pytest.approx(1.0, abs=0.03)
    assert final["thread_time"]["kernel_s"] == pytest.approx(truth["total"], abs=0.05)


# A short process that maps much memory: its exit frees 43,000 fresh pages after the kernel has
# detached its counters. os._exit skips the interpreter's own munmap, as a C program's exit would.
TOUCH_PAGES = (
    "import mmap, os\n"
    "size = 43000 * 4096\n"
    "m = mmap.mmap(-1, size)\n"
    "for offset in range(0, size, 4096):\n"
    "    m[offset] = 1\n"
    "os._exit(0)\n"
)
RUNS = 10


def _frame(data: dict[str, Any]) -> Frame:
    """A JSON frame as the TUI gets it, as far as its thread coverage note reads it."""
    return Frame(
        t=data["t"], interval=data["interval"], overhead=0.0,
        total=EMPTY_SCOPE, cmgs={}, cores={}, threads={},
        recent=WindowStats.from_json(data["recent"]), run=WindowStats.from_json(data["run"]),
        thread_time=ThreadTime.from_json(data["thread_time"]) if "thread_time" in data else None,
    )  # fmt: skip


@pytest.mark.slow
def test_short_processes_that_free_much_memory_at_exit_are_fully_counted(tmp_path: Path) -> None:
    """Their exit teardown runs after the kernel detached their counters: it is in the kernel's
    figure and in no count, yet no thread was missed. Thread coverage reads 1 (within /proc's
    10 ms tick), the teardown is named, and the TUI's 'threads counted' note stays away."""
    frames = tmp_path / "frames.jsonl"
    python, touch = shlex.quote(sys.executable), shlex.quote(TOUCH_PAGES)
    done = subprocess.run(
        [sectormon_command(), "--json", "-o", str(frames), "--profile", "generic", "--interval", "0.5",
         "--", "sh", "-c", f"for i in $(seq {RUNS}); do {python} -c {touch}; done"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = read_jsonl(frames.read_text())
    final = records[-1]
    assert final["final"] and final["thread_coverage"] >= 0.98
    run = final["thread_time"]  # (a kernel that detaches counters after exit_mm has no teardown)
    assert 0.0 <= run["teardown_s"] <= max(0.0, run["kernel_s"] - run["counted_s"]) + 1e-9
    for record in records[1:]:  # after the header, every frame
        assert thread_coverage_note(_frame(record), "run") is None
        assert thread_coverage_note(_frame(record), "recent") is None
    assert "threads counted" not in done.stderr
