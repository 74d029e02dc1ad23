"""--proxy in the sampler: only stand-ins open the rotating groups, a stand-in that ends is
replaced (with a warning), and the engine's CMG estimates from those readings match a full count
of homogeneous units (fake source: every unit counts at the same rates)."""

from __future__ import annotations

import pytest

from sectormon.frames import Frame
from sectormon.metrics import MetricsEngine
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.proxy import UNITS, ProxySetting
from sectormon.readings import Slice, Unit
from sectormon.sampler import Sampler
from sectormon.schedule import KERNEL, SYNC, Rotation, plan_rotation, select_groups
from tests.sampler.fake_source import FakeSource

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
