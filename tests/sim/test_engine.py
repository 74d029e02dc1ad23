"""The machine's threads (sim/engine.py): a thread added while the machine runs starts at its tick;
an idle thread (a running program's waiting one) sits out the rest of a run without accesses; the
derived totals (summed in C on the compiled core) are the sums of the per-flags counters."""

from __future__ import annotations

from typing import cast

import pytest

from sectormon.sim.config import ModelConfig
from sectormon.sim.engine import Machine
from sectormon.sim.stream import (
    FL_PFE,
    FL_SCE,
    FL_SPECIAL,
    FLAG_SLOTS,
    IDLE,
    Chunks,
    Idle,
    Record,
    ThreadSpec,
    flags,
)
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


def _items(*items: list[Record] | Idle) -> ThreadSpec:
    return ThreadSpec(0, 0, lambda: cast(Chunks, iter(items)), 1.0, 2.0, ("",))


def _lines(first: int, count: int) -> list[Record]:
    return [(line, 1, 0) for line in range(first, first + count)]


@pytest.mark.parametrize("core", CORES)
def test_an_idle_thread_sits_out_the_run_with_no_accesses_while_the_others_go_on(core: str) -> None:
    waiting = _items(_lines(0, 100), IDLE, _lines(100, 100))
    busy = ThreadSpec(1, 1, lambda: iter([_lines(10_000, 40_000)]), 1.0, 2.0, ("",))
    machine = Machine(ModelConfig(), [waiting, busy], core=core)
    machine.run_until(20_000)
    idle, other = machine.threads
    assert idle.acc == 100 and not idle.done  # the accesses before it, none during it
    assert idle.cyc == machine.tick  # its clock moved to where the run went
    assert other.acc > 100 and machine.cycle == 20_000  # the other thread ran to the run's end
    machine.run_to_completion()
    assert idle.done and idle.acc == 200  # after it, the stream goes on


@pytest.mark.parametrize("core", CORES)
def test_an_idle_thread_alone_sits_out_the_run_too(core: str) -> None:
    machine = Machine(ModelConfig(), [_items(_lines(0, 100), IDLE, _lines(100, 100))], core=core)
    machine.run_until(20_000)
    thread = machine.threads[0]
    assert thread.acc == 100 and thread.cyc == machine.tick and machine.cycle == 20_000
    machine.run_to_completion()
    assert thread.done and thread.acc == 200


def _objects_spec(objects: int, capacity: int) -> ThreadSpec:
    """A thread over ``objects`` objects, tagged to sectors 0 and 1, with room for ``capacity``."""
    records = [
        (line, 2, flags(line % 2, bool(line % 3), True, line % 5 == 0, line % objects))
        for line in range(0, 40_000, 3)
    ]
    names = tuple(f"o{i}" for i in range(objects))
    return ThreadSpec(0, 0, lambda: iter([records]), 1.0, 2.0, names, capacity)


@pytest.mark.parametrize("core", CORES)
def test_the_derived_totals_are_the_sums_of_the_per_flags_counters_on_both_cores(core: str) -> None:
    machine = Machine(ModelConfig(), [_objects_spec(5, 64)], core=core)
    machine.run_to_completion()
    (thread,) = machine.threads
    assert len(thread.fcount) == 64 * FLAG_SLOTS  # the room asked for, not the names
    assert thread.l1_refill_dm == sum(thread.demand_misses) > 0
    assert thread.l2_refill_dm == sum(thread.memory_reads) + thread.swap_dm
    fcount = thread.fcount
    by_low = [sum(fcount[fl::FLAG_SLOTS]) for fl in range(FLAG_SLOTS) if not fl & FL_SPECIAL]
    assert thread.flag_total(0) == sum(by_low) == thread.acc
    for bit in (FL_SCE, FL_PFE):
        wanted = sum(
            sum(fcount[fl::FLAG_SLOTS]) for fl in range(FLAG_SLOTS) if not fl & FL_SPECIAL and fl & bit
        )
        assert thread.flag_total(bit) == wanted > 0
    assert thread.not_sec0() == sum(
        sum(fcount[fl::FLAG_SLOTS]) for fl in range(FLAG_SLOTS) if not fl & FL_SPECIAL and (fl >> 1) & 3
    )
    assert thread.not_sec0() > 0
