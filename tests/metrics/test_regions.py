"""Region scopes: threads add their scaled counts, a CMG-wide event counts once per CMG, coverage
weighs each thread by its time, metrics come from the profile's formulas."""

from __future__ import annotations

import pytest

from sectormon.data.regions import GroupDelta, ThreadRegion
from sectormon.metrics.formulas import MetricSet
from sectormon.metrics.regions import RegionScopes, cmg_of_topology
from sectormon.profiles.resolve import load_profile

EVENTS = ("page-faults", "task-clock")


def reading(
    tid: int,
    *groups: GroupDelta,
    name: str = "r",
    number: int = 0,
    calls: int = 1,
    cpu: int = 0,
    open_: bool = False,
) -> ThreadRegion:
    return ThreadRegion(name, number, 1, tid, None, cpu, calls, open_, open_, 0, groups)


def scopes(cmg_events: tuple[str, ...] = (), cmg_of: dict[int, int] | None = None) -> RegionScopes:
    return RegionScopes(MetricSet(load_profile("generic")), cmg_events, cmg_of or {})


def test_threads_add_scaled_counts_and_coverage_weighs_each_by_its_time() -> None:
    full = GroupDelta(EVENTS, (100, 1), 100, 100)
    half = GroupDelta(EVENTS, (50, 1), 300, 150)
    regions = scopes().build(
        [
            reading(1, full, calls=2),
            reading(2, half, calls=3, open_=True),
            reading(2, full, name="other", number=4),
        ]
    )
    assert list(regions) == ["r", "other#4"]
    r = regions["r"]
    assert (r.calls, r.thread_count, r.open) == (5, 2, True)
    assert dict(r.total.counts) == {"page-faults": 200.0, "task-clock": 3.0}
    assert r.total.coverage["page-faults"] == pytest.approx(250 / 400)
    assert r.seconds == r.total.seconds == pytest.approx(300e-9)
    assert r.threads["1"].seconds == pytest.approx(100e-9)
    assert r.total.rates["page-faults"] == pytest.approx(200 / 300e-9)
    assert set(r.threads) == {"1", "2"} and r.threads["2"].counts["page-faults"] == 100.0
    assert regions["other#4"].number == 4


def test_a_cmg_wide_event_counts_once_per_cmg_from_the_thread_longest_inside() -> None:
    events = ("page-faults", "L2_REFILL")
    rows = [
        reading(1, GroupDelta(events, (10, 500), 100, 100), cpu=0),
        reading(2, GroupDelta(events, (20, 480), 200, 200), cpu=1),
        reading(3, GroupDelta(events, (30, 900), 100, 100), cpu=12),
    ]
    r = scopes(("L2_REFILL",), {0: 0, 1: 0, 12: 1}).build(rows)["r"]
    assert r.total.counts["page-faults"] == 60.0
    assert r.total.counts["L2_REFILL"] == 480 + 900
    assert r.cmgs["0"].counts["L2_REFILL"] == 480 and r.cmgs["1"].counts["L2_REFILL"] == 900
    assert "L2_REFILL" not in r.threads["1"].counts and "L2_REFILL" not in r.cores["0"].counts


def test_an_event_no_group_counted_inside_the_region_is_unknown_not_zero() -> None:
    r = scopes().build([reading(1, GroupDelta(EVENTS, (0, 0), 300, 0))])["r"]
    assert "page-faults" not in r.total.counts and "page-faults" not in r.total.rates
    assert r.total.coverage["page-faults"] == 0.0


def test_cmg_of_topology_keeps_only_numbers() -> None:
    assert cmg_of_topology({"cmgs": {"0": [0, 1], "1": [12, "x"], "bad": [3]}}) == {0: 0, 1: 0, 12: 1}
    assert cmg_of_topology({"cmgs": "nonsense"}) == {}
