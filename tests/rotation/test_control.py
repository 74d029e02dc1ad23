"""Counting switched on and off by control commands, on a fake source through the sampler: what
each command leaves enabled, when it is acked, what the slices say of the spans."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from sectormon.data.readings import Slice, Unit
from sectormon.perf.group import GroupValues
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.control import CountingControl
from sectormon.rotation.control_commands import ControlCommand, parse_command
from sectormon.rotation.counters import OpenUnits
from sectormon.rotation.plan import KERNEL, SYNC, Rotation, RotationPlan, plan_rotation, select_groups
from sectormon.rotation.sampler import Sampler
from tests.rotation.fake_source import FakeGroup, FakeSource

T1 = Unit("thread", 1, core=0, cmg=0)
T2 = Unit("thread", 2, core=1, cmg=0)
RATES = {"A": 1000.0, "B": 2000.0, "S": 500.0}


def _plan() -> RotationPlan:
    """Two rotating groups (G1: A, G2: B and C) and the always-on one (S, free)."""
    events = {n: EventDef(n, f"r{n.lower()}") for n in ("A", "B", "C", "S")}
    profile = Profile("t", "test", 8, events, (GroupDef("G1", ("A", "S")), GroupDef("G2", ("B", "C"))), ())
    return plan_rotation(profile, select_groups(profile, None), {}, free=lambda e: e.name == "S")


class LiveGroup(FakeGroup):
    """Its reads include the span it is enabled in now (a kernel counter's do)."""

    def read(self) -> GroupValues:
        if self.enabled_at is not None:
            self.disable()
            self.enable()
        return super().read()


class ScriptedSource(FakeSource):
    """Commands arrive from 'another thread' at given times: posted when the clock passes them,
    then the wake-up cuts the wait short there."""

    def __init__(
        self, *args: object, script: list[tuple[float, Callable[[], None]]], **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.script = sorted(script, key=lambda item: item[0])
        self.woken = 0

    def wait_until(self, t: float) -> None:
        if self.script and self.script[0][0] <= t:
            at, post = self.script.pop(0)
            self.t = max(self.t, at)
            post()
            return
        super().wait_until(t)

    def wake(self) -> None:
        self.woken += 1

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> LiveGroup:
        group = LiveGroup(self, unit, tuple(e.name for e in events))
        self.groups.append(group)
        return group


def _on(source: FakeSource) -> set[tuple[str, tuple[str, ...]]]:
    return {(g.unit.key, g.events) for g in source.groups if g.enabled_at is not None and not g.closed}


class Run:
    """A sampler over ``ScriptedSource`` with a control; commands at ``(time, text)``."""

    def __init__(
        self,
        commands: list[tuple[float, str]],
        *,
        mode: str = SYNC,
        start_enabled: bool = True,
        stop_at: float = 1.0,
        lifetimes: dict[str, tuple[Unit, float, float]] | None = None,
    ) -> None:
        self.plan = _plan()
        self.warnings: list[str] = []
        self.acks: list[tuple[str, set[tuple[str, tuple[str, ...]]]]] = []  # (command, on when acked)
        self.control = CountingControl(
            self.plan, start_enabled=start_enabled, on_warning=self.warnings.append
        )
        script = [(at, self._poster(parse_command(text))) for at, text in commands]
        self.source = ScriptedSource(
            lifetimes if lifetimes is not None else {"thread:1": (T1, 0.0, 9.0), "thread:2": (T2, 0.0, 9.0)},
            RATES,
            stop_at=stop_at,
            script=script,
        )
        self.slices: list[Slice] = []
        self.sampler = Sampler(
            self.source,
            self.plan,
            timeslice=0.1,
            on_slice=self.slices.append,
            on_warning=self.warnings.append,
            rotation=Rotation(mode, 0.1, "test"),
            control=self.control,
        )

    def _poster(self, command: ControlCommand) -> Callable[[], None]:
        def post() -> None:
            self.control.post(command, lambda: self.acks.append((command.text, _on(self.source))))

        return post

    def run(self) -> Run:
        self.source.start()
        self.sampler.run()
        return self

    def total(self, event: str) -> float:
        return sum(
            value
            for s in self.slices
            for row in s.rows
            for name, value in zip(row.names, row.values, strict=True)
            if name == event
        )


BOTH = ("thread:1", "thread:2")


def test_sync_disable_stops_everything_and_enable_restores_the_running_group_and_the_always_on_one() -> None:
    run = Run([(0.25, "disable"), (0.45, "enable")]).run()
    (_, off), (_, back) = run.acks
    assert off == set()
    # The strategy rotated on while counting was off: the group running at 0.45 comes back, one
    # rotating group on every unit, with the always-on one.
    rotating = {events for _, events in back} - {("S",)}
    assert len(rotating) == 1
    assert back == {(u, e) for u in BOTH for e in (*rotating, ("S",))}


def test_kernel_disable_then_enable_restores_every_group() -> None:
    run = Run([(0.25, "disable"), (0.45, "enable")], mode=KERNEL).run()
    (_, off), (_, back) = run.acks
    assert off == set()
    assert back == {(u, e) for u in BOTH for e in (("A",), ("B", "C"), ("S",))}


def test_a_command_is_applied_and_acked_at_once_not_at_the_next_slice() -> None:
    run = Run([(0.25, "disable")]).run()
    assert run.source.woken == 1
    # Applied at 0.25, and the slice was cut there: no slice straddles the switch.
    assert any(abs(s.t - 0.25) < 1e-9 for s in run.slices)


def test_only_enabled_spans_count_and_a_span_with_counting_off_has_no_duration() -> None:
    run = Run([(0.3, "disable"), (0.6, "enable")], mode=KERNEL).run()
    assert run.total("S") == pytest.approx(2 * 500.0 * 0.7)  # two threads, 0.3 + 0.4 s on
    off = [s for s in run.slices if 0.3 < s.t <= 0.6 + 1e-9]
    assert off and all(s.duration == 0.0 for s in off)
    assert sum(s.duration for s in run.slices) == pytest.approx(0.7)
    assert all(row.time_enabled == 0 for s in off for row in s.rows)


def test_started_disabled_nothing_counts_until_enable_and_units_found_meanwhile_open_disabled() -> None:
    late = Unit("thread", 3, core=2, cmg=0)
    lifetimes = {"thread:1": (T1, 0.0, 9.0), "thread:3": (late, 0.2, 9.0)}
    run = Run([(0.5, "ping"), (0.7, "enable")], mode=KERNEL, start_enabled=False, lifetimes=lifetimes).run()
    (_, at_ping), (_, at_enable) = run.acks
    assert at_ping == set()  # thread 3 was opened at 0.2, disabled
    assert {unit for unit, _ in at_enable} == {"thread:1", "thread:3"}
    assert run.total("S") == pytest.approx(2 * 500.0 * 0.3)
    assert sum(s.duration for s in run.slices) == pytest.approx(0.3)


def test_disable_name_holds_that_group_only_and_enable_brings_it_back() -> None:
    run = Run([(0.25, "disable G2"), (0.55, "enable")], mode=KERNEL).run()
    (_, held), (_, back) = run.acks
    assert held == {(u, e) for u in BOTH for e in (("A",), ("S",))}
    assert back == {(u, e) for u in BOTH for e in (("A",), ("B", "C"), ("S",))}
    # Some group counted all along: every slice is present time, G2's counts hold its spans on.
    assert sum(s.duration for s in run.slices) == pytest.approx(1.0)
    assert run.total("B") == pytest.approx(2 * 2000.0 * 0.7)
    assert run.total("A") == pytest.approx(2 * 1000.0 * 1.0)
    # While held, G2's readings say the units were there and G2 did not count (empty rows), not
    # zeros the engine would take for threads that ran none of it (full coverage of a 0).
    held_slices = [s for s in run.slices if 0.35 < s.t <= 0.55]  # held throughout
    g2 = [row for s in held_slices for row in s.rows if row.group == "G2"]
    assert g2 and all(row.names == () and row.values == () for row in g2)


def test_an_event_is_named_by_its_profile_name_or_its_spec_and_switches_its_whole_group() -> None:
    run = Run([(0.25, "disable rb"), (0.35, "enable B"), (0.45, "disable rb")], mode=KERNEL).run()
    assert run.acks[0][1] == {(u, e) for u in BOTH for e in (("A",), ("S",))}
    assert run.acks[1][1] == {(u, e) for u in BOTH for e in (("A",), ("B", "C"), ("S",))}
    said = [w for w in run.warnings if "whole group" in w]
    assert said == [  # once per name, though rb was named twice
        f"--control: {name} is switched with its whole group (G2), so {others} too: a group's events "
        "share one enabled time"
        for name, others in (("rb", "C"), ("B", "C"))
    ]


def test_unknown_names_and_commands_are_said_once_and_the_run_goes_on() -> None:
    commands = [(0.1, "disable nosuch"), (0.2, "disable nosuch"), (0.3, "frobnicate"), (0.4, "frobnicate")]
    run = Run([*commands, (0.5, "evlist"), (0.6, "enablex")], mode=KERNEL).run()
    assert [text for text, _ in run.acks] == ["disable nosuch", "disable nosuch", "evlist", "enablex"]
    assert len([w for w in run.warnings if "nosuch" in w]) == 1
    assert len([w for w in run.warnings if "frobnicate" in w]) == 1
    assert any("'evlist'" in w for w in run.warnings) and any("'enablex'" in w for w in run.warnings)
    assert run.total("S") == pytest.approx(2 * 500.0 * 1.0)  # nothing was switched off


def test_stop_ends_the_run() -> None:
    run = Run([(0.35, "stop")], stop_at=9.0).run()
    assert [text for text, _ in run.acks] == ["stop"]
    assert run.slices[-1].t == pytest.approx(0.35)


def test_a_command_from_the_delay_timer_is_not_acked() -> None:
    plan = _plan()
    control = CountingControl(plan, start_enabled=False, on_warning=lambda _m: None)
    control.post(ControlCommand("enable", "--delay"))
    assert control.all_held
    control.apply(0.1)
    assert not control.all_held


def test_counted_seconds_follow_the_switches_inside_a_slice() -> None:
    control = CountingControl(_plan(), start_enabled=True, on_warning=lambda _m: None)
    control.post(parse_command("disable"))
    control.apply(0.3)
    control.post(parse_command("enable"))
    control.apply(0.7)
    assert control.counted(0.0, 1.0) == pytest.approx(0.6)
    assert control.counted(1.0, 2.0) == pytest.approx(1.0)


def test_every_group_the_open_units_take_passes_the_gate() -> None:
    """Groups opened anywhere (the sampler's units, a --proxy stand-in promoted later) enter
    through OpenUnits.open_group: none escapes control."""
    plan = _plan()
    control = CountingControl(plan, start_enabled=False, on_warning=lambda _m: None)
    source = FakeSource({}, RATES)
    units = OpenUnits(plan, gate=control.gate)
    counter = units.open_group(source.open_group(T1, plan.groups[0].pe_events), "G1", cmg=False)
    units.toggle(counter, enable=True)
    assert counter.on and source.groups[0].enabled_at is None  # wanted, held off
    control.post(parse_command("enable"))
    control.apply(0.0)
    assert source.groups[0].enabled_at is not None


def test_a_gated_group_offers_what_its_group_offers() -> None:
    """The region handshake hands a marking thread its groups' ids and leader descriptor."""
    plan = _plan()
    control = CountingControl(plan, start_enabled=True, on_warning=lambda _m: None)
    inner = FakeSource({}, RATES).open_group(T1, plan.groups[0].pe_events)
    gated = control.gate("G1", inner)
    assert gated.unit is T1 and gated.events == inner.events  # type: ignore[attr-defined]
