"""JSON Lines encoding of recording records (format version 2): compact, stdlib-only, fast to replay.

A one-hour, 48-core recording holds 8.6 million readings, so a slice stores its readings as rows
against a table of event layouts instead of one object per reading::

    {"schema":"sectormon/slice/2","t":12.34,"index":617,"duration":0.02,"group":"SC1",
     "overhead_s":0.081,"ended":[],"events":[["CPU_CYCLES","INST_RETIRED"]],
     "readings":[["cpu:0",0,0,"SC1",20000000,19998000,0,[43987000,39400000]]]}

A row is ``[unit, core, cmg, group, te, tr, layout, values]``: ``values[i]`` counts
``events[layout][i]``. That is a third of the bytes of version 1 and well under half its
``json.loads`` time, and it decodes straight into :class:`Slice` rows (what the engine takes): one
pass of plain type tests per row (cheaper than transposing the rows with ``zip`` for column checks:
see bench_replay in docs/perf-tuning.md, "Third pass"), and one C-level pass over all the counts of
the slice, never one Python statement per count. Where the install built it, the same check runs
in C instead (:mod:`sectormon.io.native_rows` chooses; this module's check stays the reference and
the fallback). When a check fails, :func:`_row_problem` finds the precise problem, so a bad file
gives a :class:`BadRecord` (turned into a one-line error with the line number by the reader), never
a ``TypeError`` deep inside the metrics engine. Every line stays self-contained (its own
``events``), so a cut file, ``--skip-bad``, seeking and resuming work line by line.

Version 1 slices (one object per reading) are decoded by :mod:`sectormon.io.migrations`.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Mapping
from typing import Any

from sectormon.data.binding import MIGRATION_SOURCES, ThreadBinding
from sectormon.data.readings import MARK_KINDS, U64, Mark, ProcessInfo, Row, Slice, split_unit_key
from sectormon.files.text import is_ascii_digits
from sectormon.io import native_rows
from sectormon.io.strict_json import check_depth, decode_limited

FORMAT_VERSION = 2
"""The version of every record kind this sectormon writes (``sectormon/<kind>/2``)."""

RECORDING_SCHEMA = f"sectormon/recording/{FORMAT_VERSION}"
SLICE_SCHEMA = f"sectormon/slice/{FORMAT_VERSION}"
MARK_SCHEMA = f"sectormon/mark/{FORMAT_VERSION}"
RECORD_KINDS = ("recording", "slice", "mark", "samples", "regions")
ROW_FIELDS = "[unit, core, cmg, group, te, tr, layout, values]"

MAX_SECONDS = 1e9
"""The largest stream time (``t``, ``duration``, ``recording_started``: seconds since the session
started) a record may hold: 31 years. Anything larger is damage, and would make every window
arithmetic meaningless (a float near 1e16 cannot tell two microsecond slices apart)."""

MAX_INDEX = 1 << 63

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
encode = _ENCODER.encode
"""Compact one-line JSON of a JSON-able value (raises ``ValueError`` on NaN/inf: jq cannot read them)."""


def loads(data: bytes) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` (Python's extension:
    jq and every strict reader reject them, and so would our own writers), and values nested
    deeper than the decoder's limit (:func:`sectormon.io.strict_json.decode_limited`): a
    :class:`ValueError` either way."""
    return decode_limited(data.decode(json.detect_encoding(data), "surrogatepass"))


def loads_record(data: bytes) -> Any:
    """:func:`loads` for a record that is kept whole (a header, a mark's ``data``, a job
    header): nested at most :data:`~sectormon.io.strict_json.MAX_DEPTH` levels anywhere, so no
    later copy, comparison or encoding of it can run out of stack."""
    value = loads(data)
    check_depth(value)
    return value


class BadRecord(ValueError):
    """A record that parsed as JSON but is not a valid sectormon record (the reader adds file:line)."""


# --------------------------------------------------------------------------------------------- encode


def slice_record(s: Slice) -> dict[str, Any]:
    """The JSON record of a slice (``te``/``tr`` = time_enabled/time_running in ns).

    Runs on the sampler thread for every slice: one dict lookup and one small list per row, then
    the C encoder.
    """
    layouts: dict[tuple[str, ...], int] = {}
    events: list[tuple[str, ...]] = []
    rows: list[list[Any]] = []
    append = rows.append
    for unit, core, cmg, group, te, tr, names, values in s.rows:
        index = layouts.get(names)
        if index is None:
            index = layouts[names] = len(events)
            events.append(names)
        append([unit, core, cmg, group, te, tr, index, values])
    record: dict[str, Any] = {
        "schema": SLICE_SCHEMA,
        "t": s.t,
        "index": s.index,
        "duration": s.duration,
        "group": s.group,
        "overhead_s": s.overhead_s,
        "ended": list(s.ended),
        "events": events,
        "readings": rows,
    }
    # Optional fields, written only when there is something to say: a slice without them is
    # the very record sectormon wrote before processes were followed.
    if s.processes:
        record["processes"] = [process_record(info) for info in s.processes]
    if s.unit_processes:
        record["unit_processes"] = dict(s.unit_processes)
    if s.target_cpu_s is not None:
        record["target_cpu_s"] = s.target_cpu_s
    if s.target_ended_system_s:
        record["target_ended_system_s"] = s.target_ended_system_s
    if s.bindings:
        record["bindings"] = {unit: binding.record() for unit, binding in s.bindings}
    return record


def process_record(info: ProcessInfo) -> dict[str, Any]:
    """A process as the slice record and the frames' ``procs`` scope name it."""
    return {"pid": info.pid, "command": info.command, "parent": info.parent, "rank": info.rank}


def mark_record(m: Mark) -> dict[str, Any]:
    """The JSON record of a mark."""
    return {"schema": MARK_SCHEMA, "t": m.t, "kind": m.kind, "label": m.label, "data": dict(m.data)}


def header_record(header: Mapping[str, Any]) -> dict[str, Any]:
    """The header with this version's ``schema`` first: the writer writes its own format, whatever
    version a caller's header dict names (the slices after it are always this version)."""
    out: dict[str, Any] = {"schema": RECORDING_SCHEMA}
    out.update((k, v) for k, v in header.items() if k != "schema")
    return out


def encode_slice(s: Slice) -> str:
    return encode(slice_record(s))


def encode_mark(m: Mark) -> str:
    return encode(mark_record(m))


# --------------------------------------------------------------------------------------------- decode


def parse_schema(value: object) -> tuple[str, int]:
    """``"sectormon/slice/2"`` -> ``("slice", 2)``; :class:`BadRecord` for anything else."""
    if not isinstance(value, str):
        raise BadRecord("record has no 'schema' string (expected e.g. 'sectormon/slice/2')")
    parts = value.split("/")
    # ASCII digits only: str.isdigit() takes "²" (int() then fails) and "２" (int() reads 2).
    if len(parts) != 3 or parts[0] != "sectormon" or not is_ascii_digits(parts[2]) or len(parts[2]) > 9:
        raise BadRecord(
            f"unrecognised schema {_short_repr(value)} (expected 'sectormon/<kind>/<version>', "
            "the version in ASCII digits)"
        )
    return parts[1], int(parts[2])


def number(rec: Mapping[str, Any], key: str, default: float | None = None) -> float:
    """``rec[key]`` as a finite float (ints accepted, bools and strings not)."""
    value = finite_float(rec.get(key, default))
    if value is None:
        raise BadRecord(f"{key!r} must be a finite number, got {_short_repr(rec.get(key, default))}")
    return value


def finite_float(value: object) -> float | None:
    """``value`` as a finite float: a JSON number (not a bool) that a float holds, else ``None``
    (a 400-digit integer is ``None`` here, where ``float()`` raises ``OverflowError``)."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def stream_seconds(rec: Mapping[str, Any], key: str, default: float | None = None, what: str = "") -> float:
    """``rec[key]`` as seconds of stream time: a number from 0 to :data:`MAX_SECONDS`."""
    value = number(rec, key, default)
    if not 0.0 <= value <= MAX_SECONDS:
        raise BadRecord(
            f"{what}{key!r} must be from 0 to {MAX_SECONDS:g} seconds, got {value:g} "
            "(a time no session reaches: the line is damaged)"
        )
    return value


def slice_fields(rec: Mapping[str, Any]) -> tuple[float, int, float, str, float, tuple[str, ...]]:
    """The checked ``(t, index, duration, group, overhead_s, ended)`` of a slice record (any version)."""
    index = rec.get("index")
    group = rec.get("group")
    if type(index) is not int or not 0 <= index < MAX_INDEX:
        raise BadRecord(f"slice 'index' must be an integer from 0 to 2^63-1, got {_short_repr(index)}")
    if type(group) is not str:
        raise BadRecord(f"slice 'group' must be a string, got {group!r}")
    ended = rec.get("ended", [])
    if type(ended) is not list or not all(type(u) is str for u in ended):
        raise BadRecord("slice 'ended' must be a list of unit keys")
    # The sampler writes a clock's differences: never below 0, never beyond any session.
    duration = stream_seconds(rec, "duration", what="slice ")
    overhead_s = stream_seconds(rec, "overhead_s", 0.0, what="slice ")
    t = stream_seconds(rec, "t", what="slice ")
    # A slice ends at t and began `duration` before, never before the session did (0); the
    # slack is the rounding of the two clock differences the sampler writes.
    if duration > t * (1 + 1e-9) + 1e-12:
        raise BadRecord(
            f"slice 'duration' ({duration:g} s) is longer than its 't' ({t:g} s): it would begin "
            "before the session did (the line is damaged)"
        )
    return (t, index, duration, group, overhead_s, tuple(ended))


# Event layouts are interned for the whole process: equal layouts are one tuple object in every
# slice of every stream (a consumer may compare them by identity, also across a seek), and the
# table stays small (a profile has a handful of groups). A file with absurdly many layouts only
# stops growing the table; its rows still share one tuple per layout within a slice.
_LAYOUTS: dict[tuple[str, ...], tuple[str, ...]] = {}
MAX_INTERNED_LAYOUTS = 4096


def intern_layout(names: tuple[str, ...]) -> tuple[str, ...]:
    """The shared tuple for a layout of event names (the caller has checked them)."""
    known = _LAYOUTS.get(names)
    if known is not None:
        return known
    if len(_LAYOUTS) < MAX_INTERNED_LAYOUTS:
        return _LAYOUTS.setdefault(names, names)
    return names


_STR = {str}
_INT = {int}


def _layouts(raw: object) -> list[tuple[str, ...]]:
    """The slice's ``events`` table: lists of distinct event names."""
    if type(raw) is not list:
        raise BadRecord(f"slice 'events' must be a list of event-name lists, got {_short_repr(raw)}")
    out: list[tuple[str, ...]] = []
    for i, names in enumerate(raw):
        key = tuple(names) if type(names) is list else None
        try:
            known = _LAYOUTS.get(key) if key is not None else None
        except TypeError:  # unhashable: a list or object among the names
            known = None
        if known is None:
            if key is None or (key and set(map(type, key)) != _STR):
                raise BadRecord(f"slice 'events'[{i}] must be a list of event names (strings)")
            if len(set(key)) != len(key):
                raise BadRecord(f"slice 'events'[{i}] names an event twice")
            known = intern_layout(key)
        out.append(known)
    return out


ROWS_PATH = native_rows.choose()
"""The row check this process runs, ``c`` or ``python`` (:mod:`sectormon.io.native_rows`)."""
_compiled_rows = native_rows.slice_rows(ROWS_PATH)


def slice_from_record(rec: Mapping[str, Any], *, text: bytes | None = None) -> Slice:
    """A current-version slice record as a :class:`Slice`; :class:`BadRecord` when malformed.

    ``text`` is the record's JSON text where the caller has it (the reader: the line's bytes). The
    Python row check uses it: a text without ``true`` or ``false`` cannot hold a bool among the
    counts, which are then checked by the cheaper of the two tests in :func:`_rows`. The compiled
    check tests every type itself and never reads it.
    """
    t, index, duration, group, overhead_s, ended = slice_fields(rec)
    layouts = _layouts(rec.get("events"))
    raw = rec.get("readings")
    if type(raw) is not list:
        raise BadRecord("slice 'readings' must be a list")
    if _compiled_rows is not None:
        checked = _compiled_rows(raw, layouts, Row)
        if checked is None:  # the Python side names the first bad reading, as on its own path
            raise _row_problem(raw, len(raw) - 1, layouts)
        rows = checked
    else:
        rows = _rows(raw, layouts, text is not None and no_bools_in(text))
    bindings = bindings_from_record(rec["bindings"]) if "bindings" in rec else ()
    if "processes" in rec or "unit_processes" in rec or "target_cpu_s" in rec:
        processes, unit_processes, cpu_s, ended_s = process_fields(rec)
        return Slice(
            t,
            index,
            duration,
            group,
            rows,
            overhead_s,
            ended,
            processes,
            unit_processes,
            cpu_s,
            ended_s,
            bindings=bindings,
        )
    return Slice(t, index, duration, group, rows, overhead_s, ended, bindings=bindings)


def _optional_int(value: object, what: str) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not 0 <= value < MAX_INDEX:
        raise BadRecord(f"{what} must be a non-negative integer or null, got {_short_repr(value)}")
    return value


def process_from_record(raw: object) -> ProcessInfo:
    """A ``{"pid", "command", "parent", "rank"}`` object as a :class:`ProcessInfo`."""
    if not isinstance(raw, dict):
        raise BadRecord(f"slice 'processes' entries must be objects, got {_short_repr(raw)}")
    pid = _optional_int(raw.get("pid"), "process 'pid'")
    command = raw.get("command")
    if pid is None or type(command) is not str:
        raise BadRecord(f"a process needs an integer 'pid' and a string 'command', got {_short_repr(raw)}")
    parent = _optional_int(raw.get("parent"), "process 'parent'")
    return ProcessInfo(pid, command, parent, _optional_int(raw.get("rank"), "process 'rank'"))


def process_fields(
    rec: Mapping[str, Any],
) -> tuple[tuple[ProcessInfo, ...], tuple[tuple[str, int], ...], float | None, float]:
    """The checked optional process fields of a slice record: ``processes``, ``unit_processes``,
    ``target_cpu_s`` and ``target_ended_system_s`` (absent: none, none, ``None``, 0)."""
    raw = rec.get("processes", [])
    if type(raw) is not list:
        raise BadRecord(f"slice 'processes' must be a list of processes, got {_short_repr(raw)}")
    processes = tuple(process_from_record(entry) for entry in raw)
    mapping = rec.get("unit_processes", {})
    if not isinstance(mapping, dict):
        raise BadRecord(f"slice 'unit_processes' must map unit keys to pids, got {_short_repr(mapping)}")
    pairs: list[tuple[str, int]] = []
    for unit, pid in mapping.items():
        checked = _optional_int(pid, f"slice 'unit_processes'[{unit!r}]")
        if checked is None:
            raise BadRecord(f"slice 'unit_processes'[{unit!r}] must be a pid, got null")
        pairs.append((unit, checked))
    cpu = rec.get("target_cpu_s")
    ended_system = rec.get("target_ended_system_s")
    return (
        processes,
        tuple(pairs),
        None if cpu is None else stream_seconds(rec, "target_cpu_s", what="slice "),
        0.0 if ended_system is None else stream_seconds(rec, "target_ended_system_s", what="slice "),
    )


MAX_CPU_NUMBER = 1 << 16
"""Above any Linux NR_CPUS: a larger CPU number in a binding is damage."""


def bindings_from_record(raw: object) -> tuple[tuple[str, ThreadBinding], ...]:
    """A slice's ``bindings`` (thread unit key -> ``{"cpus", "migrations", "migrations_from"}``),
    checked."""
    if not isinstance(raw, dict):
        raise BadRecord(f"slice 'bindings' must map thread unit keys to bindings, got {_short_repr(raw)}")
    out: list[tuple[str, ThreadBinding]] = []
    for unit, entry in raw.items():
        what = f"slice 'bindings'[{unit!r}]"
        try:
            kind, _ = split_unit_key(unit)
        except ValueError:
            kind = ""
        if kind != "thread":
            raise BadRecord(
                f"slice 'bindings' keys must be thread unit keys like 'thread:4242', got {unit!r}"
            )
        if not isinstance(entry, dict):
            raise BadRecord(f"{what} must be an object, got {_short_repr(entry)}")
        cpus = entry.get("cpus")
        if (
            type(cpus) is not list
            or not cpus
            or not all(type(c) is int and 0 <= c < MAX_CPU_NUMBER for c in cpus)
        ):
            raise BadRecord(
                f"{what}['cpus'] must be a non-empty list of CPU numbers, got {_short_repr(cpus)}"
            )
        migrations = _optional_int(entry.get("migrations"), f"{what}['migrations']")
        source = entry.get("migrations_from")
        if (source is None) != (migrations is None) or (
            source is not None and source not in MIGRATION_SOURCES
        ):
            raise BadRecord(
                f"{what}['migrations_from'] must be one of {', '.join(MIGRATION_SOURCES)} with a count, "
                f"or null without one; got {_short_repr(source)}"
            )
        out.append((unit, ThreadBinding(tuple(sorted(set(cpus))), migrations, source)))
    return tuple(out)


def no_bools_in(text: bytes) -> bool:
    """Whether a record's JSON text has no ``true``/``false`` (the shortcut ``text`` gives
    :func:`slice_from_record`'s Python row check); a string that contains one only costs it."""
    return b"true" not in text and b"false" not in text


def _counts_ok(counts: list[Any], no_bools: bool) -> bool:
    """Whether every count is an ``int`` in [0, 2**64) (never a bool, float or string), C-level.

    ``array("Q", ...)`` takes ints in [0, 2**64) and bools, and raises for anything else: with
    ``no_bools`` it is the whole test; otherwise the types are checked first. A count is a delta
    of the kernel's u64 counter, so 2**64 and above is damage.
    """
    if not no_bools and set(map(type, counts)) != _INT:
        return False
    try:
        array("Q", counts)
    except (TypeError, OverflowError):
        return False
    return True


def _rows(raw: list[Any], layouts: list[tuple[str, ...]], no_bools: bool) -> tuple[Row, ...]:
    """The checked rows: one pass of plain type tests per row, then one C-level pass over the counts.

    The counts (most of a slice) are gathered into one list and checked at once
    (:func:`_counts_ok`). When anything fails, :func:`_row_problem` names the first bad reading as
    a row-by-row check would.
    """
    out: list[Row] = []
    append = out.append
    new_row = tuple.__new__  # Row's fields are checked here: no need for its Python-level __new__
    counts: list[Any] = []
    extend = counts.extend
    n = len(layouts)
    for r in raw:
        if type(r) is list and len(r) == 8:
            unit, core, cmg, group, te, tr, layout, values = r
            if (
                type(unit) is str
                and type(group) is str
                and type(te) is int
                and type(tr) is int
                and type(layout) is int
                and type(values) is list
                and (core is None or type(core) is int)
                and (cmg is None or type(cmg) is int)
                and 0 <= tr <= te < U64
                and 0 <= layout < n
            ):
                names = layouts[layout]
                if len(values) == len(names):
                    extend(values)
                    append(new_row(Row, (unit, core, cmg, group, te, tr, names, tuple(values))))
                    continue
        raise _row_problem(raw, len(out), layouts)
    if counts and not _counts_ok(counts, no_bools):
        raise _row_problem(raw, len(out), layouts)
    return tuple(out)


def _row_problem(raw: list[Any], upto: int, layouts: list[tuple[str, ...]]) -> BadRecord:
    """The precise error for the first bad reading among ``raw[:upto + 1]``, checked row by row."""
    for i, r in enumerate(raw[: upto + 1]):
        problem = _row_error(i, r, layouts)
        if problem is not None:
            return BadRecord(problem)
    return BadRecord(f"reading {upto} is malformed")  # unreachable: the checks above are the same


def _row_error(i: int, r: object, layouts: list[tuple[str, ...]]) -> str | None:
    """What is wrong with one row, or ``None``; every check of :func:`_rows`, spelled out."""
    if type(r) is not list:
        return f"reading {i} must be a list {ROW_FIELDS}"
    if len(r) != 8:
        return f"reading {i} has {len(r)} fields, expected 8: {ROW_FIELDS}"
    unit, core, cmg, group, te, tr, layout, values = r
    if type(unit) is not str or type(group) is not str:
        return f"reading {i}: 'unit' and 'group' must be strings"
    if (core is not None and type(core) is not int) or (cmg is not None and type(cmg) is not int):
        return f"reading {i}: 'core'/'cmg' must be integers or null"
    problem = times_problem(te, tr)
    if problem is not None:
        return f"reading {i}: {problem}"
    if type(layout) is not int or not 0 <= layout < len(layouts):
        return (
            f"reading {i}: layout must be an index into the slice's 'events' "
            f"(0..{len(layouts) - 1}), got {_short_repr(layout)}"
        )
    if type(values) is not list:
        return f"reading {i}: values must be a list of counts"
    names = layouts[layout]
    if len(values) != len(names):
        return f"reading {i}: {len(values)} values for the {len(names)} events of layout {layout}"
    for v in values:
        problem = count_problem(v)
        if problem is not None:
            return f"reading {i}: {problem}"
    return None


def times_problem(te: object, tr: object) -> str | None:
    """What is wrong with a reading's ``te``/``tr`` (ns), or ``None``: u64 deltas, and the kernel
    never runs a group longer than it is enabled."""
    if type(te) is not int or type(tr) is not int or not (0 <= te < U64 and 0 <= tr < U64):
        return "'te'/'tr' must be non-negative integers (ns) below 2^64"
    if tr > te:
        return (
            f"'tr' ({tr} ns running) exceeds 'te' ({te} ns enabled): a group never runs longer than enabled"
        )
    return None


def count_problem(value: object) -> str | None:
    """What is wrong with one count, or ``None``: a delta of a u64 counter."""
    if type(value) is not int or value < 0:
        return f"counts must be non-negative integers, got {_short_repr(value)}"
    if value >= U64:
        return f"counts must be below 2^64 (a u64 counter's delta), got {_short_repr(value)}"
    return None


def mark_from_record(rec: Mapping[str, Any]) -> Mark:
    """A mark record (versions 1 and 2 have the same fields) as a :class:`Mark`."""
    kind = rec.get("kind")
    label = rec.get("label", "")
    data = rec.get("data", {})
    if type(kind) is not str:
        raise BadRecord(f"mark 'kind' must be a string, got {kind!r}")
    if type(label) is not str:
        raise BadRecord(f"mark 'label' must be a string, got {label!r}")
    if type(data) is not dict:
        raise BadRecord(f"mark 'data' must be an object, got {_short_repr(data)}")
    try:
        check_depth(data)
    except ValueError as exc:
        raise BadRecord(f"mark 'data' is {exc}") from None
    return Mark(t=stream_seconds(rec, "t", what="mark "), kind=kind, label=label, data=data)


def known_mark_kind(kind: str) -> bool:
    return kind in MARK_KINDS


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
