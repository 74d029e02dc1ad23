"""The compiled row check (sectormon/io/_rows.c) against the Python one it stands in for.

Both must accept the same readings and build the same rows (the same types, the layout's own
names tuple), and for a bad slice give the same one-line error; hostile readings (huge and
negative ints, bools, subclasses, nesting, wrong lengths, finalizers that empty the lists while
the check runs) must never crash the compiled one or leave an exception behind.
"""

from __future__ import annotations

import copy
import gc
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sectormon.data.readings import Row, Slice
from sectormon.errors import UsageError
from sectormon.io import native_rows
from sectormon.io.jsonl import SLICE_SCHEMA, BadRecord, slice_from_record
from tests.io.row_paths import PATHS, needs_compiled, row_check

REPO = Path(__file__).resolve().parents[2]
U64 = 1 << 64
LAYOUTS = [["CPU_CYCLES", "INST_RETIRED", "L1D_CACHE_REFILL"], ["L2D_CACHE"], []]


class IntSub(int):
    pass


class StrSub(str):
    pass


class ListSub(list):  # type: ignore[type-arg]
    pass


HOSTILE: list[Any] = [
    -1,
    -(1 << 63),
    1 << 63,
    U64 - 1,
    U64,
    1 << 70,
    -U64,
    10**400,
    True,
    False,
    0.0,
    1.5,
    "",
    "cpu:0",
    None,
    [],
    [0],
    [[1, 2]],
    {},
    IntSub(1),
    StrSub("cpu:0"),
    ListSub([1, 2, 3]),
]
hostile = st.sampled_from(HOSTILE).map(copy.deepcopy)


@st.composite
def reading(draw: st.DrawFn) -> list[Any]:
    """A valid reading of one of :data:`LAYOUTS` (edges of every range included)."""
    layout = draw(st.integers(0, len(LAYOUTS) - 1))
    te = draw(st.sampled_from([0, 1, 20_000_000, U64 - 1]) | st.integers(0, U64 - 1))
    tr = draw(st.sampled_from([0, te]) | st.integers(0, te))
    core = draw(st.none() | st.integers(-5, 1 << 70))  # any int: the reader does not bound them
    cmg = draw(st.none() | st.integers(0, 3))
    counts = draw(
        st.lists(
            st.sampled_from([0, U64 - 1]) | st.integers(0, U64 - 1),
            min_size=len(LAYOUTS[layout]),
            max_size=len(LAYOUTS[layout]),
        )
    )
    unit = draw(st.sampled_from(["cpu:0", "thread:4242", "cmg:1", ""]))
    return [unit, core, cmg, draw(st.sampled_from(["SC1", "SW1"])), te, tr, layout, counts]


@st.composite
def damaged(draw: st.DrawFn, readings: list[list[Any]]) -> list[Any]:
    """``readings`` with one of them damaged as a hostile or broken file could."""
    out: list[Any] = copy.deepcopy(readings)
    i = draw(st.integers(0, len(out) - 1))
    r = out[i]
    how = draw(st.sampled_from(["field", "count", "counts", "fields", "reading", "times"]))
    if how == "field":
        r[draw(st.integers(0, 7))] = draw(hostile)
    elif how == "count" and r[7]:
        r[7][draw(st.integers(0, len(r[7]) - 1))] = draw(hostile)
    elif how == "counts":
        r[7] = [*r[7], draw(hostile | st.integers(0, 9))] if draw(st.booleans()) else r[7][:-1]
    elif how == "fields":
        out[i] = [*r, draw(hostile)] if draw(st.booleans()) else r[: draw(st.integers(0, 7))]
    elif how == "reading":
        out[i] = draw(hostile | st.just(ListSub(r)) | st.just(tuple(r)))
    else:
        r[4], r[5] = r[5], r[4] + 1  # running longer than enabled
    return out


def record(readings: list[Any]) -> dict[str, Any]:
    return {
        "schema": SLICE_SCHEMA,
        "t": 1.0,
        "index": 1,
        "duration": 0.02,
        "group": "SC1",
        "events": copy.deepcopy(LAYOUTS),
        "readings": readings,
    }


def outcome(path: str, rec: dict[str, Any]) -> tuple[str, Any]:
    """What ``slice_from_record`` makes of ``rec`` with the ``path`` row check: its rows, each field
    with its type (a bool is not an int here), or its error."""
    with row_check(path):
        try:
            s = slice_from_record(copy.deepcopy(rec))
        except BadRecord as exc:
            return "bad", str(exc)
    return "ok", [_strict(r) for r in s.rows]


def _strict(r: Row) -> tuple[Any, ...]:
    assert type(r) is Row and type(r.values) is tuple and type(r.names) is tuple
    return (*((type(f), f) for f in r[:6]), r.names, id(r.names), *((type(v), v) for v in r.values))


def both_agree(rec: dict[str, Any]) -> tuple[str, Any]:
    python, *others = [outcome(path, rec) for path in PATHS]
    for other in others:
        assert other == python
    return python


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@needs_compiled
@SETTINGS
@given(st.lists(reading(), max_size=6))
@example([])
@example([["cpu:0", None, None, "SC1", U64 - 1, U64 - 1, 1, [U64 - 1]]])
def test_valid_readings_give_the_same_rows_on_both_paths(readings: list[list[Any]]) -> None:
    kind, _ = both_agree(record(readings))
    assert kind == "ok"


@needs_compiled
@SETTINGS
@given(data=st.data(), readings=st.lists(reading(), min_size=1, max_size=6))
def test_damaged_readings_fail_alike_on_both_paths(data: st.DataObject, readings: list[list[Any]]) -> None:
    kind, result = both_agree(record(data.draw(damaged(readings))))
    if kind == "bad":
        assert "is malformed" not in result  # the precise check found what the compiled one refused


@needs_compiled
@pytest.mark.parametrize("value", HOSTILE, ids=repr)
@pytest.mark.parametrize("field", range(8))
def test_each_hostile_value_in_each_field_is_judged_alike(field: int, value: Any) -> None:
    readings = [["cpu:0", 0, 0, "SC1", 10, 5, 0, [1, 2, 3]], ["cpu:1", 1, 0, "SC1", 10, 5, 1, [7]]]
    readings[1][field] = copy.deepcopy(value)
    both_agree(record(readings))


@needs_compiled
def test_rows_of_one_layout_share_the_layouts_names_tuple() -> None:
    assert native_rows.compiled is not None
    layouts = [("A", "B"), ("C",)]
    raw = [[f"cpu:{i}", i, 0, "SC1", 10, 10, i % 2, [i, i] if i % 2 == 0 else [i]] for i in range(6)]
    rows = native_rows.compiled.slice_rows(raw, layouts, Row)
    assert [type(r) for r in rows] == [Row] * 6
    assert all(r.names is layouts[i % 2] for i, r in enumerate(rows))
    with row_check("c"):
        s = slice_from_record(record([[*r[:6], 0, [1, 2, 3]] for r in raw]))
    assert isinstance(s, Slice)
    assert len({id(r.names) for r in s.rows}) == 1


@needs_compiled
def test_the_compiled_check_refuses_arguments_of_the_wrong_kind() -> None:
    assert native_rows.compiled is not None
    check = native_rows.compiled.slice_rows
    assert check([], [], Row) == ()
    for args in [((), [], Row), ([], (), Row), ([], [], int), ([], [], "Row"), ([], [])]:
        with pytest.raises(TypeError):
            check(*args)


@needs_compiled
@pytest.mark.parametrize("field", range(8))
def test_the_compiled_check_keeps_no_reference_it_should_not(field: int) -> None:
    """Every object of the readings has the same reference count after a refused slice, and after
    a built one once its rows are gone: nothing leaks, nothing is freed twice."""
    assert native_rows.compiled is not None
    layouts = [("A", "B", "C")]
    big = 1 << 63  # a fresh object (not a cached small int), so its count is this test's alone
    raw = [[f"cpu:{i}", big + i, None, "SC1", big + 2, big + 1, 0, [big, big + 3, 7]] for i in range(5)]
    objects = _own_objects(layouts, raw)
    before = [sys.getrefcount(o) for o in objects]
    rows = native_rows.compiled.slice_rows(raw, layouts, Row)
    assert rows is not None
    del rows
    assert [sys.getrefcount(o) for o in objects] == before
    raw[3][field] = {1: 1.5, 2: 1.5, 7: [big, -1, 7]}.get(field, -1)  # the fourth reading refused
    objects = _own_objects(layouts, raw)
    before = [sys.getrefcount(o) for o in objects]
    assert native_rows.compiled.slice_rows(raw, layouts, Row) is None
    assert [sys.getrefcount(o) for o in objects] == before


def _own_objects(layouts: list[tuple[str, ...]], raw: list[list[Any]]) -> list[Any]:
    """The objects of ``raw`` and ``layouts`` whose reference counts only this test moves (not
    ``None`` or the interpreter's cached small ints, which any code may take and drop)."""
    everything = [*layouts, *(o for r in raw for o in (*r, *r[7]))]
    return [o for o in everything if o is not None and not (type(o) is int and -5 <= o <= 256)]


class Emptier:
    """Cyclic garbage whose finalizer leaves new garbage ``countdown`` times, then empties ``targets``:
    with the collector run at every allocation, the lists empty at a chosen point of the check."""

    def __init__(self, countdown: int, targets: list[list[Any]], ran: list[bool]) -> None:
        self.countdown, self.targets, self.ran = countdown, targets, ran
        self.cycle = self

    def __del__(self) -> None:
        if self.countdown > 0:
            Emptier(self.countdown - 1, self.targets, self.ran)
            return
        for target in self.targets:
            target.clear()
        self.ran.append(True)


@needs_compiled
@pytest.mark.parametrize("countdown", [0, 1, 2, 7, 40])
@pytest.mark.parametrize("victim", ["readings", "values", "layouts"])
def test_a_finalizer_that_empties_the_lists_mid_check_cannot_crash_it(victim: str, countdown: int) -> None:
    """An allocation may run the garbage collector and a finalizer with it: one that empties the
    lists being read leaves the check with a clean answer (rows or None), never a dangling item."""
    assert native_rows.compiled is not None
    layouts = [("A", "B", "C")]
    raw = [[f"cpu:{i}", i, 0, "SC1", 10, 10, 0, [1 << 40, 2, 3]] for i in range(50)]
    targets = {"readings": [raw], "values": [r[7] for r in raw], "layouts": [layouts]}[victim]
    ran: list[bool] = []
    threshold = gc.get_threshold()
    gc.collect()
    try:
        gc.set_threshold(1)
        Emptier(countdown, targets, ran)  # garbage only the collector frees, at an allocation
        result = native_rows.compiled.slice_rows(raw, layouts, Row)
    finally:
        gc.set_threshold(*threshold)
    assert ran == [True]
    assert result is None or all(type(r) is Row for r in result)


def test_the_environment_chooses_the_row_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native_rows.ENV, "python")
    assert native_rows.choose() == "python"
    assert native_rows.slice_rows("python") is None
    monkeypatch.setenv(native_rows.ENV, "rust")
    with pytest.raises(UsageError, match=r"SECTORMON_ROWS=rust: not a row check \(use one of c, python\)"):
        native_rows.choose()
    monkeypatch.setenv(native_rows.ENV, "c")
    monkeypatch.setattr(native_rows, "compiled", None)
    with pytest.raises(UsageError, match=r"SECTORMON_ROWS=c: the compiled row check is not built"):
        native_rows.choose()
    monkeypatch.delenv(native_rows.ENV)
    assert native_rows.choose() == "python"  # the fallback where nothing was built


def test_a_bad_choice_is_a_one_line_usage_error() -> None:
    recording = REPO / "recordings" / "scenario-a-sectors-off.jsonl.gz"
    run = subprocess.run(
        [sys.executable, "-m", "sectormon.cli", "replay", "--json", str(recording)],
        env={**os.environ, native_rows.ENV: "rust"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        "sectormon: SECTORMON_ROWS=rust: not a row check (use one of c, python)"
    ]
