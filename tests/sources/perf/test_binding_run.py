"""The issue's check, on this host's real threads with the testable rule: a two-thread program
whose worker is unbound is named by the sector-cache warning; under ``--bind 0,1`` both threads
are bound, the frames say so, and nothing is said.

A sector-cache run is one on an A64FX, so the source gets the A64FX that QEMU shows (the fake
tree ``qemu-a64fx``: CPUs 0-3 in one CMG, as CPUs 0 and 1 are on an FX700) while it counts this
host's threads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sectormon.data.frames import Frame
from sectormon.host import roots
from sectormon.host.topology import Topology, load_topology
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.session.options import SessionRequest
from sectormon.session.setup import open_session
from sectormon.sources.perf.source import PerfSource
from sectormon.sources.perf.targets import CommandTarget

pytestmark = pytest.mark.syscall

TESTS = Path(__file__).resolve().parents[2]
WORKLOAD = TESTS / "workloads" / "binding.py"
QEMU_A64FX = TESTS / "fixtures" / "sysfs" / "qemu-a64fx"
PROFILE = Profile(
    name="task",
    description="task clock only",
    counters=8,
    events={"TASK_CLOCK": EventDef("TASK_CLOCK", "task-clock")},
    groups=(GroupDef("T", ("TASK_CLOCK",)),),
    metrics=(),
)


def a64fx() -> Topology:
    with roots.use(sysfs=QEMU_A64FX / "sys", procfs=QEMU_A64FX / "proc"):
        topology = load_topology()
    assert topology.is_a64fx and topology.cmg_of[0] == topology.cmg_of[1]
    return topology


def run(bind: tuple[int, ...]) -> tuple[list[Frame], list[str], dict[str, dict[str, object]]]:
    """Frames, warnings and the workload's own report of a 1.5 s run."""
    if not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    read, write = os.pipe()
    try:
        target = CommandTarget([sys.executable, str(WORKLOAD), "1.5"], stdout=write, bind=bind)
        source = PerfSource(target, a64fx())
        warnings: list[str] = []
        session = open_session(
            source, PROFILE, SessionRequest(timeslice=0.02, interval=0.5), on_warning=warnings.append
        )
        frames: list[Frame] = []
        session.subscribe(frames.append)
        session.run_headless()
        source.close()
        os.close(write)
        write = -1
        report = json.loads(os.read(read, 65536).decode().strip().splitlines()[-1])
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    return frames, [w for w in warnings if w.startswith("sector cache:")], report


def test_the_unbound_worker_is_named() -> None:
    frames, warnings, report = run(())
    worker, main = report["worker"], report["main"]
    assert main["cpus"] == [0] and worker["cpus"] == [0, 1]
    unbound = [w for w in warnings if "not bound to one CPU" in w]
    assert len(unbound) == 1
    assert f"{worker['tid']} ({worker['comm']}) on CPUs 0-1" in unbound[0]
    assert f"{main['tid']} (" not in unbound[0]  # it bound itself: judged from a later read
    final = frames[-1].to_json()["threads"]
    assert final[str(worker["tid"])]["binding"]["bound"] is False


def test_bind_0_1_binds_both_and_nothing_is_said() -> None:
    frames, warnings, report = run((0, 1))
    assert report["main"]["cpus"] == [0] and report["worker"]["cpus"] == [1]
    assert warnings == []
    final = frames[-1].to_json()["threads"]
    for who in ("main", "worker"):
        binding = final[str(report[who]["tid"])]["binding"]
        assert binding["bound"] is True and binding["cpus"] == report[who]["cpus"]
        assert binding["migrations"] == 0
