"""Raw readings and the one place where scaling, counter wrap and coverage are computed.

Everything downstream of a source (engine, recorder, replay) speaks these types. They are frozen so
they can cross the sampler thread boundary without copies or locks.

Units are named by string keys so a reading is self-describing in JSON:
``thread:<tid>``, ``cpu:<n>``, ``cmg:<id>``. A reading also carries the core (CPU) and CMG the unit
was bound to when it was read, because a thread's binding can change during a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

U64 = 1 << 64

UNIT_KINDS = ("thread", "cpu", "cmg")


def unit_key(kind: str, ident: int) -> str:
    """The string key of a unit: ``thread:4242``, ``cpu:12`` or ``cmg:0``."""
    if kind not in UNIT_KINDS:
        raise ValueError(f"unknown unit kind {kind!r}; expected one of {', '.join(UNIT_KINDS)}")
    return f"{kind}:{ident}"


def split_unit_key(key: str) -> tuple[str, int]:
    """Inverse of :func:`unit_key`."""
    kind, _, ident = key.partition(":")
    if kind not in UNIT_KINDS or not ident.lstrip("-").isdigit():
        raise ValueError(f"bad unit key {key!r}; expected e.g. 'thread:4242', 'cpu:12' or 'cmg:0'")
    return kind, int(ident)


@dataclass(frozen=True, slots=True)
class Unit:
    """Something counters are opened on: a thread, a CPU, or one CPU standing for its CMG.

    ``core`` is the CPU the unit is bound to (a thread pinned to exactly one CPU, the CPU itself, or
    the CPU a CMG's group is opened on); ``None`` for an unbound thread. ``cmg`` likewise.
    """

    kind: str
    ident: int
    core: int | None = None
    cmg: int | None = None

    @property
    def key(self) -> str:
        return unit_key(self.kind, self.ident)


@dataclass(frozen=True, slots=True)
class GroupValues:
    """One read of a counter group: cumulative raw values in group order plus the group's times (ns)."""

    values: tuple[int, ...]
    time_enabled: int
    time_running: int


@dataclass(frozen=True, slots=True)
class Reading:
    """What one group counted on one unit during one timeslice (deltas, not cumulative values).

    ``time_enabled``/``time_running`` are the kernel's deltas for the slice in ns. For a per-thread
    event both stand still while the thread sleeps; ``time_running < time_enabled`` means the kernel
    itself multiplexed the group.
    """

    unit: str
    core: int | None
    cmg: int | None
    group: str
    time_enabled: int
    time_running: int
    counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Slice:
    """One timeslice of the rotation: every reading taken at its end.

    ``t`` is the end of the slice in seconds since the session started, on the source's clock
    (wall clock for perf, simulated time for sim). ``overhead_s`` is the sampler's own cumulative
    CPU time, so frames can report self-overhead. ``ended`` names units that went away during the
    slice (their last counts are in ``readings``).
    """

    t: float
    index: int
    duration: float
    group: str
    readings: tuple[Reading, ...]
    overhead_s: float = 0.0
    ended: tuple[str, ...] = ()


_NEW = object.__new__


def _setter(cls: type, name: str) -> Any:
    """The slot descriptor's ``__set__`` of a slots dataclass field (bypasses frozen-ness)."""
    return vars(cls)[name].__set__


_GV_VALUES = _setter(GroupValues, "values")
_GV_TE = _setter(GroupValues, "time_enabled")
_GV_TR = _setter(GroupValues, "time_running")
_R_UNIT = _setter(Reading, "unit")
_R_CORE = _setter(Reading, "core")
_R_CMG = _setter(Reading, "cmg")
_R_GROUP = _setter(Reading, "group")
_R_TE = _setter(Reading, "time_enabled")
_R_TR = _setter(Reading, "time_running")
_R_COUNTS = _setter(Reading, "counts")


def make_group_values(values: tuple[int, ...], time_enabled: int, time_running: int) -> GroupValues:
    """``GroupValues(values, time_enabled, time_running)`` for hot paths, equal to it.

    A frozen dataclass ``__init__`` pays one ``object.__setattr__`` per field; writing the slots
    directly is 2-3x faster, which counts once per unit per timeslice. No checks: the caller's
    values are already of the right types.
    """
    gv: GroupValues = _NEW(GroupValues)
    _GV_VALUES(gv, values)
    _GV_TE(gv, time_enabled)
    _GV_TR(gv, time_running)
    return gv


def make_reading(
    unit: str,
    core: int | None,
    cmg: int | None,
    group: str,
    time_enabled: int,
    time_running: int,
    counts: Mapping[str, int],
) -> Reading:
    """``Reading(...)`` for hot paths (the sampler, the recording reader), equal to it; see
    :func:`make_group_values`."""
    r: Reading = _NEW(Reading)
    _R_UNIT(r, unit)
    _R_CORE(r, core)
    _R_CMG(r, cmg)
    _R_GROUP(r, group)
    _R_TE(r, time_enabled)
    _R_TR(r, time_running)
    _R_COUNTS(r, counts)
    return r


Row = tuple[str, "int | None", "int | None", str, int, int, tuple[str, ...], "list[int]"]
"""A reading in compact form: ``(unit, core, cmg, group, time_enabled, time_running, names, values)``.

``values[i]`` is the count of ``names[i]``. Readings with the same events share one ``names`` tuple
object, so a consumer can compare layouts by identity.
"""


@dataclass(frozen=True, slots=True)
class SliceRows:
    """A :class:`Slice` whose readings stay as :data:`Row` tuples: the replay hot path.

    A one-hour, 48-core recording holds 8.6 million readings; building a frozen :class:`Reading`
    for each costs more than the rest of a replay, so the reader hands rows to the engine
    (``MetricsEngine.add_rows``) and builds readings only when asked (:meth:`to_slice`).
    """

    t: float
    index: int
    duration: float
    group: str
    rows: tuple[Row, ...]
    overhead_s: float = 0.0
    ended: tuple[str, ...] = ()

    def to_slice(self) -> Slice:
        """The same slice with :class:`Reading` objects (built by :func:`make_reading`)."""
        return Slice(
            t=self.t,
            index=self.index,
            duration=self.duration,
            group=self.group,
            readings=tuple(
                make_reading(unit, core, cmg, group, te, tr, dict(zip(names, values, strict=True)))
                for unit, core, cmg, group, te, tr, names, values in self.rows
            ),
            overhead_s=self.overhead_s,
            ended=self.ended,
        )

    @classmethod
    def from_slice(cls, s: Slice, layouts: dict[tuple[str, ...], tuple[str, ...]] | None = None) -> SliceRows:
        """The rows of a slice (tests, fakes, benchmarks; the sampler produces :class:`Slice`).

        Pass the same ``layouts`` dict for a whole feed to share one names tuple per layout
        across slices, as the recording reader does.
        """
        layouts = {} if layouts is None else layouts
        rows: list[Row] = []
        for r in s.readings:
            names = tuple(r.counts)
            names = layouts.setdefault(names, names)
            rows.append(
                (
                    r.unit,
                    r.core,
                    r.cmg,
                    r.group,
                    r.time_enabled,
                    r.time_running,
                    names,
                    list(r.counts.values()),
                )
            )
        return cls(s.t, s.index, s.duration, s.group, tuple(rows), s.overhead_s, s.ended)


@dataclass(frozen=True, slots=True)
class Mark:
    """A point in a session worth keeping: baseline set/cleared, configuration change, bookmark,
    a warning the session gave (``label``: its text), end."""

    t: float
    kind: str
    label: str = ""
    data: Mapping[str, object] = field(default_factory=dict)


MARK_KINDS = ("baseline", "baseline-clear", "config", "bookmark", "warning", "end")


def delta_u64(current: int, previous: int) -> int:
    """Counter difference that survives a u64 wrap (the kernel widens hardware counters to u64)."""
    return (current - previous) % U64


def running_fraction(time_enabled: int, time_running: int) -> float:
    """Fraction of its enabled time a group was really on the PMU; 1.0 when nothing was enabled.

    A sleeping thread has ``time_enabled == 0``: no evidence of multiplexing, so no correction.
    """
    if time_enabled <= 0:
        return 1.0
    return min(1.0, max(0.0, time_running / time_enabled))


def multiplex_scale(count: int, time_enabled: int, time_running: int) -> float:
    """Scale a count for the kernel's own multiplexing, as ``perf stat`` does (count * enabled/running).

    Returns the count unchanged when the group was never enabled; when it was enabled but never
    running the count is necessarily 0 and so is the result (callers see coverage 0 for it).
    """
    if time_running <= 0 or time_enabled <= 0:
        return float(count)
    return count * (time_enabled / time_running)


def coverage(counted_s: float, window_s: float) -> float:
    """Fraction of a window an event was counted, clamped to [0, 1]; 0 for an empty window."""
    if window_s <= 0:
        return 0.0
    return min(1.0, max(0.0, counted_s / window_s))


def extrapolate(raw_scaled: float, counted_s: float, present_s: float) -> float | None:
    """Scale a count measured during ``counted_s`` to the ``present_s`` the unit existed in the window.

    ``None`` when the event was never counted: unknown is not zero.
    """
    if counted_s <= 0:
        return None
    return raw_scaled * (present_s / counted_s)
