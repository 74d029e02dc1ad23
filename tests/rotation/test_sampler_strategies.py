"""Each rotation strategy on its own, over open units of a fake source: which groups count when,
what a slice's end reads, and what units found between two reads start counting."""

from __future__ import annotations

import pytest

from sectormon.data.readings import Row, Slice, Unit
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.counters import OpenUnits, UnitGroups
from sectormon.rotation.kernel import KernelRotation
from sectormon.rotation.plan import ALWAYS, KERNEL, RotationPlan, plan_rotation, select_groups
from sectormon.rotation.strategy import SliceEnd
from sectormon.rotation.sync import SyncRotation
from tests.rotation.fake_source import FakeSource
from tests.rows import Reading, readings_of

T1 = Unit("thread", 1, core=0, cmg=0)
T2 = Unit("thread", 2, core=1, cmg=0)


def _plan() -> RotationPlan:
    """Two rotating groups (A, B) and the always-on one (S, free)."""
    events = {"A": EventDef("A", "ra"), "B": EventDef("B", "rb"), "S": EventDef("S", "rs")}
    profile = Profile("t", "test", 8, events, (GroupDef("G1", ("A", "S")), GroupDef("G2", ("B",))), ())
    return plan_rotation(profile, select_groups(profile, None), {}, free=lambda e: e.name == "S")


def _open(units: OpenUnits, source: FakeSource, plan: RotationPlan, unit: Unit) -> None:
    state = UnitGroups(unit)
    for group in plan.all_groups():
        handle = source.open_group(unit, group.pe_events)
        state.groups[group.name] = units.open_group(handle, group.name, cmg=False)
    units.add(state)


def _setup(*units: Unit) -> tuple[FakeSource, RotationPlan, OpenUnits]:
    source = FakeSource({}, {"A": 1000.0, "B": 2000.0, "S": 500.0})
    plan = _plan()
    open_units = OpenUnits(plan)
    for unit in units:
        _open(open_units, source, plan, unit)
    return source, plan, open_units


def _on(source: FakeSource) -> set[tuple[str, tuple[str, ...]]]:
    """(unit, events) of every group enabled now."""
    return {(g.unit.key, g.events) for g in source.groups if g.enabled_at is not None}


def _readings(end: SliceEnd) -> dict[tuple[str, str], Reading]:
    return {(r.unit, r.group): r for r in readings_of(Slice(0.0, 0, 0.0, end.group, end.rows, 0.0))}


# -- sync -----------------------------------------------------------------------------------------


def test_sync_starts_the_first_group_and_the_always_on_one() -> None:
    source, plan, units = _setup(T1, T2)
    sync = SyncRotation(units, plan, lambda rows: rows)
    sync.begin()
    assert _on(source) == {(u, e) for u in ("thread:1", "thread:2") for e in (("A",), ("S",))}
    assert sync.running is plan.groups[0]
    assert sync.tick(0.02) == 0.02
    assert sync.slice_due(0.0, 0.02, stopping=False)  # every wake-up ends a slice


def test_sync_switches_to_the_next_group_before_reading_the_one_that_stopped() -> None:
    source, plan, units = _setup(T1, T2)
    settled: list[tuple[Row, ...]] = []

    def settle(rows: tuple[Row, ...]) -> tuple[Row, ...]:
        settled.append(rows)
        return rows

    sync = SyncRotation(units, plan, settle)
    sync.begin()
    source.t = 0.01
    end = sync.end_slice(stopping=False)
    assert end.group == "G1" and end.ended == ()
    assert sync.running is plan.groups[1]
    assert _on(source) == {(u, e) for u in ("thread:1", "thread:2") for e in (("B",), ("S",))}
    readings = _readings(end)
    assert set(readings) == {(u, g) for u in ("thread:1", "thread:2") for g in ("G1", ALWAYS)}
    assert readings["thread:1", "G1"].counts == {"A": 10}
    assert settled == [end.rows]  # the rows leave settled
    source.t = 0.02
    assert sync.end_slice(stopping=False).group == "G2"
    assert sync.running is plan.groups[0]  # round-robin


def test_sync_stops_everything_at_the_last_slice() -> None:
    source, plan, units = _setup(T1)
    sync = SyncRotation(units, plan, lambda rows: rows)
    sync.begin()
    source.t = 0.01
    end = sync.end_slice(stopping=True)
    assert end.group == "G1"
    assert _on(source) == set()


def test_sync_never_holds_rows_between_reads() -> None:
    _, plan, units = _setup(T1)
    with pytest.raises(AssertionError):
        SyncRotation(units, plan, lambda rows: rows).hold(("thread:1",))


# -- kernel ---------------------------------------------------------------------------------------


def test_kernel_rotation_starts_every_group_on_every_unit_once() -> None:
    source, _, units = _setup(T1, T2)
    kernel = KernelRotation(units, lambda rows: rows)
    kernel.begin()
    assert _on(source) == {(u, e) for u in ("thread:1", "thread:2") for e in (("A",), ("B",), ("S",))}
    assert kernel.running is None  # a new unit starts every group, not one


def test_kernel_rotation_wakes_more_often_than_it_reads() -> None:
    kernel = KernelRotation(OpenUnits(_plan()), lambda rows: rows)
    assert kernel.tick(0.5) == 0.1 and kernel.tick(0.05) == 0.05
    assert not kernel.slice_due(0.3, 0.5, stopping=False)
    assert kernel.slice_due(0.46, 0.5, stopping=False)  # half a wake-up early is on time
    assert kernel.slice_due(0.1, 0.5, stopping=True)


def test_kernel_rotation_reads_an_ended_unit_before_its_groups_close_and_joins_it_to_the_slice() -> None:
    source, _, units = _setup(T1, T2)
    kernel = KernelRotation(units, lambda rows: rows)
    kernel.begin()
    source.t = 0.2
    kernel.hold(("thread:2",))
    state = units.remove("thread:2")
    assert state is not None
    for counter in state.groups.values():
        counter.group.close()
    source.t = 0.5
    end = kernel.end_slice(stopping=False)
    assert end.group == KERNEL and end.ended == ("thread:2",)
    assert set(_readings(end)) == {(u, g) for u in ("thread:1", "thread:2") for g in ("G1", "G2", ALWAYS)}
    assert kernel.end_slice(stopping=False).ended == ()  # held once


def test_kernel_rotation_starts_every_group_of_a_unit_found_between_reads() -> None:
    source, plan, units = _setup(T1)
    kernel = KernelRotation(units, lambda rows: rows)
    kernel.begin()
    _open(units, source, plan, T2)
    assert not {e for u, e in _on(source) if u == "thread:2"}
    kernel.units_opened()
    assert {e for u, e in _on(source) if u == "thread:2"} == {("A",), ("B",), ("S",)}


# -- marker-only groups ---------------------------------------------------------------------------


def _marker_only(units: OpenUnits, source: FakeSource, plan: RotationPlan, unit: Unit) -> UnitGroups:
    state = UnitGroups(unit)
    for group in plan.all_groups():
        state.groups[group.name] = units.open_group(
            source.open_group(unit, group.pe_events), group.name, cmg=False
        )
    units.add_marker_only(state)
    return state


def test_marker_only_groups_rotate_with_the_units_and_are_never_read() -> None:
    source, plan, units = _setup(T1)
    markers = Unit("thread", 9)
    _marker_only(units, source, plan, markers)
    sync = SyncRotation(units, plan, lambda rows: rows)
    sync.begin()
    assert ("thread:9", ("A",)) in _on(source) and ("thread:9", ("S",)) in _on(source)
    source.t = 0.01
    end = sync.end_slice(stopping=False)
    assert ("thread:9", ("B",)) in _on(source) and ("thread:9", ("A",)) not in _on(source)
    assert {r.unit for r in end.rows} == {"thread:1"}
    sync.end_slice(stopping=True)
    assert _on(source) == set()


def test_a_thread_found_later_adopts_its_marker_only_groups() -> None:
    source, plan, units = _setup(T1)
    state = _marker_only(units, source, plan, Unit("thread", 9))
    assert units.adopt("thread:9") is state and units.adopt("thread:9") is None
    assert units.marker_only == {}
    units.add(state)  # as the sampler does: the unit's groups from now on
    units.close_all()
    assert all(g.closed for g in source.groups)
