"""Proxy counting in the engine: scale the stand-ins' counts of proxied events to their CMG.

Under ``--proxy N`` (:mod:`sectormon.metrics.proxy`) only the stand-ins count the rotating per-PE events.
Per window, each CMG's estimate of such an event is the sum of its stand-ins' scaled counts times
:func:`~sectormon.metrics.proxy.cmg_factor` of the CMG's reference (every per-PE unit's task time, or its
present seconds) over the stand-ins'; the total is the sum of the CMG estimates (threads bound to
no CMG form one pool of their own, counted in the total only). A core, thread or process scope
that holds stand-ins and other units shows proxied events as absent (n/a): its sum would be the
stand-ins' part alone. Scopes of stand-ins only keep their own counts; scopes without a stand-in
never counted the events. Every estimated figure is listed in its scope's ``proxy`` flag, with
its error bound: the relative half-width of its 95 % interval (:func:`~sectormon.metrics.proxy.half_width`,
from how the stand-ins' rates spread around their common rate; ``None`` where that cannot be told).
A CMG's bound is its pool's; the total's adds the pools' half-widths in quadrature (pools are
sampled apart); a metric's is the sum of its proxied inputs' (first order, for the products and
ratios metrics are made of).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from sectormon.data.proxy import TASK_TIME, ProxySetting
from sectormon.metrics.formulas import MetricSet
from sectormon.metrics.proxy import cmg_factor, half_width
from sectormon.metrics.scopes import Block, Column
from sectormon.metrics.windows import Contribution, Entity, ScopeKey, Vector, entity_terms

Pool = str | None  # a CMG key, or None: threads bound to no CMG


class ProxyScaler:
    """Applies one session's proxy setting to the scope blocks of each window."""

    def __init__(
        self,
        setting: ProxySetting,
        names: Sequence[str],
        mset: MetricSet,
        batch_of_level: Mapping[str, str],
        *,
        own_time: bool = True,
    ) -> None:
        """``own_time``: how the engine scales an entity's counts (:func:`entity_terms`)."""
        proxied = set(setting.events)
        self.setting = setting
        self.events = tuple(i for i, name in enumerate(names) if name in proxied)
        self.names = tuple(names)
        self._n = len(names)
        self._own_time = own_time
        self._task_time = setting.reference == TASK_TIME
        self._mset = mset
        self._batch_of_level = batch_of_level
        # Ended entities folded into the engine's archive: per scope, [stand-ins, other units];
        # per pool, the reference of all units and each stand-in's (reference, task seconds).
        self._archive_keys: dict[ScopeKey, list[int]] = {}
        self._archive_refs: dict[Pool, PoolRefs] = {}

    def stands_in(self, vec: Vector) -> bool:
        """Whether an entity counted a proxied event (its wall seconds counted are the vector's
        second part)."""
        n = self._n
        return any(vec[n + i] > 0.0 for i in self.events)

    def reference(self, present: float, vec: Vector) -> float:
        """An entity's reference: its own (task) seconds, or its present seconds."""
        return vec[-1] if self._task_time else present

    def archive(self, entity: Entity, present: float, vec: Vector) -> None:
        """Keep what an ended entity adds to the run window's tallies (its parts are archived)."""
        if entity.kind == "cmg" or not vec:
            return
        standing = self.stands_in(vec)
        for key in entity.keys_threads:
            self._archive_keys.setdefault(key, [0, 0])[0 if standing else 1] += 1
        self._archive_refs.setdefault(entity.cmg_key, PoolRefs()).add(
            self.reference(present, vec), vec[-1] if standing else None, self._sample(present, vec, standing)
        )

    def _sample(self, present: float, vec: Vector, standing: bool) -> tuple[float | None, ...] | None:
        """A stand-in's count of each proxied event scaled to its window as the scopes scale it
        (``None`` where it did not count the event); ``None`` for a unit that did not stand in."""
        if not standing:
            return None
        scaled, counted, _ = entity_terms(present, vec, self._n, self._own_time)
        return tuple(scaled[i] if counted[i] > 0.0 else None for i in self.events)

    def adjust(
        self,
        contributions: Sequence[Contribution],
        blocks: Mapping[str, Block],
        *,
        threads: bool,
        archived: bool,
    ) -> dict[ScopeKey, dict[str, float | None]]:
        """Scale the CMG and total scopes of one window's ``blocks`` in place, blank mixed
        scopes, and return the proxied figures (events and metrics) of each scope that has any,
        each with its error bound (relative half-width of the 95 % interval, ``None``: unknown)."""
        members: dict[ScopeKey, list[int]] = {}
        refs: dict[Pool, PoolRefs] = {}
        if archived:
            for key, (standing, others) in self._archive_keys.items():
                if threads or key[0] not in ("thread", "proc"):
                    members[key] = [standing, others]
            refs = {pool: pool_refs.copy() for pool, pool_refs in self._archive_refs.items()}
        for entity, present, vec in contributions:
            if entity.kind == "cmg" or not vec:
                continue
            standing = self.stands_in(vec)
            for key in entity.keys_threads if threads else entity.keys:
                tally = members.get(key)
                if tally is None:
                    tally = members[key] = [0, 0]
                tally[0 if standing else 1] += 1
            pool_refs = refs.get(entity.cmg_key)
            if pool_refs is None:
                pool_refs = refs[entity.cmg_key] = PoolRefs()
            pool_refs.add(
                self.reference(present, vec),
                vec[-1] if standing else None,
                self._sample(present, vec, standing),
            )
        factors = {pool: self._factor(pool_refs) for pool, pool_refs in refs.items()}
        proxied_pools: set[Pool] = {
            key[1] for key, (_, others) in members.items() if key[0] == "cmg" and others
        }
        if None in refs and members.get(("total", ""), [0, 0])[1] > _others_in_cmgs(members):
            proxied_pools.add(None)  # threads bound to no CMG, some of them not standing in
        for block in blocks.values():  # columns and their lists may be shared: replaced, not changed
            block.scaled = list(block.scaled)
            block.counted = list(block.counted)
            block.present = list(block.present)
        flagged: dict[ScopeKey, dict[str, float | None]] = {}
        cmg_sums = self._cmg_sums(blocks)
        halves = {pool: self._half_widths(pool_refs) for pool, pool_refs in refs.items()}
        for block in blocks.values():
            for j, key in enumerate(block.keys):
                level = key[0]
                if level == "cmg":
                    if key[1] in proxied_pools:
                        self._scale(
                            block,
                            j,
                            factors.get(key[1], 1.0),
                            halves.get(key[1]),
                            flagged.setdefault(key, {}),
                        )
                elif level == "total":
                    if proxied_pools:
                        self._total(block, j, cmg_sums, factors, halves, flagged.setdefault(key, {}))
                else:
                    tally = members.get(key)
                    if tally is not None and tally[0] and tally[1]:
                        self._blank(block, j)
        return {key: self._with_metrics(key, events) for key, events in flagged.items() if events}

    def _half_widths(self, refs: PoolRefs) -> list[float | None]:
        """Per proxied event, the absolute half-width of the 95 % interval of the pool's estimate
        (``None``: unknown; 0: every unit of the pool counted it)."""
        out: list[float | None] = []
        for at in range(len(self.events)):
            sample = [(ref, counts[at]) for ref, counts in refs.samples if counts[at] is not None]
            out.append(half_width([r for r, _ in sample], [c or 0.0 for _, c in sample], refs.units))
        return out

    def _factor(self, refs: PoolRefs) -> float | None:
        """A pool's factor. Scaled by task time, a stand-in weighs what it ran: the pool's task
        time over the stand-ins'. Scaled by presence, a stand-in that ran next to nothing beside
        the pool's busiest stand-in (a main thread that only waits, until it hands its role over)
        is a measured unit but no sample of the others: its counts stay as they are and the units
        that never stood in are scaled from the stand-ins that ran, ``1 + others' presence /
        theirs``. A pool none of whose stand-ins ran, while other units were present, has an
        unknown estimate: its near-zero counts times the units would be a made-up figure."""
        stand_ref = sum(ref for ref, _ in refs.stand_ins)
        busiest = max((task_s for _, task_s in refs.stand_ins), default=0.0)
        if self._task_time or busiest <= 0.0:
            if not self._task_time and refs.all_ref > stand_ref:
                return None
            return cmg_factor(refs.all_ref, stand_ref)
        floor = busiest * IDLE_STAND_IN_SHARE
        sampled_ref = sum(ref for ref, task_s in refs.stand_ins if task_s >= floor)
        if sampled_ref <= 0.0:
            return cmg_factor(refs.all_ref, stand_ref)
        return 1.0 + max(refs.all_ref - stand_ref, 0.0) / sampled_ref

    def _cmg_sums(self, blocks: Mapping[str, Block]) -> dict[str, list[float]]:
        """Per CMG scope, the stand-ins' sums of the proxied events (before scaling)."""
        out: dict[str, list[float]] = {}
        for block in blocks.values():
            for j, key in enumerate(block.keys):
                if key[0] == "cmg":
                    out[key[1]] = [
                        block.scaled[i][j] if block.counted[i][j] > 0.0 else 0.0 for i in self.events
                    ]
        return out

    def _scale(
        self,
        block: Block,
        j: int,
        factor: float | None,
        halves: Sequence[float | None] | None,
        flagged: dict[str, float | None],
    ) -> None:
        for at, i in enumerate(self.events):
            if block.counted[i][j] <= 0.0:
                continue
            if factor is None:
                _set(block.counted, i, j, 0.0)
                _set(block.present, i, j, 0.0)
                continue
            estimate = block.scaled[i][j] * factor
            _set(block.scaled, i, j, estimate)
            half = halves[at] if halves is not None else 0.0
            flagged[self.names[i]] = _relative(half, estimate)

    def _total(
        self,
        block: Block,
        j: int,
        cmg_sums: Mapping[str, list[float]],
        factors: Mapping[Pool, float | None],
        halves: Mapping[Pool, Sequence[float | None]],
        flagged: dict[str, float | None],
    ) -> None:
        """The total of each proxied event: the sum of its pools' estimates (the pool of threads
        bound to no CMG is what the total has beyond the CMG scopes)."""
        for at, i in enumerate(self.events):
            if block.counted[i][j] <= 0.0:
                continue
            total = block.scaled[i][j]
            estimate = 0.0
            unknown = False
            squares: float | None = (
                sum((h[at] or 0.0) ** 2 for h in halves.values())
                if all(h[at] is not None for h in halves.values())
                else None
            )
            for pool, sums in cmg_sums.items():
                part = sums[at]
                total -= part
                factor = factors.get(pool, 1.0)
                if factor is None:
                    unknown = True  # units of the pool ran, none of its stand-ins did
                else:
                    estimate += part * factor
            rest = factors.get(None, 1.0)
            if rest is None:
                unknown = True
            else:
                estimate += max(total, 0.0) * rest
            if unknown:
                _set(block.counted, i, j, 0.0)
                _set(block.present, i, j, 0.0)
                continue
            _set(block.scaled, i, j, estimate)
            flagged[self.names[i]] = _relative(math.sqrt(squares) if squares is not None else None, estimate)

    def _blank(self, block: Block, j: int) -> None:
        """A scope of stand-ins and other units: its sum of a proxied event is not the scope's."""
        for i in self.events:
            if block.counted[i][j] > 0.0:
                _set(block.counted, i, j, 0.0)
                _set(block.present, i, j, 0.0)

    def _with_metrics(self, key: ScopeKey, events: dict[str, float | None]) -> dict[str, float | None]:
        """The flagged events and the metrics of the scope's level that read any of them, each
        with its bound: a metric's is the sum of its proxied inputs' (unknown if one is)."""
        inputs = self._mset.inputs
        out = dict(events)
        for name in self._mset.names_at(self._batch_of_level[key[0]]):
            bounds = [events[e] for e in inputs.get(name, ()) if e in events]
            if bounds:
                out[name] = None if any(b is None for b in bounds) else sum(b or 0.0 for b in bounds)
        return out


IDLE_STAND_IN_SHARE = 0.1
"""Scaled by presence, a stand-in that ran less than this share of the pool's busiest stand-in's
task seconds stands for nobody (the sampler hands such a role over at the same ratio)."""


class PoolRefs:
    """One pool's scaling reference over a window: all units' (``all_ref``), each stand-in's
    (reference, task seconds), the units that have a reference (``units``) and, for the error
    bound, each such stand-in's (reference, count of each proxied event) (``samples``)."""

    __slots__ = ("all_ref", "samples", "stand_ins", "units")

    def __init__(self) -> None:
        self.all_ref = 0.0
        self.stand_ins: list[tuple[float, float]] = []
        self.units = 0
        self.samples: list[tuple[float, tuple[float | None, ...]]] = []

    def add(
        self, ref: float, stand_in_task_s: float | None, counts: tuple[float | None, ...] | None = None
    ) -> None:
        """A unit's reference; ``stand_in_task_s``: its task seconds when it stood in; ``counts``:
        its scaled counts of the proxied events then. A unit with no reference (it never ran)
        did nothing the estimate scales, and is no sample of the units that ran."""
        self.all_ref += ref
        if stand_in_task_s is not None:
            self.stand_ins.append((ref, stand_in_task_s))
        if ref > 0.0:
            self.units += 1
            if counts is not None:
                self.samples.append((ref, counts))

    def copy(self) -> PoolRefs:
        out = PoolRefs()
        out.all_ref = self.all_ref
        out.stand_ins = list(self.stand_ins)
        out.units = self.units
        out.samples = list(self.samples)
        return out


def _relative(half: float | None, estimate: float) -> float | None:
    """A half-width relative to its estimate (``None``: unknown, or an estimate of 0 with a spread)."""
    if half is None:
        return None
    if half <= 0.0:
        return 0.0
    return half / estimate if estimate > 0.0 else None


def _others_in_cmgs(members: Mapping[ScopeKey, list[int]]) -> int:
    return sum(others for key, (_, others) in members.items() if key[0] == "cmg")


def _set(columns: list[Column], i: int, j: int, value: float) -> None:
    """``columns[i][j] = value`` on immutable columns (a new tuple: columns are shared)."""
    column = columns[i]
    columns[i] = (*column[:j], value, *column[j + 1 :])
