"""A session asks its source what it can do: a fake source with each capability off and on is
treated as the simulator and perf are (never by its name)."""

from __future__ import annotations

import dataclasses

import pytest

from sectormon.data.readings import Unit
from sectormon.errors import UsageError
from sectormon.metrics.proxy import TASK_TIME_EVENT
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import AUTO, KERNEL, SYNC
from sectormon.session.live import LiveSession
from sectormon.session.options import DEFAULT_MAX_OVERHEAD, SessionRequest
from sectormon.session.setup import open_session
from sectormon.sources.base import Capabilities
from tests.rotation.fake_source import FakeSource

PERF_LIKE = Capabilities(multiplexes=True, wall_clock=True, follows_threads=True, task_time=True)
SIM_LIKE = Capabilities()


def _source(capabilities: Capabilities) -> FakeSource:
    """Two threads of CMG 0 for 1 s."""
    units = [Unit("thread", tid, core=tid, cmg=0) for tid in (1, 2)]
    source = FakeSource({u.key: (u, 0.0, 10.0) for u in units}, {"A": 1000.0, "B": 2000.0}, stop_at=1.0)
    source.capabilities = capabilities
    return source


def _profile() -> Profile:
    events = {"A": EventDef("A", "ra"), "B": EventDef("B", "rb")}
    return Profile("t", "test", 8, events, (GroupDef("G1", ("A",)), GroupDef("G2", ("B",))), ())


def _open(capabilities: Capabilities, request: SessionRequest) -> tuple[LiveSession, list[str]]:
    warnings: list[str] = []
    session = open_session(_source(capabilities), _profile(), request, on_warning=warnings.append)
    session.run_headless()
    return session, warnings


def test_a_source_on_the_wall_clock_gets_the_overhead_budget() -> None:
    assert SessionRequest().resolve(_source(PERF_LIKE)).max_overhead == DEFAULT_MAX_OVERHEAD / 100
    assert SessionRequest(max_overhead=5.0).resolve(_source(PERF_LIKE)).max_overhead == 0.05


def test_a_source_with_a_clock_of_its_own_has_no_budget_and_refuses_one() -> None:
    assert SessionRequest().resolve(_source(SIM_LIKE)).max_overhead is None
    with pytest.raises(UsageError, match="--max-overhead is for live sessions"):
        SessionRequest(max_overhead=5.0).resolve(_source(SIM_LIKE))


def test_a_source_that_multiplexes_rotates_in_the_kernel_and_may_switch_to_it() -> None:
    session, _ = _open(PERF_LIKE, SessionRequest(rotation=AUTO, timeslice=0.01, interval=0.1))
    assert session.options.rotation is not None and session.options.rotation.mode == KERNEL
    assert session.options.may_switch
    session, _ = _open(PERF_LIKE, SessionRequest(rotation=SYNC, timeslice=0.01, interval=0.1))
    assert session.options.rotation is not None and session.options.rotation.mode == SYNC


def test_a_source_that_cannot_multiplex_rotates_in_lock_step() -> None:
    session, _ = _open(SIM_LIKE, SessionRequest(rotation=AUTO, timeslice=0.01, interval=0.1))
    assert session.options.rotation is not None and session.options.rotation.mode == SYNC
    assert not session.options.may_switch
    with pytest.raises(UsageError, match="no kernel multiplexer"):
        open_session(_source(SIM_LIKE), _profile(), SessionRequest(rotation=KERNEL))


@pytest.mark.parametrize("task_time", [False, True])
def test_a_proxy_scales_by_task_time_where_the_source_counts_it(task_time: bool) -> None:
    capabilities = dataclasses.replace(PERF_LIKE, task_time=task_time)
    session, _ = _open(capabilities, SessionRequest(timeslice=0.01, interval=0.1, proxy=1))
    always = session.plan.always
    assert (always is not None and TASK_TIME_EVENT in always.pe_events) == task_time


@pytest.mark.parametrize("follows_threads", [False, True])
def test_a_proxy_over_a_fixed_set_of_units_that_all_stand_in_is_no_proxy(follows_threads: bool) -> None:
    """Two units, two stand-ins per CMG: on a fixed set every unit counts everything for good, so
    the session says so; threads come and go, so the proxy stays (a third may start)."""
    capabilities = dataclasses.replace(PERF_LIKE, follows_threads=follows_threads)
    _, warnings = _open(capabilities, SessionRequest(timeslice=0.01, interval=0.1, proxy=2))
    said = any("every unit stands in and counts every group" in w for w in warnings)
    assert said != follows_threads


def test_the_session_says_how_the_target_ended_in_the_source_s_words() -> None:
    class Failing(FakeSource):
        def end_note(self) -> str | None:
            return "the command exited with status 3"

    units = {"thread:1": (Unit("thread", 1, core=0, cmg=0), 0.0, 1.0)}
    session = open_session(Failing(units, {"A": 1.0}, stop_at=0.2), _profile(), SessionRequest())
    session.run_headless()
    assert session.end_note() == "the command exited with status 3"
    session = open_session(FakeSource(units, {"A": 1.0}, stop_at=0.2), _profile(), SessionRequest())
    session.run_headless()
    assert session.end_note() is None
