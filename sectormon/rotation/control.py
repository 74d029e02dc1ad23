"""Counting switched on and off from outside: perf's control protocol and ``--delay`` on the sampler.

``perf stat --control`` semantics: only enabled spans count. Commands come from another thread
(the control descriptor's reader, the ``--delay`` timer) and are applied on the sampler thread,
which owns the counters, in :meth:`CountingControl.apply`; a command is acked only once every
open group of every unit has had its ioctl, so a script that waits for the ack knows counting is
on or off.

The rotation strategies go on switching groups as if nothing were held off: each group the
sampler opens is wrapped in a :class:`GatedGroup`, which remembers what the strategy wants
(``wanted``) and passes an ``enable()`` on to the counters only while control lets the group
count. A ``disable`` stops exactly the groups that are on; the ``enable`` after it starts exactly
the groups the strategy wants on by then (sync rotation: the running group and the always-on one;
kernel rotation: all), and a unit opened while counting is held off opens disabled.

A span with every group held off is no one's present time: :meth:`CountingControl.counted`
gives a slice's enabled seconds, which the sampler publishes as the slice's duration, so the
engine's windows over such a span have nothing counted (n/a, coverage 0) and the run's totals hold
only the enabled spans, as perf's do. ``disable NAME`` holds off the named groups only; their rows
in that span read zero over the span (the engine cannot tell them from an idle thread's), while
their run totals, as perf's, hold their enabled spans only.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sectormon.errors import SectormonError
from sectormon.perf.group import GroupValues
from sectormon.rotation.control_commands import (
    DISABLE,
    ENABLE,
    EVLIST,
    PING,
    SNAPSHOT,
    STOP,
    ControlCommand,
)
from sectormon.rotation.plan import RotationPlan
from sectormon.sources.base import CounterGroup

Ack = Callable[[], None]
WarningCallback = Callable[[str], None]


class GatedGroup:
    """A counter group whose ``enable()`` waits while control holds its group off (the
    :class:`~sectormon.sources.base.CounterGroup` protocol, wrapping the source's group)."""

    __slots__ = ("_control", "_inner", "events", "name", "on", "wanted")

    def __init__(self, inner: CounterGroup, name: str, control: CountingControl) -> None:
        self._inner = inner
        self._control = control
        self.name = name
        self.events = inner.events
        self.wanted = False  # what the rotation strategy asked for last
        self.on = False  # what the counters were told last

    def enable(self) -> None:
        self.wanted = True
        if self._control.lets(self.name):
            self._inner.enable()
            self.on = True

    def disable(self) -> None:
        self.wanted = False
        if self.on:
            self.on = False
            self._inner.disable()

    def hold(self, held: bool) -> None:
        """Control's switch: off while ``held``, else back to what the strategy wants."""
        if held and self.on:
            self.on = False
            self._inner.disable()
        elif not held and self.wanted and not self.on:
            self._inner.enable()
            self.on = True

    def reset(self) -> None:
        self._inner.reset()

    def read(self) -> GroupValues:
        return self._inner.read()

    def close(self) -> None:
        self._control.forget(self)
        self._inner.close()

    def __getattr__(self, name: str) -> object:
        """What else the source's group offers (a perf group's ids and leader descriptor, which
        the region handshake hands to a marking thread) is the wrapped group's."""
        return getattr(self._inner, name)


@dataclass(frozen=True, slots=True)
class Posted:
    """A command waiting for the sampler thread, with where its ack goes (``None``: none)."""

    command: ControlCommand
    ack: Ack | None


class CountingControl:
    """Which groups count, switched by commands posted from any thread and applied on the
    sampler's (module docstring). ``start_enabled``: False for ``--delay``."""

    def __init__(self, plan: RotationPlan, *, start_enabled: bool, on_warning: WarningCallback) -> None:
        self._groups = tuple(group.name for group in plan.all_groups())
        self._names = _names_of(plan)
        self._members = {
            group.name: tuple(e.name for e in (*group.pe_events, *group.cmg_events))
            for group in plan.all_groups()
        }
        self._event_of = {
            key: event.name
            for group in plan.all_groups()
            for event in (*group.pe_events, *group.cmg_events)
            for key in (event.name, event.spec)
        }
        self._held: set[str] = set() if start_enabled else set(self._groups)
        self._on_warning = on_warning
        self._warned: set[str] = set()
        self._posted: deque[Posted] = deque()
        self._gated: dict[int, GatedGroup] = {}
        self._changes: list[tuple[float, bool]] = []  # (when, every group held) since the last slice
        self._all_held_at_cut = self.all_held
        self._wake: Callable[[], None] = lambda: None
        self._stop: Callable[[], None] = lambda: None
        self._lock = threading.Lock()

    def attach(self, *, wake: Callable[[], None], stop: Callable[[], None]) -> None:
        """The sampler's: ``wake`` cuts its wait short, ``stop`` ends its run (``stop`` command)."""
        self._wake = wake
        self._stop = stop

    @property
    def all_held(self) -> bool:
        """Every group is held off: nothing counts."""
        return self._held.issuperset(self._groups)

    # -- any thread ----------------------------------------------------------------------------

    def post(self, command: ControlCommand, ack: Ack | None = None) -> None:
        """Queue ``command`` for the sampler thread and wake it; ``ack`` is called once it is done
        (only for commands perf acks)."""
        with self._lock:
            self._posted.append(Posted(command, ack if command.acked else None))
        self._wake()

    # -- the sampler thread --------------------------------------------------------------------

    @property
    def holds_some(self) -> bool:
        """Some group is held off now."""
        return bool(self._held)

    @property
    def posted(self) -> bool:
        """Whether commands wait to be applied."""
        return bool(self._posted)

    def lets(self, name: str) -> bool:
        """Whether group ``name`` may count now."""
        return name not in self._held

    def gate(self, name: str, group: CounterGroup) -> GatedGroup:
        """``group``, just opened as the plan's group ``name``, under control."""
        gated = GatedGroup(group, name, self)
        self._gated[id(gated)] = gated
        return gated

    def forget(self, gated: GatedGroup) -> None:
        self._gated.pop(id(gated), None)

    def apply(self, now: float) -> bool:
        """Carry out the commands posted so far, each acked once its ioctls are done; True when
        they switched all counting on or off (the sampler ends its slice there)."""
        held = self.all_held
        while True:
            with self._lock:
                if not self._posted:
                    return self.all_held != held
                posted = self._posted.popleft()
            self._carry_out(posted.command, now)
            if posted.ack is not None:
                posted.ack()

    def counted(self, start: float, end: float) -> float:
        """The seconds of ``[start, end]`` in which some group could count (a slice's duration);
        forgets the switches before ``end``."""
        held = self._all_held_at_cut
        t = start
        total = 0.0
        for when, now_held in self._changes:
            when = min(max(when, start), end)
            if not held:
                total += when - t
            t = when
            held = now_held
        if not held:
            total += end - t
        self._changes.clear()
        self._all_held_at_cut = held
        return max(0.0, total)

    def _carry_out(self, command: ControlCommand, now: float) -> None:
        verb = command.verb
        if command.malformed:
            self._warn_once(command.text, f"--control: {command.text!r} is not a command (ignored)")
        elif verb in (ENABLE, DISABLE):
            self._switch(verb == ENABLE, command.name, now)
        elif verb == STOP:
            self._stop()
        elif verb == PING:
            pass  # the ack is the answer
        elif verb in (EVLIST, SNAPSHOT):
            self._warn_once(
                verb, f"--control: sectormon has no {verb!r} command (ignored; see docs/control.md)"
            )
        else:
            self._warn_once(command.text, f"--control: unknown command {command.text!r} (ignored)")

    def _switch(self, enable: bool, name: str | None, now: float) -> None:
        if name is None:
            groups: Iterable[str] = self._groups
        else:
            found = self._names.get(name)
            if found is None:
                self._warn_once(
                    f"name {name}",
                    f"--control: no event or group named {name!r} (ignored; names are the profile's "
                    f"groups, events and perf event specs)",
                )
                return
            groups = found
            self._say_whole_groups(name, found)
        before = self.all_held
        if enable:
            self._held.difference_update(groups)
        else:
            self._held.update(groups)
        for gated in tuple(self._gated.values()):
            _hold(gated, gated.name in self._held)
        if self.all_held != before:
            self._changes.append((now, self.all_held))

    def _say_whole_groups(self, name: str, groups: frozenset[str]) -> None:
        """An event shares its group's enabled time, so it is switched with its whole group: say
        so once when that takes other events along (perf switches the one event)."""
        event = self._event_of.get(name)
        if event is None or name in self._groups:
            return
        others = sorted({e for group in groups for e in self._members[group]} - {event})
        if others:
            self._warn_once(
                f"group {name}",
                f"--control: {name} is switched with its whole group ({', '.join(sorted(groups))}), "
                f"so {', '.join(others)} too: a group's events share one enabled time",
            )

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self._on_warning(message)


def _hold(gated: GatedGroup, held: bool) -> None:
    try:
        gated.hold(held)
    except SectormonError as exc:
        if not exc.unit_gone:  # a thread that just exited: its last counts are still read
            raise


def _names_of(plan: RotationPlan) -> dict[str, frozenset[str]]:
    """What ``enable NAME`` may name: a group of the plan, or an event by its profile name or its
    perf spec (as perf names it), standing for every group that holds it."""
    names: dict[str, set[str]] = {}
    for group in plan.all_groups():
        names.setdefault(group.name, set()).add(group.name)
        for event in (*group.pe_events, *group.cmg_events):
            names.setdefault(event.name, set()).add(group.name)
            names.setdefault(event.spec, set()).add(group.name)
    return {name: frozenset(groups) for name, groups in names.items()}
