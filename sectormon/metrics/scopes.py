"""Scope sums of one window, computed column by column: per event, one value per scope.

Every scope (total, CMG, core, thread) sums its entities' extrapolated counts
``raw * (present / counted)`` with their counted and present seconds. The work runs per event column
over all entities at once, because most of it is shared: one group's events have the same counted
seconds, so each ratio is computed once, and entities of one class sit next to each other, so an
event's column is one contiguous slice. Sums keep the engine's fixed float order.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter, mul, truediv
from typing import Any

from sectormon.metrics.windows import Contribution, Entity, ScopeKey, Terms

Column = tuple[float, ...]  # one value per scope (or per entity)
Pick = Callable[[Column], Column]  # the values of some entities, in order (C-level getter)

CLASS_OF_KIND: Mapping[str, int] = {"thread": 0, "cpu": 0, "cmg": 1}  # entity kind -> class
CLASSES = 2
THREAD_LEVELS = ("thread", "proc")  # the scopes a window has only with its threads


class EventClasses:
    """The profile's events by the class of entities that may count them (-1: none may).

    ``pick[k]`` takes class k's event columns (in event order) from a list of all of them;
    ``spread`` puts per-class results, laid end to end (class 0, class 1, then one 0.0 for the
    events no class counts), back in event order. Both C-level.
    """

    def __init__(self, event_class: Sequence[int]) -> None:
        self.of_event = tuple(event_class)
        positions = [[i for i, c in enumerate(event_class) if c == k] for k in range(CLASSES)]
        self.sizes = tuple(len(p) for p in positions)
        self.pick: tuple[Callable[[Sequence[Column]], tuple[Column, ...]], ...] = tuple(
            _tuple_getter(p) for p in positions
        )
        at: dict[int, int] = {}
        for i in (i for p in positions for i in p):
            at[i] = len(at)
        sentinel = len(at)
        self.spread = _tuple_getter([at.get(i, sentinel) for i in range(len(event_class))])


def _tuple_getter(at: Sequence[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``itemgetter(*at)``, returning a tuple even for one position or none."""
    if len(at) > 1:
        return itemgetter(*at)
    if len(at) == 1:
        (only,) = at
        return lambda values: (values[only],)
    return lambda values: ()


@dataclass(slots=True)
class Block:
    """Scopes of one window that are computed in one batch: keys, window length, event columns."""

    keys: list[ScopeKey]
    seconds: float
    scaled: list[Column]  # per event, the scope sums of extrapolated counts
    counted: list[Column]  # per event, counted seconds
    present: list[Column]  # per event, present seconds of the entities that counted it


@dataclass(slots=True)
class _Batch:
    """Where the scopes of one batch come from (see :class:`Layout`)."""

    single_keys: list[ScopeKey] = field(default_factory=list)
    single_at: list[int] = field(default_factory=list)  # the entity of each single scope
    single_pick: Pick | None = None  # their values (None: every entity, in order)
    # (key, per event class the values of its entities of that class (None: it has none),
    # archived part or None)
    summed: list[tuple[ScopeKey, tuple[Pick | None, ...], Terms | None]] = field(default_factory=list)
    archived: list[tuple[ScopeKey, Terms]] = field(default_factory=list)  # no live entity


@dataclass(slots=True)
class Layout:
    """Which entities (and archived parts) make up each scope of a window, grouped by batch.

    Built from the contribution order; the engine keeps it while a window's entities and the
    archive stay the same (most frames), so a frame does no per-entity bookkeeping. Positions
    are in ``order`` (the contributions reordered class by class; ``None``: already so).
    """

    entities: list[Entity]
    threads: bool
    archive_version: int
    order: Pick | None
    ranges: tuple[tuple[int, int], ...]  # per class, its entities' positions [start, stop)
    batches: dict[str, _Batch]
    aliases: list[tuple[ScopeKey, ScopeKey]]  # (thread, core): a thread alone on its core


def layout(
    entities: list[Entity],
    *,
    threads: bool,
    archive: Mapping[ScopeKey, Terms] | None,
    archive_version: int,
    batch_of_level: Mapping[str, str],
) -> Layout:
    classes = [CLASS_OF_KIND[entity.kind] for entity in entities]
    by_class = sorted(range(len(entities)), key=classes.__getitem__)  # stable
    order: Pick | None = None
    if by_class != list(range(len(entities))):
        order = itemgetter(*by_class) if len(by_class) > 1 else None
    ranges = []
    start = 0
    for c in range(CLASSES):
        stop = start + classes.count(c)
        ranges.append((start, stop))
        start = stop
    members: dict[ScopeKey, list[int]] = {}
    for j, original in enumerate(by_class):
        entity = entities[original]
        for key in entity.keys_threads if threads else entity.keys:
            found = members.get(key)
            if found is None:
                members[key] = [j]
            else:
                found.append(j)
    archived = {k: v for k, v in (archive or {}).items() if threads or k[0] not in THREAD_LEVELS}
    aliases: list[tuple[ScopeKey, ScopeKey]] = []
    aliased: set[ScopeKey] = set()
    if threads:
        # A thread whose entities are exactly a core's has that core's stats (computed once).
        cores = {tuple(js): key for key, js in members.items() if key[0] == "core" and key not in archived}
        for key, js in members.items():
            if key[0] == "thread" and key not in archived:
                core = cores.get(tuple(js))
                if core is not None:
                    aliases.append((key, core))
                    aliased.add(key)
    batches: dict[str, _Batch] = {}
    everyone = len(entities)
    for key, js in members.items():
        if key in aliased:
            continue
        batch = batches.get(batch_of_level[key[0]])
        if batch is None:
            batch = batches[batch_of_level[key[0]]] = _Batch()
        part = archived.get(key)
        if part is None and len(js) == 1:
            batch.single_keys.append(key)
            batch.single_at.append(js[0])
        else:
            picks = tuple(_class_pick(js, a, b) for a, b in ranges)
            batch.summed.append((key, picks, part))
    for key, part in archived.items():
        if key not in members:
            batch = batches.get(batch_of_level[key[0]])
            if batch is None:
                batch = batches[batch_of_level[key[0]]] = _Batch()
            batch.archived.append((key, part))
    for batch in batches.values():
        if batch.single_at:
            batch.single_pick = _pick(batch.single_at, everyone)
    return Layout(entities, threads, archive_version, order, tuple(ranges), batches, aliases)


def _pick(at: list[int], everyone: int) -> Pick | None:
    """A C-level getter of the values of entities ``at`` (ascending) from a column: a slice when
    they are consecutive (a copy, the cheapest), ``None`` when they are all of them."""
    first = at[0]
    if at[-1] - first + 1 == len(at):
        return None if len(at) == everyone else itemgetter(slice(first, first + len(at)))
    return itemgetter(*at)


def _class_pick(at: list[int], start: int, stop: int) -> Pick | None:
    """The getter of a scope's entities within one class's positions (a tuple, even of one)."""
    mine = [j for j in at if start <= j < stop]
    if not mine:
        return None
    first = mine[0]
    if mine[-1] - first + 1 == len(mine):
        return itemgetter(slice(first, first + len(mine)))
    return itemgetter(*mine)


def blocks(
    contributions: Sequence[Contribution],
    seconds: float,
    n_events: int,
    classes: EventClasses,
    plan: Layout,
) -> dict[str, Block]:
    """The window's scopes per batch, as event columns (``plan`` is the layout of its entities)."""
    n = n_events
    m = len(contributions)
    if plan.order is not None:
        contributions = plan.order(contributions)  # type: ignore[arg-type, assignment]
    presents = tuple([p for _, p, _ in contributions])
    columns: list[Column] = (
        list(zip(*[vec for _, _, vec in contributions], strict=True)) if m else [()] * (2 * n)
    )
    raw_cols = columns[:n]
    zeros = (0.0,) * m
    # Per distinct counted column (events of one group share theirs): present / counted and the
    # present seconds where counted. ``kind[i]`` is the distinct index of event i, -1 if no entity
    # counted it.
    distinct: list[tuple[Column, Column, Column]] = []
    kind: list[int] = []
    for col, cls in zip(columns[n:], classes.of_event, strict=True):
        if cls < 0 or not any(col):
            kind.append(-1)
            continue
        for d, (seen, _, _) in enumerate(distinct):
            if seen is col or seen == col:
                kind.append(d)
                break
        else:
            kind.append(len(distinct))
            a, b = plan.ranges[cls]
            if min(col[a:b]) > 0.0:  # every entity of the class counted it: C-level
                ratio = zeros[:a] + tuple(map(truediv, presents[a:b], col[a:b])) + zeros[b:]
                distinct.append((col, ratio, zeros[:a] + presents[a:b] + zeros[b:]))
            else:
                distinct.append(
                    (
                        col,
                        tuple([p / c if c > 0.0 else 0.0 for p, c in zip(presents, col, strict=True)]),
                        tuple([p if c > 0.0 else 0.0 for p, c in zip(presents, col, strict=True)]),
                    )
                )
    scaled_cols: list[Column] = [
        zeros if d < 0 else tuple(map(mul, raw, distinct[d][1]))
        for raw, d in zip(raw_cols, kind, strict=True)
    ]
    counted_cols = [zeros if d < 0 else distinct[d][0] for d in kind]
    present_cols = [zeros if d < 0 else distinct[d][2] for d in kind]

    out: dict[str, Block] = {}
    for name, batch in plan.batches.items():
        parts: list[tuple[list[Column], list[Column], list[Column]]] = []
        keys: list[ScopeKey] = []
        if batch.single_keys:
            keys += batch.single_keys
            pick = batch.single_pick
            if pick is None:
                parts.append((scaled_cols, counted_cols, present_cols))
            else:
                parts.append(
                    (
                        [pick(col) for col in scaled_cols],
                        _shared(pick, counted_cols),
                        _shared(pick, present_cols),
                    )
                )
        if batch.summed:
            by_class = [
                _class_columns(pick(scaled_cols), pick(counted_cols), pick(present_cols))
                for pick in classes.pick
            ]
            rows = [
                _summed(scaled_cols, counted_cols, present_cols, classes, by_class, picks, part)
                for _, picks, part in batch.summed
            ]
            keys += [key for key, _, _ in batch.summed]
            parts.append(_transposed(rows, n))
        if batch.archived:
            keys += [key for key, _ in batch.archived]
            parts.append(_transposed([part for _, part in batch.archived], n))
        if len(parts) == 1:
            scaled, counted, present = parts[0]
        else:
            scaled = _joined([p[0] for p in parts])
            counted = _joined([p[1] for p in parts], share=True)
            present = _joined([p[2] for p in parts], share=True)
        out[name] = Block(keys, seconds, scaled, counted, present)
    return out


# One class's event columns: scaled, and counted and present once per distinct column (events of
# a group share theirs) with the getter that spreads them back over the class's events.
_ClassColumns = tuple[
    tuple[Column, ...], list[Column], list[Column], Callable[[Sequence[float]], tuple[float, ...]]
]


def _class_columns(
    scaled: tuple[Column, ...], counted: tuple[Column, ...], present: tuple[Column, ...]
) -> _ClassColumns:
    at: dict[int, int] = {}
    unique_counted: list[Column] = []
    unique_present: list[Column] = []
    where: list[int] = []
    for c, p in zip(counted, present, strict=True):
        j = at.get(id(c))
        if j is None:
            j = at[id(c)] = len(unique_counted)
            unique_counted.append(c)
            unique_present.append(p)  # the same counted column object has the same present one
        where.append(j)
    return scaled, unique_counted, unique_present, _tuple_getter(where)


def _summed(
    scaled_cols: list[Column],
    counted_cols: list[Column],
    present_cols: list[Column],
    classes: EventClasses,
    by_class: list[_ClassColumns],
    picks: tuple[Pick | None, ...],
    part: Terms | None,
) -> Terms:
    """One scope of several parts: per event, ``sum()`` of its archived part and its entities of
    the event's class (the others add exact zeros).

    Without an archived part, the sums run C-level class by class (``by_class``: each class's
    event columns, counted and present ones once per distinct column) and are spread back in
    event order. With one, ``sum(values, 0.0 + a)`` is
    ``sum((a, *values))`` (what the archive-first order means).
    """
    if part is None:
        scaled: list[float] = []
        counted: list[float] = []
        present: list[float] = []
        for pick, (s_cols, c_cols, p_cols, spread_class) in zip(picks, by_class, strict=True):
            if pick is None:
                zeros = [0.0] * len(s_cols)
                scaled += zeros
                counted += zeros
                present += zeros
            else:
                scaled += map(sum, map(pick, s_cols))
                counted += spread_class(list(map(sum, map(pick, c_cols))))
                present += spread_class(list(map(sum, map(pick, p_cols))))
        scaled.append(0.0)
        counted.append(0.0)
        present.append(0.0)
        spread = classes.spread
        return list(spread(scaled)), list(spread(counted)), list(spread(present))
    per_event = [picks[c] if c >= 0 else None for c in classes.of_event]
    a_scaled, a_counted, a_present = part
    return (
        [
            0.0 + a if pick is None else sum(pick(col), 0.0 + a)
            for pick, col, a in zip(per_event, scaled_cols, a_scaled, strict=True)
        ],
        [
            0.0 + a if pick is None else sum(pick(col), 0.0 + a)
            for pick, col, a in zip(per_event, counted_cols, a_counted, strict=True)
        ],
        [
            0.0 + a if pick is None else sum(pick(col), 0.0 + a)
            for pick, col, a in zip(per_event, present_cols, a_present, strict=True)
        ],
    )


def _transposed(rows: Sequence[Terms], n_events: int) -> tuple[list[Column], list[Column], list[Column]]:
    """Per-scope (scaled, counted, present) rows as three lists of event columns."""
    if not n_events:
        return [], [], []
    return (
        list(zip(*[r[0] for r in rows], strict=True)),
        list(zip(*[r[1] for r in rows], strict=True)),
        list(zip(*[r[2] for r in rows], strict=True)),
    )


def _shared(pick: Pick, columns: list[Column]) -> list[Column]:
    """``[pick(col) for col in columns]``, once per distinct column object (events of a group
    share theirs): the results share objects the same way, which later steps test first."""
    done: dict[int, Column] = {}
    out: list[Column] = []
    for col in columns:
        found = done.get(id(col))
        if found is None:
            found = done[id(col)] = pick(col)
        out.append(found)
    return out


def _joined(parts: Sequence[Sequence[Column]], *, share: bool = False) -> list[Column]:
    """Event columns of several groups of scopes, one after the other (in ``parts`` order); with
    ``share``, once per distinct combination of column objects (see :func:`_shared`)."""
    if share:
        done: dict[tuple[int, ...], Column] = {}
        out: list[Column] = []
        for cols in zip(*parts, strict=True):
            key = tuple(map(id, cols))
            found = done.get(key)
            if found is None:
                found = cols[0]
                for more in cols[1:]:
                    found = found + more
                done[key] = found
            out.append(found)
        return out
    if len(parts) == 2:
        return [a + b for a, b in zip(*parts, strict=True)]
    if len(parts) == 3:
        return [a + b + c for a, b, c in zip(*parts, strict=True)]
    out = list(parts[0])
    for more in parts[1:]:
        out = [a + b for a, b in zip(out, more, strict=True)]
    return out


def joined_blocks(found: Sequence[Block]) -> tuple[list[Column], list[Column], list[Column]]:
    """The columns of several windows' blocks of one batch, one after the other."""
    if len(found) == 1:
        b = found[0]
        return b.scaled, b.counted, b.present
    return (
        _joined([b.scaled for b in found]),
        _joined([b.counted for b in found], share=True),
        _joined([b.present for b in found], share=True),
    )
