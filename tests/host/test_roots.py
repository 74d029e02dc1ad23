"""The one injectable root of host/: every reader follows it, and it comes back after a block."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from sectormon.host import roots
from sectormon.host.processes import read_process_info
from sectormon.host.topology import cpuinfo_fields, online_cpus


def in_use() -> tuple[str, str, str]:
    """(procfs, sysfs, psutil's procfs) as the readers see them now."""
    return roots.PROCFS_PATH, roots.SYSFS_PATH, psutil.PROCFS_PATH


def test_the_real_roots_by_default() -> None:
    assert in_use() == ("/proc", "/sys", "/proc")
    assert roots.real_procfs()
    assert roots.procfs(42, "task", 43, "children") == "/proc/42/task/43/children"
    assert roots.sysfs("devices/system/cpu/online") == "/sys/devices/system/cpu/online"


def test_use_moves_every_reader_and_psutil_then_restores(tmp_path: Path) -> None:
    (tmp_path / "proc/7").mkdir(parents=True)
    (tmp_path / "proc/7/comm").write_text("fake\n")
    (tmp_path / "proc/cpuinfo").write_text("model name\t: Fake CPU\n")
    with roots.use(procfs=tmp_path / "proc"):
        assert not roots.real_procfs()
        assert in_use() == (str(tmp_path / "proc"), "/sys", str(tmp_path / "proc"))  # sysfs stays
        info = read_process_info(7)
        assert info is not None and info.command == "fake"
        assert cpuinfo_fields()["model name"] == "Fake CPU"
    assert in_use() == ("/proc", "/sys", "/proc")
    assert read_process_info(os.getpid()) is not None


def test_use_restores_after_an_error_and_nests(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), roots.use(sysfs=tmp_path):
        with roots.use(procfs=tmp_path):
            assert in_use() == (str(tmp_path), str(tmp_path), str(tmp_path))
        assert in_use() == ("/proc", str(tmp_path), "/proc")
        raise RuntimeError
    assert in_use() == ("/proc", "/sys", "/proc")


def test_online_cpus_from_sysfs_else_the_affinity(tmp_path: Path) -> None:
    online = tmp_path / "devices/system/cpu/online"
    online.parent.mkdir(parents=True)
    online.write_text("0-2,5\n")
    with roots.use(sysfs=tmp_path):
        assert online_cpus() == (0, 1, 2, 5)
        for unusable in ("", "0-x"):  # empty, malformed: the CPUs this process may run on
            online.write_text(unusable)
            assert online_cpus() == tuple(sorted(os.sched_getaffinity(0)))
