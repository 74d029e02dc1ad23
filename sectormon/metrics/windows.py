"""Accumulators behind the engine's windows: entities, per-interval contributions, recent sums.

An entity is one unit at one binding (a thread that moves core becomes a new entity). What it
counted in an interval is one flat float vector (raw sums, read seconds, own counted seconds, known
and active time); windows are sums of those vectors, and extrapolation happens once per entity and
window, never per interval. Every sum is spelled out in one fixed order, so frames are bit for bit
the same whether the engine was fed row by row or in a reader's batches.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import compress, repeat
from operator import add, itemgetter, lt, sub
from typing import Any, Protocol

from sectormon.data.readings import Row

Vector = list[float]
# (entity, present seconds, vector): an interval's or window's sums per entity. While summed over
# intervals the vector is [raw count sums | wall seconds counted | own seconds counted | known s,
# active s]
# (every part adds up across intervals, see OwnTime); :func:`as_wall` turns it into
# [raw count sums | counted seconds], what the scopes take.
Contribution = tuple["Entity", float, Vector]
ScopeKey = tuple[str, str]  # (level, key): ("total", ""), ("cmg", "0"), ("core", "12"), ("thread", "4242")
Terms = tuple[Vector, Vector, Vector]  # scaled counts, counted seconds, present seconds per event
Getter = Callable[[Sequence[float]], Any]  # a C-level itemgetter


@dataclass(frozen=True, slots=True)
class Plan:
    """How an entity's interval vector is gathered from its groups' sums (see Entity.drain).

    For one sequence of group layouts (the groups in the order first read in the interval): the
    group sums are laid end to end, then each group's seconds read, then each group's own seconds
    counted, then a 0.0. ``gather``
    picks every vector position from there (the 0.0 where no group has the event, and where
    several do, fixed afterwards); ``shared`` lists those positions with a getter of their
    contributions in group order, added up as ``vec[i] += value`` group by group would.
    """

    gather: Getter
    shared: tuple[tuple[int, Getter], ...]


class GroupAcc:
    """What one entity read of one group during the open interval (the hot path writes here).

    A source reads the same events of a group every time. A reading with the layout of the
    group's first reading (``names``) is only appended to ``pending`` (its values in ``names``
    order: a list, or a dict's values view); :meth:`fold` adds the pending readings into the list
    of sums ``values`` column by column, C-level, as ``sum(column, start)``, which is
    ``start + v1 + v2 + ...`` in reading order. A reading with another layout folds what is
    pending and switches the group to per-name sums (``mixed``) for the rest of the interval.
    Either way every sum is its counts added in reading order from 0.0, exactly as
    ``sums[name] += value`` reading by reading, so the path taken never shows in the results.
    """

    __slots__ = ("counted", "mixed", "names", "pending", "ran", "values")

    def __init__(self) -> None:
        self.counted = 0.0  # wall seconds read x running fraction (see wall_counted)
        self.ran = 0  # ns the group counted while the unit ran: sum of min(tr, te)
        self.names: tuple[str, ...] | None = None  # events of the first reading, in its order
        self.values: list[float] | None = None  # sums of the folded readings (None: none yet)
        self.pending: list[Iterable[int]] = []  # readings not yet added, values in names order
        self.mixed: defaultdict[str, float] | None = None  # per-name sums

    def __deepcopy__(self, memo: dict[int, Any]) -> GroupAcc:
        """A copy for engine checkpoints (replay seeking): pending readings are folded first (a
        dict's values view cannot be copied; folding early changes no sum, see :meth:`fold`)."""
        if self.mixed is None:
            self.fold()
        other = GroupAcc()
        other.counted = self.counted
        other.ran = self.ran
        other.names = self.names
        other.values = None if self.values is None else list(self.values)
        other.mixed = None if self.mixed is None else defaultdict(float, self.mixed)
        memo[id(self)] = other
        return other

    def restore(
        self,
        names: tuple[str, ...] | None,
        counted: float,
        ran: int,
        values: list[float] | None,
        mixed: dict[str, float] | None,
    ) -> None:
        """Become the accumulator another process built from the same rows (a replay's reader,
        :mod:`sectormon.metrics.batch`): its layout and sums, or its per-name sums when mixed."""
        self.counted = counted
        self.ran = ran
        self.pending = []
        if mixed is None:
            self.names = names
            self.values = values
            self.mixed = None
        else:
            self.names = _MIXED
            self.values = None
            self.mixed = defaultdict(float, mixed)

    def fold(self) -> list[float]:
        """The sums of every reading so far (``names`` order), pending readings added in.

        ``sum(column, start)`` adds in order from ``start`` (CPython 3.10/3.11; from 3.12 it
        compensates rounding, which changes nothing for counts: whole numbers, exact in a float
        up to 2**53).
        """
        pending = self.pending
        if pending:
            start = repeat(0.0) if self.values is None else self.values
            self.values = list(map(sum, zip(*pending, strict=True), start))
            self.pending = []
        elif self.values is None:
            self.values = []
        return self.values

    def add_row(self, names: tuple[str, ...], values: Sequence[int]) -> None:
        """Add a row whose layout is not ``names`` by identity (see :func:`accumulate`)."""
        mixed = self.mixed
        if mixed is None:
            if self.names is None:
                self.names = names
                self.pending.append(values)
                return
            if names == self.names:  # the same layout in another tuple object
                self.pending.append(values)
                return
            mixed = self.mixed = defaultdict(float, zip(self.names, self.fold(), strict=True))
            self.names = _MIXED
        # A repeated name counts once, with its last value, as in dict(zip(names, values)).
        for name, value in dict(zip(names, values, strict=True)).items():
            mixed[name] += value

    def sums(self) -> Mapping[str, float]:
        """Per event, the sum of its counts."""
        if self.mixed is not None:
            return self.mixed
        return dict(zip(self.names or (), self.fold(), strict=True))


_MIXED: tuple[str, ...] = ("\0mixed layouts",)  # never the events of a reading: no list sums


def drain_plan(layouts: Sequence[tuple[str, ...]], index: Mapping[str, int], n_events: int) -> Plan:
    """The :class:`Plan` of one sequence of group layouts (events the entity's kind may not count
    are left out; a name repeated within a layout counts once, with its last position, as in a
    dict)."""
    contributions: list[list[int]] = [[] for _ in range(3 * n_events)]
    at = 0
    counted_at = sum(map(len, layouts))
    ran_at = counted_at + len(layouts)
    for g, names in enumerate(layouts):
        last = {name: j for j, name in enumerate(names)}
        for name, j in last.items():
            i = index.get(name)
            if i is not None:
                contributions[i].append(at + j)
                contributions[n_events + i].append(counted_at + g)
                contributions[2 * n_events + i].append(ran_at + g)
        at += len(names)
    zero = ran_at + len(layouts)
    gather = [found[0] if len(found) == 1 else zero for found in contributions]
    shared = tuple(
        (position, itemgetter(*found)) for position, found in enumerate(contributions) if len(found) > 1
    )
    if len(gather) == 1:
        (only,) = gather
        return Plan(lambda ext: (ext[only],), shared)
    return Plan(itemgetter(*gather), shared)


class OwnTime:
    """A unit's own time over the open interval: how much of the slices it was read in it ran.

    ``known`` is the wall seconds of the slices in which the unit had a reading with events (its
    time is known there), ``active`` the ns it ran in them: per slice, the largest
    ``time_enabled`` among its rows (a thread's advances only while it is on a CPU; the rows of
    one slice are of groups enabled over nearly the same span, and the longest is the truest).
    ``stamp`` and ``slice_te`` keep the slice being added, so each slice counts once.
    """

    __slots__ = ("active", "known", "slice_te", "stamp")

    def __init__(self) -> None:
        self.known = 0.0
        self.active = 0
        self.stamp: object = None
        self.slice_te = 0

    def reset(self) -> None:
        self.known = 0.0
        self.active = 0
        self.stamp = None
        self.slice_te = 0


class Accumulating(Protocol):
    """What :func:`accumulate` writes into: an engine :class:`Entity` or a reader's stand-in."""

    core: int | None
    cmg: int | None
    groups: dict[str, GroupAcc]
    own: OwnTime


def accumulate(
    rows: Iterable[Row],
    duration: float,
    current: Mapping[str, Accumulating],
    enter: Callable[[str, int | None, int | None], Accumulating | None],
) -> None:
    """Add one slice's rows to their units' group accumulators: the one hot loop of ingestion.

    ``current`` maps a unit to what it accumulates into now; a unit that is not there, or whose
    binding changed, gets a new one from ``enter`` (``None``: ignore its rows). A row adds the
    slice's duration times the group's running fraction ``tr / te`` clamped to [0, 1] to its
    group's ``counted`` (a sleeping thread, ``te == 0``, counts as fully counted: it did nothing,
    and that was measured) and ``min(tr, te)`` to its ``ran``; a row with events adds the slice
    to its unit's :class:`OwnTime` (once per slice: the longest ``te``).
    A row whose ``names`` is the very tuple of the group's first row is only appended to the
    pending readings; any other layout goes through :meth:`GroupAcc.add_row`.
    """
    dur = duration if duration > 0 else 0.0
    stamp = object()  # this slice, for OwnTime
    for unit, core, cmg, group, te, tr, names, values in rows:
        ent = current.get(unit)
        if ent is None or ent.core != core or ent.cmg != cmg:
            ent = enter(unit, core, cmg)
            if ent is None:
                continue
        groups = ent.groups
        acc = groups.get(group)
        if acc is None:
            acc = groups[group] = GroupAcc()
        if te > 0 and tr != te:  # the kernel multiplexed this group (or never ran it)
            fraction = tr / te
            acc.counted += dur * ((fraction if fraction < 1.0 else 1.0) if fraction > 0.0 else 0.0)
        else:
            acc.counted += dur
        if names:
            acc.ran += tr if tr < te else te
            own = ent.own
            if own.stamp is not stamp:
                own.stamp = stamp
                own.slice_te = te
                own.known += dur
                own.active += te
            elif te > own.slice_te:
                own.active += te - own.slice_te
                own.slice_te = te
        if names is acc.names:
            acc.pending.append(values)
        else:
            acc.add_row(names, values)


class Entity:
    """One unit at one binding, alive in cumulative-slice-time ``[start, end)``."""

    __slots__ = (
        "cmg",
        "cmg_key",
        "core",
        "core_key",
        "end",
        "groups",
        "index",
        "keys",
        "keys_threads",
        "kind",
        "own",
        "plans",
        "run",
        "serial",
        "start",
        "thread_key",
        "unit",
    )

    def __init__(
        self,
        serial: int,
        unit: str,
        kind: str,
        ident: int,
        core: int | None,
        cmg: int | None,
        start: float,
        index: Mapping[str, int],
        n_events: int,
        plans: dict[tuple[tuple[str, ...], ...], Plan] | None = None,
        process: int | None = None,
    ) -> None:
        self.serial = serial
        self.unit = unit
        self.kind = kind
        self.core = core
        self.cmg = cmg
        self.start = start
        self.end: float | None = None
        self.groups: dict[str, GroupAcc] = {}
        self.own = OwnTime()
        self.index = index  # event name -> vector position, only the events this kind may count
        self.plans: dict[tuple[tuple[str, ...], ...], Plan] = {} if plans is None else plans  # per kind
        self.run: Vector = [0.0] * (3 * n_events + 2) if n_events else []
        self.thread_key = str(ident) if kind == "thread" else None
        if kind == "thread":
            self.core_key: str | None = "unbound" if core is None else str(core)
        elif kind == "cpu":
            self.core_key = str(ident)
        else:
            self.core_key = None
        if kind == "cmg":
            self.cmg_key: str | None = str(ident if cmg is None else cmg)
        else:
            self.cmg_key = None if cmg is None else str(cmg)
        keys: list[ScopeKey] = [("total", "")]
        if self.cmg_key is not None:
            keys.append(("cmg", self.cmg_key))
        if self.core_key is not None:
            keys.append(("core", self.core_key))
        self.keys: tuple[ScopeKey, ...] = tuple(keys)
        if self.thread_key is not None:
            keys.append(("thread", self.thread_key))
            if process is not None:  # a process is the sum of its threads, shown where they are
                keys.append(("proc", str(process)))
        self.keys_threads: tuple[ScopeKey, ...] = tuple(keys)

    def present(self, lo: float, hi: float) -> float:
        """Seconds of cumulative slice time in ``[lo, hi]`` this entity existed."""
        end = hi if self.end is None or self.end > hi else self.end
        start = lo if self.start < lo else self.start
        return end - start if end > start else 0.0

    def drain(self, n_events: int, reset: bool) -> Vector:
        """The open interval's vector; with ``reset`` the group accumulators start over.

        Per event, its sums and counted seconds added over the groups in the order they were
        first read, from 0.0 (``vec[i] += value`` group by group). Most events are in one group,
        where that is the value itself: the vector is gathered C-level by a plan cached per
        sequence of group layouts, and only events of several groups are summed.
        """
        accs = list(self.groups.values())
        own = self.own
        tail = [own.known, own.active * 1e-9]
        if reset:
            self.groups = {}
            self.own = OwnTime()
        if not n_events:
            return []
        if any(acc.mixed is not None for acc in accs):
            return self._drain_by_name(accs, n_events) + tail
        layouts = tuple([acc.names or () for acc in accs])
        plans = self.plans
        plan = plans.get(layouts)
        if plan is None:
            if len(plans) >= 256:
                plans.clear()
            plan = plans[layouts] = drain_plan(layouts, self.index, n_events)
        ext: list[float] = []
        for acc in accs:
            ext += acc.fold()
        ext += [acc.counted for acc in accs]
        ext += [acc.ran * 1e-9 for acc in accs]
        ext.append(0.0)
        vec = list(plan.gather(ext))
        for position, contributions in plan.shared:
            # reduce(add, ...) is 0.0 + v1 + v2 + ... in order on every Python (sum() compensates
            # rounding since 3.12, and counted seconds are not whole numbers).
            vec[position] = reduce(add, contributions(ext), 0.0)
        return vec + tail

    def _drain_by_name(self, accs: list[GroupAcc], n_events: int) -> Vector:
        """:meth:`drain` when some group changed layouts within the interval: name by name."""
        vec = [0.0] * (3 * n_events)
        index = self.index
        for acc in accs:
            counted = acc.counted
            ran = acc.ran * 1e-9
            for name, value in acc.sums().items():
                i = index.get(name)
                if i is not None:
                    vec[i] += value
                    vec[n_events + i] += counted
                    vec[2 * n_events + i] += ran
        return vec


def wall_counted(vec: Vector, n_events: int, own_time: bool = True) -> Vector:
    """Per event, its counted time in wall seconds, measured on the unit's own clock.

    ``own seconds counted * known / active`` is the share of the unit's own running time the
    event was counted in, spread over the wall seconds the unit was known in: a slice in which a
    thread ran little weighs little, a thread that ended halfway through a slice is scaled to the
    half it lived, and a group the kernel multiplexed counts only its running share. A unit that
    never ran in the window (a sleeping thread) did nothing, and that was measured: each event
    counted all the seconds it was read in (times its running fraction).

    Without ``own_time`` every reading stands for its whole slice (wall seconds x running
    fraction): for recordings whose rows of one slice are separate runs of the same region, each
    on its own clock (a fapp import), where no unit has one clock across its rows.
    """
    known = vec[-2]
    active = vec[-1]
    if own_time and active > _RESIDUE_S:
        factor = known / active
        return [ran * factor for ran in vec[2 * n_events : 3 * n_events]]
    return vec[n_events : 2 * n_events]


def as_wall(
    contributions: Iterable[Contribution], n_events: int, own_time: bool = True
) -> list[Contribution]:
    """Contributions as the scopes take them: [raw count sums | counted seconds] (see Vector)."""
    if not n_events:
        return list(contributions)
    return [
        (e, present, vec[:n_events] + wall_counted(vec, n_events, own_time))
        for e, present, vec in contributions
    ]


def entity_terms(present: float, vec: Vector, n_events: int, own_time: bool = True) -> Terms:
    """One entity's scaled counts, counted seconds and present seconds (0 where it never counted).

    The scaled count is :func:`sectormon.data.readings.extrapolate` (``raw * (present / counted)``),
    written out over the vector because this runs for every entity of every window. (List
    comprehensions: CPython 3.11 specialises their float arithmetic, which makes them cheaper than
    ``map`` with ``operator`` functions here: see bench_engine in docs/perf-tuning.md.)
    """
    counted = wall_counted(vec, n_events, own_time) if n_events else []
    scaled = [raw * (present / c) if c > 0.0 else 0.0 for raw, c in zip(vec, counted, strict=False)]
    pres = [present if c > 0.0 else 0.0 for c in counted]
    return scaled, counted, pres


def add_to_archive(
    archive: dict[ScopeKey, Terms], entity: Entity, present: float, n_events: int, own_time: bool = True
) -> None:
    """Fold an ended entity's whole-run contribution into fixed per-scope sums (its counts are final).

    An archived scope is one pre-summed part: ``sum((archived, new))``, i.e. ``0.0 + a + b``.
    """
    terms = entity_terms(present, entity.run, n_events, own_time)
    for key in entity.keys_threads:
        old = archive.get(key)
        if old is None:
            archive[key] = terms
        else:
            archive[key] = (
                [0.0 + a + b for a, b in zip(old[0], terms[0], strict=True)],
                [0.0 + a + b for a, b in zip(old[1], terms[1], strict=True)],
                [0.0 + a + b for a, b in zip(old[2], terms[2], strict=True)],
            )


def merge_contributions(groups: Iterable[Sequence[Contribution]]) -> list[Contribution]:
    """Sum the contributions of several intervals per entity (first-seen order)."""
    presents: dict[Entity, list[float]] = {}
    vectors: dict[Entity, list[Vector]] = {}
    for contributions in groups:
        for entity, present, vec in contributions:
            if entity in presents:
                presents[entity].append(present)
                vectors[entity].append(vec)
            else:
                presents[entity] = [present]
                vectors[entity] = [vec]
    out: list[Contribution] = []
    for entity, vecs in vectors.items():
        vec = vecs[0] if len(vecs) == 1 else list(map(sum, zip(*vecs, strict=False)))
        out.append((entity, sum(presents[entity]), vec))
    return out


@dataclass(frozen=True, slots=True)
class Interval:
    """One closed interval: frame times and cumulative slice time at both ends, and what it counted."""

    t0: float
    t1: float
    c0: float
    c1: float
    contributions: list[Contribution]


# Counted seconds below a nanosecond (perf's time unit) are rounding residue of a subtraction.
_RESIDUE_S = 1e-9


class RecentWindow:
    """The closed intervals of the last ``seconds``, kept in a bounded deque, with running sums.

    The window ending at ``t`` holds the intervals whose middle lies at or after ``t - seconds``
    (always at least the newest one): a whole number of intervals, the number whose length is
    nearest ``seconds``. (Taking those that *start* after ``t - seconds`` lost the oldest interval
    whenever frames came a little late, as live ones do: 9.02 s of a 10 s window.) The deque is bounded in
    time by pruning and in size by ``max_intervals``: past it, the two oldest intervals merge
    (the window's oldest edge becomes coarser; totals are unchanged).

    Per entity, the window's vector is kept as a running sum (add the new interval, subtract the
    dropped ones) so a frame costs one vector operation per entity, not one per entity and
    interval. Raw counts are integers, exact in floats; counted seconds left by a subtraction
    below a nanosecond are reset to 0 so an event no longer counted in the window is absent, not
    0. The sums are rebuilt from the deque every ``rebuild_every`` frames to bound rounding drift.
    """

    def __init__(self, seconds: float, max_intervals: int = 256, rebuild_every: int = 1000) -> None:
        self.seconds = seconds
        self.max_intervals = max(2, max_intervals)
        self.rebuild_every = rebuild_every
        self.intervals: deque[Interval] = deque()
        self._sums: dict[Entity, Vector] = {}
        self._refs: dict[Entity, int] = {}
        self._since_rebuild = 0

    def __len__(self) -> int:
        return len(self.intervals)

    def cutoff(self, t: float) -> float:
        """The earliest middle an interval of the window ending at ``t`` may have."""
        return t - self.seconds - 1e-9 * max(1.0, abs(t))

    @staticmethod
    def middle(t0: float, t1: float) -> float:
        return 0.5 * (t0 + t1)

    def add(self, interval: Interval) -> None:
        self.intervals.append(interval)
        sums = self._sums
        refs = self._refs
        for entity, _, vec in interval.contributions:
            old = sums.get(entity)
            if old is None:
                sums[entity] = vec
                refs[entity] = 1
            else:
                sums[entity] = list(map(add, old, vec))
                refs[entity] += 1
        while len(self.intervals) > self.max_intervals:
            a = self.intervals.popleft()
            b = self.intervals.popleft()
            merged = merge_contributions((a.contributions, b.contributions))
            for entity, _, _ in a.contributions:
                self._refs[entity] -= 1
            for entity, _, _ in b.contributions:
                self._refs[entity] -= 1
            for entity, _, _ in merged:
                self._refs[entity] += 1
            self.intervals.appendleft(Interval(a.t0, b.t1, a.c0, b.c1, merged))

    def prune(self, t: float) -> None:
        """Drop intervals the window ending at ``t`` (or any later one) no longer covers."""
        cut = self.cutoff(t)
        middle = self.middle
        while len(self.intervals) > 1 and middle(self.intervals[0].t0, self.intervals[0].t1) < cut:
            self._drop(self.intervals.popleft())
        self._since_rebuild += 1
        if self._since_rebuild >= self.rebuild_every:
            self._rebuild()

    def _drop(self, interval: Interval) -> None:
        refs = self._refs
        sums = self._sums
        for entity, _, vec in interval.contributions:
            left = refs[entity] - 1
            if left == 0:
                del refs[entity]
                del sums[entity]
                continue
            refs[entity] = left
            rest = list(map(sub, sums[entity], vec))
            n = (len(rest) - 2) // 3
            # Only the few positions below the residue (C-level search) need looking at.
            for i in compress(range(n), map(lt, rest[n : 2 * n], repeat(_RESIDUE_S))):
                rest[2 * n + i] = 0.0
                rest[n + i] = 0.0
                rest[i] = 0.0
            if n and rest[-2] < _RESIDUE_S:
                rest[-2] = 0.0
            if n and rest[-1] < _RESIDUE_S:
                rest[-1] = 0.0
            sums[entity] = rest

    def clear(self) -> None:
        """Forget every interval: the window starts again (what it measured has changed)."""
        self.intervals.clear()
        self._sums = {}
        self._refs = {}
        self._since_rebuild = 0

    def _rebuild(self) -> None:
        self._since_rebuild = 0
        merged = merge_contributions(iv.contributions for iv in self.intervals)
        self._sums = {entity: vec for entity, _, vec in merged}

    def window(self) -> tuple[float, list[Contribution]]:
        """Start time and per-entity contributions of everything in the deque (after :meth:`prune`)."""
        if not self.intervals:
            return 0.0, []
        first = self.intervals[0]
        c0 = first.c0
        c1 = self.intervals[-1].c1
        return first.t0, [(e, e.present(c0, c1), vec) for e, vec in self._sums.items()]

    def select(self, t: float) -> tuple[float, list[list[Contribution]]]:
        """The start time and the intervals of the window ending at ``t`` (without pruning)."""
        cut = self.cutoff(t)
        chosen = [iv for iv in self.intervals if self.middle(iv.t0, iv.t1) >= cut]
        if not chosen and self.intervals:
            chosen = [self.intervals[-1]]
        if not chosen:
            return t, []
        return chosen[0].t0, [iv.contributions for iv in chosen]
