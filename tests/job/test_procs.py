"""A job frame keeps every node's processes under its host and adds up their thread time."""

from __future__ import annotations

import dataclasses

import pytest

from sectormon.data.frames import ProcessScope, ThreadTime
from sectormon.job.combine import JobCombiner, summed_thread_time
from sectormon.metrics.formulas import MetricSet
from sectormon.profiles.resolve import load_profile
from tests.export.frames import frame, scope


def test_nodes_processes_and_thread_time_in_the_job_frame() -> None:
    combiner = JobCombiner(MetricSet(load_profile("generic")), ["n1", "n2"])
    nodes = {
        host: dataclasses.replace(
            frame(1.0),
            procs={"4242": scope(1.0, 100.0)},
            processes={"4242": ProcessScope(4242, "app", 1, rank)},
            thread_time=ThreadTime(0.5 * (rank + 1), 1.0),
        )
        for rank, host in enumerate(["n1", "n2"])
    }
    job = combiner.frame(1.0, nodes, interval=1.0, run_seconds=1.0)
    assert set(job.procs) == {"node:n1/proc:4242", "node:n2/proc:4242"}
    assert job.processes["node:n2/proc:4242"].rank == 1
    assert job.thread_coverage == pytest.approx(0.75)
    procs = job.to_json()["procs"]
    assert procs["node:n1/proc:4242"]["pid"] == 4242 and procs["node:n2/proc:4242"]["rank"] == 1


def test_nodes_that_cannot_tell_are_left_out_of_the_thread_time() -> None:
    assert summed_thread_time([None, None]) is None
    assert summed_thread_time([ThreadTime(1.0, 2.0), None]) == ThreadTime(1.0, 2.0)


def test_each_node_s_teardown_is_summed_not_recomputed() -> None:
    """One node's exit teardown cannot forgive another node's uncounted work."""
    torn_down, missed = ThreadTime(0.9, 1.0, 0.1), ThreadTime(0.5, 1.0, 0.0)
    summed = summed_thread_time([torn_down, missed])
    assert summed == ThreadTime(1.4, 2.0, 0.1)
    assert summed is not None and summed.coverage == pytest.approx(1.4 / 1.9)
