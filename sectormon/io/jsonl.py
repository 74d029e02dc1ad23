"""JSON Lines encoding of recording records: compact, stdlib-only, and fast on the hot path.

A recording holds millions of readings, so the encoder is one prebuilt C-accelerated
``json.JSONEncoder`` with compact separators, and the decoder builds :class:`Reading` objects
without going through the frozen dataclass ``__init__`` (which costs one ``object.__setattr__`` per
field and dominated replay time). Every decoded value is type-checked first, so a bad file gives a
:class:`BadRecord` (turned into a one-line error with the line number by the reader), never a
``TypeError`` deep inside the metrics engine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from sectormon.readings import MARK_KINDS, Mark, Reading, Slice

FORMAT_VERSION = 1
"""The version of every record kind this sectormon writes (``sectormon/<kind>/1``)."""

RECORDING_SCHEMA = f"sectormon/recording/{FORMAT_VERSION}"
SLICE_SCHEMA = f"sectormon/slice/{FORMAT_VERSION}"
MARK_SCHEMA = f"sectormon/mark/{FORMAT_VERSION}"
RECORD_KINDS = ("recording", "slice", "mark")

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
encode = _ENCODER.encode
"""Compact one-line JSON of a JSON-able value (raises ``ValueError`` on NaN/inf: jq cannot read them)."""


class BadRecord(ValueError):
    """A record that parsed as JSON but is not a valid sectormon record (the reader adds file:line)."""


# --------------------------------------------------------------------------------------------- encode


def slice_record(s: Slice) -> dict[str, Any]:
    """The JSON record of a slice (``te``/``tr`` = time_enabled/time_running in ns)."""
    return {
        "schema": SLICE_SCHEMA,
        "t": s.t,
        "index": s.index,
        "duration": s.duration,
        "group": s.group,
        "overhead_s": s.overhead_s,
        "ended": list(s.ended),
        "readings": [
            {
                "unit": r.unit,
                "core": r.core,
                "cmg": r.cmg,
                "group": r.group,
                "te": r.time_enabled,
                "tr": r.time_running,
                "counts": r.counts if type(r.counts) is dict else dict(r.counts),
            }
            for r in s.readings
        ],
    }


def mark_record(m: Mark) -> dict[str, Any]:
    """The JSON record of a mark."""
    return {"schema": MARK_SCHEMA, "t": m.t, "kind": m.kind, "label": m.label, "data": dict(m.data)}


def header_record(header: Mapping[str, Any]) -> dict[str, Any]:
    """The header with its ``schema`` first (added when missing, kept when the caller set one)."""
    out: dict[str, Any] = {"schema": header.get("schema", RECORDING_SCHEMA)}
    out.update((k, v) for k, v in header.items() if k != "schema")
    return out


def encode_slice(s: Slice) -> str:
    return encode(slice_record(s))


def encode_mark(m: Mark) -> str:
    return encode(mark_record(m))


# --------------------------------------------------------------------------------------------- decode


def parse_schema(value: object) -> tuple[str, int]:
    """``"sectormon/slice/1"`` -> ``("slice", 1)``; :class:`BadRecord` for anything else."""
    if not isinstance(value, str):
        raise BadRecord("record has no 'schema' string (expected e.g. 'sectormon/slice/1')")
    parts = value.split("/")
    if len(parts) != 3 or parts[0] != "sectormon" or not parts[2].isdigit():
        raise BadRecord(f"unrecognised schema {value!r} (expected 'sectormon/<kind>/<version>')")
    return parts[1], int(parts[2])


def _number(rec: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = rec.get(key, default)
    if type(value) is float:
        if math.isfinite(value):
            return value
    elif type(value) is int:
        return float(value)
    raise BadRecord(f"{key!r} must be a finite number, got {value!r}")


# Writing the slots directly skips the frozen-dataclass __init__, 2.5x faster per reading; the
# values are checked before, and test_io_records asserts the result equals Reading(...).
_NEW = object.__new__
_SLOTS: dict[str, Any] = dict(vars(Reading))
_SET_UNIT = _SLOTS["unit"].__set__
_SET_CORE = _SLOTS["core"].__set__
_SET_CMG = _SLOTS["cmg"].__set__
_SET_GROUP = _SLOTS["group"].__set__
_SET_TE = _SLOTS["time_enabled"].__set__
_SET_TR = _SLOTS["time_running"].__set__
_SET_COUNTS = _SLOTS["counts"].__set__


def _new_reading(
    unit: str, core: int | None, cmg: int | None, group: str, te: int, tr: int, counts: dict[str, int]
) -> Reading:
    reading: Reading = _NEW(Reading)
    _SET_UNIT(reading, unit)
    _SET_CORE(reading, core)
    _SET_CMG(reading, cmg)
    _SET_GROUP(reading, group)
    _SET_TE(reading, te)
    _SET_TR(reading, tr)
    _SET_COUNTS(reading, counts)
    return reading


def _readings(raw: object, slice_group: str) -> tuple[Reading, ...]:
    """The readings of a slice; the fast path takes the writer's full layout, the rest goes to
    :func:`_reading_checked` (optional keys, and the precise error)."""
    if type(raw) is not list:
        raise BadRecord("slice 'readings' must be a list")
    out: list[Reading] = []
    append = out.append
    for i, r in enumerate(raw):
        try:
            unit = r["unit"]
            te = r["te"]
            tr = r["tr"]
            counts = r["counts"]
            core = r["core"]
            cmg = r["cmg"]
            group = r["group"]
        except (KeyError, TypeError, IndexError):
            append(_reading_checked(i, r, slice_group))
            continue
        if not (
            type(unit) is str
            and type(group) is str
            and type(te) is int
            and type(tr) is int
            and te >= 0
            and tr >= 0
            and type(counts) is dict
            and (core is None or type(core) is int)
            and (cmg is None or type(cmg) is int)
        ):
            append(_reading_checked(i, r, slice_group))
            continue
        for v in counts.values():
            if type(v) is not int or v < 0:
                raise BadRecord(f"reading {i}: counts must be non-negative integers, got {v!r}")
        reading = _NEW(Reading)  # inlined _new_reading: this loop runs once per reading
        _SET_UNIT(reading, unit)
        _SET_CORE(reading, core)
        _SET_CMG(reading, cmg)
        _SET_GROUP(reading, group)
        _SET_TE(reading, te)
        _SET_TR(reading, tr)
        _SET_COUNTS(reading, counts)
        append(reading)
    return tuple(out)


def _reading_checked(i: int, r: object, slice_group: str) -> Reading:
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
    if type(te) is not int or type(tr) is not int or te < 0 or tr < 0:
        raise BadRecord(f"reading {i}: 'te'/'tr' must be non-negative integers (ns)")
    if type(counts) is not dict:
        raise BadRecord(f"reading {i}: 'counts' must be an object of event -> count")
    for v in counts.values():
        if type(v) is not int or v < 0:
            raise BadRecord(f"reading {i}: counts must be non-negative integers, got {v!r}")
    core = r.get("core")
    cmg = r.get("cmg")
    if (core is not None and type(core) is not int) or (cmg is not None and type(cmg) is not int):
        raise BadRecord(f"reading {i}: 'core'/'cmg' must be integers or null")
    return _new_reading(unit, core, cmg, group, te, tr, counts)


def slice_from_record(rec: Mapping[str, Any]) -> Slice:
    """A current-version slice record as a :class:`Slice`; :class:`BadRecord` when malformed."""
    index = rec.get("index")
    group = rec.get("group")
    if type(index) is not int:
        raise BadRecord(f"slice 'index' must be an integer, got {index!r}")
    if type(group) is not str:
        raise BadRecord(f"slice 'group' must be a string, got {group!r}")
    ended = rec.get("ended", [])
    if type(ended) is not list or not all(type(u) is str for u in ended):
        raise BadRecord("slice 'ended' must be a list of unit keys")
    return Slice(
        t=_number(rec, "t"),
        index=index,
        duration=_number(rec, "duration"),
        group=group,
        readings=_readings(rec.get("readings"), group),
        overhead_s=_number(rec, "overhead_s", 0.0),
        ended=tuple(ended),
    )


def mark_from_record(rec: Mapping[str, Any]) -> Mark:
    """A current-version mark record as a :class:`Mark`; :class:`BadRecord` when malformed."""
    kind = rec.get("kind")
    label = rec.get("label", "")
    data = rec.get("data", {})
    if type(kind) is not str:
        raise BadRecord(f"mark 'kind' must be a string, got {kind!r}")
    if type(label) is not str:
        raise BadRecord(f"mark 'label' must be a string, got {label!r}")
    if type(data) is not dict:
        raise BadRecord(f"mark 'data' must be an object, got {data!r}")
    return Mark(t=_number(rec, "t"), kind=kind, label=label, data=data)


def known_mark_kind(kind: str) -> bool:
    return kind in MARK_KINDS
