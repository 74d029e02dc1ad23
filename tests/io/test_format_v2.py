"""Format version 2 (readings as rows) and the rows reader: round trips, exact checks, v1 migration."""

from __future__ import annotations

import copy
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sectormon.data.readings import Mark, Row, Slice
from sectormon.io import MIGRATIONS, RecordingError, open_recording, read_recording
from sectormon.io import reader as reader_module
from sectormon.io.header_codec import header_to_json
from sectormon.io.jsonl import (
    BadRecord,
    _row_error,
    encode,
    encode_slice,
    no_bools_in,
    slice_from_record,
    slice_record,
)
from sectormon.io.migrations import slice_from_v1
from sectormon.io.reader import scan_recording
from tests.io.recording_synth import header, slices, stream, v1_lines, v1_slice_record, write
from tests.io.row_paths import PATHS, row_check
from tests.rows import row

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

U64 = 1 << 64


# ------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_slices_round_trip(tmp_path: Path, name: str) -> None:
    items = stream(30, marks={10: Mark(t=0.2, kind="baseline", label="b", data={"why": "test"})})
    path = write(tmp_path / name, items)
    with open_recording(path) as s:
        assert tuple(s) == tuple(items)


def test_rows_share_one_names_tuple_per_layout(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(9))
    with open_recording(path) as s:
        rows = [r for item in s if isinstance(item, Slice) for r in item.rows]
    by_names: dict[tuple[str, ...], set[int]] = {}
    for r in rows:
        by_names.setdefault(r.names, set()).add(id(r.names))
    assert len(by_names) == 3  # three groups, three layouts...
    assert all(len(ids) == 1 for ids in by_names.values())  # ...each one object, in every slice


def test_iterated_once_and_resume_after(tmp_path: Path) -> None:
    items = stream(12, marks={4: Mark(t=0.08, kind="bookmark", label="x")})
    path = write(tmp_path / "r.jsonl", items)
    with open_recording(path) as s:
        assert tuple(s) == tuple(items)
        with pytest.raises(RuntimeError, match="iterated once"):
            iter(s)
    with open_recording(path) as s:
        # line 1 is the header, 2..5 slices 0..3, 6 the mark: resume after the mark
        rest = tuple(s.resume_after(6, last_slice_t=0.08))
    assert rest == tuple(items[5:])


def test_decoded_readings_equal_constructed_ones() -> None:
    s = next(slices(1))
    decoded = slice_from_record(json.loads(encode_slice(s)))
    assert decoded == s
    for r in decoded.rows:
        assert type(r) is Row and type(r.names) is tuple and type(r.values) is tuple


names_st = st.lists(st.sampled_from(["A", "B", "CPU_CYCLES", "é", "x y", ""]), unique=True, max_size=4)
reading_st = st.builds(
    lambda unit, core, cmg, group, te, running, names, values: row(
        unit, core, cmg, group, te, te * running // 2, dict(zip(names, values[: len(names)], strict=False))
    ),
    st.sampled_from(["cpu:0", "thread:7", "cmg:1", "thread:12345"]),
    st.none() | st.integers(-3, 50),
    st.none() | st.integers(-1, 3),
    st.sampled_from(["SC1", "SC2", "pa1"]),
    st.integers(0, U64 - 1),
    st.sampled_from([0, 1, 2]),  # time running: none, half or all of the time enabled
    names_st,
    st.lists(st.integers(0, U64 - 1), min_size=4, max_size=4),
).filter(lambda r: len(r.names) == len(set(r.names)))


@SETTINGS
@given(
    rows=st.lists(reading_st, max_size=6),
    t=st.floats(0.02, 1e6),  # a slice never begins before the session (duration <= t)
    ended=st.lists(st.sampled_from(["thread:7", "cpu:0"]), max_size=2),
)
def test_any_slice_round_trips(rows: list[Row], t: float, ended: list[str]) -> None:
    s = Slice(t=t, index=3, duration=0.02, group="SC1", rows=tuple(rows), ended=tuple(ended))
    line = encode_slice(s)
    rec = json.loads(line)
    for path in PATHS:  # the Python check takes the line's text for its shortcut; the compiled one
        with row_check(path):
            assert slice_from_record(rec) == s
            decoded = slice_from_record(json.loads(line), text=line.encode())
        assert decoded == s
        assert encode_slice(decoded) == line


# ------------------------------------------------------------------------------------- bad records


def v2_lines(n: int = 3) -> list[str]:
    return [encode({"schema": "sectormon/recording/2", **header()}), *(encode_slice(s) for s in slices(n))]


def edit(line: str, change: Any) -> str:
    rec = json.loads(line)
    change(rec)
    return encode(rec)


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(rec: dict[str, Any]) -> None:
        target: Any = rec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_set(("readings", 1, 7, 0), -5), "reading 1: counts must be non-negative integers, got -5"),
        (_set(("readings", 0, 7, 1), True), "reading 0: counts must be non-negative integers, got True"),
        (_set(("readings", 0, 7, 1), 1.0), "reading 0: counts must be non-negative integers, got 1.0"),
        (_set(("readings", 0, 7, 1), "7"), "reading 0: counts must be non-negative integers, got '7'"),
        (_set(("readings", 1, 7), [1]), "reading 1: 1 values for the 3 events of layout 0"),
        (_set(("readings", 1, 7), {}), "reading 1: values must be a list of counts"),
        (_set(("readings", 1, 6), 1), "reading 1: layout must be an index into the slice's 'events' (0..0)"),
        (_set(("readings", 1, 6), -1), "reading 1: layout must be an index into the slice's 'events'"),
        (_set(("readings", 1, 6), False), "reading 1: layout must be an index"),
        (_set(("readings", 0, 4), -1), "reading 0: 'te'/'tr' must be non-negative integers (ns)"),
        (_set(("readings", 0, 4), U64), "reading 0: 'te'/'tr' must be non-negative integers (ns) below 2^64"),
        (_set(("readings", 0, 5), 10**12), "reading 0: 'tr' (1000000000000 ns running) exceeds 'te'"),
        (
            _set(("readings", 1, 7, 0), U64),
            "reading 1: counts must be below 2^64 (a u64 counter's delta), got",
        ),
        (_set(("readings", 1, 7, 2), 2**70), "reading 1: counts must be below 2^64"),
        (_set(("readings", 0, 5), True), "reading 0: 'te'/'tr' must be non-negative integers (ns)"),
        (_set(("readings", 0, 5), 2.5), "reading 0: 'te'/'tr' must be non-negative integers (ns)"),
        (_set(("readings", 0, 1), "0"), "reading 0: 'core'/'cmg' must be integers or null"),
        (_set(("readings", 0, 2), False), "reading 0: 'core'/'cmg' must be integers or null"),
        (_set(("readings", 0, 0), 5), "reading 0: 'unit' and 'group' must be strings"),
        (_set(("readings", 0, 3), None), "reading 0: 'unit' and 'group' must be strings"),
        (_set(("readings", 1), {"unit": "cpu:0"}), "reading 1 must be a list [unit, core, cmg, group"),
        (lambda rec: rec["readings"][1].pop(), "reading 1 has 7 fields, expected 8"),
        (_set(("readings",), {}), "slice 'readings' must be a list"),
        (_set(("events",), None), "slice 'events' must be a list of event-name lists, got None"),
        (_set(("events", 0), "TASK_CLOCK"), "slice 'events'[0] must be a list of event names"),
        (_set(("events", 0, 1), 3), "slice 'events'[0] must be a list of event names"),
        (_set(("events", 0, 1), ["x"]), "slice 'events'[0] must be a list of event names"),
        (_set(("events", 0, 1), "TASK_CLOCK"), "slice 'events'[0] names an event twice"),
        (lambda rec: rec.pop("events"), "slice 'events' must be a list of event-name lists, got None"),
        (_set(("index",), 1.5), "slice 'index' must be an integer from 0 to 2^63-1, got 1.5"),
        (_set(("t",), "1"), "'t' must be a finite number, got '1'"),
        (_set(("t",), 1e12), "slice 't' must be from 0 to 1e+09 seconds, got 1e+12"),
        (_set(("t",), 2**64), "slice 't' must be from 0 to 1e+09 seconds, got 1.84467e+19"),
        (_set(("t",), 1e308), "slice 't' must be from 0 to 1e+09 seconds, got 1e+308"),
        (_set(("t",), -0.5), "slice 't' must be from 0 to 1e+09 seconds, got -0.5"),
        (_set(("index",), -1), "slice 'index' must be an integer from 0 to 2^63-1, got -1"),
        (_set(("duration",), -1), "slice 'duration' must be from 0 to 1e+09 seconds, got -1"),
        (_set(("duration",), 1e308), "slice 'duration' must be from 0 to 1e+09 seconds, got 1e+308"),
        (_set(("overhead_s",), -0.5), "slice 'overhead_s' must be from 0 to 1e+09 seconds, got -0.5"),
        (_set(("ended",), [1]), "slice 'ended' must be a list of unit keys"),
    ],
)
def test_bad_v2_slice_is_one_line_naming_the_line(tmp_path: Path, change: Any, problem: str) -> None:
    lines = v2_lines()
    lines[2] = edit(lines[2], change)
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError) as err, open_recording(path) as s:
        list(s)
    msg = str(err.value)
    assert msg.startswith(f"{path}:3: {problem}"), msg
    assert "\n" not in msg and msg.endswith("(use --skip-bad to skip bad lines)")
    with open_recording(path, skip_bad=True) as s:
        got = list(s)
    # The skipped slice's time is a gap: a mark before the slice after it says so.
    assert [type(i) is Mark and i.kind for i in got] == [False, "gap", False] and s.skipped == 1


def test_first_bad_reading_is_named_whatever_the_check(tmp_path: Path) -> None:
    # A bad count in reading 0 and a bad field in reading 1: reading 0 is reported, as a
    # reading-by-reading check would.
    lines = v2_lines()
    rec = json.loads(lines[1])
    rec["readings"][0][7][0] = -1
    rec["readings"][1][0] = None
    with pytest.raises(BadRecord, match=r"^reading 0: counts must be non-negative integers, got -1$"):
        slice_from_record(rec)
    rec["readings"][0][7][0] = 1
    with pytest.raises(BadRecord, match=r"^reading 1: 'unit' and 'group' must be strings$"):
        slice_from_record(rec)


def test_negative_count_is_found_whatever_the_line_text(tmp_path: Path) -> None:
    # The reader skips the sign test only for lines without any '-': a negative count has one.
    lines = v2_lines()
    lines[2] = lines[2].replace(",[20000000,", ",[-20000000,", 1)
    assert "-20000000" in lines[2]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with (
        pytest.raises(
            RecordingError, match=r":3: reading 0: counts must be non-negative integers, got -20000000"
        ),
        open_recording(path) as s,
    ):
        list(s)


json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**70) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=5,
)


near_value = st.sampled_from([0, 1, 7, 2**64, 2**70, None, True, False, 1.0, -1, "", "SW1", [], [0]]).map(
    copy.deepcopy
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    return out


def _mutate(rec: dict[str, Any], data: st.DataObject) -> None:
    """Replace, drop or duplicate one value anywhere in the record (but its schema)."""
    paths = [p for p in _paths(rec) if p and p[0] != "schema"]
    where = data.draw(st.sampled_from(paths))
    parent: Any = rec
    for key in where[:-1]:
        parent = parent[key]
    op = data.draw(st.sampled_from(["near", "near", "replace", "drop", "dup"]))
    if op == "near":  # a value close to a valid one: often still valid, else one check away
        parent[where[-1]] = data.draw(near_value)
    elif op == "replace":
        parent[where[-1]] = data.draw(json_value)
    elif op == "drop":
        del parent[where[-1]]
    elif isinstance(parent, list):
        parent.insert(where[-1], copy.deepcopy(parent[where[-1]]))
    else:
        parent[where[-1]] = [parent[where[-1]]]


def _outcome(fn: Any, rec: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", fn(copy.deepcopy(rec))
    except BadRecord as exc:
        return "bad", str(exc)


@SETTINGS
@given(data=st.data(), n=st.integers(1, 4))
def test_mutated_v2_record_fast_and_precise_checks_agree(data: st.DataObject, n: int) -> None:
    """Fast and precise checks agree: a mutated record decodes to what it says, or fails with one
    precise line."""
    rec = json.loads(encode_slice(list(slices(n + 1))[n]))
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate(rec, data)
    text = encode(rec) if _encodable(rec) else None
    rows = _outcome(slice_from_record, rec)
    event(rows[0] if rows[0] == "ok" else rows[1].split(",")[0].split(":")[0])
    if text is not None and no_bools_in(text.encode()):  # the reader's shortcut: the same answer
        with row_check("python"):
            assert _outcome(lambda r: slice_from_record(r, text=text.encode()), rec) == rows
    if rows[0] == "ok":
        assert slice_from_record(json.loads(encode_slice(rows[1]))) == rows[1]
        reading_errors = [
            _row_error(i, r, [tuple(e) for e in rec["events"]]) for i, r in enumerate(rec["readings"])
        ]
        assert reading_errors == [None] * len(reading_errors)
    else:
        assert "\n" not in rows[1]
        assert "is malformed" not in rows[1]  # the precise check found what the fast one refused


@SETTINGS
@given(data=st.data(), n=st.integers(1, 4), value=near_value | json_value)
def test_count_checks_agree_with_and_without_the_bool_shortcut(
    data: st.DataObject, n: int, value: Any
) -> None:
    """One count replaced by anything JSON can hold: the Python row check's shortcut for a text
    without ``true``/``false`` (an unsigned array) accepts and refuses exactly what the exact type
    test does, with its message."""
    rec = json.loads(encode_slice(list(slices(n + 1))[n]))
    row = data.draw(st.sampled_from([r for r in rec["readings"] if r[7]]))
    row[7][data.draw(st.integers(0, len(row[7]) - 1))] = value
    with row_check("python"):
        exact = _outcome(slice_from_record, rec)
        text = encode(rec) if _encodable(rec) else None
        shortcut = text is not None and no_bools_in(text.encode())
        event(f"{exact[0]}, shortcut {'taken' if shortcut else 'not taken'}")
        if shortcut:
            assert _outcome(lambda r: slice_from_record(r, text=text.encode()), rec) == exact


def _encodable(rec: Any) -> bool:
    try:
        encode(rec)
    except ValueError:
        return False
    return True


@SETTINGS
@given(data=st.data(), n=st.integers(1, 4), skip_bad=st.booleans())
def test_mutated_v2_file_never_crashes(tmp_path: Path, data: st.DataObject, n: int, skip_bad: bool) -> None:
    lines = v2_lines(n)
    i = data.draw(st.integers(1, n))
    rec = json.loads(lines[i])
    _mutate(rec, data)
    lines[i] = json.dumps(rec)
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    try:
        with open_recording(path, skip_bad=skip_bad) as s:
            tuple(s)
    except RecordingError as exc:
        msg = str(exc)
        assert "\n" not in msg and re.match(re.escape(str(path)) + r":\d+: ", msg), msg
    scan_recording(path, skip_bad=True)


# ------------------------------------------------------------------------------------------- v1


def test_v1_file_reads_in_both_modes(tmp_path: Path) -> None:
    items = stream(20, marks={5: Mark(t=0.1, kind="baseline")})
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(v1_lines(items)) + "\n")
    with open_recording(path) as s:
        assert s.version == 1 and s.header.schema == "sectormon/recording/2"
        assert tuple(s) == tuple(items)
    with open_recording(path) as s:
        assert tuple(s) == tuple(items)
    scan = scan_recording(path)
    assert scan.slices == 20 and [m.kind for m in scan.marks] == ["baseline", "end"]


def test_v1_migration_equals_direct_v1_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = stream(12, marks={3: Mark(t=0.06, kind="bookmark", label="b")})
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(v1_lines(items)) + "\n")
    # Force MIGRATIONS[1]: every v1 slice migrated to a version-2 record, then decoded.
    monkeypatch.setattr(reader_module, "slice_from_v1", lambda rec: slice_from_record(MIGRATIONS[1](rec)))
    with open_recording(path) as s:
        assert tuple(s) == tuple(items)
    with open_recording(path) as s:
        assert tuple(s) == tuple(items)


def test_v1_to_v2_migration_record() -> None:
    s = next(slices(1))
    v1 = v1_slice_record(s)
    v1["future_field"] = 1
    v2 = MIGRATIONS[1](copy.deepcopy(v1))
    assert v2["schema"] == "sectormon/slice/2" and v2["future_field"] == 1
    assert {k: v for k, v in v2.items() if k != "future_field"} == json.loads(json.dumps(slice_record(s)))
    assert (
        MIGRATIONS[1]({"schema": "sectormon/mark/1", "t": 1.0, "kind": "end"})["schema"] == "sectormon/mark/2"
    )
    header_v2 = MIGRATIONS[1]({"schema": "sectormon/recording/1", "host": "h"})
    assert header_v2 == {"schema": "sectormon/recording/2", "host": "h"}
    # Optional v1 reading fields get their defaults.
    v1["readings"][0].pop("group")
    v1["readings"][0].pop("core")
    row = MIGRATIONS[1](v1)["readings"][0]
    assert row[1] is None and row[3] == s.group
    bad = v1_slice_record(s)
    bad["readings"][0]["te"] = -1
    with pytest.raises(BadRecord, match="reading 0: 'te'/'tr' must be non-negative"):
        MIGRATIONS[1](bad)


@SETTINGS
@given(data=st.data())
def test_mutated_v1_record_direct_and_migrated_agree(data: st.DataObject) -> None:
    """The direct v1 decoder and the migration to v2 accept and refuse the same records."""
    rec = v1_slice_record(list(slices(3))[2])
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate(rec, data)
    full = _outcome(slice_from_v1, rec)
    event(full[0] if full[0] == "ok" else full[1].split(",")[0].split(":")[0])
    migrated = _outcome(MIGRATIONS[1], rec)
    assert migrated[0] == full[0]
    if full[0] == "ok":
        assert slice_from_record(migrated[1]) == full[1]
    else:
        assert migrated[1] == full[1]


def test_shipped_recordings_read_the_same_as_rows_in_both_versions(tmp_path: Path) -> None:
    """The real (simulated) recordings in recordings/, as shipped (v2) and written back as v1."""
    root = Path(__file__).resolve().parents[2] / "recordings"
    paths = sorted(root.glob("*.jsonl*"))
    assert paths
    for path in paths:
        with open_recording(path) as s:
            assert s.version == 2
            hdr = {k: v for k, v in header_to_json(s.header).items() if k != "schema"}
            items = tuple(s)
        old = tmp_path / (path.name.split(".")[0] + ".v1.jsonl")
        old.write_text("\n".join(v1_lines(items, hdr)) + "\n")
        with open_recording(old) as s:
            assert s.version == 1
            assert tuple(s) == items


def test_file_mixing_versions_reads_as_one(tmp_path: Path) -> None:
    # A v1 recording with v2 lines appended (and a v1 mark): each line is read by its own version.
    items = stream(8, end=False)
    lines = v1_lines(items[:4])
    lines += [encode_slice(s) for s in items[4:] if isinstance(s, Slice)]
    lines.append(json.dumps({"schema": "sectormon/mark/1", "t": 1.0, "kind": "end", "label": "bye"}))
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    want = (*items, Mark(t=1.0, kind="end", label="bye"))
    assert read_recording(path).items == want
    with open_recording(path) as s:
        assert tuple(s) == want
    assert scan_recording(path).slices == 8


@SETTINGS
@given(n=st.integers(1, 5), cut=st.floats(0, 1), gz=st.booleans())
def test_v1_file_cut_anywhere_reads_a_prefix(tmp_path: Path, n: int, cut: float, gz: bool) -> None:
    items = stream(n)
    data = ("\n".join(v1_lines(items)) + "\n").encode()
    full = gzip.compress(data, mtime=0) if gz else data
    path = tmp_path / ("old.jsonl.gz" if gz else "old.jsonl")
    path.write_bytes(full[: int(len(full) * cut)])
    try:
        with open_recording(path) as s:
            got = tuple(s)
    except RecordingError as exc:
        assert re.match(re.escape(str(path)) + r":1: ", str(exc)), str(exc)  # the header was cut
        return
    assert got == tuple(items[: len(got)])
