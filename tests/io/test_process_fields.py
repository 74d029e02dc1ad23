"""The slice record's optional process fields: round trip, and one clear error per damaged field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.readings import ProcessInfo, Slice
from sectormon.io.jsonl import BadRecord, encode_slice, slice_from_record

pids = st.integers(min_value=1, max_value=2**22)
ranks = st.none() | st.integers(min_value=0, max_value=100_000)
processes = st.builds(ProcessInfo, pids, st.text(max_size=16), st.none() | pids, ranks)


@given(
    st.lists(processes, max_size=4).map(tuple),
    st.dictionaries(pids.map(lambda tid: f"thread:{tid}"), pids, max_size=4).map(lambda d: tuple(d.items())),
    st.none() | st.floats(min_value=0.0, max_value=1e6, allow_nan=False),
)
def test_process_fields_round_trip(
    found: tuple[ProcessInfo, ...], units: tuple[tuple[str, int], ...], cpu: float | None
) -> None:
    s = Slice(1.0, 7, 0.02, "G1", (), processes=found, unit_processes=units, target_cpu_s=cpu)
    assert slice_from_record(json.loads(encode_slice(s))) == s


@given(st.floats(min_value=0.0, max_value=1e6), st.floats(min_value=0.0, max_value=1e6))
def test_the_ended_processes_system_time_rides_with_the_kernel_figure(cpu: float, ended: float) -> None:
    """Written only when not 0, so a slice without it is the record sectormon always wrote."""
    s = Slice(1.0, 7, 0.02, "G1", (), target_cpu_s=cpu, target_ended_system_s=ended)
    record = json.loads(encode_slice(s))
    assert ("target_ended_system_s" in record) == (ended != 0.0)
    assert slice_from_record(record) == s


def _record(**fields: Any) -> dict[str, Any]:
    base = json.loads(encode_slice(Slice(1.0, 7, 0.02, "G1", ())))
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"processes": {"pid": 1}}, "slice 'processes' must be a list"),
        ({"processes": [7]}, "entries must be objects"),
        ({"processes": [{"pid": "12", "command": "x"}]}, "process 'pid' must be a non-negative integer"),
        ({"processes": [{"pid": 12}]}, "needs an integer 'pid' and a string 'command'"),
        ({"processes": [{"pid": 12, "command": "x", "rank": -1}]}, "process 'rank'"),
        ({"unit_processes": [["thread:1", 2]]}, "must map unit keys to pids"),
        ({"unit_processes": {"thread:1": None}}, "must be a pid, got null"),
        ({"unit_processes": {"thread:1": True}}, "must be a non-negative integer"),
        ({"target_cpu_s": -1.0}, "'target_cpu_s' must be from 0"),
        ({"target_cpu_s": "1"}, "'target_cpu_s' must be a finite number"),
        ({"target_cpu_s": 1.0, "target_ended_system_s": -1.0}, "'target_ended_system_s' must be from 0"),
        ({"target_cpu_s": 1.0, "target_ended_system_s": []}, "'target_ended_system_s' must be a finite"),
    ],
)
def test_a_damaged_process_field_is_one_clear_error(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(BadRecord, match=said):
        slice_from_record(_record(**fields))
