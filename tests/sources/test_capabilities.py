"""What each source says it can do (the callers ask these instead of the source's name)."""

from __future__ import annotations

import os

import pytest

from sectormon.host.topology import load_topology
from sectormon.sources.base import Capabilities, SourceBase
from sectormon.sources.perf.source import PerfSource
from sectormon.sources.perf.targets import CpuTarget, PidTarget
from sectormon.sources.sim.source import SimOptions, build_sim_source


def test_a_source_has_no_capability_it_does_not_state() -> None:
    assert SourceBase.capabilities == Capabilities(
        multiplexes=False, wall_clock=False, follows_threads=False, task_time=False
    )
    assert SourceBase().end_note() is None


def test_the_simulator_has_its_own_clock_and_a_fixed_set_of_threads() -> None:
    source = build_sim_source(SimOptions(), loop=False)
    try:
        assert source.capabilities == Capabilities()
        assert source.end_note() is None  # its threads are not a command that can fail
    finally:
        source.close()


def test_perf_multiplexes_on_the_wall_clock_and_follows_a_process_s_threads() -> None:
    source = PerfSource(PidTarget(os.getpid()), load_topology())
    assert source.capabilities == Capabilities(
        multiplexes=True, wall_clock=True, follows_threads=True, task_time=True
    )


def test_perf_on_cpus_counts_a_fixed_set_of_units() -> None:
    source = PerfSource(CpuTarget([0]), load_topology())
    assert source.capabilities.multiplexes and source.capabilities.wall_clock
    assert not source.capabilities.follows_threads


@pytest.mark.parametrize(
    ("code", "note"),
    [
        (None, None),  # still running, or stopped by the session
        (0, None),  # a normal end is not worth a note
        (3, "the command exited with status 3"),
        (-9, "the command was killed by SIGKILL (exit status 137)"),
    ],
)
def test_perf_says_how_a_command_ended(
    monkeypatch: pytest.MonkeyPatch, code: int | None, note: str | None
) -> None:
    source = PerfSource(PidTarget(os.getpid()), load_topology())
    monkeypatch.setattr(PerfSource, "exit_code", property(lambda _self: code))
    assert source.end_note() == note
