"""The slice record's thread bindings: round trip, absent when none, one clear error per damage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.binding import LAST_CPU, MIGRATION_SOURCES, SCHED, ThreadBinding
from sectormon.data.readings import Slice
from sectormon.io.jsonl import BadRecord, encode_slice, slice_from_record

cpus = st.lists(st.integers(min_value=0, max_value=4095), min_size=1, max_size=6, unique=True).map(
    lambda c: tuple(sorted(c))
)
counted = st.tuples(st.integers(min_value=0, max_value=10**9), st.sampled_from(MIGRATION_SOURCES))
bindings = st.builds(
    lambda c, m: ThreadBinding(c, *m) if m is not None else ThreadBinding(c), cpus, st.none() | counted
)


@given(
    st.dictionaries(
        st.integers(min_value=1, max_value=2**22).map(lambda t: f"thread:{t}"), bindings, max_size=4
    )
)
def test_bindings_round_trip(found: dict[str, ThreadBinding]) -> None:
    s = Slice(1.0, 7, 0.02, "G1", (), bindings=tuple(found.items()))
    record = json.loads(encode_slice(s))
    assert ("bindings" in record) == bool(found)  # none: the record sectormon always wrote
    assert slice_from_record(record) == s


def test_the_record_keeps_cpus_and_the_count_not_bound() -> None:
    s = Slice(1.0, 7, 0.02, "G1", (), bindings=(("thread:9", ThreadBinding((3,), 2, LAST_CPU)),))
    assert json.loads(encode_slice(s))["bindings"] == {
        "thread:9": {"cpus": [3], "migrations": 2, "migrations_from": "last_cpu"}
    }


def _record(bindings: object) -> dict[str, Any]:
    base = json.loads(encode_slice(Slice(1.0, 7, 0.02, "G1", ())))
    base["bindings"] = bindings
    return base


GOOD = {"cpus": [0], "migrations": 0, "migrations_from": SCHED}


@pytest.mark.parametrize(
    ("bindings", "said"),
    [
        ([["thread:1", GOOD]], "slice 'bindings' must map thread unit keys"),
        ({"cpu:1": GOOD}, "keys must be thread unit keys"),
        ({"thread:x": GOOD}, "keys must be thread unit keys"),
        ({"thread:1": [0]}, "slice 'bindings'['thread:1'] must be an object"),
        ({"thread:1": {**GOOD, "cpus": []}}, "'cpus'] must be a non-empty list of CPU numbers"),
        ({"thread:1": {**GOOD, "cpus": [True]}}, "'cpus'] must be a non-empty list"),
        ({"thread:1": {**GOOD, "cpus": [-1]}}, "'cpus'] must be a non-empty list"),
        ({"thread:1": {**GOOD, "cpus": [1 << 20]}}, "'cpus'] must be a non-empty list"),
        ({"thread:1": {**GOOD, "migrations": -2}}, "'migrations'] must be a non-negative integer"),
        ({"thread:1": {**GOOD, "migrations": True}}, "'migrations'] must be a non-negative integer"),
        (
            {"thread:1": {**GOOD, "migrations_from": "guess"}},
            "'migrations_from'] must be one of sched, last_cpu",
        ),
        ({"thread:1": {**GOOD, "migrations_from": None}}, "'migrations_from'] must be one of"),
        ({"thread:1": {"cpus": [0], "migrations": None, "migrations_from": SCHED}}, "or null without one"),
    ],
)
def test_damaged_bindings_are_named(bindings: object, said: str) -> None:
    with pytest.raises(BadRecord, match=said.replace("[", r"\[").replace("]", r"\]")):
        slice_from_record(_record(bindings))


def test_an_unknown_count_and_unsorted_cpus_are_read() -> None:
    record = _record({"thread:1": {"cpus": [3, 1, 3]}})
    assert slice_from_record(record).bindings == (("thread:1", ThreadBinding((1, 3))),)
