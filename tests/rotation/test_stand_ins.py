"""Stand-in selection and replacement, the CMG factor and the header's proxy setting (pure logic)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sectormon.data.readings import Unit
from sectormon.errors import UsageError
from sectormon.io.header_codec import header_from_json
from sectormon.metrics.proxy import (
    TASK_TIME,
    TASK_TIME_EVENT,
    UNITS,
    check_per_cmg,
    cmg_factor,
    describe_stand_ins,
    proxy_setting,
)
from sectormon.profiles.model import EventDef
from sectormon.rotation.plan import ALWAYS, PlannedGroup, RotationPlan, with_always_pe_event
from sectormon.rotation.stand_ins import BUSIER, IDLE_SHARE, RUN_SHARE, StandIns


def _cpu(n: int, per_cmg: int = 12) -> Unit:
    return Unit("cpu", n, core=n, cmg=n // per_cmg)


def _thread(tid: int, cmg: int | None = None) -> Unit:
    return Unit("thread", tid, cmg=cmg)


def test_first_n_units_of_each_cmg_stand_in() -> None:
    units = [_cpu(n) for n in range(48)]
    stand_ins = StandIns(1)
    new, replaced = stand_ins.update(units)
    assert [u.ident for u in new] == [0, 12, 24, 36]
    assert replaced == ()
    assert [u.ident for u in stand_ins.units()] == [0, 12, 24, 36]
    assert "cpu:12" in stand_ins and "cpu:13" not in stand_ins
    assert describe_stand_ins(1, stand_ins.units()) == "proxy 1/CMG: cpus 0,12,24,36"
    two = StandIns(2)
    assert [u.ident for u in two.update(units)[0]] == [0, 1, 12, 13, 24, 25, 36, 37]


def test_stand_ins_are_stable_while_they_live_and_replaced_when_they_end() -> None:
    stand_ins = StandIns(1)
    first = [_thread(10, 0), _thread(11, 0), _thread(20, 1)]
    assert [u.ident for u in stand_ins.update(first)[0]] == [10, 20]
    # new units and a reordered list change nothing while the stand-ins live
    assert stand_ins.update([_thread(9, 0), _thread(20, 1), _thread(11, 0), _thread(10, 0)]) == ((), ())
    # thread 10 ended: the next unit of CMG 0, in the source's order, takes over
    new, replaced = stand_ins.update([_thread(9, 0), _thread(11, 0), _thread(20, 1)])
    assert [u.ident for u in new] == [9]
    assert [(a.ident, b.ident) for a, b in replaced] == [(10, 9)]
    assert "thread:10" not in stand_ins and "thread:9" in stand_ins


def test_cmg_units_never_stand_in_and_unbound_threads_form_one_pool() -> None:
    stand_ins = StandIns(1)
    new, _ = stand_ins.update([Unit("cmg", 0, core=0, cmg=0), _thread(5), _thread(6), _thread(7, 0)])
    assert [u.key for u in new] == ["thread:5", "thread:7"]
    assert describe_stand_ins(1, stand_ins.units()) == "proxy 1/CMG: tid 7 (CMG0), tid 5"


@given(
    cmgs=st.lists(st.integers(0, 3), min_size=1, max_size=40),
    per_cmg=st.integers(1, 4),
    ends=st.lists(st.integers(0, 39), max_size=20),
)
def test_each_cmg_keeps_min_n_units_of_its_live_ones(cmgs: list[int], per_cmg: int, ends: list[int]) -> None:
    units = [_thread(i, cmg) for i, cmg in enumerate(cmgs)]
    stand_ins = StandIns(per_cmg)
    stand_ins.update(units)
    alive = list(units)
    for end in ends:
        alive = [u for u in alive if u.ident != end]
        before = set(u.key for u in stand_ins.units())
        _, replaced = stand_ins.update(alive)
        chosen = stand_ins.units()
        for cmg in set(cmgs):
            live = [u for u in alive if u.cmg == cmg]
            assert len([u for u in chosen if u.cmg == cmg]) == min(per_cmg, len(live))
        assert all(u in alive for u in chosen)
        assert {old.key for old, _ in replaced} <= before
        assert before - {u.key for u in alive} >= {old.key for old, _ in replaced}


def test_cmg_factor() -> None:
    assert cmg_factor(12.0, 1.0) == 12.0
    assert cmg_factor(3.0, 3.0) == 1.0
    assert cmg_factor(0.0, 0.0) == 1.0  # nobody ran: nothing to scale
    assert cmg_factor(5.0, 0.0) is None  # others ran, no stand-in did: no estimate
    assert cmg_factor(1.0 - 1e-15, 1.0) == 1.0  # rounding never scales down


@given(st.floats(0.0, 1e6), st.floats(1e-6, 1e6))
def test_cmg_factor_times_stand_in_reference_is_the_cmg_reference(extra: float, stand: float) -> None:
    factor = cmg_factor(stand + extra, stand)
    assert factor is not None and factor >= 1.0
    assert factor * stand == pytest.approx(stand + extra, rel=1e-9)


def test_setting_round_trips_through_the_header_and_refuses_bad_fields() -> None:
    setting = proxy_setting(2, ["A", "B", "A"], timed=True, stand_ins=[_cpu(0), _cpu(1)])
    assert setting.events == ("A", "B") and setting.reference == TASK_TIME
    assert setting.described == "proxy 2/CMG: cpus 0,1"
    assert header_from_json({"proxy": setting.to_json()}).proxy == setting
    assert header_from_json({}).proxy is None
    assert proxy_setting(1, ["A"], timed=False, stand_ins=[]).reference == UNITS
    for bad, field in (
        ({"per_cmg": 0, "reference": UNITS, "events": []}, "per_cmg"),
        ({"per_cmg": 1, "reference": "guess", "events": []}, "reference"),
        ({"per_cmg": 1, "reference": UNITS, "events": "A"}, "events"),
    ):
        with pytest.raises(ValueError, match=field):
            header_from_json({"proxy": bad})


def test_per_cmg_must_be_at_least_one() -> None:
    assert check_per_cmg(None) is None and check_per_cmg(3) == 3
    with pytest.raises(UsageError, match="--proxy 0: give at least 1 stand-in per CMG"):
        check_per_cmg(0)


def test_the_busiest_units_stand_in_and_take_over_an_ended_one() -> None:
    stand_ins = StandIns(1)
    units = [_thread(10, 0), _thread(11, 0), _thread(12, 0)]
    assert [u.ident for u in stand_ins.update(units, ran={"thread:11": 0.5, "thread:12": 0.5})[0]] == [11]
    _, replaced = stand_ins.update([units[0], units[2]], ran={"thread:12": 0.1})
    assert [(a.ident, b.ident) for a, b in replaced] == [(11, 12)]
    assert not stand_ins.short([units[0], units[2]]) and stand_ins.short([units[0]])


def test_review_hands_an_idle_role_to_the_busiest_runner_of_its_cmg_once_per_window() -> None:
    stand_ins = StandIns(1)
    units = [_thread(10, 0), _thread(11, 0), _thread(12, 0), _thread(20, 1), _thread(21, 1)]
    stand_ins.update(units, now=0.0)
    ran = {"thread:10": 0.0, "thread:11": 0.5, "thread:12": 0.8, "thread:20": 0.0, "thread:21": 0.005}
    moved = stand_ins.review(units, ran, window=1.0, now=1.0)
    # CMG 1's other unit ran under RUN_SHARE of the window: its idle stand-in stays
    assert [(a.ident, b.ident) for a, b in moved] == [(10, 12)]
    assert [u.ident for u in stand_ins.units()] == [12, 20]
    # 12 now idles, but has held its role for less than a window: it keeps it
    assert stand_ins.review(units, {"thread:12": 0.0, "thread:11": 1.0}, window=1.0, now=1.5) == ()
    assert [
        (a.ident, b.ident)
        for a, b in stand_ins.review(units, {"thread:12": 0.0, "thread:11": 1.0}, window=1.0, now=2.0)
    ] == [(12, 11)]


def test_a_stand_in_chosen_inside_the_window_is_not_judged_on_it() -> None:
    stand_ins = StandIns(1)
    stand_ins.update([_thread(10, 0), _thread(11, 0)], now=0.0)
    stand_ins.update([_thread(11, 0), _thread(12, 0)], now=0.9)  # 10 ended: 11 took over at 0.9
    ran = {"thread:11": 0.0, "thread:12": 1.0}
    assert stand_ins.review([_thread(11, 0), _thread(12, 0)], ran, window=1.0, now=1.0) == ()


@given(
    cmgs=st.lists(st.integers(0, 3), min_size=1, max_size=30),
    per_cmg=st.integers(1, 3),
    ran=st.lists(st.floats(0.0, 1.0), min_size=30, max_size=30),
)
# Thread 2 idles (1/32 of the window) and hands its role to thread 7; thread 3 idles too, and
# thread 2's 1/32 was enough to take thread 3's role (it was no stand-in any more)
@example(
    cmgs=[1, 1, 0, 0, 0, 0, 0, 0], per_cmg=2, ran=[0.0, 0.0, 0.03125, 0.0, 0.0, 0.0, 0.0, 1.0] + [0.0] * 22
)
def test_review_keeps_each_cmg_count_and_only_moves_idle_roles_to_runners(
    cmgs: list[int], per_cmg: int, ran: list[float]
) -> None:
    units = [_thread(i, cmg) for i, cmg in enumerate(cmgs)]
    stand_ins = StandIns(per_cmg)
    stand_ins.update(units, now=0.0)
    before = stand_ins.units()
    times = {u.key: ran[u.ident] for u in units}
    moved = stand_ins.review(units, times, window=1.0, now=1.0)
    after = stand_ins.units()
    assert sorted(u.cmg or 0 for u in after) == sorted(u.cmg or 0 for u in before)
    assert len({u.key for u in after}) == len(after)
    for idle, successor in moved:
        assert idle in before and idle not in after and successor in after and successor not in before
        assert idle.cmg == successor.cmg
        assert times[idle.key] <= IDLE_SHARE
        assert times[successor.key] >= max(RUN_SHARE, BUSIER * times[idle.key])
    assert {u.key for u in before} - {u.key for u in after} == {idle.key for idle, _ in moved}


def test_an_idle_stand_in_that_hands_its_role_on_takes_no_other_in_the_same_review() -> None:
    stand_ins = StandIns(2)
    units = [_thread(2, 0), _thread(3, 0), _thread(7, 0)]
    stand_ins.update(units, now=0.0)
    ran = {"thread:2": 0.03125, "thread:3": 0.0, "thread:7": 1.0}
    moved = stand_ins.review(units, ran, window=1.0, now=1.0)
    assert [(a.ident, b.ident) for a, b in moved] == [(2, 7)]
    assert sorted(u.ident for u in stand_ins.units()) == [3, 7]


def test_the_task_time_reference_joins_the_always_on_group_only_where_it_has_no_per_pe_event() -> None:
    cycles, faults, l2 = EventDef("A", "ra"), EventDef("S", "page-faults"), EventDef("L", "rl", scope="cmg")
    rotating = PlannedGroup("G", (cycles,), ())
    bare = RotationPlan((rotating,), {}, ())
    planned = with_always_pe_event(bare, TASK_TIME_EVENT)
    assert planned.groups == bare.groups and planned.always == PlannedGroup(ALWAYS, (TASK_TIME_EVENT,), ())
    assert TASK_TIME_EVENT.spec == "task-clock" and not TASK_TIME_EVENT.name.isidentifier()
    cmg_only = RotationPlan((rotating,), {}, (), PlannedGroup(ALWAYS, (), (l2,)))
    assert with_always_pe_event(cmg_only, TASK_TIME_EVENT).always == PlannedGroup(
        ALWAYS, (TASK_TIME_EVENT,), (l2,)
    )
    timed = RotationPlan((rotating,), {}, (), PlannedGroup(ALWAYS, (faults,), ()))
    assert with_always_pe_event(timed, TASK_TIME_EVENT) is timed
