"""A traced program's marked regions on the simulated A64FX (sectormon/sources/sim/marks.py): built
from the RegionMark items between the chunks of its threads' streams, per thread and region: calls,
nesting, repeats, open at the end, unpaired calls; exact counts at the marks; both cores alike."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import cast

import pytest

from sectormon.data.regions import RegionSnapshot, ThreadRegion
from sectormon.profiles.resolve import load_profile
from sectormon.sim import events as sim_events
from sectormon.sim import native
from sectormon.sim.config import ModelConfig, SectorConfig
from sectormon.sim.stream import Chunks, Record, RegionMark, ThreadSpec, flags
from sectormon.sim.workload import Workload, placement
from sectormon.sources.sim.source import SimSource
from tests.sim.cores import CORES

PROFILE = load_profile("a64fx")
MODELLED = [e for e in PROFILE.events.values() if sim_events.is_modelled(e.code)]
CMG_EVENTS = {e.name for e in MODELLED if e.code in sim_events.CMG_EVENTS}
# What a stream's end adds after its last mark: the wait for the misses still outstanding.
DRAIN = {
    "CPU_CYCLES",
    "LD_COMP_WAIT",
    "LD_COMP_WAIT_L1_MISS",
    "LD_COMP_WAIT_L2_MISS",
    "STALL_BACKEND",
    "EA_CORE",
}
CONFIG = ModelConfig(sectors=SectorConfig(enabled=True, l1=(3, 1, 0, 0), l2=(10, 4, 7, 7)))

Item = list[Record] | RegionMark


def _chunk(seed: int, size: int = 200) -> list[Record]:
    rng = random.Random(seed)
    return [
        (rng.randrange(5000), rng.randrange(1, 4), flags(rng.randrange(2), rng.random() < 0.2, True, True))
        for _ in range(size)
    ]


def _accesses(*chunks: list[Record]) -> int:
    return sum(n for chunk in chunks for _, n, _ in chunk)


def _source(streams: Sequence[Sequence[Item]]) -> SimSource:
    """A source over threads that run ``streams`` (chunks and marks), counting every modelled
    event in every region (the core: $SECTORMON_SIM_CORE, as for any source)."""
    specs = tuple(
        # The marks between the chunks are the point: the stream's type names chunks only.
        ThreadSpec(t, placement(t, len(streams)), lambda items=items: cast(Chunks, iter(items)))
        for t, items in enumerate(streams)
    )
    source = SimSource(Workload(specs, {"kind": "trace"}), CONFIG)
    source.add_region_group(MODELLED)
    return source


def _run(source: SimSource) -> RegionSnapshot:
    source.start()
    source.run_to_completion()
    return source.regions()


def _one(snapshot: RegionSnapshot, name: str, number: int = 0, tid: int = 0) -> ThreadRegion:
    (reading,) = [r for r in snapshot.of(name, number) if r.tid == tid]
    return reading


A, B, C, D, E, F, G = (_chunk(seed) for seed in range(7))
START, STOP = True, False
NESTED: list[Item] = [
    A,
    RegionMark(START, "outer"),
    B,
    RegionMark(START, "inner", 2),
    C,
    RegionMark(STOP, "inner", 2),
    D,
    RegionMark(START, "inner", 2),
    RegionMark(START, "inner", 2),  # already open: ignored
    E,
    RegionMark(STOP, "inner", 2),
    RegionMark(STOP, "outer"),
    F,
    RegionMark(STOP, "ghost"),  # never started: ignored
    RegionMark(START, "left"),
    G,
]


def test_nested_repeated_open_and_unpaired_regions() -> None:
    snapshot = _run(_source([NESTED]))
    outer, inner, left = _one(snapshot, "outer"), _one(snapshot, "inner", 2), _one(snapshot, "left")
    assert [r.key for r in snapshot.threads] == [("outer", 0), ("inner", 2), ("left", 0)]
    assert (outer.calls, outer.open, inner.calls, inner.open) == (1, False, 2, False)
    assert (left.calls, left.open, left.open_counted, left.thread_exited) == (1, True, True, True)
    assert snapshot.unpaired == 2
    assert outer.counts()["L1D_CACHE"] == _accesses(B, C, D, E)
    assert inner.counts()["L1D_CACHE"] == _accesses(C, E)
    assert left.counts()["L1D_CACHE"] == _accesses(G)
    # Nested: the outer region counts its own span, the inner one's included.
    for event, value in inner.counts().items():
        if event not in CMG_EVENTS:
            assert outer.counts()[event] >= value, event
    assert set(outer.coverage().values()) == {1.0}
    assert outer.seconds == outer.wall_ns / 1e9 > inner.seconds > 0
    assert left.wall_ns == 0 and left.seconds > 0  # open: its time so far, no closed call


def test_a_regions_counts_are_those_of_the_accesses_inside_it() -> None:
    """A region from the stream's start to a mark after chunk B counts what a run of A and B alone
    counts, but for the wait a stream's end adds for its last misses."""
    marked = _run(_source([[RegionMark(START, "head"), A, B, RegionMark(STOP, "head"), C, D]]))
    alone = _run(_source([[RegionMark(START, "all"), A, B]]))
    head, whole = _one(marked, "head").counts(), _one(alone, "all").counts()
    differ = {e for e in head if e not in CMG_EVENTS and head[e] != whole[e]}
    assert head["L1D_CACHE"] == _accesses(A, B) and differ <= DRAIN
    assert head["CPU_CYCLES"] < whole["CPU_CYCLES"]


@pytest.mark.parametrize("core", CORES)
def test_both_cores_give_the_same_regions(core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    streams = [
        NESTED,
        [RegionMark(START, "outer"), G, F, RegionMark(STOP, "outer")],
        NESTED[::-1][1:],
        NESTED,
    ]
    monkeypatch.setenv(native.ENV, "python")
    reference = _run(_source(streams))
    monkeypatch.setenv(native.ENV, core)
    source = _source(streams)
    assert source.machine.core == core
    assert _run(source) == reference


def test_cmg_wide_events_are_the_cmgs_over_each_threads_calls() -> None:
    """Threads 0 and 4 share CMG 0: thread 4's region carries the L2 misses of thread 0 too."""
    quiet = [RegionMark(START, "r"), [(7, 1, 0)], RegionMark(STOP, "r")]
    busy = [RegionMark(START, "r"), A, B, C, RegionMark(STOP, "r")]
    snapshot = _run(_source([busy, quiet, quiet, quiet, quiet]))
    own = _one(snapshot, "r", tid=0).counts()
    shared = _one(snapshot, "r", tid=4).counts()
    assert shared["L1D_CACHE"] == 1 and own["L1D_CACHE"] == _accesses(A, B, C)
    # Thread 4 ran its region (one access) in the first quantum, with thread 0's first quantum.
    assert 0 < shared["L2_MISS_COUNT"] <= own["L2_MISS_COUNT"]


def test_read_regions_gives_a_snapshot_when_it_changed() -> None:
    source = _source([[A, RegionMark(START, "r"), B, RegionMark(STOP, "r"), C]])
    source.start()
    assert source.read_regions() is None  # nothing marked yet
    while not (inside := source.regions().threads):
        source.machine.run_until(source.machine.cycle + 100)
    (open_,) = inside  # read while inside: open, counted so far
    assert open_.open and open_.calls == 1 and 0 < open_.counts()["L1D_CACHE"] < _accesses(B)
    source.run_to_completion()
    snapshot = source.read_regions()
    assert snapshot is not None and [r.key for r in snapshot.threads] == [("r", 0)]
    assert source.read_regions() is None
    assert _one(snapshot, "r").seconds == _one(snapshot, "r").wall_ns / 1e9 > 0
