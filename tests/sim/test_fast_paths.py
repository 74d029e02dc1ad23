"""The simulator's shortcuts give exactly what the plain rules give.

A cache whose lines all belong to one sector fills as plain LRU without per-set counts; a thread
alone on its machine runs its quanta without returning at each boundary. Both are checked here
against a direct implementation of the rules (the cache) and against the per-quantum loop (the
machine); the golden cases pin the model's numbers as a whole.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.sim import native
from sectormon.sim.cache import NO_VICTIM, SECTOR_MASK
from sectormon.sim.config import ModelConfig, SectorConfig
from sectormon.sim.engine import Machine
from sectormon.sim.kernels import make_kernel
from sectormon.sim.sampling import RefillSampler
from sectormon.sim.stream import Chunks, Record, ThreadSpec, flags
from sectormon.sim.workload import kernel_workload
from tests.sim.cores import CACHES, CORES
from tests.sim.golden_cases import THREAD_COUNTERS, cache_digest

SETS = 4
WAYS = 6


class RulesCache:
    """The sector rules of the cache module's docstring, with counts taken from the lines at
    every fill: the oracle the shortcuts must match."""

    def __init__(self, maxima: tuple[int, ...], enabled: bool) -> None:
        self.sets: list[list[int]] = [[] for _ in range(SETS)]
        self.tags: dict[int, int] = {}
        self.maxima = maxima
        self.enabled = enabled

    def counts(self, si: int) -> list[int]:
        out = [0, 0, 0, 0]
        for line in self.sets[si]:
            out[self.tags[line] & SECTOR_MASK] += 1
        return out

    def fill(self, line: int, state: int) -> tuple[int, int]:
        s = self.sets[line % SETS]
        sec = state & SECTOR_MASK
        if not self.enabled:
            victim = s.pop(0) if len(s) == WAYS else NO_VICTIM
        elif self.counts(line % SETS)[sec] >= self.maxima[sec]:
            own = [v for v in s if self.tags[v] & SECTOR_MASK == sec]
            if not own:
                return NO_VICTIM, 0
            victim = own[0]
            s.remove(victim)
        elif len(s) == WAYS:
            counts = self.counts(line % SETS)
            over = [
                v for v in s if counts[self.tags[v] & SECTOR_MASK] > self.maxima[self.tags[v] & SECTOR_MASK]
            ]
            victim = over[0] if over else s[0]
            s.remove(victim)
        else:
            victim = NO_VICTIM
        s.append(line)
        self.tags[line] = state
        return (victim, self.tags.pop(victim)) if victim != NO_VICTIM else (NO_VICTIM, 0)

    def touch(self, line: int) -> None:
        s = self.sets[line % SETS]
        s.remove(line)
        s.append(line)


_MAXIMA = st.tuples(*[st.integers(0, WAYS)] * 4)


@st.composite
def _ops(draw: st.DrawFn) -> list[tuple[object, ...]]:
    """Accesses (line, sector) and maxima changes; most runs use one sector for a long stretch,
    which is when the one-sector shortcut is taken."""
    palette = draw(st.sampled_from([[0], [2], [1, 1, 1, 1, 1, 3], [0, 1, 2, 3]]))
    access = st.tuples(st.just("access"), st.integers(0, 40), st.sampled_from(palette))
    change = st.tuples(st.just("maxima"), _MAXIMA, st.booleans())
    return draw(st.lists(st.one_of(access, access, access, change), max_size=250))


@settings(max_examples=400, deadline=None)
@given(maxima=_MAXIMA, enabled=st.booleans(), ops=_ops())
@pytest.mark.parametrize("make", CACHES)
def test_fills_match_the_sector_rules(
    make: Any, maxima: tuple[int, int, int, int], enabled: bool, ops: list[tuple[object, ...]]
) -> None:
    cache = make(SETS, WAYS, maxima, enabled)
    rules = RulesCache(maxima, enabled)
    for step, op in enumerate(ops):
        if op[0] == "maxima":
            new_maxima, new_enabled = op[1], op[2]
            assert isinstance(new_maxima, tuple) and isinstance(new_enabled, bool)
            cache.set_maxima(new_maxima, new_enabled)
            rules.maxima, rules.enabled = new_maxima, new_enabled
            continue
        line, sector = op[1], op[2]
        assert isinstance(line, int) and isinstance(sector, int)
        if line in rules.tags:
            cache.touch(line)
            rules.touch(line)
        else:
            state = (step << 4) | sector
            assert cache.fill(line, state) == rules.fill(line, state)
        assert cache.sets == rules.sets
        assert cache.tags == rules.tags
        if cache.enabled:
            assert cache.counts == [rules.counts(si) for si in range(SETS)]


def _records() -> list[Record]:
    out: list[Record] = []
    for i in range(6000):
        line = (i * 7919) % 3000 if i % 3 else 40_000 + i
        out.append((line, 1 + i % 3, flags(i % 2, i % 5 == 0, i % 4 != 0, False)))
    return out


CHANGED = SectorConfig(l1=(1, 3, 0, 0), l2=(4, 10, 7, 7))


def _thread_state(machine: Machine) -> dict[str, object]:
    t = machine.threads[0]
    row: dict[str, object] = {name: getattr(t, name) for name in THREAD_COUNTERS}
    row["fcount"] = list(t.fcount)
    row["cache"] = cache_digest(t)
    row["tick"] = machine.tick
    row["cmg_tick"] = t.cmg.tick
    assert t.sampler is not None
    row["samples"] = t.sampler.taken
    return row


def _state_after(
    config: ModelConfig, threads: list[ThreadSpec], pieces: list[float], midway: int | None
) -> dict[str, object]:
    """Thread 0's state after ``run_until`` to each of ``pieces`` (sectors off after the first),
    then to completion; at chunk ``midway`` its stream requests a sector change, as a live session
    does from another thread while the model runs. Every L1D refill is sampled: the samples (their
    times and latencies) must not depend on how the quanta are run either."""
    machines: list[Machine] = []
    first = threads[0]

    def stream() -> Chunks:
        for k, chunk in enumerate(first.stream()):
            if k == midway:
                machines[0].request_sectors(CHANGED)
            yield chunk

    machine = Machine(config, [replace(first, stream=stream), *threads[1:]])
    machines.append(machine)
    machine.threads[0].sampler = RefillSampler(1, demand=True, prefetch=True)
    for k, target in enumerate(pieces):
        machine.run_until(target)
        if k == 0:
            machine.request_sectors(SectorConfig(enabled=False))
    machine.run_to_completion()
    return _thread_state(machine)


def _both(
    config: ModelConfig, spec: ThreadSpec, pieces: list[float], midway: int | None
) -> tuple[object, object]:
    """Alone, and beside an idle thread on another CMG (the machine then steps every quantum)."""
    idle = ThreadSpec(1, 12, lambda: iter(()))
    return _state_after(config, [spec], pieces, midway), _state_after(config, [spec, idle], pieces, midway)


@pytest.mark.parametrize("core", CORES)
def test_a_thread_alone_runs_the_same_quanta(core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, core)
    records = _records()

    def chunks() -> Chunks:
        for i in range(0, len(records), 500):
            yield records[i : i + 500]

    spec = ThreadSpec(0, 0, chunks)
    for pieces, midway in (([], None), ([3_000.0, 12_345.6], None), ([], 3), ([2_000.0], 5)):
        alone, paired = _both(ModelConfig(quantum=700), spec, pieces, midway)
        assert alone == paired


@pytest.mark.parametrize("core", CORES)
def test_a_kernel_alone_runs_the_same_quanta(core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, core)
    kernel = make_kernel("scenario-a", {"passes": "6"})
    spec = kernel_workload(kernel, 1, True, True).specs[0]
    alone, paired = _both(ModelConfig(), spec, [40_000.0], 2)
    assert alone == paired
