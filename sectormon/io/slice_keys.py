"""Where a slice line is in time, read from its first bytes: for scanning and splitting a file.

A replay's timeline, a seek and the spans read by a replay's reader processes only need each
slice's ``t`` and ``index``. The writer always puts ``schema``, ``t``, ``index`` and ``duration``
first, so those are cut out of the line without a JSON parse; a line in any other layout is
parsed in full, so a file from another writer is read the same, only slower. Nothing here
checks a line beyond those fields: the reader that decodes it does.
"""

from __future__ import annotations

from sectormon.io.jsonl import (
    FORMAT_VERSION,
    MAX_INDEX,
    MAX_SECONDS,
    SLICE_SCHEMA,
    loads,
    parse_schema,
    stream_seconds,
)
from sectormon.io.migrations import SLICE_SCHEMA_V1

_SLICE_PREFIXES = tuple(
    b'{"schema":"' + schema.encode() + b'","t":' for schema in (SLICE_SCHEMA, SLICE_SCHEMA_V1)
)


_INDEX_KEY = b',"index":'
_DURATION_KEY = b',"duration":'


def slice_head(line: bytes) -> tuple[float, int, float] | None:
    """``(t, index, duration)`` of a slice line in a writer's layout (``schema``, ``t``, ``index``
    and ``duration`` first, in that order), without parsing the rest; else ``None`` (also for a
    value out of range: the full decoder says what is wrong)."""
    for prefix in _SLICE_PREFIXES:
        if line.startswith(prefix):
            start = len(prefix)
            break
    else:
        return None
    end = line.find(b",", start)
    if not line.startswith(_INDEX_KEY, end):
        return None
    try:
        t = float(line[start:end])
    except ValueError:
        return None
    start = end + len(_INDEX_KEY)
    end = line.find(b",", start)
    digits = line[start:end]
    if not (digits.isdigit() and len(digits) <= 19 and line.startswith(_DURATION_KEY, end)):
        return None
    index = int(digits)
    start = end + len(_DURATION_KEY)
    end = line.find(b",", start)
    try:
        duration = float(line[start:end])
    except ValueError:
        return None
    if not (0.0 <= t <= MAX_SECONDS and index < MAX_INDEX and 0.0 <= duration <= MAX_SECONDS):
        return None
    return t, index, duration


def index_of(line: bytes) -> int | None:
    """The ``index`` of a slice line (``None`` for any other line, or a bad one)."""
    head = slice_head(line)
    if head is not None:
        return head[1]
    try:
        rec = loads(line)
        index = rec.get("index") if type(rec) is dict else None
    except (ValueError, RecursionError):
        return None
    return index if type(index) is int else None


def slice_time(line: bytes) -> float | None:
    """``t`` of a line that a reader yields as a slice (if the line is valid at all), else ``None``
    (:func:`slice_key` without the index)."""
    key = slice_key(line)
    return None if key is None else key[0]


def slice_key(line: bytes) -> tuple[float, int | None] | None:
    """``(t, index)`` of a line that a reader yields as a slice (if the line is valid at all), else
    ``None``; ``index`` is ``None`` when it is not one (the decoder stops there).

    The writer's layout is read without a JSON parse, when nothing else in the line could be a
    second ``schema``, ``t`` or ``index`` key (with duplicate keys JSON takes the last); anything
    else is parsed. A bad line gives ``None``: the reader that reads it fully stops there with an
    error.
    """
    head = slice_head(line)
    if (
        head is not None
        and line.rstrip().endswith(b"}")
        and line.count(b'"schema"') == 1
        and line.count(b'"t"') == 1
        and line.count(b'"index"') == 1
    ):
        return head[0], head[1]
    try:
        rec = loads(line)
        if type(rec) is not dict:
            return None
        kind, version = parse_schema(rec.get("schema"))
        if kind != "slice" or version > FORMAT_VERSION:
            return None
        index = rec.get("index")
        # Migrations keep "t" and "index"; the decoders read "t" as stream_seconds does.
        return stream_seconds(rec, "t"), index if type(index) is int else None
    except (ValueError, RecursionError):  # not JSON, BadRecord (a ValueError)
        return None
