"""The rotation plan: which events run in which timeslice, on per-unit and per-CMG counters.

Pure logic, no I/O, so the schedule is unit-tested on its own. A profile group may mix events that
count per PE with events that count the whole CMG (SC2, SC5 on A64FX). The plan splits each group:
the PE part is opened on every unit (thread or CPU), the CMG part once per CMG on one of its CPUs, and
both halves run in the same timeslices, so metrics over both still see the same interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


@dataclass(frozen=True, slots=True)
class RotationPlan:
    """The groups that rotate, in order, plus what was dropped and why."""

    groups: tuple[PlannedGroup, ...]
    dropped: Mapping[str, str]
    skipped_groups: tuple[str, ...]

    def group_at(self, slice_index: int) -> PlannedGroup:
        """Round-robin: slice n runs group n mod G on every unit at once."""
        return self.groups[slice_index % len(self.groups)]

    def events(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for group in self.groups:
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
) -> RotationPlan:
    """Drop unavailable events from their groups; skip groups left empty.

    Raises :class:`UsageError` when nothing at all is left to count, naming the reasons.
    """
    planned: list[PlannedGroup] = []
    skipped: list[str] = []
    for name in group_names:
        group = profile.group(name)
        pe = tuple(profile.events[e] for e in profile.pe_events(group) if e not in unavailable)
        cmg = tuple(profile.events[e] for e in profile.cmg_events(group) if e not in unavailable)
        candidate = PlannedGroup(name=name, pe_events=pe, cmg_events=cmg)
        if candidate.empty:
            skipped.append(name)
        else:
            planned.append(candidate)
    if not planned:
        reasons = "; ".join(f"{event}: {why}" for event, why in sorted(unavailable.items())[:4])
        raise UsageError(
            f"no event of profile {profile.name!r} can be counted here ({reasons}); "
            "run 'sectormon check' to see why"
        )
    return RotationPlan(groups=tuple(planned), dropped=dict(unavailable), skipped_groups=tuple(skipped))


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
