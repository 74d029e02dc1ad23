"""The rotation plan: which events run in which timeslice, on per-unit and per-CMG counters.

Pure logic, no I/O, so the schedule is unit-tested on its own. A profile group may mix events that
count per PE with events that count the whole CMG (SC2, SC5 on A64FX). The plan splits each group:
the PE part is opened on every unit (thread or CPU), the CMG part once per CMG on one of its CPUs, and
both halves run in the same timeslices, so metrics over both still see the same interval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sectormon.errors import UsageError
from sectormon.profiles.model import EventDef, Profile


@dataclass(frozen=True, slots=True)
class PlannedGroup:
    """One group of the rotation after dropping what this host cannot count."""

    name: str
    pe_events: tuple[EventDef, ...]
    cmg_events: tuple[EventDef, ...]

    @property
    def empty(self) -> bool:
        return not self.pe_events and not self.cmg_events


ALWAYS = "always"
"""The group of the events that need no PMU counter (software events): counted in every slice."""


@dataclass(frozen=True, slots=True)
class RotationPlan:
    """The groups that rotate, in order, the group counted all the time (``always``: events that
    take no counter, never rotated), plus what was dropped and why."""

    groups: tuple[PlannedGroup, ...]
    dropped: Mapping[str, str]
    skipped_groups: tuple[str, ...]
    always: PlannedGroup | None = None

    def group_at(self, slice_index: int) -> PlannedGroup | None:
        """Round-robin: slice n runs group n mod G on every unit at once (None: nothing rotates)."""
        return self.groups[slice_index % len(self.groups)] if self.groups else None

    def all_groups(self) -> tuple[PlannedGroup, ...]:
        """The rotating groups, then the always-on group if there is one."""
        return (*self.groups, self.always) if self.always is not None else self.groups

    def events(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for group in self.all_groups():
            for event in (*group.pe_events, *group.cmg_events):
                seen.setdefault(event.name, None)
        return tuple(seen)


def select_groups(profile: Profile, names: Sequence[str] | None) -> tuple[str, ...]:
    """The groups asked for with ``--groups`` (all of the profile's when none), validated."""
    known = [g.name for g in profile.groups]
    if not names:
        return tuple(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"--groups: unknown group {', '.join(unknown)} in profile {profile.name!r}; "
            f"choose from {', '.join(known)}"
        )
    return tuple(dict.fromkeys(names))


def plan_rotation(
    profile: Profile,
    group_names: Sequence[str],
    unavailable: Mapping[str, str],
    free: Callable[[EventDef], bool] = lambda _event: False,
) -> RotationPlan:
    """Drop unavailable events from their groups; move the events that take no PMU counter
    (``free``: software events) to the always-on group, unless the profile rotates them too;
    skip groups left without events that need a counter.

    Raises :class:`UsageError` when nothing at all is left to count, naming the reasons.
    """
    planned: list[PlannedGroup] = []
    skipped: list[str] = []
    always_pe: dict[str, EventDef] = {}
    always_cmg: dict[str, EventDef] = {}

    def rotates(event: EventDef) -> bool:
        return profile.rotate_software or not free(event)

    for name in group_names:
        group = profile.group(name)
        pe = tuple(profile.events[e] for e in profile.pe_events(group) if e not in unavailable)
        cmg = tuple(profile.events[e] for e in profile.cmg_events(group) if e not in unavailable)
        always_pe.update((e.name, e) for e in pe if not rotates(e))
        always_cmg.update((e.name, e) for e in cmg if not rotates(e))
        candidate = PlannedGroup(
            name=name,
            pe_events=tuple(e for e in pe if rotates(e)),
            cmg_events=tuple(e for e in cmg if rotates(e)),
        )
        if not candidate.empty:
            planned.append(candidate)
        elif any(rotates(profile.events[e]) for e in group.events) or not (pe or cmg):
            skipped.append(name)  # its counter events cannot be counted here (its free ones can)
    always = (
        PlannedGroup(ALWAYS, tuple(always_pe.values()), tuple(always_cmg.values()))
        if always_pe or always_cmg
        else None
    )
    if not planned and always is None:
        reasons = "; ".join(f"{event}: {why}" for event, why in sorted(unavailable.items())[:4])
        raise UsageError(
            f"no event of profile {profile.name!r} can be counted here ({reasons}); "
            "run 'sectormon check' to see why"
        )
    return RotationPlan(
        groups=tuple(planned), dropped=dict(unavailable), skipped_groups=tuple(skipped), always=always
    )


def with_always_pe_event(plan: RotationPlan, event: EventDef) -> RotationPlan:
    """``plan`` with ``event`` in its always-on group, when that group has no per-PE event yet
    (``--proxy``'s task-time reference, :data:`sectormon.metrics.proxy.TASK_TIME_EVENT`)."""
    always = plan.always
    if always is not None and always.pe_events:
        return plan
    group = PlannedGroup(ALWAYS, (event,), always.cmg_events if always is not None else ())
    return RotationPlan(plan.groups, plan.dropped, plan.skipped_groups, group)


@dataclass(slots=True)
class Deadlines:
    """Drift-free slice deadlines: slice n ends at ``(n + 1) * timeslice`` after the start.

    When the sampler falls behind by more than a slice, missed deadlines are skipped rather than
    run back to back, so the schedule never accumulates lag.
    """

    timeslice: float
    next_index: int = 0

    def next_deadline(self, now: float) -> float:
        deadline = (self.next_index + 1) * self.timeslice
        if deadline <= now:
            self.next_index = int(now // self.timeslice)
            deadline = (self.next_index + 1) * self.timeslice
            while deadline <= now:  # floating-point floor can land one slice short
                self.next_index += 1
                deadline = (self.next_index + 1) * self.timeslice
        self.next_index += 1
        return deadline


# -- rotation modes ------------------------------------------------------------------------------

SYNC = "sync"
"""Lock-step rotation: every unit counts the same group in the same slice; sectormon switches the
groups with an enable and a disable ioctl per unit and slice."""

KERNEL = "kernel"
"""The kernel's multiplexer rotates the groups: all are enabled all the time and read at every
slice with their time_enabled/time_running; no ioctl per slice. Also the ``Slice.group`` of such
a slice (its rows hold every group)."""

AUTO = "auto"
"""Kernel rotation unless the profile needs lock-step (a group mixing CMG-wide and per-PE events)
or the source cannot multiplex (the simulator); sync falls back to kernel over the overhead budget."""

ROTATION_MODES = (AUTO, SYNC, KERNEL)

KERNEL_READ_EVERY = 0.5
"""Seconds between reads of every group in kernel rotation when --timeslice is not given: the
kernel rotates the groups on its own clock (perf_event_mux_interval_ms), so reading more often
adds cost (one read per group and unit), not accuracy."""

KERNEL_POLL_EVERY = 0.1
"""Seconds between two looks at the target's units in kernel rotation: new threads start
counting, ended ones are read before their fds close, a finished target ends the session."""


@dataclass(frozen=True, slots=True)
class Rotation:
    """Which rotation runs, with which slice (sync: the timeslice; kernel: how often every group
    is read), and why. What the header's and every frame's ``rotation`` field say."""

    mode: str
    timeslice: float
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"mode": self.mode, "timeslice": self.timeslice, "reason": self.reason}


def needs_lockstep(plan: RotationPlan) -> bool:
    """A group that mixes CMG-wide and per-PE events: its metrics combine counts of different
    units, which only lock-step rotation counts over the same slices."""
    return any(g.pe_events and g.cmg_events for g in plan.groups)


def choose_rotation(
    requested: str,
    plan: RotationPlan,
    *,
    can_multiplex: bool,
    timeslice: float,
    interval: float,
    given: bool,
) -> Rotation:
    """The rotation a session starts with. ``timeslice``: the session's; ``given``: whether the
    user set it (kernel rotation otherwise reads every :data:`KERNEL_READ_EVERY`, at most once
    per ``interval``)."""
    if requested not in ROTATION_MODES:
        raise UsageError(f"--rotation {requested}: choose one of {', '.join(ROTATION_MODES)}")
    kernel_slice = timeslice if given else min(max(timeslice, KERNEL_READ_EVERY), interval)
    if requested == SYNC:
        return Rotation(SYNC, timeslice, "asked for (--rotation sync)")
    if requested == KERNEL:
        if not can_multiplex:
            raise UsageError(
                "--rotation kernel: this source has no kernel multiplexer (the simulator rotates in "
                "lock-step); use --rotation sync or auto"
            )
        return Rotation(KERNEL, kernel_slice, "asked for (--rotation kernel)")
    if not can_multiplex:
        return Rotation(SYNC, timeslice, "auto: the source has no kernel multiplexer")
    if needs_lockstep(plan):
        return Rotation(
            SYNC,
            timeslice,
            "auto: groups mix CMG-wide and per-PE events, counted in the same slices on every unit",
        )
    if len(plan.groups) <= 1:
        return Rotation(KERNEL, kernel_slice, "auto: at most one group needs a counter, nothing to switch")
    return Rotation(
        KERNEL, kernel_slice, "auto: the kernel's multiplexer rotates the groups, no ioctl per slice"
    )


@dataclass(slots=True)
class OverheadBudget:
    """The sampler's CPU over windows of ``window`` seconds against ``limit`` (a fraction of one
    core): :meth:`observe` returns the share of a window that went over, once per such window.

    The first window starts after the first slice, so opening every unit's groups at the start is
    not held against the budget; later openings (new threads) are part of the cost.
    """

    limit: float
    window: float = 2.0
    _t0: float | None = None
    _cpu0: float = 0.0

    def observe(self, t: float, cpu_s: float) -> float | None:
        if self._t0 is None:
            self._t0, self._cpu0 = t, cpu_s
            return None
        span = t - self._t0
        if span < self.window * (1 - 1e-9):  # a window of slices ending on it is full
            return None
        share = (cpu_s - self._cpu0) / span
        self._t0, self._cpu0 = t, cpu_s
        return share if share > self.limit else None

    def restart(self) -> None:
        """Measure afresh (after the rotation changed: the old window's cost is history)."""
        self._t0 = None
