"""The machine's threads (sim/engine.py): a thread added while the machine runs starts at its tick."""

from __future__ import annotations

import pytest

from sectormon.sim.config import ModelConfig
from sectormon.sim.engine import Machine
from sectormon.sim.stream import ThreadSpec
from tests.sim.cores import CORES


def _spec(tid: int, cpu: int, lines: int) -> ThreadSpec:
    return ThreadSpec(tid, cpu, lambda: iter([[(line, 1, 0) for line in range(lines)]]), 1.0, 2.0, ("",))


@pytest.mark.parametrize("core", CORES)
def test_a_thread_added_later_starts_at_the_machines_tick_on_its_own_cmg(core: str) -> None:
    machine = Machine(ModelConfig(), [_spec(0, 0, 50_000)], core=core)
    machine.run_until(20_000)
    assert not machine.finished()
    tick = machine.tick
    added = machine.add_thread(_spec(1, 12, 1_000))
    assert added.cyc == tick and added.cpu == 12
    assert sorted(machine.cmgs) == [0, 1] and machine.cmgs[1].tick == tick
    assert machine.cmgs[1].threads == [added]
    machine.run_to_completion()
    assert added.done and added.acc == 1_000
    assert added.cyc > tick  # its clock ran on from the tick it joined at, not from 0
