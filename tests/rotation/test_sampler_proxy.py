"""--proxy in the sampler: only stand-ins open the rotating groups, a stand-in that ends is
replaced (with a warning), and the engine's CMG estimates from those readings match a full count
of homogeneous units (fake source: every unit counts at the same rates)."""

from __future__ import annotations

import pytest

from sectormon.data.frames import Frame
from sectormon.data.readings import Slice, Unit
from sectormon.metrics.engine import MetricsEngine
from sectormon.metrics.proxy import UNITS, ProxySetting
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import KERNEL, SYNC, Rotation, plan_rotation, select_groups
from sectormon.rotation.sampler import Sampler
from tests.rotation.fake_source import FakeSource

RATES = {"A": 1000.0, "B": 300.0, "S": 50.0}


def _profile() -> Profile:
    events = {"A": EventDef("A", "ra"), "B": EventDef("B", "rb"), "S": EventDef("S", "page-faults")}
    return Profile("t", "test", 8, events, (GroupDef("G1", ("A", "S")), GroupDef("G2", ("B",))), ())


def _source(ends: dict[int, float] | None = None) -> FakeSource:
    """Six CPUs, three per CMG; CPU n lives until ``ends[n]`` (else all run)."""
    ends = ends or {}
    lifetimes = {
        f"cpu:{n}": (Unit("cpu", n, core=n, cmg=n // 3), 0.0, ends.get(n, float("inf"))) for n in range(6)
    }
    return FakeSource(lifetimes, RATES, stop_at=1.0)


def _run(
    source: FakeSource, proxy: int | None, mode: str = SYNC, *, always: bool = True
) -> tuple[list[Slice], list[str], Sampler]:
    """``always``: S takes no counter (always on, on every unit), else it rotates with A. (The
    fake's always-on group reads its counts only when disabled, at the end: the comparisons of
    counts leave it out.)"""
    profile = _profile()
    plan = plan_rotation(profile, select_groups(profile, None), {}, free=lambda e: always and e.name == "S")
    slices: list[Slice] = []
    warnings: list[str] = []
    sampler = Sampler(
        source,
        plan,
        timeslice=0.01,
        on_slice=slices.append,
        on_warning=warnings.append,
        rotation=Rotation(mode, 0.01, "test"),
        proxy=proxy,
    )
    source.start()
    sampler.run()
    return slices, warnings, sampler


def _frame_total(slices: list[Slice], proxy: ProxySetting | None) -> Frame:
    engine = MetricsEngine(_profile(), recent_seconds=1.0, proxy=proxy)
    for item in slices:
        engine.add_slice(item)
    return engine.final_frame(slices[-1].t)


@pytest.mark.parametrize("mode", [SYNC, KERNEL])
def test_only_stand_ins_open_the_rotating_groups(mode: str) -> None:
    source = _source()
    slices, warnings, sampler = _run(source, 1, mode)
    opened = {(g.unit.key, g.events) for g in source.groups}
    assert {key for key, events in opened if events != ("S",)} == {"cpu:0", "cpu:3"}
    assert {key for key, events in opened if events == ("S",)} == {f"cpu:{n}" for n in range(6)}
    assert len(source.groups) == 2 * 2 + 6  # full counting opens 6 x 3
    assert [u.key for u in sampler.stand_ins()] == ["cpu:0", "cpu:3"]
    assert not warnings
    # the other units still say they were there in every slice
    assert all({r[0] for r in s.rows} >= {f"cpu:{n}" for n in range(6)} for s in slices[:-1])


def test_cmg_estimates_match_a_full_count_of_homogeneous_units() -> None:
    full = _frame_total(_run(_source(), None, always=False)[0], None)
    proxied = _frame_total(_run(_source(), 1, always=False)[0], ProxySetting(1, UNITS, ("A", "B", "S")))
    for cmg in ("0", "1"):
        for event in ("A", "B", "S"):
            assert proxied.cmgs[cmg].counts[event] == pytest.approx(full.cmgs[cmg].counts[event], rel=0.02)
        assert proxied.cmgs[cmg].proxy == {"A", "B", "S"}
    assert proxied.total.counts["A"] == pytest.approx(full.total.counts["A"], rel=0.02)
    assert "A" not in proxied.cores["1"].counts and "S" not in proxied.cores["1"].counts


def test_a_stand_in_that_ends_is_replaced_by_the_next_unit_of_its_cmg() -> None:
    source = _source({0: 0.5})
    slices, warnings, _ = _run(source, 1, always=False)
    assert warnings == ["proxy: cpu 1 stands in for CMG 0 from now on, in place of cpu 0, which ended"]
    assert {g.unit.key for g in source.groups if g.events == ("B",)} == {"cpu:0", "cpu:1", "cpu:3"}
    frame = _frame_total(slices, ProxySetting(1, UNITS, ("A", "B", "S")))
    full = _frame_total(_run(_source({0: 0.5}), None, always=False)[0], None)
    # cpu 0 for half the run, cpus 1 and 2 for all of it: what the full count of them gives
    assert frame.cmgs["0"].counts["A"] == pytest.approx(full.cmgs["0"].counts["A"], rel=0.03)
    assert frame.cmgs["0"].counts["B"] == pytest.approx(full.cmgs["0"].counts["B"], rel=0.03)


def _threads(busy: dict[int, list[tuple[float, float]]], stop_at: float) -> FakeSource:
    """Threads 100-102 on CMG 0 and 200-201 on CMG 1, running as ``busy`` says (else always)."""
    lifetimes = {
        f"thread:{tid}": (Unit("thread", tid, cmg=tid // 100 - 1, process=100), 0.0, float("inf"))
        for tid in (100, 101, 102, 200, 201)
    }
    return FakeSource(
        lifetimes, RATES, stop_at=stop_at, busy={f"thread:{tid}": steps for tid, steps in busy.items()}
    )


def _rotating_on(source: FakeSource) -> dict[str, int]:
    """Per unit, the rotating groups opened on it."""
    out: dict[str, int] = {}
    for group in source.groups:
        if group.events != ("S",):
            out[group.unit.key] = out.get(group.unit.key, 0) + 1
    return out


def test_an_idle_stand_in_hands_its_role_to_the_busiest_unit_of_its_cmg() -> None:
    # the main thread 100 waits; 102 runs more than 101; CMG 1's threads all run
    source = _threads({100: [(0.0, 0.0)], 101: [(0.0, 0.5)], 102: [(0.0, 0.9)]}, stop_at=2.5)
    slices, warnings, sampler = _run(source, 1)
    assert warnings == [
        "proxy: thread 102 stands in for CMG 0 from now on, in place of thread 100, which ran "
        "0.00 s of the last 1.0 s (thread 102: 0.90 s)"
    ]
    assert [u.key for u in sampler.stand_ins()] == ["thread:102", "thread:200"]
    assert _rotating_on(source) == {"thread:100": 2, "thread:102": 2, "thread:200": 2}
    assert all(g.closed for g in source.groups if g.unit.key == "thread:100" and g.events != ("S",))
    # after the hand-over only thread 102 counts the rotating groups for CMG 0
    late = [r for s in slices if s.t > 1.05 for r in s.rows if r[3] != "always" and r[2] == 0]
    assert late and {r.unit for r in late if r.names} == {"thread:102"}


def test_the_busiest_threads_stand_in_from_the_start() -> None:
    source = _threads({100: [(0.0, 0.0)], 101: [(0.0, 0.2)], 102: [(0.0, 0.6)]}, stop_at=0.3)
    # the threads ran before the session: their CPU seconds so far rank them
    source.cpu_before = {"thread:101": 0.2, "thread:102": 0.6}
    _slices, warnings, sampler = _run(source, 1)
    assert [u.key for u in sampler.stand_ins()] == ["thread:102", "thread:200"]
    assert not warnings


@pytest.mark.parametrize(
    "busy",
    [
        # nobody in CMG 0 runs: no unit to hand the role to
        {100: [(0.0, 0.0)], 101: [(0.0, 0.0)], 102: [(0.0, 0.0)]},
        # the others barely run: under the share a successor needs
        {100: [(0.0, 0.0)], 101: [(0.0, 0.005)], 102: [(0.0, 0.005)]},
        # the others run, but not ten times what the stand-in runs
        {100: [(0.0, 0.04)], 101: [(0.0, 0.3)], 102: [(0.0, 0.3)]},
        # the stand-in runs part of the time: not idle
        {100: [(0.0, 0.1)]},
    ],
)
def test_a_stand_in_keeps_its_role_unless_it_idles_while_another_runs(
    busy: dict[int, list[tuple[float, float]]],
) -> None:
    source = _threads(busy, stop_at=3.0)
    _slices, warnings, sampler = _run(source, 1)
    assert not warnings
    assert [u.key for u in sampler.stand_ins()] == ["thread:100", "thread:200"]


@pytest.mark.parametrize("mode", [SYNC, KERNEL])
def test_a_role_moves_at_most_once_per_window(mode: str) -> None:
    # 100 idles then runs; 101 runs then idles; 102 runs a little: 100 -> 101 at the first review,
    # then 101 (idle from 1.0) holds its role a whole window before it goes back to a runner
    source = _threads(
        {100: [(0.0, 0.0), (1.0, 1.0)], 101: [(0.0, 1.0), (1.0, 0.0)], 102: [(0.0, 0.0)]}, stop_at=3.5
    )
    _slices, warnings, sampler = _run(source, 1, mode)
    moves = [w.split(", which")[0] for w in warnings]  # at the reviews at 1 s and 2 s
    assert moves == [
        "proxy: thread 101 stands in for CMG 0 from now on, in place of thread 100",
        "proxy: thread 100 stands in for CMG 0 from now on, in place of thread 101",
    ]
    assert [u.key for u in sampler.stand_ins()] == ["thread:100", "thread:200"]


def test_cpus_keep_their_fixed_order() -> None:
    source = _source()
    source.busy = {}  # the fake then answers for threads only, as the perf source does for CPUs
    _slices, warnings, sampler = _run(source, 1)
    assert [u.key for u in sampler.stand_ins()] == ["cpu:0", "cpu:3"]
    assert not warnings
