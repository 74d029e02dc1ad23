"""The run's record stream (no syscalls): rings merged by time, records turned into attribution
events, lost samples and throttling counted, records cut across reads; the counted total."""

from __future__ import annotations

from sectormon.data.samples import MapEvent, ProcessEvent, Sample
from sectormon.perf import abi
from sectormon.perf.records import (
    CommRecord,
    LostRecord,
    MmapRecord,
    SampleRecord,
    TaskRecord,
    ThrottleRecord,
)
from sectormon.perf.sampling import SamplingConfig
from sectormon.sources.perf.samples import RecordStream, counted_total

LAYOUT = SamplingConfig(period=97).layout()
USER, KERNEL = abi.PERF_RECORD_MISC_USER, abi.PERF_RECORD_MISC_KERNEL


def sample(time: int, ip: int = 0x1000, addr: int = 0, weight: int = 0, misc: int = USER) -> SampleRecord:
    return SampleRecord(ip=ip, pid=7, tid=8, time=time, addr=addr, cpu=1, period=0, weight=weight, misc=misc)


def test_rings_are_merged_by_time_and_records_become_events() -> None:
    ring0 = [
        LAYOUT.build(CommRecord(7, 7, "prog", exec=True, time=1)),
        LAYOUT.build(MmapRecord(7, 7, 0x1000, 0x2000, 0, "/bin/prog", prot=5, time=2))
        + LAYOUT.build(sample(5, addr=0x9000)),
    ]
    ring1 = [
        LAYOUT.build(TaskRecord(False, 9, 7, 9, 7, time=3))
        + LAYOUT.build(sample(4, weight=30, misc=KERNEL))
        + LAYOUT.build(TaskRecord(False, 7, 7, 10, 8, time=6)),  # a thread: no new address space
    ]
    before = [MapEvent(0, 7, 0x7000, 0x8000, 0, "[heap]", 3)]
    stream = RecordStream(LAYOUT, [ring0, ring1], before, period=97)
    assert list(stream) == [
        before[0],
        ProcessEvent(1, 7, "exec"),
        MapEvent(2, 7, 0x1000, 0x3000, 0, "/bin/prog", 5),
        ProcessEvent(3, 9, "fork", 7),
        Sample(4, 7, 8, 1, 0x1000, None, 97, 30, True),
        Sample(5, 7, 8, 1, 0x1000, 0x9000, 97, None, False),
    ]


def test_lost_and_throttled_are_counted_and_a_record_cut_between_reads_is_joined() -> None:
    data = (
        LAYOUT.build(sample(1))
        + LAYOUT.build(LostRecord(12, time=2))
        + LAYOUT.build(LostRecord(3, samples=True, time=3))
        + LAYOUT.build(ThrottleRecord(True, 4))
        + LAYOUT.build(ThrottleRecord(False, 5))
        + LAYOUT.build(sample(6))
    )
    cut = len(data) - 20
    stream = RecordStream(LAYOUT, [[data[:cut], data[cut:]]], period=97)
    events = list(stream)
    assert [e.time for e in events] == [1, 6]
    assert (stream.lost, stream.throttled, stream.malformed, stream.errors) == (15, 1, 0, [])


def test_a_broken_ring_stops_there_and_says_why() -> None:
    data = LAYOUT.build(sample(1)) + b"\x09\x00\x00\x00\x00\x00\x04\x00" + LAYOUT.build(sample(2))
    stream = RecordStream(LAYOUT, [[data]], period=1)
    assert [e.time for e in stream] == [1]
    assert "size 4" in stream.errors[0]


def test_freq_mode_samples_keep_their_own_period() -> None:
    layout = SamplingConfig(freq=1000).layout()
    record = SampleRecord(ip=1, pid=2, tid=2, time=3, addr=0, cpu=0, period=4321, weight=0, misc=USER)
    (event,) = list(RecordStream(layout, [[layout.build(record)]]))
    assert isinstance(event, Sample) and event.period == 4321


def test_the_counted_total_is_scaled_where_the_kernel_multiplexed() -> None:
    plain = counted_total([(100, 10, 10), (50, 5, 5)])
    assert (plain.raw, plain.value, plain.multiplexed) == (150, 150, False)
    mixed = counted_total([(100, 10, 10), (50, 10, 5)])
    assert (mixed.raw, mixed.value, mixed.multiplexed) == (150, 200, True)
    never = counted_total([(100, 10, 10), (0, 10, 0)])
    assert never.value is None
    idle = counted_total([(0, 0, 0)])
    assert idle.value == 0
