"""The counters the sampler holds open: every counted unit's open groups, switched and read group
by group.

Both rotation strategies (:mod:`sectormon.rotation.sync`, :mod:`sectormon.rotation.kernel`) enable,
disable and read groups through :class:`OpenUnits`; the sampler adds and removes its units. A
timeslice boundary walks one group over every unit, so each group's part of every unit is kept in
a list of its own (:class:`_Members`), rebuilt only when the units change, instead of looking each
unit's group up per read. A read hands back a :class:`~sectormon.data.readings.Row`: the delta since
the group's previous read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sectormon.data.readings import U64, Row, Unit
from sectormon.errors import SectormonError
from sectormon.perf.group import GroupValues
from sectormon.rotation.plan import PlannedGroup, RotationPlan
from sectormon.sources.base import CounterGroup


@dataclass(slots=True)
class OpenGroup:
    """One group opened on one unit, with its previous cumulative read (readings are deltas)."""

    group: CounterGroup
    names: tuple[str, ...]
    last: GroupValues | None = None
    on: bool = False  # enabled: kernel rotation enables what is not on yet, once

    def delta(self, now: GroupValues) -> tuple[list[int], int, int]:
        """Values and times since the previous read; ``% U64`` survives a counter wrap."""
        prev = self.last
        self.last = now
        if prev is None:
            return list(now.values), now.time_enabled, now.time_running
        return (
            [(v - p) % U64 for v, p in zip(now.values, prev.values, strict=True)],
            (now.time_enabled - prev.time_enabled) % U64,
            (now.time_running - prev.time_running) % U64,
        )


@dataclass(slots=True)
class UnitGroups:
    """One counted unit and its open groups by group name."""

    unit: Unit
    groups: dict[str, OpenGroup] = field(default_factory=dict)


@dataclass(slots=True)
class _Members:
    """One group's part of every unit, in unit order: what a timeslice boundary walks.

    ``states[i]`` owns ``groups[i]``, or has no open group of the group when ``groups[i]`` is None
    (it still gets an empty reading).
    """

    keys: tuple[str, ...]
    states: tuple[UnitGroups, ...]
    groups: tuple[OpenGroup | None, ...]
    markers: tuple[OpenGroup, ...] = ()  # marker-only groups: switched with the rest, never read


Gate = Callable[[str, CounterGroup], CounterGroup]
"""Wraps a group as it is opened, given its plan group's name
(:meth:`sectormon.rotation.control.CountingControl.gate`)."""


class OpenUnits:
    """The counted units by key, in the order they were opened, and their open groups."""

    def __init__(self, plan: RotationPlan, gate: Gate | None = None) -> None:
        """``gate``: every group opened passes through it (``--control``: counting held off)."""
        self._plan = plan
        self._gate = gate
        self.states: dict[str, UnitGroups] = {}
        # Groups opened only for a thread's marked regions (:mod:`sectormon.rotation.markers`): a
        # thread counted by inherited groups, or not found by a poll yet. They rotate with the
        # units' groups and are never read into rows.
        self.marker_only: dict[str, UnitGroups] = {}
        self._members: dict[str, _Members] = {}  # per group, built from states when they change
        self._all_on = False  # every group of every unit enabled (kernel rotation)
        # One names tuple per group and kind of unit: rows of a layout share it (see Row).
        self._names: dict[tuple[str, bool], tuple[str, ...]] = {
            (g.name, cmg): tuple(e.name for e in (g.cmg_events if cmg else g.pe_events))
            for g in plan.all_groups()
            for cmg in (False, True)
        }

    def open_group(self, group: CounterGroup, name: str, *, cmg: bool) -> OpenGroup:
        """``group``, just opened as the plan's group ``name`` on a CMG unit or a per-PE one."""
        if self._gate is not None:
            group = self._gate(name, group)
        return OpenGroup(group, self._names[name, cmg])

    def add(self, state: UnitGroups) -> None:
        self.states[state.unit.key] = state
        self.changed()

    def add_marker_only(self, state: UnitGroups) -> None:
        self.marker_only[state.unit.key] = state
        self.changed()

    def adopt(self, key: str) -> UnitGroups | None:
        """Take the marker-only groups of ``key``, now found as a unit of its own (the caller
        adds them as that unit's groups: one set of counters per thread)."""
        state = self.marker_only.pop(key, None)
        if state is not None:
            self.changed()
        return state

    def remove(self, key: str) -> UnitGroups | None:
        """Take the unit ``key`` out (its groups still open: the caller closes them)."""
        state = self.states.pop(key, None)
        if state is not None:
            self.changed()
        return state

    def changed(self) -> None:
        """A unit came, went, or opened or closed a group: the member lists are rebuilt."""
        self._members.clear()
        self._all_on = False

    def counted_units(self) -> tuple[Unit, ...]:
        """The per-PE units open now (threads or CPUs, not CMG units)."""
        return tuple(state.unit for state in self.states.values() if state.unit.kind != "cmg")

    def close_all(self) -> None:
        for state in (*self.states.values(), *self.marker_only.values()):
            for counter in state.groups.values():
                counter.group.close()
        self.states.clear()
        self.marker_only.clear()
        self.changed()

    # -- switching -----------------------------------------------------------------------------

    def _members_of(self, name: str) -> _Members:
        members = self._members.get(name)
        if members is None:
            keys = tuple(self.states)
            states = tuple(self.states.values())
            groups = tuple(state.groups.get(name) for state in states)
            found = (state.groups.get(name) for state in self.marker_only.values())
            markers = tuple(counter for counter in found if counter is not None)
            members = self._members[name] = _Members(keys, states, groups, markers)
        return members

    @staticmethod
    def toggle(counter: OpenGroup, *, enable: bool) -> None:
        try:
            if enable:
                counter.group.enable()
            else:
                counter.group.disable()
        except SectormonError as exc:
            if not is_gone(exc):  # a thread that just exited: its last counts are still read
                raise
        counter.on = enable

    def enable_in(self, states: Iterable[UnitGroups], group: PlannedGroup) -> None:
        """Start ``group`` on each of ``states`` that has it open."""
        for state in states:
            counter = state.groups.get(group.name)
            if counter is not None:
                self.toggle(counter, enable=True)

    def enable(self, group: PlannedGroup | None) -> None:
        """Start ``group`` on every unit (``None``: nothing)."""
        self._set(group, enable=True)

    def disable(self, group: PlannedGroup | None) -> None:
        """Stop ``group`` on every unit (``None``: nothing)."""
        self._set(group, enable=False)

    def _set(self, group: PlannedGroup | None, *, enable: bool) -> None:
        if group is None:
            return
        members = self._members_of(group.name)
        for counter in (*members.groups, *members.markers):
            if counter is not None:
                self.toggle(counter, enable=enable)

    def switch(self, old: PlannedGroup | None, new: PlannedGroup | None) -> None:
        """On every unit in turn: stop ``old``, start ``new`` (either may be absent on a unit)."""
        if old is None or new is None:
            return
        old_members = self._members_of(old.name)
        new_members = self._members_of(new.name)
        for before, after in zip(old_members.groups, new_members.groups, strict=True):
            if before is not None:
                self.toggle(before, enable=False)
            if after is not None:
                self.toggle(after, enable=True)
        for before in old_members.markers:
            self.toggle(before, enable=False)
        for after in new_members.markers:
            self.toggle(after, enable=True)

    def enable_all(self) -> None:
        """Enable every group on every unit that is not counting yet (the units opened since the
        last call: in kernel rotation each group is enabled once and stays on)."""
        if self._all_on:
            return
        for group in self._plan.all_groups():
            members = self._members_of(group.name)
            for counter in (*members.groups, *members.markers):
                if counter is not None and not counter.on:
                    self.toggle(counter, enable=True)
        self._all_on = True

    # -- reading -------------------------------------------------------------------------------

    def read(self, group: PlannedGroup | None, *, present: bool = True) -> tuple[Row, ...]:
        """The rows of ``group`` on every unit. A unit with nothing of the group gets an empty
        row when ``present`` (it says the unit was there; the rotating group's read does)."""
        if group is None:
            return ()
        rows: list[Row] = []
        append = rows.append
        name = group.name
        members = self._members_of(name)
        for key, state, counter in zip(members.keys, members.states, members.groups, strict=True):
            unit = state.unit
            if counter is None:
                # Nothing of this group counts on this unit (a CMG unit while a group without
                # CMG-wide events runs): an empty reading still says the unit was there, so its
                # present time starts with the session and scaling stays right whatever the order.
                if present:
                    append(Row(key, unit.core, unit.cmg, name, 0, 0, (), ()))
                continue
            row = _read_row(key, unit, name, counter)
            if row is not None:
                append(row)
        return tuple(rows)

    def read_all(self) -> tuple[Row, ...]:
        """The rows of every group on every unit (a unit with nothing of the first group still
        gets its empty row: it says the unit was there)."""
        rows: tuple[Row, ...] = ()
        for i, group in enumerate(self._plan.all_groups()):
            rows += self.read(group, present=i == 0)
        return rows

    def read_units(self, keys: Iterable[str]) -> tuple[Row, ...]:
        """The rows of every group of the units ``keys`` (units found ended between two reads,
        read before their groups close)."""
        rows: list[Row] = []
        for key in keys:
            state = self.states.get(key)
            if state is None:
                continue
            for name, counter in state.groups.items():
                row = _read_row(key, state.unit, name, counter)
                if row is not None:
                    rows.append(row)
        return tuple(rows)


def _read_row(key: str, unit: Unit, name: str, counter: OpenGroup) -> Row | None:
    """One group's row on one unit since its previous read; ``None`` when the unit has gone."""
    try:
        values = counter.group.read()
    except SectormonError as exc:
        if is_gone(exc):
            return None
        raise
    deltas, enabled, running = counter.delta(values)
    fields = (key, unit.core, unit.cmg, name, enabled, running, counter.names, tuple(deltas))
    return tuple.__new__(Row, fields)  # without Row's Python-level __new__: per unit and group


def is_gone(exc: SectormonError) -> bool:
    """A unit that vanished between poll and use (thread exit) is not an error."""
    return exc.unit_gone
