"""Sector-cache rules of the model: maxima hold, protected data survives, changes converge at fill time."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.sim.cache import SECTOR_MASK, SectorCache
from sectormon.sim.config import ModelConfig, Prefetch, SectorConfig
from sectormon.sim.engine import Machine
from sectormon.sim.kernels import default_sectors, make_kernel
from sectormon.sim.stream import FL_SCE, ThreadSpec
from sectormon.sim.workload import kernel_workload
from tests.sim.cores import CACHES

WAYS = 4
SETS = 4


def _maxima_summing_to(total: int) -> st.SearchStrategy[tuple[int, int, int, int]]:
    return (
        st.lists(st.integers(0, total), min_size=3, max_size=3)
        .map(sorted)
        .map(lambda c: (c[0], c[1] - c[0], c[2] - c[1], total - c[2]))
    )


def _access(cache: SectorCache, line: int, sector: int) -> None:
    """A demand access: hit = touch, miss = fill with the access's sector."""
    if line in cache:
        cache.touch(line)
    else:
        cache.fill(line, sector)


def _check_consistent(cache: SectorCache) -> None:
    for si, s in enumerate(cache.sets):
        assert len(s) <= cache.ways
        assert len(set(s)) == len(s)
        assert all(line & cache.mask == si for line in s)
        if cache.enabled:
            assert cache.counts[si] == cache.occupancy(si)
    assert sum(len(s) for s in cache.sets) == len(cache.tags)


@settings(max_examples=150, deadline=None)
@given(
    maxima=_maxima_summing_to(WAYS),
    accesses=st.lists(st.tuples(st.integers(0, 63), st.integers(0, 3)), min_size=1, max_size=300),
)
@pytest.mark.parametrize("make", CACHES)
def test_no_sector_exceeds_its_maximum(
    make: Any, maxima: tuple[int, int, int, int], accesses: list[tuple[int, int]]
) -> None:
    cache = make(SETS, WAYS, maxima, True)
    for line, sector in accesses:
        _access(cache, line, sector)
        for si in range(SETS):
            occ = cache.occupancy(si)
            assert all(occ[k] <= maxima[k] for k in range(4)), (maxima, si, occ)
    _check_consistent(cache)


@settings(max_examples=100, deadline=None)
@given(accesses=st.lists(st.tuples(st.integers(0, 63), st.integers(0, 3)), min_size=1, max_size=300))
@pytest.mark.parametrize("make", CACHES)
def test_restriction_off_is_plain_lru(make: Any, accesses: list[tuple[int, int]]) -> None:
    cache = make(SETS, WAYS, (1, 1, 1, 1), False)
    reference: list[list[int]] = [[] for _ in range(SETS)]
    for line, sector in accesses:
        _access(cache, line, sector)
        s = reference[line % SETS]
        if line in s:
            s.remove(line)
        elif len(s) == WAYS:
            s.pop(0)
        s.append(line)
    assert cache.sets == reference
    _check_consistent(cache)


@settings(max_examples=100, deadline=None)
@given(
    protected=st.integers(1, 3),
    stream=st.lists(st.integers(100, 10_000), min_size=20, max_size=400),
)
@pytest.mark.parametrize("make", CACHES)
def test_protected_sector_survives_a_stream(make: Any, protected: int, stream: list[int]) -> None:
    """Reused lines in sector 0 (``protected`` ways) stay; the sector-1 stream recycles its own ways."""
    maxima = (protected, WAYS - protected, 0, 0)
    on = make(SETS, WAYS, maxima, True)
    off = make(SETS, WAYS, maxima, False)
    reused = [si + SETS * k for si in range(SETS) for k in range(protected)]
    for cache in (on, off):
        for line in reused:
            _access(cache, line, 0)
    for line in stream:
        for cache in (on, off):
            _access(cache, line, 1)
    assert all(line in on for line in reused)
    # Without the restriction a long enough stream through every set evicts them (plain LRU).
    sets_hit = {line % SETS: 0 for line in stream}
    for line in set(stream):
        sets_hit[line % SETS] += 1
    if all(sets_hit.get(si, 0) >= WAYS for si in range(SETS)):
        assert not any(line in off for line in reused)


@pytest.mark.parametrize("make", CACHES)
def test_sector_at_maximum_evicts_its_own_line_even_with_a_free_way(make: Any) -> None:
    cache = make(1, WAYS, (2, 2, 0, 0), True)
    cache.fill(0, 0)
    cache.fill(1, 0)
    victim, _ = cache.fill(2, 0)
    assert victim == 0
    assert len(cache.sets[0]) == 2  # two invalid ways stay free for sector 1


@pytest.mark.parametrize("make", CACHES)
def test_under_maximum_takes_the_lru_line_of_an_over_maximum_sector(make: Any) -> None:
    cache = make(1, WAYS, (4, 0, 0, 0), True)
    for line in (10, 11, 12, 13):
        cache.fill(line, 0)
    cache.set_maxima((2, 2, 0, 0), True)
    cache.touch(10)  # 11 is now sector 0's LRU line
    victim, state = cache.fill(20, 1)
    assert victim == 11 and state & SECTOR_MASK == 0


@pytest.mark.parametrize("make", CACHES)
def test_zero_maximum_bypasses(make: Any) -> None:
    cache = make(1, WAYS, (4, 0, 0, 0), True)
    victim, _ = cache.fill(7, 1)
    assert victim == -1 and 7 not in cache


@settings(max_examples=60, deadline=None)
@given(new0=st.integers(0, 3), fills=st.lists(st.integers(100, 1000), min_size=1, max_size=40, unique=True))
@pytest.mark.parametrize("make", CACHES)
def test_changing_a_maximum_converges_at_fill_time(make: Any, new0: int, fills: list[int]) -> None:
    """Lowering sector 0's maximum evicts nothing at once; each sector-1 fill takes one of its lines."""
    cache = make(1, WAYS, (WAYS, 0, 0, 0), True)
    for line in range(WAYS):
        cache.fill(line, 0)
    cache.set_maxima((new0, WAYS - new0, 0, 0), True)
    assert cache.occupancy(0) == [WAYS, 0, 0, 0]  # gradual: nothing moved yet
    for i, line in enumerate(fills, 1):
        cache.fill(line, 1)
        occ = cache.occupancy(0)
        assert occ[0] == max(new0, WAYS - i)
        assert occ[0] + occ[1] == WAYS
    if len(fills) >= WAYS - new0:
        assert cache.occupancy(0)[0] == new0


@pytest.mark.parametrize("make", CACHES)
def test_switching_the_restriction_on_recounts_occupancy(make: Any) -> None:
    cache = make(2, WAYS, (1, 3, 0, 0), False)
    for line in range(8):
        cache.fill(line, line % 2)
    cache.set_maxima((1, 3, 0, 0), True)
    _check_consistent(cache)
    assert cache.occupancy(0) == [4, 0, 0, 0]
    cache.fill(100, 1)  # sector 1 under its maximum takes sector 0's LRU line
    assert cache.occupancy(0) == [3, 1, 0, 0]


# --------------------------------------------------------------------------- whole-machine effects


def _run(
    kernel: str,
    sizes: dict[str, str],
    enabled: bool,
    *,
    prefetch: bool = True,
    tag_override: bool = True,
    l1: tuple[int, int, int, int] | None = None,
) -> Machine:
    k = make_kernel(kernel, sizes)
    l1_default, l2_default = default_sectors(kernel)
    sectors = SectorConfig(
        enabled=enabled, tag_override=tag_override, l1=l1 or l1_default, l2=(*l2_default, 7, 7)
    )
    config = ModelConfig(prefetch=Prefetch(enabled=prefetch), sectors=sectors)
    machine = Machine(config, list(kernel_workload(k, 1, tag_override, prefetch).specs))
    machine.run_to_completion()
    return machine


@pytest.mark.parametrize("prefetch", [True, False])
def test_scenario_a_sectors_reduce_demand_refills_and_load_stalls(prefetch: bool) -> None:
    off = _run("scenario-a", {"passes": "40"}, False, prefetch=prefetch).threads[0]
    on = _run("scenario-a", {"passes": "40"}, True, prefetch=prefetch).threads[0]
    assert on.acc == off.acc
    assert on.l1_refill_dm < off.l1_refill_dm / 1.5
    if prefetch:
        # With the stream prefetched, the reused array's L2 round trips are what the core waits for.
        assert on.wait_l1 + on.wait_l2 < (off.wait_l1 + off.wait_l2) / 2
        assert on.cyc < off.cyc
    else:
        # Without prefetch the stream's memory latency dominates and hides the L2 hits.
        assert on.wait_l1 + on.wait_l2 <= off.wait_l1 + off.wait_l2


def test_scenario_b_sectors_reduce_write_backs_and_demand_refills() -> None:
    sizes = {"n": "128", "tile_i": "32", "tile_j": "128"}
    off = _run("scenario-b", sizes, False).threads[0]
    on = _run("scenario-b", sizes, True).threads[0]
    assert on.l1_wb < off.l1_wb
    assert on.l1_refill_dm < off.l1_refill_dm
    assert on.wait_l1 + on.wait_l2 < off.wait_l1 + off.wait_l2


def test_without_tag_override_everything_is_sector_0_untagged() -> None:
    t = _run("scenario-a", {"passes": "5"}, True, tag_override=False).threads[0]
    assert t.not_sec0() == 0
    assert t.flag_total(FL_SCE) == 0
    tagged = _run("scenario-a", {"passes": "5"}, True).threads[0]
    assert tagged.flag_total(FL_SCE) == tagged.acc
    assert tagged.not_sec0() == tagged.acc // 2  # the stream (sector 1) is half of the accesses


def test_untagged_accesses_all_share_sector_0_maximum() -> None:
    """Without tag override the reused array and the stream share sector 0's 3 ways: worse than off."""
    limited = _run("scenario-a", {"passes": "20"}, True, tag_override=False).threads[0]
    off = _run("scenario-a", {"passes": "20"}, False, tag_override=False).threads[0]
    assert limited.l1_refill_dm + limited.l1_refill_pf >= off.l1_refill_dm + off.l1_refill_pf


def test_live_change_converges_in_the_machine() -> None:
    """Switching the restriction on mid-run: demand misses drop to the always-on rate within a few passes."""
    k = make_kernel("scenario-a", {"passes": "100"})
    machine = Machine(
        ModelConfig(sectors=SectorConfig(enabled=False)), list(kernel_workload(k, 1, True, True).specs)
    )
    t = machine.threads[0]
    machine.run_until(40_000)
    off_rate = t.l1_refill_dm / 40_000
    machine.request_sectors(SectorConfig(enabled=True))
    machine.run_until(60_000)  # the reused array moves back into its 3 ways as lines are filled
    settled = t.l1_refill_dm
    machine.run_until(120_000)
    assert not t.done
    late_rate = (t.l1_refill_dm - settled) / 60_000
    on = _run("scenario-a", {"passes": "100"}, True).threads[0]
    on_rate = on.l1_refill_dm / on.cycles()
    assert off_rate > 10 * late_rate
    assert late_rate <= on_rate * 1.5 + 1e-4


def test_l2_sectors_protect_an_l2_resident_array() -> None:
    """Reused 4 MiB (fits L2 sector 0's 12 ways, not L1D): the stream limited to 2 L2 ways leaves it there."""
    sizes = {"reused": "4M", "passes": "3"}
    off = _run("scenario-a", sizes, False).threads[0]
    on = _run("scenario-a", sizes, True).threads[0]
    cold = (4 << 20) // 256
    assert off.l2_refill_dm > 2.5 * cold  # plain LRU: the stream flushes it every pass
    assert on.l2_refill_dm < 1.1 * cold  # only the first pass misses
    assert on.wait_l2 < off.wait_l2 / 2


def test_empty_stream_does_not_spin_when_looping() -> None:
    machine = Machine(ModelConfig(), [ThreadSpec(0, 0, lambda: iter(()))], loop=True)
    machine.run_until(1e6)
    assert machine.finished()
