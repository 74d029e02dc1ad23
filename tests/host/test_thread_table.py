"""The thread list: name, state, CPU % between two snapshots (n/a at the first), last CPU and
affinity of each thread of some processes, from a fake procfs tree and from this process."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sectormon.host import roots
from sectormon.host.cpu_time import CLOCK_TICKS
from sectormon.host.thread_table import ThreadRow, ThreadTable, affinity_of, name_and_state


def _stat(tid: int, name: str, state: str, utime: int, stime: int, cpu: int) -> bytes:
    # Fields 3.. after the command: state, ten more, utime (14), stime (15), ..., processor (39).
    after = [state] + ["0"] * 10 + [str(utime), str(stime)] + ["0"] * 23 + [str(cpu)] + ["0"] * 13
    return f"{tid} ({name}) {' '.join(after)}\n".encode()


def _thread(proc: Path, pid: int, tid: int, stat: bytes, allowed: str | None = "0-3,8") -> None:
    folder = proc / str(pid) / "task" / str(tid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stat").write_bytes(stat)
    if allowed is not None:
        status = f"Name:\tx\nCpus_allowed:\tff\nCpus_allowed_list:\t{allowed}\n"
        (folder / "status").write_bytes(status.encode())


@pytest.fixture
def proc(tmp_path: Path) -> Iterator[Path]:
    with roots.use(procfs=tmp_path):
        yield tmp_path


def test_each_thread_has_its_name_state_last_cpu_and_affinity_and_cpu_percent_from_the_second_snapshot(
    proc: Path,
) -> None:
    _thread(proc, 4242, 4242, _stat(4242, "app", "S", 100, 0, 7))
    _thread(proc, 4242, 4250, _stat(4250, "worker (1)", "R", 50, 50, 12), allowed="12")
    _thread(proc, 4242, 4251, _stat(4251, "io", "D", 0, 0, 3), allowed=None)
    ticks = iter([10.0, 12.0])
    table = ThreadTable(clock=lambda: next(ticks))
    first = table.snapshot([4242])
    assert [r.tid for r in first] == [4242, 4250, 4251]
    assert all(r.cpu_percent is None for r in first)
    assert first[1] == ThreadRow(4250, 4242, "worker (1)", "R", None, 12, (12,))
    assert first[1].bound is True and first[1].affinity_text == "12"
    assert first[0].bound is False and first[0].affinity_text == "0-3,8"
    assert first[2].bound is None and first[2].affinity_text == "n/a"
    # 2 s later: the worker ran one core's worth (2 s of ticks), the main thread half of it.
    _thread(proc, 4242, 4250, _stat(4250, "worker (1)", "R", 50 + CLOCK_TICKS, 50 + CLOCK_TICKS, 13), "12")
    _thread(proc, 4242, 4242, _stat(4242, "app", "S", 100 + CLOCK_TICKS, 0, 7))
    second = {r.tid: r for r in table.snapshot([4242])}
    assert second[4250].cpu_percent == pytest.approx(100.0) and second[4250].last_cpu == 13
    assert second[4242].cpu_percent == pytest.approx(50.0)
    assert second[4251].cpu_percent == pytest.approx(0.0)


def test_a_process_gone_or_a_thread_ended_since_the_listing_has_no_row(proc: Path) -> None:
    _thread(proc, 10, 10, _stat(10, "a", "S", 0, 0, 0))
    (proc / "10" / "task" / "11").mkdir()  # listed, but its files are gone
    assert [r.tid for r in ThreadTable().snapshot([10, 99])] == [10]


def test_status_and_stat_parsing_refuse_what_they_cannot_read() -> None:
    assert affinity_of(b"Cpus_allowed_list:\t0-1,4\n") == (0, 1, 4)
    assert affinity_of(b"Name:\tx\n") is None
    assert affinity_of(b"Cpus_allowed_list:\tlots\n") is None
    assert name_and_state(b"7 (a) (b) R 1 2") == ("a) (b", "R")
    assert name_and_state(b"7 a R") is None


def test_this_process_threads_are_read_from_the_real_procfs() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="waiter")
    worker.start()
    try:
        rows = ThreadTable().snapshot([os.getpid()])
    finally:
        stop.set()
        worker.join()
    assert len(rows) >= 2 and {r.pid for r in rows} == {os.getpid()}
    me = next(r for r in rows if r.tid == os.getpid())
    assert me.state == "R" and me.affinity == tuple(sorted(os.sched_getaffinity(0)))
    assert me.last_cpu is not None and me.last_cpu in os.sched_getaffinity(0)
