"""The cache model without sectors or prefetch must count exactly what pycachesim counts.

Same geometry (L1D 64 sets x 4 ways, L2 2048 sets x 14 ways, 256-byte lines), LRU, L1D misses load
from L2, read-only traces: L1 and L2 hits and misses must be identical, access by access totals.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

cachesim = pytest.importorskip("cachesim")

from sectormon.sim.config import L1_SETS, L1_WAYS, L2_SETS, ModelConfig, Prefetch, SectorConfig  # noqa: E402
from sectormon.sim.engine import Machine  # noqa: E402
from sectormon.sim.stream import ThreadSpec  # noqa: E402
from sectormon.sim.trace import stream_factory, validate  # noqa: E402

LINE = 256


def _pycachesim(addresses: list[int], l2_ways: int = 14) -> tuple[dict[str, int], dict[str, int]]:
    mem = cachesim.MainMemory()
    l2 = cachesim.Cache("L2", L2_SETS, l2_ways, LINE, "LRU")
    mem.load_to(l2)
    mem.store_from(l2)
    l1 = cachesim.Cache("L1", L1_SETS, L1_WAYS, LINE, "LRU", store_to=l2, load_from=l2)
    sim = cachesim.CacheSimulator(l1, mem)
    for a in addresses:
        sim.load(a)
    return l1.stats(), l2.stats()


def _ours(addresses: list[int], sectors: SectorConfig | None = None, l2_ways: int = 14) -> dict[str, int]:
    records = [(a // LINE, 1, ((a * 7919) % 4) << 1) for a in addresses]  # sector ids vary: must not matter

    def stream():  # type: ignore[no-untyped-def]
        for i in range(0, len(records), 1000):
            yield records[i : i + 1000]

    config = ModelConfig(
        l2_ways=l2_ways, prefetch=Prefetch(enabled=False), sectors=sectors or SectorConfig(enabled=False)
    )
    machine = Machine(config, [ThreadSpec(0, 0, stream)])
    machine.run_to_completion()
    return _counts(machine)


def _counts(machine: Machine) -> dict[str, int]:
    t = machine.threads[0]
    return {
        "l1_hit": t.acc - t.l1_refill_dm,
        "l1_miss": t.l1_refill_dm,
        "l2_hit": t.l2_access() - t.l2_refill_dm,
        "l2_miss": t.l2_refill_dm,
    }


def _expected(addresses: list[int], l2_ways: int = 14) -> dict[str, int]:
    s1, s2 = _pycachesim(addresses, l2_ways)
    return {
        "l1_hit": s1["HIT_count"],
        "l1_miss": s1["MISS_count"],
        "l2_hit": s2["HIT_count"],
        "l2_miss": s2["MISS_count"],
    }


def _sequential(n: int, span: int) -> list[int]:
    """8-byte steps through ``span`` bytes, wrapping: with span > L1D and < L2, later sweeps hit L2."""
    return [(i * 8) % span for i in range(n)]


def _strided(n: int, stride: int, span: int) -> list[int]:
    return [(i * stride) % span for i in range(n)]


def _random(n: int, span: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(span) for _ in range(n)]


def _mixed(n: int, seed: int) -> list[int]:
    """Hot data (L1D reuse), warm data (L2 reuse), far random accesses and short sequential runs."""
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < n:
        kind = rng.random()
        if kind < 0.3:
            out.append(rng.randrange(48 << 10))
        elif kind < 0.6:
            out.append(rng.randrange(3 << 20))
        elif kind < 0.75:
            out.append(rng.randrange(256 << 20))
        else:
            base = rng.randrange(6 << 20)
            out.extend(base + 8 * j for j in range(rng.randrange(1, 80)))
    return out[:n]


TRACES = {
    "sequential": lambda: _sequential(200_000, 160 << 10),
    "strided-264": lambda: _strided(60_000, 264, 2 << 20),
    "strided-4k": lambda: _strided(60_000, 4096 + 256, 6 << 20),
    "strided-conflict": lambda: _strided(40_000, 16384, 1 << 20),
    "random-l1": lambda: _random(40_000, 96 << 10, 1),
    "random-l2": lambda: _random(60_000, 10 << 20, 2),
    "mixed": lambda: _mixed(80_000, 3),
}


def test_traces_exercise_every_outcome() -> None:
    """Guard the check's strength: the traces together hit and miss at both levels."""
    for name in ("sequential", "random-l1", "random-l2", "mixed"):
        counts = _expected(TRACES[name]())
        assert all(v > 0 for v in counts.values()), (name, counts)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_same_hits_and_misses_as_pycachesim(name: str) -> None:
    addresses = TRACES[name]()
    assert _ours(addresses) == _expected(addresses)


@pytest.mark.parametrize("name", ["strided-4k", "random-l1", "random-l2", "mixed"])
def test_sectors_with_full_maxima_are_plain_lru(name: str) -> None:
    """Restriction on but every sector may use every way: identical to LRU whatever the sector ids."""
    addresses = TRACES[name]()
    sectors = SectorConfig(enabled=True, l1=(4, 4, 4, 4), l2=(14, 14, 14, 14))
    assert _ours(addresses, sectors) == _expected(addresses)


def test_other_l2_way_count(tmp_path: Path) -> None:
    addresses = _mixed(30_000, 9)
    assert _ours(addresses, l2_ways=16) == _expected(addresses, l2_ways=16)


def test_din_trace_path_matches_pycachesim(tmp_path: Path) -> None:
    """Through the din parser (which groups consecutive accesses to one line): same totals."""
    addresses = _mixed(40_000, 5)
    trace = tmp_path / "t.din"
    trace.write_text("".join(f"0 {a:x}\n" for a in addresses))
    info = validate(str(trace))
    assert info.reads == len(addresses)
    config = ModelConfig(prefetch=Prefetch(enabled=False), sectors=SectorConfig(enabled=False))
    machine = Machine(config, [ThreadSpec(0, 0, stream_factory(str(trace), True, False))])
    machine.run_to_completion()
    assert _counts(machine) == _expected(addresses)
