"""Processes as procfs shows them: command, parent and the MPI rank from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.readings import ProcessInfo
from sectormon.host import roots
from sectormon.host.processes import parent_of, rank_of, read_process_info


def test_rank_prefers_the_most_specific_variable() -> None:
    environ = b"SLURM_PROCID=7\0PMI_RANK=3\0HOME=/x\0"
    assert rank_of(environ) == 3
    assert rank_of(b"OMPI_COMM_WORLD_RANK=12\0PMI_RANK=3\0") == 12
    assert rank_of(b"SLURM_PROCID=5") == 5


def test_no_or_bad_rank_is_none() -> None:
    assert rank_of(b"") is None
    assert rank_of(b"PMI_RANK=\0") is None
    assert rank_of(b"PMI_RANK=-1\0OMPI_COMM_WORLD_RANK=x\0") is None


@given(st.binary(max_size=200))
def test_rank_of_any_bytes_is_a_rank_or_none(data: bytes) -> None:
    rank = rank_of(data)
    assert rank is None or rank >= 0


def test_parent_of_status() -> None:
    assert parent_of(b"Name:\tx\nPPid:\t42\nTgid:\t7\n") == 42
    assert parent_of(b"Name:\tx\n") is None


def test_fake_procfs(tmp_path: Path) -> None:
    proc = tmp_path / "123"
    proc.mkdir()
    (proc / "comm").write_bytes(b"a.out\n")
    (proc / "status").write_bytes(b"Name:\ta.out\nPPid:\t99\n")
    (proc / "environ").write_bytes(b"PMIX_RANK=4\0")
    with roots.use(procfs=tmp_path):
        assert read_process_info(123) == ProcessInfo(123, "a.out", parent=99, rank=4)
        assert read_process_info(124) is None


def test_a_real_child_with_a_rank() -> None:
    env = dict(os.environ, OMPI_COMM_WORLD_RANK="2")
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(5)"],
        env=env,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"up\n"  # exec'd: procfs shows the child, not our fork
        info = read_process_info(child.pid)
        assert info is not None
        assert info.rank == 2
        assert info.parent == os.getpid()
        assert info.command.startswith("python")
    finally:
        child.kill()
        child.wait()
