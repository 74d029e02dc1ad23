"""Accumulators behind the engine's windows: entities, per-interval contributions, scope sums.

The unit of extrapolation is an *entity*: one unit (thread, CPU or CMG stand-in) at one binding.
A thread that moves to another core becomes a new entity from that slice on, so its counts land
in the core they were counted on; a tid that ends and reappears is a new entity too.

Everything an entity counted in a window is kept as one flat vector of ``2 * E`` floats over the
profile's ``E`` events: the raw count sums, then the counted seconds. Windows longer than an
interval are sums of interval vectors (C-level ``map``), and extrapolation happens once per
entity and window on the summed components, never per interval: an event counted in only one
interval of a ten-second window is extrapolated over the whole ten seconds.

A group's counted seconds apply to every event of that group's readings, so a source must read
the same events of a group on a unit every time (the sampler does).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import add, sub

Vector = list[float]
# (entity, present seconds, vector [raw count sums | counted seconds])
Contribution = tuple["Entity", float, Vector]
ScopeKey = tuple[str, str]  # (level, key): ("total", ""), ("cmg", "0"), ("core", "12"), ("thread", "4242")


class GroupAcc:
    """What one entity read of one group during the open interval (the hot path writes here).

    A source reads the same events of a group every time. For a group of many events the sums
    are kept as a list in the order of the first reading's events, and a reading with that same
    layout is added with one C-level ``map(add)`` (half the cost of a dict update per count at
    8 events, measured); a group of few events, or a reading with another layout, uses per-name
    sums (``mixed``) for the rest of the interval. Either way every sum is its counts added in
    reading order from 0.0, exactly as ``sums[name] += value``.
    """

    __slots__ = ("counted", "mixed", "names", "values")

    def __init__(self) -> None:
        self.counted = 0.0
        self.names: tuple[str, ...] | None = None  # events of the first reading, in its order
        self.values: list[float] = []  # their sums
        self.mixed: defaultdict[str, float] | None = None  # per-name sums

    def add_other(self, counts: Mapping[str, float]) -> None:
        """Add a reading the engine's fast paths do not take (see MetricsEngine.add_slice)."""
        if self.names is None and len(counts) >= VECTOR_FROM:
            self.names = tuple(counts)
            self.values = list(map(add, repeat(0.0), counts.values()))
            return
        if self.mixed is None:
            self.mixed = defaultdict(float, zip(self.names or (), self.values, strict=True))
            self.names = _MIXED
        for name, value in counts.items():
            self.mixed[name] += value

    def sums(self) -> Mapping[str, float]:
        """Per event, the sum of its counts."""
        if self.mixed is not None:
            return self.mixed
        return dict(zip(self.names or (), self.values, strict=True))


VECTOR_FROM = 6  # events per reading from which list sums beat per-name sums (measured)
_MIXED: tuple[str, ...] = ("\0mixed layouts",)  # never the events of a reading: no list sums


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
        "kind",
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
    ) -> None:
        self.serial = serial
        self.unit = unit
        self.kind = kind
        self.core = core
        self.cmg = cmg
        self.start = start
        self.end: float | None = None
        self.groups: dict[str, GroupAcc] = {}
        self.index = index  # event name -> vector position, only the events this kind may count
        self.run: Vector = [0.0] * (2 * n_events)
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

    def present(self, lo: float, hi: float) -> float:
        """Seconds of cumulative slice time in ``[lo, hi]`` this entity existed."""
        end = hi if self.end is None or self.end > hi else self.end
        start = lo if self.start < lo else self.start
        return end - start if end > start else 0.0

    def drain(self, n_events: int, reset: bool) -> Vector:
        """The open interval's vector; with ``reset`` the group accumulators start over."""
        vec = [0.0] * (2 * n_events)
        index = self.index
        for acc in self.groups.values():
            counted = acc.counted
            for name, value in acc.sums().items():
                i = index.get(name)
                if i is not None:
                    vec[i] += value
                    vec[n_events + i] += counted
        if reset:
            self.groups = {}
        return vec

    def scope_keys(self, threads: bool) -> list[ScopeKey]:
        keys: list[ScopeKey] = [("total", "")]
        if self.cmg_key is not None:
            keys.append(("cmg", self.cmg_key))
        if self.core_key is not None:
            keys.append(("core", self.core_key))
        if threads and self.thread_key is not None:
            keys.append(("thread", self.thread_key))
        return keys


Terms = tuple[Vector, Vector, Vector]  # scaled counts, counted seconds, present seconds per event


class ScopeAcc:
    """A scope's contributors: per entity, extrapolated counts, counted and present seconds per event.

    :meth:`totals` sums them; an event whose counted sum is 0 had no contributing entity and is
    absent from the scope. ``members`` identifies the contributors so identical scopes (a thread
    alone on its core) are computed once.
    """

    __slots__ = ("members", "parts")

    def __init__(self) -> None:
        self.parts: list[Terms] = []
        self.members: list[object] = []

    def copy(self) -> ScopeAcc:
        other = ScopeAcc()
        other.parts = list(self.parts)
        other.members = list(self.members)
        return other

    def add(self, terms: Terms, member: object | None) -> None:
        self.parts.append(terms)
        if member is not None:
            self.members.append(member)

    def totals(self, n_events: int) -> Terms:
        parts = self.parts
        if len(parts) == 1:
            return parts[0]
        if not parts:
            zero = [0.0] * n_events
            return zero, zero, zero
        scaled, counted, present = zip(*parts, strict=True)
        return (
            list(map(sum, zip(*scaled, strict=True))),
            list(map(sum, zip(*counted, strict=True))),
            list(map(sum, zip(*present, strict=True))),
        )


def entity_terms(present: float, vec: Vector, n_events: int) -> Terms:
    """One entity's scaled counts, counted seconds and present seconds (0 where it never counted).

    The scaled count is :func:`sectormon.readings.extrapolate` (``raw * (present / counted)``),
    written out over the vector because this runs for every entity of every window.
    """
    raw_sums = vec[:n_events]
    counted = vec[n_events:]
    scaled = [raw * (present / c) if c > 0.0 else 0.0 for raw, c in zip(raw_sums, counted, strict=True)]
    pres = [present if c > 0.0 else 0.0 for c in counted]
    return scaled, counted, pres


def scope_accs(
    contributions: Iterable[Contribution],
    n_events: int,
    *,
    threads: bool,
    archive: Mapping[ScopeKey, ScopeAcc] | None = None,
) -> dict[ScopeKey, ScopeAcc]:
    """Collect contributions (and archived entities, for run windows) into every scope they belong to."""
    accs: dict[ScopeKey, ScopeAcc] = {}
    if archive:
        for key, archived in archive.items():
            if threads or key[0] != "thread":
                accs[key] = archived.copy()
    for entity, present, vec in contributions:
        terms = entity_terms(present, vec, n_events)
        for key in entity.scope_keys(threads):
            acc = accs.get(key)
            if acc is None:
                acc = accs[key] = ScopeAcc()
            acc.add(terms, entity.serial)
    return accs


def add_to_archive(archive: dict[ScopeKey, ScopeAcc], entity: Entity, present: float, n_events: int) -> None:
    """Fold an ended entity's whole-run contribution into fixed per-scope sums (its counts are final)."""
    terms = entity_terms(present, entity.run, n_events)
    for key in entity.scope_keys(threads=True):
        acc = archive.get(key)
        if acc is None:
            acc = archive[key] = ScopeAcc()
            acc.members.append(("archive", key))  # never equal to another scope's members
        acc.add(terms, None)
        acc.parts = [acc.totals(n_events)]  # keep one pre-summed part


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
        vec = vecs[0] if len(vecs) == 1 else list(map(sum, zip(*vecs, strict=True)))
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

    The window ending at ``t`` holds the intervals that start at or after ``t - seconds`` (always at
    least the newest one), so its length is a whole number of intervals. The deque is bounded in
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
        return t - self.seconds - 1e-9 * max(1.0, abs(t))

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
        while len(self.intervals) > 1 and self.intervals[0].t0 < cut:
            self._drop(self.intervals.popleft())
        self._since_rebuild += 1
        if self._since_rebuild >= self.rebuild_every:
            self._rebuild()

    def _drop(self, interval: Interval) -> None:
        n = None
        for entity, _, vec in interval.contributions:
            left = self._refs[entity] - 1
            if left == 0:
                del self._refs[entity]
                del self._sums[entity]
                continue
            self._refs[entity] = left
            rest = list(map(sub, self._sums[entity], vec))
            if n is None:
                n = len(rest) // 2
            for i in range(n, 2 * n):
                if rest[i] < _RESIDUE_S:
                    rest[i] = 0.0
                    rest[i - n] = 0.0
            self._sums[entity] = rest

    def _rebuild(self) -> None:
        self._since_rebuild = 0
        merged = merge_contributions(iv.contributions for iv in self.intervals)
        self._sums = {entity: vec for entity, _, vec in merged}

    def window(self) -> tuple[float, list[Contribution]]:
        """Start time and per-entity contributions of everything in the deque (after :meth:`prune`)."""
        if not self.intervals:
            return 0.0, []
        first = self.intervals[0]
        c1 = self.intervals[-1].c1
        return first.t0, [(e, e.present(first.c0, c1), vec) for e, vec in self._sums.items()]

    def select(self, t: float) -> tuple[float, list[list[Contribution]]]:
        """The start time and the intervals of the window ending at ``t`` (without pruning)."""
        cut = self.cutoff(t)
        chosen = [iv for iv in self.intervals if iv.t0 >= cut]
        if not chosen and self.intervals:
            chosen = [self.intervals[-1]]
        if not chosen:
            return t, []
        return chosen[0].t0, [iv.contributions for iv in chosen]
