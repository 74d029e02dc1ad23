"""The recording's regions record: what is written reads back equal, its place before its slice,
and damaged or hostile records are bad lines (BadRecord), never an exception or a wrong count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.data.readings import Slice
from sectormon.data.regions import GroupDelta, RegionSnapshot, RegionsReading, ThreadRegion
from sectormon.io.jsonl import BadRecord, encode
from sectormon.io.reader import RecordingError, open_recording
from sectormon.io.recording import RecordingWriter
from sectormon.io.regions_record import REGIONS_SCHEMA, regions_from_record, regions_record
from tests.io.recording_synth import header

EVENTS = ("PAGE_FAULTS", "TASK_CLOCK")


def snapshot() -> RegionSnapshot:
    group = GroupDelta(EVENTS, (24_000, 5_000_000), 5_000_000, 2_500_000, thread_ns=5_100_000)
    return RegionSnapshot(
        (
            ThreadRegion("fapp_pages", 1, 100, 100, None, 3, 4, False, False, 7_000_000, (group,)),
            ThreadRegion("worker", 0, 100, 101, 2, -1, 1, True, True, 0, (group, group), thread_exited=True),
        ),
        frozenset({"names"}),
        unpaired=2,
        dropped=1,
    )


def test_a_regions_record_reads_back_equal() -> None:
    reading = RegionsReading(1.5, 7, snapshot())
    record = json.loads(encode(regions_record(reading)))
    assert record["schema"] == REGIONS_SCHEMA
    assert regions_from_record(record) == reading


def test_the_writer_puts_the_table_before_its_slice_and_the_reader_gives_it_back(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path, header())
    writer.write_slice(Slice(t=0.1, index=0, duration=0.1, group="SW1", rows=()))
    writer.write_slice(Slice(t=0.2, index=1, duration=0.1, group="SW1", rows=(), regions=snapshot()))
    writer.close()
    with open_recording(path) as stream:
        items = list(stream)
    kinds = [type(i).__name__ for i in items]
    assert kinds[:3] == ["Slice", "RegionsReading", "Slice"]
    assert items[1] == RegionsReading(0.2, 1, snapshot())


def test_a_newer_regions_record_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path, header())
    writer.close()
    text = path.read_text().splitlines()
    text.insert(1, json.dumps({"schema": "sectormon/regions/9", "t": 0, "index": 0, "threads": []}))
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(RecordingError, match="newer than this sectormon"), open_recording(path) as stream:
        list(stream)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30,
)


def _damaged(draw: st.DrawFn) -> dict[str, Any]:
    record = json.loads(encode(regions_record(RegionsReading(1.0, 1, snapshot()))))
    path: list[Any] = [record]
    node: Any = record
    for _ in range(draw(st.integers(1, 5))):
        keys = (
            list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        )
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        if isinstance(node[key], (dict, list)) and draw(st.booleans()):
            node = node[key]
            path.append(node)
            continue
        node[key] = draw(JSON)
        break
    return record


damaged = st.composite(_damaged)


@settings(max_examples=300, deadline=None)
@given(damaged())
def test_a_damaged_regions_record_is_a_bad_record_or_a_checked_reading(record: dict[str, Any]) -> None:
    try:
        reading = regions_from_record(record)
    except BadRecord:
        return
    for region in reading.snapshot.threads:
        assert isinstance(region.name, str) and region.calls >= 0
        for group in region.groups:
            assert len(group.values) == len(group.events)
            assert all(type(v) is int and v >= 0 for v in group.values)
