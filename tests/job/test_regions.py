"""A merged job's regions: each node's scopes under its keys, job totals that add the nodes."""

from __future__ import annotations

import dataclasses

import pytest

from sectormon.data.frames import RegionStats, ScopeStats
from sectormon.job.combine import JobCombiner
from sectormon.job.regions import JobRegions, job_ranks
from sectormon.metrics.formulas import MetricSet
from sectormon.profiles.resolve import load_profile
from tests.export.frames import frame


def scope(faults: float | None, coverage: float = 1.0) -> ScopeStats:
    counts = {} if faults is None else {"PAGE_FAULTS": faults}
    return ScopeStats(counts=counts, rates={}, metrics={}, coverage={"PAGE_FAULTS": coverage})


def region(faults: float | None, *, seconds: float, rank: str = "0", coverage: float = 1.0) -> RegionStats:
    return RegionStats(
        name="solve",
        number=1,
        calls=4,
        thread_count=2,
        open=False,
        seconds=seconds,
        total=scope(faults, coverage),
        threads={"7": scope(faults, coverage)},
        cores={"12": scope(faults, coverage)},
        cmgs={"0": scope(faults, coverage)},
        ranks={rank: scope(faults, coverage)},
        procs={"5": scope(faults, coverage)},
    )


def combine(parts: dict[str, dict[str, RegionStats]]) -> dict[str, RegionStats]:
    return JobRegions(MetricSet(load_profile("generic"))).combine(parts)


def test_nodes_add_up_and_keep_their_own_scopes() -> None:
    job = combine(
        {"a": {"solve#1": region(100.0, seconds=2.0)}, "b": {"solve#1": region(300.0, seconds=4.0, rank="1")}}
    )
    solve = job["solve#1"]
    assert (solve.calls, solve.thread_count, solve.seconds) == (8, 4, 4.0)
    assert solve.total.counts == {"PAGE_FAULTS": 400.0}
    assert solve.total.metrics["page_fault_rate"] == pytest.approx(100.0)  # over the longest node's time
    assert set(solve.threads) == {"node:a/thread:7", "node:b/thread:7"}
    assert set(solve.cmgs) == {"node:a/cmg:0", "node:b/cmg:0"}
    assert set(solve.procs) == {"node:a/proc:5", "node:b/proc:5"}
    assert set(solve.ranks) == {"0", "1"}  # MPI ranks are job-wide
    assert {h: s.counts["PAGE_FAULTS"] for h, s in solve.nodes.items()} == {"a": 100.0, "b": 300.0}
    assert solve.to_json()["nodes"]["b"]["counts"] == {"PAGE_FAULTS": 300.0}


def test_a_node_without_the_region_or_the_event_lowers_coverage_never_adds_a_zero() -> None:
    job = combine(
        {
            "a": {"solve#1": region(100.0, seconds=3.0, coverage=0.5)},
            "b": {"solve#1": region(None, seconds=1.0, coverage=0.0), "io": region(7.0, seconds=1.0)},
            "c": {},
        }
    )
    assert list(job) == ["solve#1", "io"]
    assert job["solve#1"].total.counts == {"PAGE_FAULTS": 100.0}
    assert job["solve#1"].total.coverage["PAGE_FAULTS"] == pytest.approx(0.5 * 3.0 / 4.0)
    assert set(job["io"].nodes) == {"b"}


def test_one_rank_on_two_nodes_is_kept_apart() -> None:
    both = {"a": region(1.0, seconds=1.0, rank="0"), "b": region(2.0, seconds=1.0, rank="0")}
    assert set(job_ranks(both)) == {"node:a/rank:0", "node:b/rank:0"}


def test_job_frames_and_windows_carry_the_regions() -> None:
    combiner = JobCombiner(MetricSet(load_profile("generic")), ["a", "b"])
    nodes = {}
    for host, faults in (("a", 10.0), ("b", 20.0)):
        base = frame(1.0)
        regions = {"solve#1": region(faults, seconds=1.0)}
        nodes[host] = dataclasses.replace(
            base, regions=regions, run=dataclasses.replace(base.run, regions=regions)
        )
    job = combiner.frame(1.0, nodes, interval=1.0, run_seconds=1.0)
    assert job.regions["solve#1"].total.counts == {"PAGE_FAULTS": 30.0}
    assert job.run.regions["solve#1"].total.counts == {"PAGE_FAULTS": 30.0}
    plain = combiner.frame(1.0, {"a": frame(1.0), "b": frame(1.0)}, interval=1.0, run_seconds=1.0)
    assert "regions" not in plain.to_json() and "regions" not in plain.to_json()["run"]
