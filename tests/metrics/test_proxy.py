"""Proxy counting in the engine: CMG estimates scaled from stand-ins, totals as the sum of the CMG
estimates, n/a where a scope's sum would be the stand-ins' part alone, and the ``proxy`` flag."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.data.frames import ScopeStats
from sectormon.data.readings import Row, Slice
from sectormon.metrics.engine import MetricsEngine
from sectormon.metrics.proxy import TASK_TIME, UNITS, ProxySetting
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile

DUR = 0.1
NS = int(DUR * 1e9)
EMPTY: tuple[str, ...] = ()
A = ("A",)
T = ("T",)


def _profile() -> Profile:
    events = {"A": EventDef("A", "ra"), "T": EventDef("T", "task-clock")}
    groups = (GroupDef("G1", ("A",)), GroupDef("SW", ("T",)))
    metrics = (
        MetricDef("a_rate", "A / SECONDS"),
        MetricDef("busy", "T / 1e9 / SECONDS"),
        MetricDef("a_per_t", "A / T"),
    )
    return Profile("t", "test", 8, events, groups, metrics)


def _engine(reference: str = UNITS) -> MetricsEngine:
    return MetricsEngine(_profile(), recent_seconds=1.0, proxy=ProxySetting(1, reference, ("A",)))


def _cpu_row(cpu: int, cmg: int, values: list[int] | None, te: int = NS) -> Row:
    """CPU ``cpu``'s G1 row: its count of A (a stand-in), or an empty row (it opened no G1)."""
    if values is None:
        return (f"cpu:{cpu}", cpu, cmg, "G1", 0, 0, EMPTY, [])
    return (f"cpu:{cpu}", cpu, cmg, "G1", te, te, A, values)


def _run(engine: MetricsEngine, slices: list[tuple[Row, ...]]) -> ScopeStats:
    for index, rows in enumerate(slices):
        engine.add_slice(Slice(t=(index + 1) * DUR, index=index, duration=DUR, group="G1", rows=rows))
    return engine.final_frame(len(slices) * DUR).total


def test_cmg_estimate_is_stand_in_count_times_units_and_total_is_their_sum() -> None:
    engine = _engine()
    # CMG 0: cpu 0 stands in for cpus 0-2; CMG 1: cpu 3 for cpus 3-4
    rows = (
        _cpu_row(0, 0, [100]), _cpu_row(1, 0, None), _cpu_row(2, 0, None),
        _cpu_row(3, 1, [50]), _cpu_row(4, 1, None),
    )  # fmt: skip
    for index in range(10):
        engine.add_slice(Slice(t=(index + 1) * DUR, index=index, duration=DUR, group="G1", rows=rows))
    frame = engine.final_frame(1.0)
    assert frame.cmgs["0"].counts["A"] == pytest.approx(3000.0)
    assert frame.cmgs["1"].counts["A"] == pytest.approx(1000.0)
    assert frame.total.counts["A"] == pytest.approx(4000.0)
    assert frame.total.metrics["a_rate"] == pytest.approx(4000.0)
    for scope in (frame.total, frame.cmgs["0"], frame.cmgs["1"]):
        assert scope.proxy == {"A", "a_rate", "a_per_t"}
        assert scope.to_json()["proxy"] == ["A", "a_per_t", "a_rate"]
    # a stand-in's own row is its own count, unflagged; the others never counted A: n/a
    assert frame.cores["0"].counts["A"] == pytest.approx(1000.0) and not frame.cores["0"].proxy
    for cpu in ("1", "2", "4"):
        assert "A" not in frame.cores[cpu].counts and frame.cores[cpu].metrics["a_rate"] is None
        assert "proxy" not in frame.cores[cpu].to_json()
    # the same in the rolling and run windows
    assert frame.recent.cmgs["0"].counts["A"] == pytest.approx(3000.0)
    assert frame.run.total.counts["A"] == pytest.approx(4000.0)


def test_a_scope_of_stand_ins_and_other_units_shows_n_a() -> None:
    """Threads 1 and 2 share core 5: only thread 1 stands in, so core 5's sum of A would be its
    part alone; the CMG scales it."""
    engine = _engine()
    rows = (
        ("thread:1", 5, 0, "G1", NS, NS, A, [10]),
        ("thread:2", 5, 0, "G1", 0, 0, EMPTY, []),
    )
    total = _run(engine, [rows] * 5)
    frame = engine.final_frame(0.5)
    assert total.counts["A"] == pytest.approx(100.0)
    assert "A" not in frame.cores["5"].counts
    assert frame.threads["1"].counts["A"] == pytest.approx(50.0)


def test_task_time_reference_scales_by_the_units_time_on_cpu() -> None:
    """Every unit reads T (always on): the stand-in ran half the time, the two others all of it,
    so the CMG's A is the stand-in's times (0.5 + 1 + 1) / 0.5."""
    engine = _engine(TASK_TIME)
    half = NS // 2
    rows = (
        ("cpu:0", 0, 0, "always", half, half, T, [half]),
        ("cpu:0", 0, 0, "G1", half, half, A, [100]),
        ("cpu:1", 1, 0, "always", NS, NS, T, [NS]),
        ("cpu:1", 1, 0, "G1", 0, 0, EMPTY, []),
        ("cpu:2", 2, 0, "always", NS, NS, T, [NS]),
        ("cpu:2", 2, 0, "G1", 0, 0, EMPTY, []),
    )
    total = _run(engine, [rows] * 4)
    assert total.counts["A"] == pytest.approx(400.0 * 5)
    assert total.counts["T"] == pytest.approx(4 * 2.5 * NS)  # counted on every unit: no estimate
    assert "T" not in total.proxy and "busy" not in total.proxy and "a_per_t" in total.proxy


def test_a_stand_in_that_never_ran_gives_n_a_not_zero() -> None:
    engine = _engine()
    rows = (_cpu_row(0, 0, [0], te=0), _cpu_row(1, 0, None))
    total = _run(engine, [rows] * 3)
    assert "A" not in total.counts and total.metrics["a_rate"] is None


def test_an_idle_stand_in_that_handed_over_is_measured_not_a_sample() -> None:
    """Presence scaling across a hand-over: cpu 0 stood in for the first half and ran 1 % of it
    (counting nothing), cpu 1 stood in for the second half and counted 100 a slice; cpu 2 never
    stood in. cpu 0's zero is its own measured count; cpu 2 is scaled from cpu 1, the stand-in
    that ran: 1000 + 1000. Taking both stand-ins as samples made it (0 + 1000) x 3/2."""
    engine = _engine()
    idle = (_cpu_row(0, 0, [0], te=NS // 100), _cpu_row(1, 0, None), _cpu_row(2, 0, None))
    working = (_cpu_row(0, 0, None), _cpu_row(1, 0, [100]), _cpu_row(2, 0, None))
    total = _run(engine, [idle] * 5 + [working] * 5)
    assert total.counts["A"] == pytest.approx(2000.0)
    assert "A" in total.proxy


def test_without_other_units_nothing_is_flagged() -> None:
    engine = _engine()
    total = _run(engine, [(_cpu_row(0, 0, [7]), _cpu_row(1, 1, [3]))] * 2)
    assert total.counts["A"] == pytest.approx(20.0) and not total.proxy


@settings(max_examples=40, deadline=None)
@given(
    cmgs=st.lists(
        st.tuples(
            st.integers(1, 3), st.integers(0, 4), st.lists(st.integers(0, 1000), min_size=3, max_size=3)
        ),
        min_size=1,
        max_size=4,
    )
)
def test_total_is_the_sum_of_cmg_estimates(cmgs: list[tuple[int, int, list[int]]]) -> None:
    """Per CMG: some stand-ins with counts, some other units present all along; each CMG's
    estimate is its stand-ins' sum x (units / stand-ins), the total their sum."""
    engine = _engine()
    rows: list[Row] = []
    expected: dict[str, float] = {}
    cpu = 0
    for cmg, (stand, others, counts) in enumerate(cmgs):
        own = 0
        for s in range(stand):
            value = counts[s % 3]
            rows.append(_cpu_row(cpu, cmg, [value]))
            own += value
            cpu += 1
        for _ in range(others):
            rows.append(_cpu_row(cpu, cmg, None))
            cpu += 1
        expected[str(cmg)] = 2 * own * (stand + others) / stand
    frame_total = _run(engine, [tuple(rows)] * 2)
    frame = engine.final_frame(0.2)
    for cmg, value in expected.items():
        assert frame.cmgs[cmg].counts["A"] == pytest.approx(value, rel=1e-9, abs=1e-9)
    assert frame_total.counts["A"] == pytest.approx(sum(expected.values()), rel=1e-9, abs=1e-9)


def test_old_frames_and_scopes_read_back_without_a_proxy_flag() -> None:
    stats = ScopeStats.from_json({"counts": {"A": 1.0}, "split": []})
    assert stats.proxy == frozenset() and "proxy" not in stats.to_json()
    flagged = ScopeStats.from_json({"counts": {"A": 1.0}, "proxy": ["A"]})
    assert flagged.proxy == {"A"} and flagged != stats


def test_two_stand_ins_give_each_estimate_its_error_bound() -> None:
    """cpus 0 and 1 stand in for cpus 0-3 of CMG 0 and count 100 and 140 a slice: over the run
    (1 s each) the estimate is 2400 x 2 and its 95 % half-width t(1) sqrt(N^2 (1 - n/N) / n s^2)
    with s^2 = 2 x 200^2, relative to the estimate; the total (one pool) has the same bound, and
    so have the metrics that read A (a sum of their proxied inputs' bounds: A's alone)."""
    engine = _engine()
    rows = (_cpu_row(0, 0, [100]), _cpu_row(1, 0, [140]), _cpu_row(2, 0, None), _cpu_row(3, 0, None))
    _run(engine, [rows] * 10)
    frame = engine.final_frame(1.0)
    bound = 12.706 * (16 * (1 - 2 / 4) / 2 * 2 * 200.0**2) ** 0.5 / 4800.0
    for scope in (frame.total, frame.cmgs["0"]):
        assert scope.counts["A"] == pytest.approx(4800.0)
        assert scope.proxy_error == pytest.approx({"A": bound, "a_rate": bound, "a_per_t": bound})
        data = scope.to_json()
        assert data["proxy_error"] == pytest.approx({"A": bound, "a_per_t": bound, "a_rate": bound})
        assert ScopeStats.from_json(data) == scope


def test_one_stand_in_gives_an_unknown_bound_and_full_counts_none() -> None:
    """One stand-in for three units: nothing tells how the others' rates differ, so the bound is
    unknown (JSON null, n/a), never 0; a CMG whose every unit counted has no estimate to bound."""
    engine = _engine()
    rows = (_cpu_row(0, 0, [100]), _cpu_row(1, 0, None), _cpu_row(2, 0, None), _cpu_row(3, 1, [5]))
    _run(engine, [rows] * 3)
    frame = engine.final_frame(0.3)
    assert frame.cmgs["0"].to_json()["proxy_error"]["A"] is None
    assert frame.total.proxy_error["A"] is None
    assert "proxy_error" not in frame.cmgs["1"].to_json()


def test_old_frames_with_a_proxy_flag_read_back_without_bounds() -> None:
    """A proxied frame written before bounds were: read back, its bounds are unknown and it is
    written again as it was (a replay of an old recording stays byte-identical)."""
    data = {"counts": {"A": 1.0}, "rates": {}, "metrics": {}, "coverage": {}, "split": [], "seconds": 1.0}
    old = ScopeStats.from_json({**data, "proxy": ["A"]})
    assert old.proxy_error.get("A") is None and old.to_json() == {**data, "proxy": ["A"]}
