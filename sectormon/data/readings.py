"""Raw readings, in the one shape every layer passes them: slices of rows.

The sampler produces them, the recorder writes them, the reader reads them back and the engine
takes them, all as :class:`Slice` records of :class:`Row` records. They are immutable, so they cross
the sampler thread without copies or locks. Units are named by string keys (``thread:<tid>``,
``cpu:<n>``, ``cmg:<id>``) so a reading is self-describing in JSON; a row also carries the core and
CMG the unit was bound to when it was read, because a thread's binding can change during a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from sectormon.data.binding import ThreadBinding
from sectormon.data.regions import RegionSnapshot

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
    ``process`` is the pid (thread group id) a thread unit belongs to, so frames can group threads
    by process and MPI rank; ``None`` for CPU and CMG units and where the source does not know it.

    ``inherit`` marks a thread whose groups also count every thread and process it starts (the
    kernel's inherit), so nothing a target runs escapes however short it lives; ``family`` is the
    pid of the target process whose inherited groups also count this thread. A thread with a
    ``family`` and no ``inherit`` is counted twice, by its own groups (for its core and CMG) and
    inside its family's inherited ones: :class:`sectormon.rotation.inherited.InheritedRows` takes
    its counts out of the latter so every count appears once.
    """

    kind: str
    ident: int
    core: int | None = None
    cmg: int | None = None
    process: int | None = None
    family: int | None = None
    inherit: bool = False

    @property
    def key(self) -> str:
        return unit_key(self.kind, self.ident)


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """A process whose threads are counted: what the ``procs`` scope of a frame names it by.

    ``rank`` is the MPI rank its environment gives (see :mod:`sectormon.host.processes`),
    ``parent`` its parent's pid; both ``None`` when unknown.
    """

    pid: int
    command: str
    parent: int | None = None
    rank: int | None = None


class Row(NamedTuple):
    """What one group counted on one unit during one timeslice.

    ``time_enabled``/``time_running`` are the kernel's deltas for the slice in ns (both stand still
    while a thread sleeps; ``time_running < time_enabled`` means the kernel itself multiplexed the
    group). ``values[i]`` is the count delta of ``names[i]``. Rows of the same events share one
    ``names`` tuple object, so a consumer can compare layouts by identity; a unit with nothing of the
    slice's group has ``names == ()``.

    A named tuple, so the engine's hot loop still unpacks it as a tuple; where rows are made in
    bulk (the recording reader) ``tuple.__new__(Row, fields)`` builds one without the Python-level
    ``__new__`` that ``Row(...)`` runs.
    """

    unit: str
    core: int | None
    cmg: int | None
    group: str
    time_enabled: int
    time_running: int
    names: tuple[str, ...]
    values: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Slice:
    """One timeslice of the rotation: every reading taken at its end.

    ``t`` is the end of the slice in seconds since the session started, on the source's clock
    (wall clock for perf, simulated time for sim). ``overhead_s`` is the sampler's own cumulative
    CPU time, so frames can report self-overhead. ``ended`` names units that went away during the
    slice (their last counts are in ``rows``).

    Processes: ``processes`` are those first seen since the previous slice and ``unit_processes``
    pairs each thread unit opened since then with its process's pid (its rows start in this slice
    or a later one), so the engine can sum a process's threads. ``target_cpu_s`` is the CPU time
    the kernel says the target has used so far, read at the end of the slice (``None``: not read
    in this slice, or the source cannot tell), the reference of the frames' thread coverage;
    ``target_ended_system_s`` is the part of it that is system time of counted processes that
    ended, which holds their exit teardown that no counter can see (read with ``target_cpu_s``).

    ``regions``: the marked regions' table as read at the end of the slice, when it changed
    since the previous slice (``None``: unchanged, or nothing marks); cumulative, so the newest
    one holds the whole run (:mod:`sectormon.data.regions`).

    ``bindings``: the thread units whose binding (affinity, migrations) was first read or changed
    since the previous slice, each with its newest :class:`~sectormon.data.binding.ThreadBinding`.
    """

    t: float
    index: int
    duration: float
    group: str
    rows: tuple[Row, ...]
    overhead_s: float = 0.0
    ended: tuple[str, ...] = ()
    processes: tuple[ProcessInfo, ...] = ()
    unit_processes: tuple[tuple[str, int], ...] = ()
    target_cpu_s: float | None = None
    target_ended_system_s: float = 0.0
    regions: RegionSnapshot | None = None
    bindings: tuple[tuple[str, ThreadBinding], ...] = ()


@dataclass(frozen=True, slots=True)
class Mark:
    """A point in a session worth keeping: baseline set/cleared, configuration change, bookmark,
    a warning the session gave (``label``: its text), a change of rotation (``data``: the new
    rotation's mode, timeslice and reason, see :class:`sectormon.rotation.plan.Rotation`), end."""

    t: float
    kind: str
    label: str = ""
    data: Mapping[str, object] = field(default_factory=dict)


MARK_KINDS = ("baseline", "baseline-clear", "config", "bookmark", "warning", "end", "rotation")


# Slices missing from a recording. A slice's ``index`` counts the slices of its session, so a jump
# says how many are missing (deleted lines, a file put together from pieces). The reader warns and
# yields a synthetic mark of kind GAP before the slice after the gap; the engine counts the lost
# seconds as time the units were present but nothing was counted, so the coverage of every window
# over the gap shows it. The kind is never read from a file (it is not in MARK_KINDS): a ``gap``
# mark written in a recording is an unknown kind, ignored with a warning like any other.

GAP = "gap"


def gap_mark(t: float, seconds: float, first_index: int, last_index: int) -> Mark:
    """The mark for slices ``first_index..last_index`` missing after the slice that ended at ``t``,
    ``seconds`` of stream time with no slice."""
    return Mark(
        t=t,
        kind=GAP,
        label=f"slices {first_index}..{last_index} missing",
        data={"seconds": seconds, "first_index": first_index, "last_index": last_index},
    )


def lost_seconds(mark: Mark) -> float:
    """The stream seconds a :data:`GAP` mark says no slice covers (0.0 for any other mark)."""
    if mark.kind != GAP:
        return 0.0
    seconds = mark.data.get("seconds")
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else 0.0
