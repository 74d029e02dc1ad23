"""Stand-in selection and replacement, the CMG factor and the header's proxy setting (pure logic)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.errors import UsageError
from sectormon.proxy import (
    TASK_TIME,
    UNITS,
    ProxySetting,
    StandIns,
    check_per_cmg,
    cmg_factor,
    describe_stand_ins,
    proxy_setting,
)
from sectormon.readings import Unit


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
    assert ProxySetting.from_header({"proxy": setting.to_json()}) == setting
    assert ProxySetting.from_header({}) is None
    assert proxy_setting(1, ["A"], timed=False, stand_ins=[]).reference == UNITS
    for bad, field in (
        ({"per_cmg": 0, "reference": UNITS, "events": []}, "per_cmg"),
        ({"per_cmg": 1, "reference": "guess", "events": []}, "reference"),
        ({"per_cmg": 1, "reference": UNITS, "events": "A"}, "events"),
    ):
        with pytest.raises(ValueError, match=field):
            ProxySetting.from_header({"proxy": bad})


def test_per_cmg_must_be_at_least_one() -> None:
    assert check_per_cmg(None) is None and check_per_cmg(3) == 3
    with pytest.raises(UsageError, match="--proxy 0: give at least 1 stand-in per CMG"):
        check_per_cmg(0)
