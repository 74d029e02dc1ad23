"""The rotation plan and the sampler loop, against a deterministic fake source."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.readings import Slice, Unit
from sectormon.errors import UsageError
from sectormon.perf.errors import TooManyOpenFiles
from sectormon.perf.group import GroupValues
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import Deadlines, plan_rotation, select_groups
from sectormon.rotation.sampler import Sampler
from tests.rotation.fake_source import FakeGroup, FakeSource
from tests.rows import readings_of


def _profile() -> Profile:
    events = {
        "A": EventDef("A", "ra"),
        "B": EventDef("B", "rb"),
        "C": EventDef("C", "rc"),
        "W": EventDef("W", "rw", scope="cmg"),
    }
    groups = (GroupDef("G1", ("A", "W")), GroupDef("G2", ("B",)), GroupDef("G3", ("C",)))
    return Profile("t", "test", 8, events, groups, ())


def test_plan_splits_cmg_events_and_drops_unavailable() -> None:
    profile = _profile()
    plan = plan_rotation(profile, select_groups(profile, None), {"B": "ENOENT"})
    assert [g.name for g in plan.groups] == ["G1", "G3"]
    assert plan.skipped_groups == ("G2",)
    g1 = plan.groups[0]
    assert [e.name for e in g1.pe_events] == ["A"]
    assert [e.name for e in g1.cmg_events] == ["W"]
    assert [plan.group_at(n).name for n in range(5)] == ["G1", "G3", "G1", "G3", "G1"]


def test_plan_with_nothing_left_is_a_clear_error() -> None:
    profile = _profile()
    with pytest.raises(UsageError, match="no event of profile"):
        plan_rotation(profile, ["G2"], {"B": "ENOENT"})


def test_unknown_group_is_named() -> None:
    with pytest.raises(UsageError, match="unknown group NOPE"):
        select_groups(_profile(), ["G1", "NOPE"])


@given(
    st.floats(min_value=0.001, max_value=1.0), st.lists(st.floats(min_value=0, max_value=0.5), max_size=30)
)
def test_deadlines_never_drift_and_never_lie_in_the_past(timeslice: float, lags: list[float]) -> None:
    deadlines = Deadlines(timeslice)
    now = 0.0
    for lag in lags:
        deadline = deadlines.next_deadline(now)
        assert deadline > now
        # deadlines are whole multiples of the timeslice from the start: no accumulated drift
        assert abs(deadline / timeslice - round(deadline / timeslice)) < 1e-6
        now = deadline + lag


def _run(source: FakeSource, timeslice: float = 0.01) -> list[Slice]:
    profile = _profile()
    plan = plan_rotation(profile, select_groups(profile, None), {})
    slices: list[Slice] = []
    sampler = Sampler(source, plan, timeslice=timeslice, on_slice=slices.append)
    source.start()
    sampler.run()
    return slices


def test_each_slice_reads_the_active_group_on_every_unit() -> None:
    t1 = Unit("thread", 1, core=0, cmg=0)
    t2 = Unit("thread", 2, core=1, cmg=0)
    source = FakeSource(
        {t1.key: (t1, 0, 10), t2.key: (t2, 0, 10)},
        {"A": 1000.0, "B": 2000.0, "C": 3000.0, "W": 500.0},
        cmg_units=[Unit("cmg", 0, core=0, cmg=0)],
        stop_at=0.06,
    )
    slices = _run(source)
    assert [s.group for s in slices] == ["G1", "G2", "G3", "G1", "G2", "G3"]
    first = slices[0]
    units = sorted(r.unit for r in readings_of(first))
    assert units == ["cmg:0", "thread:1", "thread:2"]
    by_unit = {r.unit: r for r in readings_of(first)}
    assert by_unit["thread:1"].counts == {"A": 10}
    assert by_unit["cmg:0"].counts == {"W": 5}
    second = {r.unit: r for r in readings_of(slices[1])}
    # G2 has no CMG part: the CMG unit still reports in, empty, so its presence is continuous
    assert second["cmg:0"].counts == {} and second["cmg:0"].time_enabled == 0
    assert second["thread:2"].counts == {"B": 20}
    # deltas, not cumulative values: the second G1 slice again counts one slice's worth
    fourth = {r.unit: r for r in readings_of(slices[3])}
    assert fourth["thread:1"].counts == {"A": 10}
    assert all(abs(s.duration - 0.01) < 1e-9 for s in slices)
    assert slices[-1].ended  # everything is reported ended when the target finishes


def test_threads_appearing_mid_run_are_not_read_before_they_count() -> None:
    t1 = Unit("thread", 1, core=0, cmg=0)
    t2 = Unit("thread", 2, core=None, cmg=None)
    source = FakeSource(
        {t1.key: (t1, 0, 1), t2.key: (t2, 0.025, 0.045)},
        {"A": 1000.0, "B": 1000.0, "C": 1000.0},
        stop_at=0.08,
    )
    slices = _run(source)
    seen = [(s.index, r.unit, r.time_enabled) for s in slices for r in readings_of(s) if r.unit == "thread:2"]
    # thread 2 appears during slice 2 (0.02-0.03): first read at the end of slice 3, with real time
    assert seen and seen[0][0] == 3
    assert all(te > 0 for _i, _u, te in seen)
    ended_in = [s.index for s in slices if "thread:2" in s.ended]
    assert ended_in == [4]
    # its counts up to its exit are kept: all of slice 3 and half of slice 4
    total = sum(sum(r.counts.values()) for s in slices for r in readings_of(s) if r.unit == "thread:2")
    assert total == 15
    assert all(g.closed for g in source.groups if g.unit.key == "thread:2")


def test_cmg_counts_scale_right_when_their_group_is_not_first() -> None:
    """A CMG unit is present from the start even if its first CMG group runs later (review item)."""
    from sectormon.metrics.engine import MetricsEngine

    profile = _profile()
    plan = plan_rotation(profile, ["G2", "G3", "G1"], {})  # the CMG event W rides in the last group
    t1 = Unit("thread", 1, core=0, cmg=0)
    source = FakeSource(
        {t1.key: (t1, 0, 10)},
        {"A": 1000.0, "B": 1000.0, "C": 1000.0, "W": 600.0},
        cmg_units=[Unit("cmg", 0, core=0, cmg=0)],
        stop_at=0.3,
    )
    engine = MetricsEngine(profile)
    sampler = Sampler(source, plan, timeslice=0.01, on_slice=engine.add_slice)
    source.start()
    sampler.run()
    final = engine.final_frame(0.3)
    # W counted 600/s for 0.3 s, in one slice of three: scaled back to the whole run
    assert final.total.counts["W"] == pytest.approx(180.0, rel=1e-6)
    assert final.total.coverage["W"] == pytest.approx(1 / 3, rel=1e-6)


class _SlowReads(FakeSource):
    """Reading a group takes ``cost`` seconds of the fake clock, as real reads and polls take time."""

    def __init__(self, *args: object, cost: float, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.cost = cost

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> FakeGroup:
        group = super().open_group(unit, events)
        plain_read = group.read

        def slow_read() -> GroupValues:
            self.t += self.cost
            return plain_read()

        group.read = slow_read  # type: ignore[method-assign]
        return group


def test_time_spent_reading_is_counted_by_the_next_group_not_lost() -> None:
    """Four units whose reads take 1 ms each: 4 ms of every 10 ms slice go by after the switch.

    The next group must be running during that time (it is, with the switch before the reads), and
    the scaled counts equal rate x time exactly; with the reads before the switch they would miss
    those 4 ms of every slice and come out 40 % low.
    """
    from sectormon.metrics.engine import MetricsEngine

    profile = _profile()
    plan = plan_rotation(profile, select_groups(profile, None), {})
    units = [Unit("thread", tid, core=tid, cmg=0) for tid in range(1, 5)]
    source = _SlowReads(
        {u.key: (u, 0, 10) for u in units}, {"A": 1000.0, "B": 2000.0, "C": 3000.0}, stop_at=0.6, cost=0.001
    )
    engine = MetricsEngine(profile)
    sampler = Sampler(source, plan, timeslice=0.01, on_slice=engine.add_slice)
    source.start()
    sampler.run()
    final = engine.final_frame(engine_t := source.t)
    assert engine_t > 0.6
    for tid in range(1, 5):
        counts = final.threads[str(tid)].counts
        seconds = final.threads[str(tid)].seconds
        for name, rate in (("A", 1000.0), ("B", 2000.0), ("C", 3000.0)):
            assert counts[name] == pytest.approx(rate * seconds, rel=0.02), (tid, name)


def test_the_last_slice_names_every_unit_ended_even_when_they_end_with_the_target() -> None:
    """Threads that exit together with the process are all in the final slice's ``ended``."""
    t1 = Unit("thread", 1, core=0, cmg=0)
    t2 = Unit("thread", 2, core=1, cmg=0)
    source = FakeSource(
        {t1.key: (t1, 0, 0.05), t2.key: (t2, 0, 0.05)},
        {"A": 1000.0, "B": 1000.0, "C": 1000.0},
        stop_at=0.05,
    )
    slices = _run(source)
    assert sorted(slices[-1].ended) == ["thread:1", "thread:2"]
    assert {r.unit for r in readings_of(slices[-1])} == {"thread:1", "thread:2"}
    assert all(g.closed for g in source.groups)


class _FdLimitedSource(FakeSource):
    """Refuses to open groups (EMFILE) while more than ``limit`` groups are open."""

    def __init__(self, *args: object, limit: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.limit = limit
        self.refused: list[str] = []

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> FakeGroup:
        if sum(not g.closed for g in self.groups) >= self.limit:
            self.refused.append(unit.key)
            raise TooManyOpenFiles(
                f"cannot open {events[0].name} on {unit.key} (EMFILE): out of file descriptors"
            )
        return super().open_group(unit, events)


def _run_warned(source: FakeSource) -> tuple[list[Slice], list[str]]:
    profile = _profile()
    plan = plan_rotation(profile, select_groups(profile, None), {})
    slices: list[Slice] = []
    warnings: list[str] = []
    sampler = Sampler(source, plan, timeslice=0.01, on_slice=slices.append, on_warning=warnings.append)
    source.start()
    sampler.run()
    return slices, warnings


def test_a_thread_that_finds_no_fd_left_mid_run_is_skipped_with_one_warning() -> None:
    """perf stat cannot lose a new thread's fds (it inherits); sectormon opens groups per thread,
    so running out mid-run must not end the run (and the launched command) for one more thread."""
    t1, t2, t3, t5 = (Unit("thread", n, core=0, cmg=0) for n in (1, 2, 3, 5))
    source = _FdLimitedSource(
        {t1.key: (t1, 0, 1), t5.key: (t5, 0, 0.045), t2.key: (t2, 0.015, 1), t3.key: (t3, 0.025, 1)},
        {"A": 1000.0, "B": 1000.0, "C": 1000.0},
        stop_at=0.1,
        limit=6,  # threads 1 and 5, three groups each
    )
    slices, warnings = _run_warned(source)
    first_read: dict[str, int] = {}
    for s in slices:
        for r in readings_of(s):
            first_read.setdefault(r.unit, s.index)
    # thread 2 is counted once thread 5 has ended and closed its fds (retried at the next poll);
    # 2 and 3 are not retried in between, and 3 finds no fd at its retry either.
    assert first_read == {"thread:1": 0, "thread:5": 0, "thread:2": 6}
    assert source.refused == ["thread:2", "thread:3", "thread:3"]
    assert len(warnings) == 1 and "EMFILE" in warnings[0] and "thread 2, and any unit" in warnings[0]
    assert all(g.closed for g in source.groups)
    assert abs(slices[-1].t - 0.1) < 1e-9  # the run went on to the end


def test_running_out_of_fds_at_the_start_still_stops_with_the_error() -> None:
    t1 = Unit("thread", 1, core=0, cmg=0)
    source = _FdLimitedSource({t1.key: (t1, 0, 1)}, {"A": 1.0}, stop_at=0.05, limit=1)
    with pytest.raises(TooManyOpenFiles):
        _run_warned(source)
