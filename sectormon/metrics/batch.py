"""Slices summed ahead of the engine: how a replay's reader processes take the per-row work.

``RowAggregator`` runs the very accumulation of ``MetricsEngine.add_slice`` wherever the rows are
read (a replay's reader processes, ``session/replay_worker.py``) and hands the engine one
``RowBatch`` per frame interval; ``add_batch`` takes the accumulated states as they are, so the
frames are those of ``add_slice``, bit for bit. An aggregator numbers units itself, so it can start
at any frame boundary; batches hold plain values only, so they cross a pipe with ``marshal``.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

from typing import NamedTuple, cast

from sectormon.data.binding import ThreadBinding
from sectormon.data.readings import ProcessInfo, Slice, split_unit_key
from sectormon.metrics.thread_time import counted_task_ns
from sectormon.metrics.windows import GroupAcc, OwnTime, accumulate

# (serial or 0 for a unit the engine ignores, unit, core, cmg): a unit entering in a slice.
Entry = tuple[int, str, "int | None", "int | None"]
# A slice's processes (pid, command, parent, rank), its unit -> pid pairs, the kernel's CPU
# time of the target, the counted task time in ns (None: the aggregator did not sum it), the
# system time of counted processes that ended (Slice.target_ended_system_s) and its thread
# bindings (unit, cpus, migrations, migrations_from).
ProcessFacts = tuple[
    tuple[tuple[int, str, "int | None", "int | None"], ...],
    tuple[tuple[str, int], ...],
    "float | None",
    "int | None",
    float,
    tuple[tuple[str, tuple[int, ...], "int | None", "str | None"], ...],
]
# (t, index, duration, group, ended, overhead_s, entries in row order, process facts or None)
SliceFacts = tuple[float, int, float, str, tuple[str, ...], float, tuple[Entry, ...], "ProcessFacts | None"]
# (serial, group, names or None when mixed, counted seconds, ns ran, sums in names order, per-name sums)
GroupState = tuple[
    int, str, "tuple[str, ...] | None", float, int, "list[float] | None", "dict[str, float] | None"
]
# (serial, known seconds, active ns): an entity's OwnTime
OwnState = tuple[int, float, int]

FOLD_EVERY = 256
"""Slices between folds of pending rows (the engine's own cadence: bounds memory, changes no sum)."""


class RowBatch(NamedTuple):
    """Consecutive slices of one frame interval, summed (see the module docstring).

    ``groups`` is the state of every group accumulator the interval has touched so far, entity
    by entity in entry order and group by group in first-read order, ``own`` the
    :class:`OwnTime` of every entity the interval has read so far; ``frame_due`` says the last
    slice closes a frame (the reader's :class:`sectormon.session.frame_clock.FrameClock` decided); ``fresh``
    marks an aggregator's first batch (its serials start over).
    """

    slices: list[SliceFacts]
    groups: list[GroupState]
    own: list[OwnState]
    frame_due: bool
    fresh: bool = False


class _Tracked:
    """A unit's serial, binding and group accumulators in a reader (the engine's Entity there)."""

    __slots__ = ("cmg", "core", "groups", "own", "serial")

    def __init__(self, serial: int, core: int | None, cmg: int | None) -> None:
        self.serial = serial
        self.core = core
        self.cmg = cmg
        self.groups: dict[str, GroupAcc] = {}
        self.own = OwnTime()


class RowAggregator:
    """The row half of :meth:`MetricsEngine.add_slice`, batch by batch (a reader process runs it)."""

    def __init__(self) -> None:
        self._current: dict[str, _Tracked] = {}  # unit -> what it accumulates into now
        self._known: dict[str, bool] = {}  # unit key -> does the engine take it (split_unit_key)
        self._serial = 0
        self._accs: dict[int, _Tracked] = {}  # serial -> what it accumulates, this interval
        self._slices: list[SliceFacts] = []
        self._entries: list[Entry] = []  # units entering in the slice being added
        self._since_fold = 0
        self._fresh = True
        self._tracking = False  # a kernel CPU reading was seen: sum each slice's task time

    @property
    def pending(self) -> bool:
        """Whether slices were added since the last :meth:`take`."""
        return bool(self._slices)

    def add(self, s: Slice) -> None:
        """One slice, accumulated exactly as the engine does (:func:`accumulate`)."""
        entries: list[Entry] = []
        self._entries = entries
        accumulate(s.rows, s.duration, self._current, self._enter)
        for key in s.ended:
            self._current.pop(key, None)
        facts: ProcessFacts | None = None
        # The session's first slice may open a span (a launched command's CPU starts at 0 with
        # it, see build_engine): its counted time is summed in case the engine tracks from there.
        tracking = self._tracking or s.index == 0
        if tracking or s.processes or s.unit_processes or s.target_cpu_s is not None or s.bindings:
            facts = (
                tuple((p.pid, p.command, p.parent, p.rank) for p in s.processes),
                s.unit_processes,
                s.target_cpu_s,
                counted_task_ns(s.rows) if tracking else None,
                s.target_ended_system_s,
                tuple((unit, b.cpus, b.migrations, b.migrations_from) for unit, b in s.bindings),
            )
            self._tracking = self._tracking or s.target_cpu_s is not None
        self._slices.append((s.t, s.index, s.duration, s.group, s.ended, s.overhead_s, tuple(entries), facts))
        self._since_fold += 1
        if not self._since_fold % FOLD_EVERY:
            for tracked in self._accs.values():
                for acc in tracked.groups.values():
                    if acc.mixed is None:
                        acc.fold()

    def _enter(self, unit: str, core: int | None, cmg: int | None) -> _Tracked | None:
        """The engine's ``_enter``: a new serial for a unit it takes (``None``, and an entry
        once, for one it ignores: the engine warns about it then)."""
        known = self._known.get(unit)
        if known is None:
            try:
                split_unit_key(unit)
                known = True
            except ValueError:
                known = False
                self._entries.append((0, unit, core, cmg))
            self._known[unit] = known
        if not known:
            return None
        self._serial += 1
        tracked = self._current[unit] = _Tracked(self._serial, core, cmg)
        self._accs[self._serial] = tracked
        self._entries.append((self._serial, unit, core, cmg))
        return tracked

    def take(self, *, frame_due: bool) -> RowBatch:
        """The slices since the last take and the interval's accumulator states; a frame closes
        the interval (the engine's drain), so with ``frame_due`` the accumulators start over."""
        groups: list[GroupState] = [
            group_state(serial, name, acc)
            for serial, tracked in self._accs.items()
            for name, acc in tracked.groups.items()
        ]
        own = [(serial, t.own.known, t.own.active) for serial, t in self._accs.items()]
        batch = RowBatch(self._slices, groups, own, frame_due, self._fresh)
        self._fresh = False
        self._slices = []
        if frame_due:
            live: dict[int, _Tracked] = {}
            for tracked in self._current.values():
                tracked.groups.clear()
                tracked.own.reset()
                live[tracked.serial] = tracked
            self._accs = live
            self._since_fold = 0
        return batch


def group_state(serial: int, group: str, acc: GroupAcc) -> GroupState:
    """What :meth:`GroupAcc.restore` needs to become ``acc`` (pending rows folded: no sum changes)."""
    if acc.mixed is not None:
        return (serial, group, None, acc.counted, acc.ran, None, dict(acc.mixed))
    return (serial, group, acc.names, acc.counted, acc.ran, acc.fold(), None)


Wired = tuple[list[SliceFacts], list[GroupState], list[OwnState], bool, bool]


def wire(batch: RowBatch) -> Wired:
    """``batch`` as a plain tuple for :mod:`marshal`."""
    return (batch.slices, batch.groups, batch.own, batch.frame_due, batch.fresh)


def unwire(data: object) -> RowBatch:
    """The :class:`RowBatch` of :func:`wire` (after ``marshal.loads``)."""
    slices, groups, own, frame_due, fresh = cast(Wired, data)
    return RowBatch(slices, groups, own, bool(frame_due), bool(fresh))


def processes_of(facts: ProcessFacts) -> tuple[ProcessInfo, ...]:
    """The :class:`ProcessInfo` of a slice's process facts."""
    return tuple(ProcessInfo(pid, command, parent, rank) for pid, command, parent, rank in facts[0])


def bindings_of(facts: ProcessFacts) -> tuple[tuple[str, ThreadBinding], ...]:
    """The thread bindings of a slice's process facts."""
    return tuple(
        (unit, ThreadBinding(cpus, migrations, source)) for unit, cpus, migrations, source in facts[5]
    )
