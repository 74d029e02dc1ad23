"""What sampling costs the simulated A64FX: the model's run time with ``--sample`` against without.

Each kernel (one thread, full model) runs to completion with no sampler, with the default period
(one L1D refill in 101) and with every refill sampled, the three alternating within each
repetition (best of 5), then the samples are attributed as a session's take does. Prints the
times and their ratios to the run without a sampler, measured in the same run.

    .venv/bin/python benchmarks/bench_sim_sampling.py [--quick]

Numbers vary with the machine and its load; the ratios within one run are what to compare.
"""

from __future__ import annotations

import argparse
import time

from sectormon.profiles.resolve import load_profile
from sectormon.sources.base import SampleRequest
from sectormon.sources.sim.samples import SIM_DEFAULT_PERIOD
from sectormon.sources.sim.source import SimOptions, build_sim_source

PROFILE = load_profile("a64fx")


def run(options: SimOptions, period: int | None) -> tuple[float, int]:
    """Seconds to run the model to its end (and attribute its samples), and the samples taken."""
    source = build_sim_source(options, loop=False)
    source.start()
    feed = source.open_sampling(SampleRequest("L1D_CACHE_REFILL", period), PROFILE) if period else None
    start = time.perf_counter()
    source.run_to_completion()
    samples = len(feed.take(source.now(), final=True).samples) if feed is not None else 0
    return time.perf_counter() - start, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads, 2 repetitions")
    args = parser.parse_args()
    scale = 4 if args.quick else 1
    cases = {
        "scenario-a, sectors off": SimOptions(
            sector_cache=False, sizes={"passes": str(2000 // scale)}, threads=1, warmup=0.0
        ),
        "scenario-b": SimOptions(kernel="scenario-b", threads=1, warmup=0.0),
        "random 32 MiB": SimOptions(
            kernel="random", sizes={"accesses": str(200_000 // scale)}, threads=1, warmup=0.0
        ),
    }
    repetitions = 2 if args.quick else 5
    periods: tuple[int | None, ...] = (None, SIM_DEFAULT_PERIOD, 1)
    print(f"{'workload':<26} {'no sampler':>11} {'period 101':>18} {'period 1':>18}  samples (101 / 1)")
    for name, options in cases.items():
        best = {p: float("inf") for p in periods}
        taken = {p: 0 for p in periods}
        for _ in range(repetitions):
            for period in periods:
                seconds, samples = run(options, period)
                best[period] = min(best[period], seconds)
                taken[period] = samples
        base = best[None]
        cells = [f"{best[p]:6.3f} s ({best[p] / base:4.2f}x)" for p in periods[1:]]
        print(f"{name:<26} {base:9.3f} s {cells[0]:>18} {cells[1]:>18}  {taken[periods[1]]:,} / {taken[1]:,}")


if __name__ == "__main__":
    main()
