"""Every migration of older recordings, in one place: format version 1 and the one v1 reader.

A record of an older format version is brought up to :data:`~sectormon.io.jsonl.FORMAT_VERSION`
one step at a time (``MIGRATIONS[v]`` takes version ``v`` to ``v + 1``). A header's fields that
older writers left out are not filled in (a replay writes the header back as it was read): the
typed header says what each absence means (:mod:`sectormon.data.header`), the only other place
that knows old recordings.

A version-1 slice stored its readings as objects::

    {"unit":"cpu:0","core":0,"cmg":0,"group":"SC1","te":20000000,"tr":19998000,
     "counts":{"CPU_CYCLES":43987000,"INST_RETIRED":39400000}}

(``group``, ``core`` and ``cmg`` optional). :func:`slice_from_v1` is the one reader of that
layout: the reader decodes v1 slices with it directly (old recordings replay fast, without an
intermediate record), and the v1 -> v2 migration builds its rows from what it decoded, so both
accept and refuse the same records with the same messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

from sectormon.data.readings import U64, Row, Slice
from sectormon.io.jsonl import (
    FORMAT_VERSION,
    BadRecord,
    count_problem,
    intern_layout,
    parse_schema,
    slice_fields,
    times_problem,
)

SLICE_SCHEMA_V1 = "sectormon/slice/1"

_INT = {int}

_Fields = tuple[str, "int | None", "int | None", str, int, int, dict[str, int]]


def slice_from_v1(rec: Mapping[str, Any]) -> Slice:
    """A version-1 slice record as a :class:`Slice`; :class:`BadRecord` when malformed."""
    t, index, duration, group, overhead_s, ended = slice_fields(rec)
    raw = rec.get("readings")
    if type(raw) is not list:
        raise BadRecord("slice 'readings' must be a list")
    rows: list[Row] = []
    append = rows.append
    values: list[list[int]] = []
    layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
    for i, r in enumerate(raw):
        try:
            unit = r["unit"]
            te = r["te"]
            tr = r["tr"]
            counts = r["counts"]
            core = r["core"]
            cmg = r["cmg"]
            g = r["group"]
            fast = (
                type(unit) is str
                and type(g) is str
                and type(te) is int
                and type(tr) is int
                and 0 <= tr <= te < U64
                and type(counts) is dict
                and (core is None or type(core) is int)
                and (cmg is None or type(cmg) is int)
            )
        except (KeyError, TypeError, IndexError):
            fast = False
        if not fast:
            try:
                unit, core, cmg, g, te, tr, counts = _fields_checked(i, r, group)
            except BadRecord:
                _check_counts(values)  # an earlier reading's bad count is reported first, as in v1
                raise
        names = tuple(counts)
        shared = layouts.get(names)
        if shared is None:
            shared = layouts[names] = intern_layout(names)
        counted = list(counts.values())
        values.append(counted)
        append(Row(unit, core, cmg, g, te, tr, shared, tuple(counted)))
    if values and not (
        set(map(type, chain.from_iterable(values))) <= _INT
        and min(chain.from_iterable(values), default=0) >= 0
        and max(chain.from_iterable(values), default=0) < U64
    ):
        _check_counts(values)
    return Slice(t, index, duration, group, tuple(rows), overhead_s, ended)


def _check_counts(values: list[list[int]]) -> None:
    for i, counted in enumerate(values):
        for v in counted:
            problem = count_problem(v)
            if problem is not None:
                raise BadRecord(f"reading {i}: {problem}")


def _fields_checked(i: int, r: object, slice_group: str) -> _Fields:
    """One reading with every check spelled out: optional ``group``/``core``/``cmg``, precise errors."""
    if type(r) is not dict:
        raise BadRecord(f"reading {i} must be an object")
    try:
        unit = r["unit"]
        te = r["te"]
        tr = r["tr"]
        counts = r["counts"]
    except KeyError as exc:
        raise BadRecord(f"reading {i} has no {exc.args[0]!r}") from None
    group = r.get("group", slice_group)
    if type(unit) is not str or type(group) is not str:
        raise BadRecord(f"reading {i}: 'unit' and 'group' must be strings")
    problem = times_problem(te, tr)
    if problem is not None:
        raise BadRecord(f"reading {i}: {problem}")
    if type(counts) is not dict:
        raise BadRecord(f"reading {i}: 'counts' must be an object of event -> count")
    for v in counts.values():
        problem = count_problem(v)
        if problem is not None:
            raise BadRecord(f"reading {i}: {problem}")
    core = r.get("core")
    cmg = r.get("cmg")
    if (core is not None and type(core) is not int) or (cmg is not None and type(cmg) is not int):
        raise BadRecord(f"reading {i}: 'core'/'cmg' must be integers or null")
    return unit, core, cmg, group, te, tr, counts


def _v1_to_v2(rec: dict[str, Any]) -> dict[str, Any]:
    """v1 -> v2: a slice's reading objects become rows against an ``events`` table.

    The v1 record is checked on the way (a bad one raises :class:`BadRecord` with the v1 message);
    fields this version does not know are kept.
    """
    kind, _ = parse_schema(rec.get("schema"))
    out = dict(rec)
    out["schema"] = f"sectormon/{kind}/2"
    if kind != "slice":
        return out
    layouts: dict[tuple[str, ...], int] = {}
    events: list[list[str]] = []
    rows: list[list[Any]] = []
    for unit, core, cmg, group, te, tr, names, values in slice_from_v1(rec).rows:
        index = layouts.get(names)
        if index is None:
            index = layouts[names] = len(events)
            events.append(list(names))
        rows.append([unit, core, cmg, group, te, tr, index, list(values)])
    del out["readings"]
    out["events"] = events
    out["readings"] = rows
    return out


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}
"""``MIGRATIONS[v]`` upgrades one record from format version ``v`` to ``v + 1``."""


def migrate(rec: dict[str, Any], version: int) -> dict[str, Any]:
    """Bring a record of ``version`` up to :data:`FORMAT_VERSION`; :class:`BadRecord` if impossible."""
    while version < FORMAT_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise BadRecord(
                f"format version {version} is too old: this sectormon reads versions "
                f"{min(MIGRATIONS, default=FORMAT_VERSION)}..{FORMAT_VERSION}"
            )
        rec = step(rec)
        version += 1
    return rec
