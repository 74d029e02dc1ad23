"""Region records: scaling by each group's own times, coverage, what moved between two readings;
the table's reader and its sequence counters."""

from __future__ import annotations

import os
import struct

import pytest

from sectormon.data.regions import GroupDelta, RegionSnapshot, ThreadRegion, changes
from sectormon.regions import layout
from sectormon.regions.table import RegionTable

EVENTS = ("page-faults", "task-clock")


def reading(
    tid: int, *groups: GroupDelta, name: str = "r", calls: int = 1, open_: bool = False
) -> ThreadRegion:
    return ThreadRegion(name, 0, 1, tid, None, 0, calls, open_, open_, 0, groups)


def test_a_group_that_counted_throughout_is_not_scaled() -> None:
    group = GroupDelta(EVENTS, (1001, 7), 500, 500, thread_ns=499)
    assert group.scaled() == (1001.0, 7.0) and group.coverage == 1.0


def test_a_multiplexed_group_is_scaled_by_enabled_over_running() -> None:
    group = GroupDelta(EVENTS, (100, 10), 400, 100, thread_ns=400)
    assert group.scaled() == (400.0, 40.0) and group.coverage == 0.25


def test_a_rotated_group_is_scaled_by_the_threads_time() -> None:
    group = GroupDelta(EVENTS, (300, 30), 300, 300, thread_ns=900)
    assert group.scaled() == pytest.approx((900.0, 90.0)) and group.coverage == pytest.approx(1 / 3)


def test_a_group_that_never_ran_counts_nothing_with_no_coverage() -> None:
    group = GroupDelta(EVENTS, (0, 0), 0, 0)
    assert group.scaled() == (0.0, 0.0) and group.coverage == 0.0


def test_where_two_groups_count_an_event_the_longer_running_one_is_used() -> None:
    short = GroupDelta(("page-faults",), (10,), 100, 10)
    long = GroupDelta(EVENTS, (80, 5), 100, 90)
    row = reading(1, short, long)
    assert row.counts() == {
        "page-faults": pytest.approx(88.888, rel=1e-3),
        "task-clock": pytest.approx(5.555, rel=1e-3),
    }
    assert row.coverage() == {"page-faults": 0.9, "task-clock": 0.9}


def test_the_reader_leaves_out_a_record_its_writer_holds_and_takes_it_once_written() -> None:
    table = RegionTable(max_threads=1, max_slots=2)
    try:
        view = table._map
        struct.pack_into("=II", view, 40, 0, 2)  # nthreads 0, nslots 2
        at = layout.HEADER_BYTES + layout.THREAD.size
        for index, seq in enumerate((3, 4)):  # slot 0 mid-update (odd), slot 1 written
            offset = at + index * layout.SLOT_BYTES
            head = layout.SLOT_HEAD.pack(seq, 9, index, -1, 7, 7, 0, 0, 5, 0, 0, 0, 0, b"slot%d" % index)
            view[offset : offset + layout.SLOT_HEAD.size] = head
        snapshot = table.read()
        assert [(r.name, r.calls, r.number, r.rank) for r in snapshot.threads] == [("slot1", 5, 1, None)]
        struct.pack_into("=I", view, at, 4)  # the writer finished slot 0
        assert [r.name for r in table.read().threads] == ["slot0", "slot1"]
    finally:
        table.close()
    assert not os.path.exists(table.path)


def test_the_table_is_anonymous_memory_that_leaves_no_file_behind() -> None:
    table = RegionTable(max_threads=1, max_slots=1)
    try:
        assert table.path.startswith(f"/proc/{os.getpid()}/fd/")
        assert os.readlink(table.path).startswith("/memfd:sectormon-regions")
        with open(table.path, "rb") as other_side:  # what the program's library opens
            assert other_side.read(8) == struct.pack("=Q", layout.MAGIC)
    finally:
        table.close()
    assert not os.path.exists(table.path)


def test_a_table_needs_room_for_a_thread_and_a_region() -> None:
    with pytest.raises(ValueError, match="at least one thread and one region"):
        RegionTable(max_threads=0)


def test_changes_are_what_each_region_and_thread_counted_in_between() -> None:
    before = RegionSnapshot((reading(1, GroupDelta(EVENTS, (100, 5), 100, 100), calls=2),), frozenset(), 0, 0)
    now = RegionSnapshot(
        (
            reading(1, GroupDelta(EVENTS, (160, 9), 150, 130), calls=3),
            reading(2, GroupDelta(EVENTS, (7, 1), 10, 10)),
            reading(3, GroupDelta(EVENTS, (1, 1), 1, 1), name="same"),
        ),
        frozenset(),
        0,
        0,
    )
    earlier = RegionSnapshot((*before.threads, now.threads[2]), frozenset(), 0, 0)
    moved = changes(now, earlier)
    assert [(r.tid, r.calls) for r in moved] == [(1, 1), (2, 1)]
    assert moved[0].groups[0] == GroupDelta(EVENTS, (60, 4), 50, 30)
    assert changes(now, now) == ()
