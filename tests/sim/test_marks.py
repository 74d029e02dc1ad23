"""A traced program's marker calls in its threads' streams (sectormon.sim.stream.RegionMark): both
cores stop at a mark with the thread's counters exactly as they are after the accesses before it,
give the same counters at every mark, and run a marked stream to the same end as an unmarked one."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, cast

import pytest

from sectormon.sim.config import ModelConfig, SectorConfig
from sectormon.sim.counters import _COPIED
from sectormon.sim.engine import Machine
from sectormon.sim.stream import Chunks, Record, RegionMark, ThreadSpec, flags
from sectormon.sim.thread import SimThread
from sectormon.sim.workload import placement
from tests.sim.cores import CORES
from tests.sim.golden_cases import machine_state

Item = list[Record] | RegionMark
# What a mark's counters are compared on: every tally the events read, and the per-flags counts.
FIELDS = (*_COPIED, "fcount", "passes", "done")
# A stream's end waits for its outstanding misses: only the clock and the load stalls move then.
DRAIN = {"cyc", "wait_l1", "wait_l2", "passes", "done"}
CONFIG = ModelConfig(sectors=SectorConfig(enabled=True, l1=(3, 1, 0, 0), l2=(10, 4, 7, 7)))


def _chunks(seed: int, count: int, size: int = 300) -> list[list[Record]]:
    """Accesses that miss, hit, write, stream (the prefetcher starts) and use two sectors."""
    rng = random.Random(seed)
    records: list[Record] = []
    while len(records) < count * size:
        if rng.random() < 0.3:
            start = rng.randrange(1 << 16)
            records += [(start + i, 4, flags(1, False, True, True)) for i in range(rng.randrange(4, 40))]
        else:
            records.append(
                (rng.randrange(3000), rng.randrange(1, 4), flags(0, rng.random() < 0.2, True, True))
            )
    return [records[i : i + size] for i in range(0, count * size, size)]


def _spec(tid: int, threads: int, items: Sequence[Item]) -> ThreadSpec:
    # The marks between the chunks are the point: the stream's type names chunks only.
    return ThreadSpec(tid, placement(tid, threads), lambda: cast(Chunks, iter(items)))


def _tallies(thread: SimThread) -> dict[str, Any]:
    # A copy: the Python model's per-flags lists are the thread's own, which run on.
    return {name: list(v) if isinstance(v := getattr(thread, name), list) else v for name in FIELDS}


def _machine(
    core: str, streams: Sequence[Sequence[Item]]
) -> tuple[Machine, list[tuple[int, RegionMark, dict[str, Any]]]]:
    machine = Machine(CONFIG, [_spec(t, len(streams), s) for t, s in enumerate(streams)], core=core)
    seen: list[tuple[int, RegionMark, dict[str, Any]]] = []
    machine.on_mark = lambda thread, mark: seen.append((thread.tid, mark, _tallies(thread)))
    return machine, seen


def _marked(chunks: list[list[Record]], every: int, name: str = "r") -> list[Item]:
    """The chunks with a start before every ``every``-th chunk and a stop after it."""
    out: list[Item] = []
    for i, chunk in enumerate(chunks):
        inside = i % every == 0
        out += [RegionMark(True, name, i)] if inside else []
        out.append(chunk)
        out += [RegionMark(False, name, i)] if inside else []
    return out


@pytest.mark.parametrize("core", CORES)
def test_a_mark_finds_the_counters_as_the_accesses_before_it_left_them(core: str) -> None:
    before = _chunks(1, 6)
    marked, seen = _machine(core, [[*before, RegionMark(True, "r")]])
    alone, _ = _machine(core, [before])
    marked.run_to_completion()
    alone.run_to_completion()
    ((tid, mark, at_mark),) = seen
    ended = _tallies(alone.threads[0])
    assert (tid, mark) == (0, RegionMark(True, "r"))
    assert {k: v for k, v in at_mark.items() if k not in DRAIN} == {
        k: v for k, v in ended.items() if k not in DRAIN
    }
    assert at_mark["done"] is False and at_mark["passes"] == 0
    # The stream's end then only waited for the misses still outstanding at the mark.
    waited = (ended["wait_l1"] - at_mark["wait_l1"]) + (ended["wait_l2"] - at_mark["wait_l2"])
    assert ended["cyc"] - at_mark["cyc"] > 0 and abs(ended["cyc"] - at_mark["cyc"] - waited) <= 2
    # The mark cost nothing: the run ends where the unmarked one does.
    assert _tallies(marked.threads[0]) == ended
    assert machine_state(marked) == machine_state(alone)


@pytest.mark.parametrize("threads", [1, 5])  # 1: the lone thread's quanta inside run(); 5: two share CMG 0
@pytest.mark.parametrize("core", CORES)
def test_marks_change_nothing_and_both_cores_agree_at_every_mark(core: str, threads: int) -> None:
    plain = [_chunks(10 + t, 12, size=80 + 40 * t) for t in range(threads)]
    marked = [_marked(chunks, every=2 + t % 3) for t, chunks in enumerate(plain)]
    ref, ref_seen = _machine("python", marked)
    ours, seen = _machine(core, marked)
    unmarked, _ = _machine(core, plain)
    for m in (ref, ours, unmarked):
        m.run_to_completion()
    assert machine_state(ours) == machine_state(unmarked) == machine_state(ref)
    assert len(seen) == sum(isinstance(item, RegionMark) for s in marked for item in s)
    assert seen == ref_seen


@pytest.mark.parametrize("core", CORES)
def test_marks_between_quanta_keep_the_quanta(core: str) -> None:
    """run_until in small steps (a session's slices) stops at the same marks as one long run."""
    streams = [_marked(_chunks(20 + t, 10), every=1) for t in range(2)]
    stepped, seen = _machine(core, streams)
    whole, whole_seen = _machine(core, streams)
    while not stepped.finished():
        stepped.run_until(stepped.cycle + 3_000)
    whole.run_to_completion()
    assert seen == whole_seen
    assert machine_state(stepped)["threads"] == machine_state(whole)["threads"]


def test_a_machine_without_a_handler_skips_marks() -> None:
    chunks = _chunks(3, 4)
    machine = Machine(CONFIG, [_spec(0, 1, _marked(chunks, every=1))])
    plain = Machine(CONFIG, [_spec(0, 1, chunks)])
    machine.run_to_completion()
    plain.run_to_completion()
    assert machine_state(machine) == machine_state(plain)
