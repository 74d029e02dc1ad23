"""A thread's migrations, last CPU and name, from a fake procfs tree and from this process."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sectormon.host import roots
from sectormon.host.scheduling import (
    last_cpu,
    nr_migrations,
    thread_last_cpu,
    thread_migrations,
    thread_name,
)

SCHED = b"""app (4243, #threads: 2)
-------------------------------------------------------------------
se.exec_start                                :      19760117.392451
se.vruntime                                  :          1234.567890
se.nr_migrations                             :                   17
nr_switches                                  :                  210
"""


def _stat(cpu: int, command: str = "app") -> bytes:
    # Fields 3.. after the command: state, then 35 more up to field 38, then 39 = processor.
    after = ["R"] + ["0"] * 35 + [str(cpu)] + ["0"] * 13
    return f"4243 ({command}) {' '.join(after)}\n".encode()


def _task(proc: Path, pid: int, tid: int, name: str, data: bytes) -> None:
    folder = proc / str(pid) / "task" / str(tid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def test_the_kernels_count_is_read_from_the_sched_file() -> None:
    assert nr_migrations(SCHED) == 17
    assert nr_migrations(SCHED.replace(b"se.nr_migrations", b"se.nr_wakeups")) is None
    assert nr_migrations(b"se.nr_migrations : lots\n") is None
    assert nr_migrations(b"se.nr_migrations                    :   3") == 3  # the last line, cut


def test_the_last_cpu_is_field_39_after_a_command_with_spaces_and_parentheses() -> None:
    assert last_cpu(_stat(5, command="a (b) c")) == 5
    assert last_cpu(b"4243 (app) R 1 2") is None
    assert last_cpu(b"no parenthesis at all") is None


def test_a_fake_tree_is_read_under_the_process_and_without_it(tmp_path: Path) -> None:
    _task(tmp_path, 4242, 4243, "sched", SCHED)
    _task(tmp_path, 4242, 4243, "stat", _stat(7))
    _task(tmp_path, 4242, 4243, "comm", b"worker-1\n")
    _task(tmp_path, 4243, 4243, "sched", SCHED.replace(b"17", b"18"))  # /proc/TID/task/TID
    with roots.use(procfs=tmp_path):
        assert thread_migrations(4242, 4243) == 17
        assert thread_migrations(None, 4243) == 18
        assert thread_last_cpu(4242, 4243) == 7
        assert thread_name(4242, 4243) == "worker-1"
        assert thread_migrations(4242, 9999) is None  # ended
        assert thread_last_cpu(4242, 9999) is None
        assert thread_name(4242, 9999) is None


def test_a_kernel_without_sched_debug_has_no_count(tmp_path: Path) -> None:
    _task(tmp_path, 4242, 4243, "stat", _stat(1))
    with roots.use(procfs=tmp_path):
        assert thread_migrations(4242, 4243) is None
        assert thread_last_cpu(4242, 4243) == 1


def test_this_thread_on_the_real_procfs() -> None:
    if not os.path.exists(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/sched"):
        pytest.skip("this kernel has no sched files (CONFIG_SCHED_DEBUG off)")
    tid = threading.get_native_id()
    count = thread_migrations(os.getpid(), tid)
    assert count is not None and count >= 0
    assert thread_last_cpu(os.getpid(), tid) in os.sched_getaffinity(0)
    assert thread_name(os.getpid(), tid)
