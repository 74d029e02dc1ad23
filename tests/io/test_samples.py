"""The ``samples`` record: round trip, its checks, and how readers meet it in a recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.hotspots import HotspotSettings
from sectormon.data.readings import Mark, Slice
from sectormon.data.samples import (
    DATA_KINDS,
    AttributedSample,
    CodeLocation,
    DataLocation,
    SampleBatch,
)
from sectormon.io.jsonl import BadRecord, encode
from sectormon.io.reader import RecordingError, open_recording, read_recording, scan_recording
from sectormon.io.recording import RecordingWriter
from sectormon.io.samples import SAMPLES_SCHEMA, samples_from_record, samples_record

names = st.text(max_size=10)
codes = st.builds(CodeLocation, names, names, st.one_of(st.none(), names))
datas = st.builds(DataLocation, names, st.sampled_from(DATA_KINDS), names)
samples = st.builds(
    AttributedSample,
    time=st.integers(0, 2**63),
    tid=st.integers(0, 2**31),
    cpu=st.integers(0, 1023),
    period=st.integers(1, 2**40),
    weight=st.one_of(st.none(), st.integers(0, 10**6)),
    code=codes,
    data=st.one_of(st.none(), datas),
    addr=st.one_of(st.none(), st.integers(0, 2**64 - 1)),
)
batches = st.builds(
    SampleBatch,
    t=st.floats(0, 1e6),
    samples=st.lists(samples, max_size=20).map(tuple),
    lost=st.integers(0, 10**9),
    counted=st.one_of(st.none(), st.integers(0, 2**62)),
    multiplexed=st.booleans(),
)


@given(batches)
def test_a_batch_round_trips_through_its_json_line(batch: SampleBatch) -> None:
    line = encode(samples_record(batch))
    assert samples_from_record(json.loads(line)) == batch


def test_locations_are_stored_once_per_record() -> None:
    code = CodeLocation("f", "m", "m.c:1")
    data = DataLocation("a", "symbol", "m")
    batch = SampleBatch(1.0, tuple(AttributedSample(i, 1, 0, 1, None, code, data, i) for i in range(3)))
    record = samples_record(batch)
    assert record["code"] == [["f", "m", "m.c:1"]] and record["data"] == [["a", "symbol", "m"]]
    assert [row[5:7] for row in record["samples"]] == [[0, 0]] * 3


GOOD = {
    "schema": SAMPLES_SCHEMA,
    "t": 1.0,
    "lost": 0,
    "counted": 5,
    "multiplexed": False,
    "code": [["f", "m", None]],
    "data": [["a", "symbol", "m"]],
    "samples": [[1, 2, 0, 1, None, 0, 0, 4096]],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"t": "1"}, "'t' must be a finite number"),
        ({"lost": -1}, "'lost' must be a whole number"),
        ({"counted": 1.5}, "'counted' must be a whole number"),
        ({"multiplexed": 0}, "'multiplexed' must be true or false"),
        ({"code": [["f", "m"]]}, "'code'[0] must be [function, module, source or null]"),
        ({"data": [["a", "global", "m"]]}, "kind 'global' is not one of"),
        ({"samples": [[1, 2, 0, 0, None, 0, 0, 4096]]}, "samples[0] must be"),
        ({"samples": [[1, 2, 0, 1, None, 1, 0, 4096]]}, "samples[0] must be"),
        ({"samples": [[1, 2, 0, 1, None, 0, 0, -5]]}, "samples[0] must be"),
        ({"samples": {}}, "'samples' must be a list"),
    ],
)
def test_a_malformed_record_says_what_is_wrong(change: dict[str, object], message: str) -> None:
    with pytest.raises(BadRecord) as caught:
        samples_from_record({**GOOD, **change})
    assert message in str(caught.value)


def _recording(path: Path, *extra: str) -> None:
    settings = HotspotSettings(event="cycles", spec="cycles", source="perf", period=1000).to_json()
    with RecordingWriter(path, {"schema": "sectormon/recording/2", "hotspots": settings}) as writer:
        writer.write_slice(Slice(t=0.5, index=0, duration=0.5, group="G", rows=()))
        writer.write_samples(SampleBatch(1.0, (), counted=3))
        writer.write_slice(Slice(t=1.0, index=1, duration=0.5, group="G", rows=()))
        writer.write_mark(Mark(t=1.0, kind="end"))
    if extra:
        with path.open("a") as handle:
            handle.write("".join(line + "\n" for line in extra))


def test_readers_yield_batches_in_file_order_and_the_timeline_skips_them(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _recording(path)
    items = read_recording(path).items
    assert [type(i).__name__ for i in items] == ["Slice", "SampleBatch", "Slice", "Mark"]
    assert isinstance(items[1], SampleBatch) and items[1].counted == 3
    scan = scan_recording(path)
    assert (scan.slices, scan.first_t, scan.end_t) == (2, 0.5, 1.0)


def test_a_bad_samples_line_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _recording(path)
    lines = path.read_text().splitlines()
    lines[2] = json.dumps({**GOOD, "lost": "many"})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match=r"r.jsonl:3: samples 'lost' must be a whole number"):
        read_recording(path)
    assert read_recording(path, skip_bad=True).skipped == 1


def test_a_record_kind_this_reader_does_not_know_is_a_clear_error(tmp_path: Path) -> None:
    """What a sectormon from before ``samples`` records says of them (its reader meets an unknown
    kind exactly so), and this one of a kind from after it."""
    path = tmp_path / "r.jsonl"
    _recording(path)
    lines = path.read_text().splitlines()
    lines.insert(2, json.dumps({"schema": "sectormon/callgraph/2", "t": 1.0}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError) as caught, open_recording(path) as stream:
        list(stream)
    assert "unknown record kind 'callgraph'" in str(caught.value)
    assert "a newer sectormon may read it" in str(caught.value)


def test_samples_records_of_an_older_format_version_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _recording(path, json.dumps({**GOOD, "schema": "sectormon/samples/1"}))
    with pytest.raises(RecordingError, match="samples records begin with format version 2"):
        read_recording(path)
