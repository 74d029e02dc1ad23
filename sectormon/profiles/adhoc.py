"""An ad-hoc profile from ``-e EVENTS``: the events asked for, grouped, with the metrics they allow.

``-e`` counts events without writing a profile, as ``perf stat -e`` does, but on sectormon's
engine, so the result is an ordinary :class:`Profile` built on the profile in use (the base):

* a base event's name (``L1D_CACHE``) is that event; a raw code the base knows (``r0250`` on the
  a64fx profile) takes its name, unit and scope (a CMG-wide event is opened once per CMG); a perf
  spec the base knows (``page-faults`` on the generic profile) takes its name and unit;
* anything else is a new event counted per thread or CPU (scope ``pe``), named after its spec
  (``r0250``, ``L1_dcache_load_misses``: formula names are identifiers);
* ``{a,b}`` is a group of its own; the other events fill groups in the order given, each at most
  the base's counter count (8 on A64FX);
* the base's metrics whose every input is counted come along (with their units), so
  ``-e page-faults,task-clock`` on the generic profile still reports its fault rate.

What each event is shown as (:attr:`AdHocProfile.labels`) is the text typed, modifiers included,
as perf prints it, except for a base event named or coded, shown by the base's name. Whether the
host can count each event is not decided here: the session's probe does, and a front end refuses
what it cannot open.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sectormon.errors import UsageError
from sectormon.profiles.build import with_group_hints
from sectormon.profiles.event_list import EventChoice
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.profiles.problems import ProfileError
from sectormon.profiles.validate import IDENT, RESERVED, check_profile

TIME_SPECS = ("task-clock", "cpu-clock")
"""perf's software clocks: they count nanoseconds (perf stat shows them in msec)."""

_RAW = re.compile(r"r([0-9a-fA-F]+)")


@dataclass(frozen=True, slots=True)
class AdHocProfile:
    """The profile ``-e`` makes, each event's label (by event name) and the privilege levels the
    modifiers ask for: ``u``, ``k``, ``uk``, or ``""`` when none was given."""

    profile: Profile
    labels: dict[str, str]
    levels: str


def adhoc_profile(base: Profile, choices: Sequence[EventChoice], option: str = "-e") -> AdHocProfile:
    """The ad-hoc profile of ``choices`` on ``base`` (see the module docstring)."""
    by_code = {e.code: e for e in base.events.values() if e.code is not None}
    by_spec = {e.spec.lower(): e for e in base.events.values()}
    events: dict[str, EventDef] = {}
    labels: dict[str, str] = {}
    names: list[str] = []
    for choice in choices:
        event = _event_for(choice, base, by_code, by_spec, events)
        events.setdefault(event.name, event)
        labels.setdefault(event.name, _label(choice, event, base))
        names.append(event.name)
    groups = _groups(base, choices, names, option)
    _, inputs = check_profile(base, lambda _path: None)
    metrics = tuple(
        replace(m, group_hint="")
        for m in base.metrics
        if inputs.get(m.name) and inputs[m.name] <= set(events)
    )
    profile = Profile(
        name=f"{base.name}+events",
        description=f"{option} {','.join(c.text for c in choices)} on the {base.name} profile",
        counters=base.counters,
        events=events,
        groups=groups,
        metrics=metrics,
        constants=dict(base.constants),
        source=base.source,
        variant=base.variant,
        rotate_software=base.rotate_software,
    )
    problems, metric_inputs = check_profile(profile, lambda _path: None)
    if problems:  # the names are made valid above: a fault here is sectormon's, said plainly
        raise ProfileError(f"{option} profile", problems)
    return AdHocProfile(with_group_hints(profile, metric_inputs), labels, _levels(choices, option))


def _event_for(
    choice: EventChoice,
    base: Profile,
    by_code: dict[int, EventDef],
    by_spec: dict[str, EventDef],
    taken: dict[str, EventDef],
) -> EventDef:
    """The event ``choice`` names: the base's, or a new one named after its spec."""
    if choice.name in base.events:
        return base.events[choice.name]
    raw = _RAW.fullmatch(choice.name)
    if raw is not None and int(raw.group(1), 16) in by_code:
        return by_code[int(raw.group(1), 16)]
    known = by_spec.get(choice.name.lower())
    if known is not None:
        return known
    for event in taken.values():  # the same spec twice (in two groups): one event
        if event.spec == choice.name:
            return event
    unit = "ns" if choice.name.lower() in TIME_SPECS else "count"
    code = int(raw.group(1), 16) if raw is not None else None
    name = _identifier(choice.name, {*base.events, *base.constants, *(m.name for m in base.metrics), *taken})
    return EventDef(name=name, spec=choice.name, description=f"{choice.name} (-e)", code=code, unit=unit)


def _label(choice: EventChoice, event: EventDef, base: Profile) -> str:
    """A base event named or coded is shown by the base's name (with the modifiers typed);
    anything else as typed."""
    if event.name in base.events and (choice.name == event.name or _RAW.fullmatch(choice.name)):
        return event.name + choice.text[len(choice.name) :]
    return choice.text


def _identifier(spec: str, taken: set[str]) -> str:
    """A formula name for ``spec``: its letters, digits and ``_``, unique among ``taken``."""
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", spec).strip("_") or "event"
    if not IDENT.fullmatch(stem):
        stem = f"e_{stem}"
    name = stem
    number = 2
    while name in taken or name in RESERVED:
        name = f"{stem}_{number}"
        number += 1
    return name


def _groups(
    base: Profile, choices: Sequence[EventChoice], names: Sequence[str], option: str
) -> tuple[GroupDef, ...]:
    """``{...}`` groups as given; the ungrouped events packed in order, at most ``counters`` each."""
    out: list[GroupDef] = []
    braced: dict[int, list[str]] = {}
    loose: list[str] = []
    for choice, name in zip(choices, names, strict=True):
        target = loose if choice.group is None else braced.setdefault(choice.group, [])
        if name not in target:
            target.append(name)
    for index, members in sorted(braced.items()):
        if len(members) > base.counters:
            raise UsageError(
                f"{option}: group {{{','.join(members)}}} has {len(members)} events and the "
                f"{base.name} profile's PMU has {base.counters} counters (split it into smaller groups)"
            )
        out.append(GroupDef(f"G{index + 1}", tuple(members), "a {...} group of " + option))
    for start in range(0, len(loose), base.counters):
        members = loose[start : start + base.counters]
        out.append(GroupDef(f"E{start // base.counters + 1}", tuple(members), f"events of {option}"))
    return tuple(out)


def _levels(choices: Sequence[EventChoice], option: str) -> str:
    """The privilege levels the modifiers ask for, one setting for the whole run (a session
    counts every event at the same levels)."""
    given = sorted({c.modifiers for c in choices if c.modifiers})
    if len(given) > 1:
        raise UsageError(
            f"{option}: the events ask for different levels ({', '.join(':' + g for g in given)}); "
            "sectormon counts every event of a run at the same levels: give them all the same modifier"
        )
    return given[0] if given else ""
