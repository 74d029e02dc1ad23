"""The simulated A64FX's samples: every Nth modelled L1D refill on average, attributed to its
statement and array with its exact latency, checked against the model's exact counts."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

import pytest

from sectormon.attribution.window import HotspotWindows
from sectormon.data.samples import SampleBatch
from sectormon.errors import UsageError
from sectormon.profiles.resolve import load_profile
from sectormon.sim.config import LINE_SHIFT
from sectormon.sim.kernels import make_kernel
from sectormon.sim.sampling import RefillSampler
from sectormon.sources.base import SampleRequest
from sectormon.sources.sim.source import SimOptions, SimSource, build_sim_source

PROFILE = load_profile("a64fx")
Z99 = 2.5758  # two-sided 99 % quantile of the normal law


def run(options: SimOptions, event: str, period: int) -> tuple[list[SampleBatch], SimSource]:
    """The model run to its end, taking the samples every 20 us of simulated time."""
    source = build_sim_source(options, loop=False)
    source.start()
    feed = source.open_sampling(SampleRequest(event, period), PROFILE)
    batches = []
    t = 0.0
    while not source.finished():
        t += 20e-6
        source.wait_until(t)
        batches.append(feed.take(t))
    batches.append(feed.take(t, final=True))
    feed.close()
    return batches, source


def per_array(batches: Sequence[SampleBatch]) -> Counter[str]:
    return Counter(s.data.name if s.data is not None else "" for b in batches for s in b.samples)


CASES = [
    pytest.param(SimOptions(sector_cache=False, sizes={"passes": "300"}, threads=2), id="scenario-a"),
    pytest.param(
        SimOptions(kernel="scenario-b", sizes={"n": "128", "tile_j": "128"}, sector_cache=False, threads=1),
        id="scenario-b",
    ),
    pytest.param(
        SimOptions(kernel="random", sizes={"table": "8M", "accesses": "60000"}, prefetch=False, threads=2),
        id="random",
    ),
]


@pytest.mark.parametrize("options", CASES)
def test_every_refill_at_period_1_is_the_models_exact_count(options: SimOptions) -> None:
    batches, _ = run(options, "L1D_CACHE_REFILL", 1)
    assert sum(len(b.samples) for b in batches) == sum(b.counted or 0 for b in batches)
    for b in batches:
        assert len(b.samples) == b.counted  # each window: its own refills, no more, no fewer


@pytest.mark.parametrize("options", CASES)
def test_sampled_shares_lie_within_the_binomial_99_bound_of_the_exact_shares(options: SimOptions) -> None:
    exact = per_array(run(options, "L1D_CACHE_REFILL", 1)[0])
    batches, _ = run(options, "L1D_CACHE_REFILL", 13)
    sampled = per_array(batches)
    n = sum(sampled.values())
    total = sum(exact.values())
    assert n > 300, "enough samples for the normal approximation"
    assert abs(n - total / 13) <= Z99 * math.sqrt(total / 13), "samples ~ Binomial(total, 1/13)"
    for name, count in exact.items():
        p = count / total
        bound = Z99 * math.sqrt(p * (1 - p) / n) + 1 / n
        assert abs(sampled[name] / n - p) <= bound, (name, sampled[name] / n, p, bound)


def test_latencies_are_the_models_and_fill_the_buckets_they_belong_to() -> None:
    options = SimOptions(
        kernel="random", sizes={"table": "32M", "accesses": "20000"}, prefetch=False, threads=1
    )
    batches, source = run(options, "L1D_CACHE_REFILL_DM", 7)
    timing = source.config.timing
    weights = Counter(s.weight for b in batches for s in b.samples)
    # A random walk over 32 MiB: nearly every refill comes from memory, a few from L2.
    assert set(weights) <= {timing.l2_hit, timing.memory} | set(range(timing.l2_hit, timing.memory))
    assert weights[timing.memory] > 0.9 * sum(weights.values())
    windows = HotspotWindows(source.open_sampling(SampleRequest("L1D_CACHE_REFILL", 7), PROFILE).settings)
    for b in batches:
        windows.add(b)
    table = windows.cut(final=True).run
    assert table.bucket_names == ("L1 hit", "L2 hit", "memory")
    assert table.with_weight == table.samples
    for rows in (table.functions, table.objects):
        assert sum(sum(r.buckets or ()) for r in rows) == table.samples
        for row in rows:
            assert row.buckets is not None and sum(row.buckets) == row.samples
    (memory,) = [r for r in table.objects if r.name == "table"]
    assert memory.buckets is not None and memory.buckets[2] == weights[timing.memory]


def test_samples_name_the_statement_the_array_and_the_line() -> None:
    options = SimOptions(sector_cache=False, sizes={"passes": "50"}, threads=1, warmup=0.0)

    def seen(event: str) -> set[tuple[str, str | None, str | None]]:
        batches, _ = run(options, event, 3)
        for b in batches:
            for s in b.samples:
                assert s.addr is not None and s.addr % (1 << LINE_SHIFT) == 0 and s.period == 3
        return {
            (s.code.function, s.code.source, s.data.name if s.data else None)
            for b in batches
            for s in b.samples
        }

    reused = ("s += reused[order[i]]", "scenario-a:1", "reused")
    stream = ("s += stream[j]", "scenario-a:2", "stream")
    # Demand misses fall on the reused array only (the prefetcher brings the stream in first);
    # a prefetched line belongs to the array whose access set the prefetcher going.
    assert seen("L1D_CACHE_REFILL_DM") == {reused}
    assert seen("L1D_CACHE_REFILL_HWPRF") == {reused, stream}


def test_every_kernel_names_a_statement_for_each_array() -> None:
    assert make_kernel("scenario-b").statements == (
        ("a = A[i][k]", 1),
        ("C[i][j] += a * B[k][j]", 2),
        ("C[i][j] += a * B[k][j]", 2),
    )
    for kernel in ("scenario-a", "random"):
        spec = make_kernel(kernel)
        assert len(spec.statements) == len(spec.objects)


def test_demand_samples_lie_within_the_binomial_99_bound_of_the_models_per_array_misses() -> None:
    """Against the model's own per-object counters of demand refills, with three arrays."""
    options = SimOptions(
        kernel="scenario-b",
        sizes={"n": "128", "tile_j": "128"},
        sector_cache=False,
        prefetch=False,
        threads=2,
        warmup=0.0,
    )
    batches, source = run(options, "L1D_CACHE_REFILL_DM", 11)
    exact: Counter[str] = Counter()
    for thread in source.machine.threads:
        for name, (_, misses, _) in zip(thread.spec.objects, thread.object_counts(), strict=True):
            exact[name] += misses
    assert sum(b.counted or 0 for b in batches) == sum(exact.values())  # the same refills, counted
    sampled = per_array(batches)
    n = sum(sampled.values())
    assert n > 300
    for name in exact:
        p = exact[name] / sum(exact.values())
        bound = Z99 * math.sqrt(p * (1 - p) / n) + 1 / n
        assert abs(sampled[name] / n - p) <= bound, (name, sampled[name] / n, p, bound)


def test_the_gap_between_samples_is_geometric_with_the_period_as_its_mean() -> None:
    sampler = RefillSampler(50, demand=True, prefetch=False, seed=7)
    for line in range(200_000):
        sampler.refill(0, 0, line, 0, line, line + 37)
    taken = sampler.drain()
    assert abs(len(taken) - 4000) <= Z99 * math.sqrt(4000)
    gaps = [b.line - a.line for a, b in itertools.pairwise(taken)]
    assert min(gaps) >= 1 and len(set(gaps)) > 50  # not a fixed stride that could alias a loop
    assert all(r.latency == 37 for r in taken) and sampler.drain() == []
    every = RefillSampler(1, demand=True, prefetch=False)
    for line in range(10):
        every.refill(0, 0, line, 0, 0, 5)
    assert [r.line for r in every.drain()] == list(range(10))


def test_only_l1d_refill_events_can_be_sampled() -> None:
    source = build_sim_source(SimOptions(sizes={"passes": "2"}), loop=False)
    with pytest.raises(UsageError, match=r"--sample CPU_CYCLES: not an L1D refill event; .*L1D_CACHE_REFILL"):
        source.open_sampling(SampleRequest("CPU_CYCLES"), PROFILE)
    with pytest.raises(UsageError, match="--sample NOPE: not an event of the profile"):
        source.open_sampling(SampleRequest("NOPE"), PROFILE)


def test_sampling_leaves_the_model_as_it_was() -> None:
    options = SimOptions(sector_cache=False, sizes={"passes": "40"}, threads=2, warmup=0.0)
    plain = build_sim_source(options, loop=False)
    plain.start()
    plain.run_to_completion()
    _, sampled = run(options, "L1D_CACHE_REFILL", 5)
    for a, b in zip(plain.machine.threads, sampled.machine.threads, strict=True):
        assert (a.cyc, a.l1_refill_dm, a.l1_refill_pf, a.wait_l1, a.wait_l2) == (
            b.cyc,
            b.l1_refill_dm,
            b.l1_refill_pf,
            b.wait_l1,
            b.wait_l2,
        )
