"""stat's figures from frames: perf's spread of repeated runs, interval rows, region blocks."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.commands.stat_counts import Intervals, Shown, event_lines, run_blocks
from sectormon.commands.stat_report import mean_and_noise
from sectormon.data.frames import Frame, RegionStats, ScopeStats, ThreadTime, WindowStats
from sectormon.profiles.adhoc import adhoc_profile
from sectormon.profiles.event_list import parse_event_list
from sectormon.profiles.resolve import load_profile

MADE = adhoc_profile(load_profile("generic"), parse_event_list("page-faults,task-clock,cycles"))
SHOWN = Shown(MADE.profile, MADE.labels, frozenset({"CYCLES"}))


def scope(faults: float, clock: float = 2e6, coverage: float = 1.0) -> ScopeStats:
    counts = {"PAGE_FAULTS": faults, "TASK_CLOCK": clock}
    return ScopeStats(
        counts=counts,
        rates={},
        metrics={"page_fault_rate": faults, "cpu_utilization": None},
        coverage={**dict.fromkeys(counts, coverage), "page_fault_rate": coverage, "cpu_utilization": 0.0},
        seconds=1.0,
    )


def frame(
    t: float, interval: ScopeStats, run: ScopeStats, *, final: bool = False, **regions: RegionStats
) -> Frame:
    empty = WindowStats(seconds=t, total=run, cmgs={}, cores={})
    return Frame(
        t=t,
        interval=0.5,
        overhead=0.0,
        total=interval,
        cmgs={},
        cores={},
        threads={},
        recent=empty,
        run=WindowStats(seconds=t, total=run, cmgs={}, cores={}, regions=regions),
        final=final,
    )


def test_the_spread_is_perfs_standard_deviation_of_the_mean() -> None:
    values = [10.0, 12.0, 14.0]
    mean, noise = mean_and_noise(values)
    stdev = math.sqrt(sum((v - 12.0) ** 2 for v in values) / 2)
    assert mean == 12.0
    assert noise == pytest.approx(100 * stdev / math.sqrt(3) / 12.0)
    assert mean_and_noise([5.0]) == (5.0, None)
    assert mean_and_noise([0.0, 0.0]) == (0.0, 0.0)


def test_a_run_shows_counts_clocks_in_msec_and_what_the_host_lacks() -> None:
    lines = event_lines(SHOWN, [(scope(1500.0, coverage=0.5), 2.0)])
    faults, clock, cycles = lines
    assert (faults.label, faults.value, faults.running, faults.run_ns) == (
        "page-faults",
        1500.0,
        0.5,
        1_000_000_000,
    )
    assert (clock.unit, clock.value) == ("msec", 2.0)
    assert (cycles.value, cycles.supported) == (None, False)


def test_repeats_average_and_spread_counts_and_metrics_a_metric_never_valued_is_na() -> None:
    finals = [frame(1.0, scope(f), scope(f), final=True) for f in (100.0, 110.0, 120.0)]
    (block,) = run_blocks(SHOWN, "'x'", finals)
    assert block.events[0].value == 110.0
    assert block.events[0].noise == pytest.approx(mean_and_noise([100.0, 110.0, 120.0])[1])
    metrics = {m.name: m for m in block.metrics}
    assert metrics["page_fault_rate"].value == 110.0
    assert metrics["cpu_utilization"].value is None


def test_regions_follow_the_whole_run_as_blocks_of_their_own() -> None:
    region = RegionStats(
        name="solve", number=1, calls=3, thread_count=1, open=False, seconds=0.25, total=scope(40.0)
    )
    blocks = run_blocks(SHOWN, "'x'", [frame(1.0, scope(50.0), scope(50.0), final=True, solve=region)])
    assert [b.title for b in blocks] == ["'x'", "region 'solve' (calls 3)"]
    assert blocks[1].events[0].value == 40.0
    assert blocks[1].seconds == 0.25


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=8), st.integers(0, 10_000))
def test_interval_rows_add_up_to_the_run(per_interval: list[int], last: int) -> None:
    intervals = Intervals(SHOWN)
    total = 0.0
    rows = []
    for index, faults in enumerate(per_interval):
        total += faults
        rows += intervals.lines(frame(0.5 * (index + 1), scope(float(faults)), scope(total)))
    total += last
    end = frame(0.5 * len(per_interval) + 0.1, scope(total), scope(total), final=True)
    rows += intervals.lines(end)
    assert sum(r.value or 0.0 for r in rows if r.label == "page-faults") == total


def test_no_last_interval_when_the_run_ended_with_a_frame() -> None:
    intervals = Intervals(SHOWN)
    intervals.lines(frame(0.5, scope(5.0), scope(5.0)))
    assert intervals.lines(frame(0.5, scope(5.0), scope(5.0), final=True)) == ()


def test_the_run_time_is_the_counted_threads_cpu_time_as_perfs_when_known() -> None:
    final = frame(1.0, scope(10.0), scope(10.0, coverage=0.5), final=True)
    timed = dataclasses.replace(final, run=dataclasses.replace(final.run, thread_time=ThreadTime(0.04, 0.05)))
    (block,) = run_blocks(SHOWN, "'x'", [timed])
    assert block.events[0].run_ns == 20_000_000  # half of the 40 ms the threads ran counted
    (wall,) = run_blocks(SHOWN, "'x'", [final])
    assert wall.events[0].run_ns == 500_000_000  # no thread time: half the window's second
