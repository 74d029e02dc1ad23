"""Mappings made before sampling began, read from /proc/PID/maps (fake trees and this process)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sectormon.host import roots
from sectormon.host.maps import all_proc_maps, read_proc_maps

MAPS = (
    "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/app\n"
    "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
    "not a mapping line\n"
)


def test_a_fake_process_maps_and_a_gone_one(tmp_path: Path) -> None:
    (tmp_path / "10").mkdir()
    (tmp_path / "10/maps").write_text(MAPS)
    with roots.use(procfs=tmp_path):
        code, anon = read_proc_maps(10, 5)
        assert read_proc_maps(11, 5) == []
    assert (code.time, code.pid, code.start, code.end, code.path, code.prot) == (
        5,
        10,
        0x400000,
        0x452000,
        "/usr/bin/app",
        5,
    )
    assert (anon.path, anon.prot) == ("//anon", 3)


def test_every_process_of_a_fake_tree(tmp_path: Path) -> None:
    for pid in (10, 20):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "maps").write_text(MAPS)
    (tmp_path / "self").mkdir()  # not a pid: skipped
    with roots.use(procfs=tmp_path):
        found = all_proc_maps()
    assert sorted({event.pid for event in found}) == [10, 20]
    assert len(found) == 4


def test_this_process_maps_its_interpreter() -> None:
    paths = {event.path for event in read_proc_maps(os.getpid(), 0)}
    assert os.path.realpath(sys.executable) in paths
