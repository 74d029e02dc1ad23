"""Rotation modes and the overhead budget: the choice of mode, kernel rotation's loop, and the
switches the budget makes, against a deterministic fake source (the real-syscall side is in
tests/e2e/test_rotation.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.readings import Slice, Unit
from sectormon.errors import UsageError
from sectormon.metrics.engine import MetricsEngine
from sectormon.perf.group import GroupValues
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import (
    KERNEL,
    SYNC,
    OverheadBudget,
    Rotation,
    RotationPlan,
    choose_rotation,
    plan_rotation,
    select_groups,
)
from sectormon.rotation.sampler import Sampler
from tests.rotation.fake_source import FakeGroup, FakeSource
from tests.rows import readings_of


def _profile(*, cmg: bool = False) -> Profile:
    events = {
        "A": EventDef("A", "ra"),
        "B": EventDef("B", "rb"),
        "C": EventDef("C", "rc"),
        "W": EventDef("W", "rw", scope="cmg"),
    }
    first = ("A", "W") if cmg else ("A",)
    groups = (GroupDef("G1", first), GroupDef("G2", ("B",)), GroupDef("G3", ("C",)))
    return Profile("t", "test", 8, events, groups, ())


def _plan(*, cmg: bool = False) -> RotationPlan:
    profile = _profile(cmg=cmg)
    return plan_rotation(profile, select_groups(profile, None), {})


# -- choosing the mode ----------------------------------------------------------------------------


def _choose(requested: str, plan: RotationPlan, *, can: bool = True, given: bool = False) -> Rotation:
    return choose_rotation(requested, plan, can_multiplex=can, timeslice=0.02, interval=1.0, given=given)


def test_auto_takes_kernel_rotation_when_nothing_needs_lockstep() -> None:
    rotation = _choose("auto", _plan())
    assert (rotation.mode, rotation.timeslice) == (KERNEL, 0.5)
    assert "no ioctl per slice" in rotation.reason
    assert _choose("kernel", _plan(), given=True).timeslice == 0.02  # --timeslice given: read as often


def test_auto_keeps_lockstep_for_groups_mixing_cmg_and_pe_events() -> None:
    rotation = _choose("auto", _plan(cmg=True))
    assert (rotation.mode, rotation.timeslice) == (SYNC, 0.02)
    assert "CMG-wide and per-PE" in rotation.reason


def test_auto_on_a_source_without_multiplexer_is_sync_and_kernel_is_refused() -> None:
    assert _choose("auto", _plan(), can=False).mode == SYNC
    with pytest.raises(UsageError, match="--rotation kernel: this source has no kernel multiplexer"):
        _choose("kernel", _plan(), can=False)
    with pytest.raises(UsageError, match="--rotation fast: choose one of auto, sync, kernel"):
        _choose("fast", _plan())


def test_sync_is_sync_whatever_the_profile() -> None:
    assert _choose("sync", _plan()) == Rotation(SYNC, 0.02, "asked for (--rotation sync)")


# -- the budget -----------------------------------------------------------------------------------


def test_budget_says_once_per_window_what_went_over() -> None:
    budget = OverheadBudget(0.02, window=2.0)
    assert budget.observe(0.1, 5.0) is None  # the first slice starts the window (start-up costs)
    assert budget.observe(1.0, 5.05) is None  # window not full yet
    assert budget.observe(2.1, 5.03) is None  # 0.03 s of CPU in 2 s: 1.5 %, within 2 %
    assert budget.observe(4.1, 5.13) == pytest.approx(0.05)  # 0.1 s in 2 s: 5 %, over
    assert budget.observe(5.0, 5.5) is None  # a new window started at 4.1
    budget.restart()
    assert budget.observe(6.2, 9.0) is None  # restarted: this only starts the next window


@given(st.lists(st.floats(0.0, 0.2), min_size=1, max_size=40), st.floats(0.001, 0.1))
def test_budget_reports_only_shares_over_the_limit(costs: list[float], limit: float) -> None:
    budget = OverheadBudget(limit, window=1.0)
    t, cpu = 0.0, 0.0
    budget.observe(t, cpu)
    for cost in costs:
        t += 1.0
        cpu += cost
        share = budget.observe(t, cpu)
        if abs(cost - limit) < 1e-9:
            continue  # at the limit itself, rounding decides
        assert (share is not None) == (cost > limit)
        if share is not None:
            assert share == pytest.approx(cost)


# -- kernel rotation's loop -----------------------------------------------------------------------


@dataclass
class MuxGroup(FakeGroup):
    """A group the kernel multiplexes: counts ``share`` of the time it is enabled (and reports
    time_running = share * time_enabled); readable while it runs."""

    share: float = 1.0
    toggles: int = 0

    def enable(self) -> None:
        self.toggles += 1
        super().enable()

    def disable(self) -> None:
        self.toggles += 1
        super().disable()

    def read(self) -> GroupValues:
        if self.enabled_at is not None:  # fold the running span in, keep running
            super().disable()
            super().enable()
        ns = round(self.time_enabled * 1e9)
        counts = tuple(round(self.totals.get(n, 0.0) * self.share) for n in self.events)
        return GroupValues(counts, ns, round(ns * self.share))


class MuxSource(FakeSource):
    kind = "mux"
    share = 1.0

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> MuxGroup:
        group = MuxGroup(self, unit, tuple(e.name for e in events), share=self.share)
        self.groups.append(group)
        return group


def _kernel_run(source: MuxSource, plan: RotationPlan, read_every: float = 0.01) -> list[Slice]:
    slices: list[Slice] = []
    sampler = Sampler(
        source,
        plan,
        timeslice=0.01,
        on_slice=slices.append,
        rotation=Rotation(KERNEL, read_every, "test"),
    )
    source.start()
    sampler.run()
    return slices


def test_kernel_rotation_reads_every_group_each_slice_without_switching() -> None:
    t1 = Unit("thread", 1, core=0, cmg=0)
    t2 = Unit("thread", 2, core=1, cmg=0)
    source = MuxSource(
        {t1.key: (t1, 0, 10), t2.key: (t2, 0.025, 10)},  # thread 2 appears mid-run
        {"A": 1000.0, "B": 2000.0, "C": 3000.0},
        stop_at=0.06,
    )
    slices = _kernel_run(source, _plan())
    assert {s.group for s in slices} == {KERNEL}
    first = {(r.unit, r.group): r.counts for r in readings_of(slices[0])}
    assert first == {
        ("thread:1", "G1"): {"A": 10},
        ("thread:1", "G2"): {"B": 20},
        ("thread:1", "G3"): {"C": 30},
    }
    last = {(r.unit, r.group): r.counts for r in readings_of(slices[-1])}
    assert last[("thread:2", "G3")] == {"C": 30}  # opened when found, counting all groups since
    # one enable per group and unit, and no ioctl per slice
    assert all(group.toggles == 1 for group in source.groups)


def test_kernel_rotation_follows_units_between_reads() -> None:
    """Reads every 0.5 s, looks at the units every 0.1 s: a thread that ends at 0.25 s is read
    when found ended and its rows join the next slice; one that starts at 0.62 s counts from the
    next look on."""
    t1 = Unit("thread", 1, core=0, cmg=0)
    t2 = Unit("thread", 2, core=1, cmg=0)
    t3 = Unit("thread", 3, core=1, cmg=0)
    source = MuxSource(
        {t1.key: (t1, 0, 10), t2.key: (t2, 0, 0.25), t3.key: (t3, 0.62, 10)},
        {"A": 1000.0, "B": 2000.0, "C": 3000.0},
        stop_at=1.0,
    )
    slices = _kernel_run(source, _plan(), read_every=0.5)
    assert [round(s.t, 6) for s in slices] == [0.5, 1.0]
    first = {(r.unit, r.group): r.counts for r in readings_of(slices[0])}
    assert first[("thread:2", "G1")] == {"A": 250} and first[("thread:2", "G3")] == {"C": 750}
    assert first[("thread:1", "G2")] == {"B": 1000}
    assert "thread:2" in slices[0].ended
    second = {(r.unit, r.group): r.counts for r in readings_of(slices[1])}
    assert ("thread:2", "G1") not in second
    assert second[("thread:3", "G1")] == {"A": 300}  # found at 0.7 s
    assert all(group.toggles == 1 for group in source.groups)


def test_kernel_multiplexed_counts_scale_back_to_the_truth() -> None:
    """The fake kernel counts each group a third of the time (time_running = te / 3): the engine
    scales every event back by te/tr, coverage one third."""
    t1 = Unit("thread", 1, core=0, cmg=0)
    source = MuxSource({t1.key: (t1, 0, 10)}, {"A": 1000.0, "B": 2000.0, "C": 3000.0}, stop_at=0.3)
    source.share = 1 / 3
    profile = _profile()
    engine = MetricsEngine(profile)
    for item in _kernel_run(source, _plan()):
        engine.add_slice(item)
    frame = engine.final_frame(0.3)
    assert frame.total.counts == pytest.approx({"A": 300.0, "B": 600.0, "C": 900.0}, rel=0.01)
    assert frame.total.coverage == pytest.approx({"A": 1 / 3, "B": 1 / 3, "C": 1 / 3}, rel=0.01)


# -- the budget in the loop -----------------------------------------------------------------------


def _budget_run(
    monkeypatch: pytest.MonkeyPatch, *, may_switch: bool, cost: float
) -> tuple[list[Slice], list[str], list[Rotation], MuxSource, Sampler]:
    """A sync session whose sampler is made to cost ``cost`` of a core."""
    t1 = Unit("thread", 1, core=0, cmg=0)
    source = MuxSource({t1.key: (t1, 0, 100)}, {"A": 1000.0, "B": 2000.0, "C": 3000.0}, stop_at=20.0)
    slices: list[Slice] = []
    warnings: list[str] = []
    changes: list[Rotation] = []
    sampler = Sampler(
        source,
        _plan(),
        timeslice=0.05,
        on_slice=slices.append,
        on_warning=warnings.append,
        rotation=Rotation(SYNC, 0.05, "test"),
        max_overhead=0.02,
        may_switch=may_switch,
        max_timeslice=1.0,
        on_rotation=changes.append,
    )
    monkeypatch.setattr(sampler, "_own_cpu", lambda now: cost * now)
    source.start()
    sampler.run()
    return slices, warnings, changes, source, sampler


def test_over_budget_auto_switches_sync_to_kernel_once(monkeypatch: pytest.MonkeyPatch) -> None:
    slices, warnings, changes, _, sampler = _budget_run(monkeypatch, may_switch=True, cost=0.05)
    # still over budget in kernel rotation: its reads get further apart
    assert [(c.mode, c.timeslice) for c in changes] == [(KERNEL, 0.5), (KERNEL, 1.0)]
    assert sampler.rotation.mode == KERNEL
    assert "5.0 % of a core, over --max-overhead 2 %" in warnings[0]
    assert "switched from sync to kernel" in warnings[0]
    groups = [s.group for s in slices]
    switch = groups.index(KERNEL)
    assert set(groups[:switch]) == {"G1", "G2", "G3"} and set(groups[switch:]) == {KERNEL}
    assert 1.9 < slices[switch - 1].t < 2.2  # after the first full window of the budget
    # kernel slices hold every group's row
    assert {r.group for r in readings_of(slices[-1])} == {"G1", "G2", "G3"}


def test_over_budget_sync_lengthens_its_timeslice_up_to_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    slices, warnings, changes, _, _ = _budget_run(monkeypatch, may_switch=False, cost=0.05)
    assert [c.timeslice for c in changes] == [0.1, 0.2, 0.4, 0.8, 1.0]
    assert all(c.mode == SYNC for c in changes)
    assert "slice lengthened from 0.05 s to 0.1 s" in warnings[0]
    assert "already 1 s, the --interval" in warnings[-1]  # said once, when nothing is left to do
    assert sum("already" in w for w in warnings) == 1
    assert {s.group for s in slices} == {"G1", "G2", "G3"}
    assert slices[-2].duration == pytest.approx(1.0)


def test_within_budget_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    _, warnings, changes, _, sampler = _budget_run(monkeypatch, may_switch=True, cost=0.01)
    assert changes == [] and warnings == []
    assert sampler.rotation == Rotation(SYNC, 0.05, "test")
