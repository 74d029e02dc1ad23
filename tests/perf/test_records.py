"""The ring-buffer record parser: round trips, truncation, and arbitrary bytes never crash it."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.perf import abi
from sectormon.perf.records import (
    HEADER,
    CommRecord,
    LostRecord,
    MmapRecord,
    Record,
    RecordLayout,
    SampleRecord,
    TaskRecord,
    ThrottleRecord,
)
from sectormon.perf.sampling import SAMPLE_TYPE, SamplingConfig

U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
NAMES = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=40)
SAMPLE_TYPES = st.sampled_from(
    [
        SAMPLE_TYPE,
        SAMPLE_TYPE | abi.PERF_SAMPLE_PERIOD,
        abi.PERF_SAMPLE_IP | abi.PERF_SAMPLE_TID,
        abi.PERF_SAMPLE_IDENTIFIER | abi.PERF_SAMPLE_IP | abi.PERF_SAMPLE_TIME | abi.PERF_SAMPLE_ID,
        abi.PERF_SAMPLE_TIME | abi.PERF_SAMPLE_STREAM_ID | abi.PERF_SAMPLE_CPU,
        0,
    ]
)


def samples(layout: RecordLayout) -> st.SearchStrategy[SampleRecord]:
    """Samples whose unrequested fields are 0 (what the parser gives for them)."""
    st_ = layout.sample_type

    def field(bit: int, values: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
        return values if st_ & bit else st.just(0)

    has_id = st_ & (abi.PERF_SAMPLE_ID | abi.PERF_SAMPLE_IDENTIFIER)
    return st.builds(
        SampleRecord,
        ip=field(abi.PERF_SAMPLE_IP, U64),
        pid=field(abi.PERF_SAMPLE_TID, U32),
        tid=field(abi.PERF_SAMPLE_TID, U32),
        time=field(abi.PERF_SAMPLE_TIME, U64),
        addr=field(abi.PERF_SAMPLE_ADDR, U64),
        cpu=field(abi.PERF_SAMPLE_CPU, U32),
        period=field(abi.PERF_SAMPLE_PERIOD, U64),
        weight=field(abi.PERF_SAMPLE_WEIGHT, U64),
        id=U64 if has_id else st.just(0),
        misc=st.integers(0, 2**16 - 1),
    )


def side_band(layout: RecordLayout) -> st.SearchStrategy[Record]:
    """Side-band records as the parser returns them (the trailer's time where the layout has one)."""
    timed = bool(layout.sample_id_all and layout.sample_type & abi.PERF_SAMPLE_TIME)
    time = U64 if timed else st.just(0)
    return st.one_of(
        st.builds(
            MmapRecord,
            pid=U32,
            tid=U32,
            addr=U64,
            length=U64,
            pgoff=U64,
            filename=NAMES,
            prot=U32,
            flags=U32,
            time=time,
            misc=st.sampled_from([0, abi.PERF_RECORD_MISC_MMAP_DATA, abi.PERF_RECORD_MISC_USER]),
        ),
        st.builds(CommRecord, pid=U32, tid=U32, comm=NAMES, exec=st.booleans(), time=time),
        st.builds(TaskRecord, exit=st.booleans(), pid=U32, ppid=U32, tid=U32, ptid=U32, time=U64),
        st.builds(LostRecord, lost=U64, samples=st.just(False), id=U64, time=time),
        st.builds(LostRecord, lost=U64, samples=st.just(True), id=st.just(0), time=time),
        st.builds(ThrottleRecord, throttled=st.booleans(), time=U64, id=U64),
    )


PIECES = st.tuples(st.integers(0, 30), st.integers(0, 2**16 - 1), st.binary(max_size=80))


@st.composite
def streams(draw: st.DrawFn) -> tuple[RecordLayout, list[Record]]:
    layout = RecordLayout(draw(SAMPLE_TYPES), sample_id_all=draw(st.booleans()))
    records = draw(st.lists(st.one_of(samples(layout), side_band(layout)), max_size=8))
    return layout, records


@settings(max_examples=150, deadline=None)
@given(streams())
def test_round_trip(stream: tuple[RecordLayout, list[Record]]) -> None:
    layout, records = stream
    data = b"".join(layout.build(r) for r in records)
    result = layout.parse(data)
    assert result.records == records
    assert (result.consumed, result.malformed, result.skipped, result.error) == (len(data), 0, 0, "")


@settings(max_examples=150, deadline=None)
@given(streams(), st.data())
def test_a_cut_stream_parses_its_whole_records_and_leaves_the_rest(
    stream: tuple[RecordLayout, list[Record]], data: st.DataObject
) -> None:
    layout, records = stream
    encoded = [layout.build(r) for r in records]
    whole = b"".join(encoded)
    cut = data.draw(st.integers(0, len(whole)))
    result = layout.parse(whole[:cut])
    ends = [sum(len(e) for e in encoded[: i + 1]) for i in range(len(encoded))]
    complete = sum(1 for end in ends if end <= cut)
    assert result.records == records[:complete]
    assert result.consumed == (ends[complete - 1] if complete else 0)
    assert not result.error
    # What was left over parses once the rest arrives, as the live reader does across drains.
    rest = layout.parse(whole[result.consumed :])
    assert result.records + rest.records == records


@settings(max_examples=300, deadline=None)
@given(SAMPLE_TYPES, st.booleans(), st.binary(max_size=600))
def test_arbitrary_bytes_never_crash(sample_type: int, id_all: bool, data: bytes) -> None:
    layout = RecordLayout(sample_type, sample_id_all=id_all)
    result = layout.parse(data)
    assert 0 <= result.consumed <= len(data)
    assert len(result.records) + result.malformed + result.skipped <= len(data) // HEADER.size


@settings(max_examples=150, deadline=None)
@given(SAMPLE_TYPES, st.lists(PIECES))
def test_records_of_any_type_and_size_never_crash(
    sample_type: int, pieces: list[tuple[int, int, bytes]]
) -> None:
    """Well-framed records of every type with random bodies: each is parsed, skipped or counted
    malformed, and the parser reaches the end."""
    layout = RecordLayout(sample_type, sample_id_all=True)
    data = b"".join(
        HEADER.pack(kind, misc, HEADER.size + len(body) - len(body) % 8) + body[: len(body) - len(body) % 8]
        for kind, misc, body in pieces
    )
    result = layout.parse(data)
    assert result.consumed == len(data) and not result.error
    assert len(result.records) + result.malformed + result.skipped == len(pieces)


def test_a_size_below_the_header_stops_with_a_reason() -> None:
    layout = RecordLayout(SAMPLE_TYPE)
    good = layout.build(SampleRecord(1, 2, 3, 4, 5, 0, 0, 0))
    result = layout.parse(good + HEADER.pack(abi.PERF_RECORD_SAMPLE, 0, 4) + b"\0" * 16)
    assert len(result.records) == 1 and result.consumed == len(good)
    assert "size 4" in result.error


def test_a_sample_of_the_wrong_size_is_counted_and_skipped() -> None:
    layout = RecordLayout(SAMPLE_TYPE)
    wrong = HEADER.pack(abi.PERF_RECORD_SAMPLE, 0, 16) + struct.pack("=Q", 7)
    good = layout.build(SampleRecord(1, 2, 3, 4, 5, 0, 0, 0))
    result = layout.parse(wrong + good)
    assert result.malformed == 1 and [r.ip for r in result.records if isinstance(r, SampleRecord)] == [1]


def test_unknown_record_types_are_skipped() -> None:
    layout = RecordLayout(SAMPLE_TYPE)
    switch = HEADER.pack(abi.PERF_RECORD_SWITCH, 0, 8 + 24) + b"\0" * 24
    result = layout.parse(switch)
    assert (result.records, result.skipped, result.consumed) == ([], 1, 32)


def test_the_sample_layout_matches_the_abi_order() -> None:
    """IP, pid/tid, time, addr, cpu/res, weight: 8 + 6 x 8 bytes, and the period in freq mode."""
    layout = SamplingConfig(period=97).layout()
    assert layout.sample_size == 8 + 48
    raw = layout.build(SampleRecord(ip=1, pid=2, tid=3, time=4, addr=5, cpu=6, period=0, weight=7))
    assert struct.unpack("=IHH Q II Q Q II Q", raw)[3:] == (1, 2, 3, 4, 5, 6, 0, 7)
    assert SamplingConfig(freq=1000).layout().sample_size == 8 + 56


def test_variable_size_sample_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="variable-size"):
        RecordLayout(abi.PERF_SAMPLE_IP | abi.PERF_SAMPLE_CALLCHAIN)


def test_identifier_fills_the_id_when_id_is_not_requested() -> None:
    layout = RecordLayout(abi.PERF_SAMPLE_IDENTIFIER | abi.PERF_SAMPLE_IP)
    record = SampleRecord(ip=9, pid=0, tid=0, time=0, addr=0, cpu=0, period=0, weight=0, id=42)
    assert layout.parse(layout.build(record)).records == [record]
