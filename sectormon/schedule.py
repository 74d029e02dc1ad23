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
