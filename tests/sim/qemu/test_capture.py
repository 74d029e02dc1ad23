"""The ring's consumer and the record reader (_capture.c) on known batches, and the two simulator
cores on the same captured records: the compiled path must equal the Python reference."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sectormon.sim import native
from sectormon.sim.config import ModelConfig, Prefetch
from sectormon.sim.engine import Machine
from sectormon.sim.objects import OTHER, DataObjects, parse_objects
from sectormon.sim.qemu.capture import CapturedThread, Program
from sectormon.sim.qemu.heap import HeapObjects, Shim
from sectormon.sim.qemu.target import Target
from sectormon.sim.qemu.workload import PackedChunk, flag_table, program_workload
from sectormon.sim.stream import FL_IFETCH, FL_WRITE, OBJECT_SHIFT, RegionMark, flags
from tests.sim.cores import NOT_BUILT
from tests.sim.golden_cases import machine_state
from tests.sim.qemu.ring_writer import ALLOC, EVENT, FREE, STACK, Access, Event, RingWriter, mark_events

pytest.importorskip("sectormon.sim.qemu._capture", reason="the QEMU ring consumer is not built")

LINE = 256


def _program(ring: RingWriter) -> Program:
    ring.drain()
    threads = tuple(
        CapturedThread(vcpu, os.fdopen(fd, "rb"), accesses, instructions)
        for vcpu, fd, _records, accesses, instructions in ring.capture.threads()
    )
    return Program(("./prog",), Target("./prog", "x86_64", False), threads, 0, 0, 0, 0.0)


def _records(program: Program, thread: int, table: list[int] | None = None) -> list[tuple[int, ...]]:
    workload = program_workload(program, True, True)
    chunks: Iterator[Any] = workload.specs[thread].stream()
    out = [rec for chunk in chunks for rec in chunk]
    return out


@pytest.fixture
def ring() -> Iterator[RingWriter]:
    writer = RingWriter()
    yield writer
    writer.release()


def test_accesses_become_run_length_records_per_thread(ring: RingWriter) -> None:
    base = 0x10000
    ring.batch(0, [(base, 8, False), (base + 8, 8, True), (base + 16, 8, False), (base + LINE, 4, False)], 7)
    ring.batch(1, [(base, 8, False)], 3)
    ring.batch(0, [(base + LINE + 8, 8, False), (base + 3 * LINE - 4, 8, False)], 5)  # the last straddles
    ring.close()
    program = _program(ring)
    assert [(t.vcpu, t.accesses, t.instructions) for t in program.threads] == [(0, 7, 12), (1, 1, 3)]
    line = base // LINE
    assert _records(program, 0) == [
        (line, 3, FL_WRITE),  # a read, a write and a read of one line: one record, a write
        (line + 1, 1, 0),
        (-1 - 7, 0, FL_IFETCH),  # the batch's instructions end it
        (line + 1, 1, 0),
        (line + 2, 1, 0),
        (line + 3, 1, 0),  # the straddling access's second line
        (-1 - 5, 0, FL_IFETCH),
    ]
    assert _records(program, 1) == [(line, 1, 0), (-1 - 3, 0, FL_IFETCH)]


def test_each_record_carries_the_object_of_its_first_access(ring: RingWriter, tmp_path: Path) -> None:
    objects_file = tmp_path / "objects"
    objects_file.write_text("table 10080 1K\nstream 20000 4K\n")  # table starts mid-line
    objects = parse_objects(str(objects_file))
    ring.batch(0, [(0x10000, 8, False), (0x10080, 8, False), (0x10100, 8, True), (0x20000, 8, False)], 0)
    ring.close()
    program = _program(ring)
    assign = (None, 0, 1)
    workload = program_workload(program, True, True, objects, assign)
    records = [rec for chunk in workload.specs[0].stream() for rec in chunk]
    table = flag_table(3, True, True, assign)
    assert records == [
        (0x100, 2, flags(0, False, False, False, 0)),  # its first access is in no object
        (0x101, 1, table[2 * 1 + 1]),
        (0x200, 1, flags(1, False, True, True, 2)),
    ]
    assert table[2 * 1 + 1] == flags(0, True, True, True, 1) and table[3] >> OBJECT_SHIFT == 1


def test_records_past_the_cap_are_counted_not_kept() -> None:
    writer = RingWriter(max_records=2)
    try:
        writer.batch(0, [(i * LINE, 8, False) for i in range(5)], 0)
        writer.close()
        program = _program(writer)
        assert writer.capture.truncated == 3
        assert len(_records(program, 0)) == 2
    finally:
        writer.release()


def _batches(seed: int) -> list[tuple[int, list[Access], int]]:
    """A recorded mix of two threads: a stream, a reused table read at random, some stores."""
    import random

    rng = random.Random(seed)
    out = []
    for b in range(40):
        vcpu = b % 2
        accesses: list[Access] = []
        for i in range(300):
            if i % 3:
                accesses.append((0x100000 + vcpu * 0x800000 + (b * 300 + i) * 8, 8, i % 5 == 0))
            else:
                accesses.append((0x40000 + rng.randrange(40 << 10), 4, False))
        out.append((vcpu, accesses, rng.randrange(300, 900)))
    return out


@pytest.mark.skipif(native.compiled is None, reason=NOT_BUILT)
@pytest.mark.parametrize("sectors", [False, True], ids=["sectors-off", "sectors-on"])
def test_both_cores_give_the_same_counts_on_a_recorded_batch(
    ring: RingWriter, tmp_path: Path, sectors: bool
) -> None:
    for vcpu, accesses, instructions in _batches(5):
        ring.batch(vcpu, accesses, instructions)
    ring.close()
    program = _program(ring)
    objects_file = tmp_path / "objects"
    objects_file.write_text("table 40000 40K\nstream0 100000 8M\nstream1 900000 8M\n")
    objects = parse_objects(str(objects_file))
    config = ModelConfig(prefetch=Prefetch(enabled=True))
    config = config.with_sectors(replace(config.sectors, enabled=sectors, l1=(3, 1, 0, 0)))
    workload = program_workload(program, True, True, objects, (None, 0, 1, 1))
    states = {}
    for core in ("c", "python"):
        machine = Machine(config, list(workload.specs), core=core)
        machine.run_to_completion()
        state = machine_state(machine)
        state["objects"] = [t.object_counts() for t in machine.threads]
        state["accesses"] = [t.acc for t in machine.threads]
        state["instructions"] = [t.ifetch for t in machine.threads]
        states[core] = state
    assert states["c"] == states["python"]
    assert states["c"]["accesses"] == [t.accesses for t in program.threads]
    assert states["c"]["instructions"] == [t.instructions for t in program.threads]


def test_a_packed_chunk_reads_as_record_tuples() -> None:
    import struct

    chunk = PackedChunk(struct.pack("=6q", 5, 2, 1, -4, 0, FL_IFETCH))
    assert list(chunk) == [(5, 2, 1), (-4, 0, FL_IFETCH)]


def test_a_ring_written_over_is_an_error_not_a_crash(ring: RingWriter) -> None:
    ring.batch(0, [(0x1000, 8, False)], 1)
    ring.batch(1 << 20, [(0x1000, 8, False)], 1)  # no vCPU the plugin numbers
    with pytest.raises(ValueError, match="the plugin's ring holds no valid batch"):
        ring.drain()


# ---- heap blocks, stacks and marks: the shim's events (ring.h) ----------------------------------

SITE_A, SITE_B = 0x401234, 0x405678
HEAP_NAMES = (OTHER, "heap:a", "heap:b", "stack:0", "stack:1")


def _heap_program(ring: RingWriter, stacks: tuple[int, ...] = (3, 4)) -> Program:
    """The ring's threads with objects heap:a (SITE_A), heap:b (SITE_B) and the two vCPUs' stacks."""
    ring.drain()
    threads = tuple(
        CapturedThread(vcpu, os.fdopen(fd, "rb"), accesses, instructions)
        for vcpu, fd, _records, accesses, instructions in ring.capture.threads()
    )
    objects = DataObjects("./prog", HEAP_NAMES, (), (), ())
    events = ring.capture.events()
    heap = HeapObjects(os.fdopen(events, "rb") if events >= 0 else None, (SITE_A, SITE_B), (1, 2), stacks)
    return Program(
        ("./prog",),
        Target("./prog", "x86_64", True),
        threads,
        0,
        0,
        0,
        0.0,
        objects,
        heap=heap,
        shim=Shim(True),
    )


def _objects(program: Program, thread: int, marks: bool = False) -> list[object]:
    """Thread ``thread``'s stream: (line, n, object name) per access record, marks as they are."""
    workload = program_workload(program, False, False, program.objects, marks=marks)
    out: list[object] = []
    for item in workload.specs[thread].stream():
        if isinstance(item, RegionMark):
            out.append(item)
            continue
        out += [(line, n, HEAP_NAMES[f >> OBJECT_SHIFT]) for line, n, f in item if not f & FL_IFETCH]
    return out


def test_a_heap_block_is_its_sites_object_until_it_is_freed(ring: RingWriter) -> None:
    a, b = 0x100000, 0x200000
    ring.batch(0, [Event(ALLOC, (a, 1024, SITE_A)), Event(ALLOC, (b, 512, SITE_B))], 0)
    ring.batch(0, [(a, 8, False), (b + 256, 8, True), (a + 1024, 8, False)], 1)  # the last is past a's end
    ring.batch(1, [(a + 512, 8, False)], 1)  # another thread's access to vCPU 0's block
    # freed, then the same address taken at the other site: the new block is its site's
    ring.batch(0, [Event(FREE, (b,)), (b, 8, False), Event(ALLOC, (b, 256, SITE_A)), (b, 8, False)], 1)
    ring.close()
    program = _heap_program(ring)
    line = LINE
    assert _objects(program, 0) == [
        (a // line, 1, "heap:a"),
        (b // line + 1, 1, "heap:b"),
        (a // line + 4, 1, OTHER),
        (b // line, 1, OTHER),  # between the free and the new block
        (b // line, 1, "heap:a"),
    ]
    assert _objects(program, 1) == [(a // line + 2, 1, "heap:a")]
    assert ring.capture.sites() == [(SITE_A, 2, 1024 + 256), (SITE_B, 1, 512)]


def test_a_threads_stack_is_its_own_object_wherever_it_is_read(ring: RingWriter) -> None:
    ring.batch(0, [Event(STACK, (0x7000000, 0x7100000))], 0)
    ring.batch(1, [Event(STACK, (0x6000000, 0x6100000)), (0x60FF000, 8, True), (0x70FF000, 8, False)], 0)
    ring.batch(2, [Event(STACK, (0x5000000, 0x5100000)), (0x50FF000, 8, True)], 0)  # no stack object
    ring.close()
    program = _heap_program(ring)
    assert _objects(program, 1) == [(0x60FF000 // LINE, 1, "stack:1"), (0x70FF000 // LINE, 1, "stack:0")]
    assert _objects(program, 2) == [(0x50FF000 // LINE, 1, OTHER)]


def test_hostile_events_are_ignored_or_refused_never_a_crash(ring: RingWriter) -> None:
    a = 0x100000
    ring.batch(0, [Event(FREE, (0xDEAD0,)), Event(99, (1, 2, 3, 4, 5)), Event(ALLOC, (a, 0, SITE_A))], 0)
    ring.batch(0, [(a, 8, False)], 0)  # a block of 0 bytes holds nothing
    ring.batch(0, [Event(ALLOC, (a, 4096, SITE_B)), Event(ALLOC, (a + 1024, 64, SITE_A))], 0)  # a stale b
    ring.batch(0, [(a, 8, False), (a + 1024, 8, False), Event(FREE, (a,)), (a, 8, False)], 0)
    ring.batch(0, [Event(ALLOC, (0x900000, (1 << 64) - 1, SITE_A)), ((1 << 56) - 8, 8, False)], 0)
    ring.close()
    program = _heap_program(ring, stacks=())
    assert _objects(program, 0) == [
        (a // LINE, 1, OTHER),
        (a // LINE, 1, OTHER),  # the block that overlapped a newer one is gone
        ((a + 1024) // LINE, 1, "heap:a"),
        (a // LINE, 1, OTHER),  # the free of a block no longer known changes nothing...
        (((1 << 56) - 8) // LINE, 1, "heap:a"),  # ...and a huge block ends at the address space's end
    ]


def test_an_event_cut_short_is_an_error_not_a_crash(ring: RingWriter) -> None:
    ring.raw_batch(0, [EVENT | ALLOC, 0x1000, 64])  # two of its five words
    with pytest.raises(ValueError, match="the plugin's ring holds no valid batch"):
        ring.drain()


def test_marks_come_between_chunks_in_order_with_their_names_and_numbers(ring: RingWriter) -> None:
    a = 0x100000
    body: list[Access | Event] = [(a, 8, False), *mark_events(True, b"solve", 3), (a + LINE, 8, False)]
    body += [
        *mark_events(False, b"solve", 3),
        *mark_events(True, b"x" * 80, -1),
        *mark_events(True, b"y" * 300),
    ]
    ring.batch(0, body, 2)
    ring.close()
    program = _heap_program(ring)
    assert _objects(program, 0, marks=True) == [
        (a // LINE, 1, OTHER),
        RegionMark(True, "solve", 3),
        (a // LINE + 1, 1, OTHER),
        RegionMark(False, "solve", 3),
        RegionMark(True, "x" * 80, -1),  # three events: two of 40 bytes' name, the last 32 with the number
        RegionMark(True, "y" * 256, 0),  # cut at SMQ_MARK_NAME_MAX
    ]
    assert _objects(program, 0) == [(a // LINE, 1, OTHER), (a // LINE + 1, 1, OTHER)]  # marks are opt-in
    assert ring.capture.regions() == [(0, "solve", 3, 1), (0, "x" * 80, -1, 1), (0, "y" * 256, 0, 1)]


def test_the_reader_gives_the_same_stream_whatever_its_chunk_size(ring: RingWriter) -> None:
    """Events and marks that straddle two reads of the records file are read whole."""
    from sectormon.sim.qemu._capture import Reader

    for i in range(60):
        body: list[Access | Event] = [(0x100000 + 64 * i, 8, i % 2 == 0)]
        body += [Event(ALLOC, (0x200000 + 4096 * i, 4096, SITE_A if i % 3 else SITE_B))]
        body += [(0x200000 + 4096 * (i // 2), 8, False), *mark_events(i % 2 == 0, b"r" * (i % 90), i)]
        ring.batch(i % 2, body, i)
    ring.close()
    program = _heap_program(ring)
    assert program.heap is not None
    heap = program.heap

    def stream(thread: CapturedThread, size: int) -> list[object]:
        reader = Reader(thread.records.fileno(), (), (), (), [0, 1] * 5, *_tables(heap))
        out: list[object] = []
        while (chunk := reader.chunk(size)) is not None:
            out += [chunk] if isinstance(chunk, tuple) else list(PackedChunk(chunk))
        return out

    for thread in program.threads:
        whole = stream(thread, 1 << 16)
        assert len(whole) > 100
        assert stream(thread, 12) == stream(thread, 13) == whole
    with pytest.raises(ValueError, match="give 12 or more"):
        Reader(0, (), (), (), [0, 1]).chunk(11)


def _tables(heap: HeapObjects) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    return heap.events.fileno() if heap.events else -1, heap.sites, heap.site_ids, heap.stacks


def test_the_reader_refuses_tables_it_cannot_use() -> None:
    from sectormon.sim.qemu._capture import Reader

    with pytest.raises(ValueError, match="sites must be sorted"):
        Reader(0, (), (), (), [0, 1, 2, 3], -1, (5, 4), (1, 1), ())
    with pytest.raises(ValueError, match="sites must be sorted and every site id have flags"):
        Reader(0, (), (), (), [0, 1], -1, (5,), (1,), ())
    with pytest.raises(ValueError, match="a stack's object id has no flags"):
        Reader(0, (), (), (), [0, 1], -1, (), (), (3,))


def _reference_objects(steps: list[tuple[list[Event], int]], site_ids: dict[int, int]) -> list[int]:
    """The object of each step's access after its events, by a plain model of the live blocks."""
    import bisect

    starts: list[int] = []
    blocks: dict[int, tuple[int, int]] = {}  # start -> end, object
    out = []
    for events, address in steps:
        for e in events:
            if e.kind == FREE and e.args[0] in blocks:
                del blocks[e.args[0]]
                starts.remove(e.args[0])
            elif e.kind == ALLOC and e.args[1]:
                start, end = e.args[0], e.args[0] + e.args[1]
                for other in [s for s in starts if s < end and blocks[s][0] > start]:
                    del blocks[other]
                    starts.remove(other)
                blocks[start] = (end, site_ids.get(e.args[2], 0))
                bisect.insort(starts, start)
        i = bisect.bisect_right(starts, address) - 1
        out.append(blocks[starts[i]][1] if i >= 0 and address < blocks[starts[i]][0] else 0)
    return out


def test_the_live_blocks_follow_any_order_of_allocations_and_frees(ring: RingWriter) -> None:
    """Random allocations (some overlapping stale blocks, some of 0 bytes), frees of live and of
    unknown blocks, by two threads: each access's object is the plain model's."""
    import random

    rng = random.Random(7)
    separator = 0x7000000000  # accessed after each access, so no two share a record
    steps: list[tuple[list[Event], int]] = []
    vcpus: list[int] = []
    live: list[int] = []
    for _ in range(3000):
        events = []
        for _ in range(rng.randrange(3)):
            roll = rng.random()
            if roll < 0.5 or not live:
                start = 0x100000 + 16 * rng.randrange(1 << 14)
                size = rng.choice([0, 16, 48, 256, 4096])
                events.append(Event(ALLOC, (start, size, rng.choice([SITE_A, SITE_B, 7]))))
                live.append(start)
            elif roll < 0.9:
                events.append(Event(FREE, (live.pop(rng.randrange(len(live))),)))
            else:
                events.append(Event(FREE, (0x100000 + 8 * rng.randrange(1 << 15),)))  # mostly unknown
        steps.append((events, 0x100000 + 8 * rng.randrange(1 << 15)))
        vcpus.append(rng.randrange(2))
    for (events, address), vcpu in zip(steps, vcpus, strict=True):
        ring.batch(vcpu, [*events, (address, 8, False), (separator, 8, False)], 0)
        ring.capture.pump(0.0)
    ring.close()
    program = _heap_program(ring)
    expected = [HEAP_NAMES[i] for i in _reference_objects(steps, {SITE_A: 1, SITE_B: 2})]
    assert len(set(expected)) == 3  # both sites and [other] were met
    for t, thread in enumerate(program.threads):
        mine = [name for name, vcpu in zip(expected, vcpus, strict=True) if vcpu == thread.vcpu]
        got = [name for _, _, name in _objects(program, t)]  # type: ignore[misc]
        assert got[0::2] == mine and set(got[1::2]) == {OTHER}


def test_many_blocks_freed_in_the_order_they_came_are_not_quadratic(ring: RingWriter) -> None:
    """199,800 live blocks freed first to last: a sorted array would move them all on each free."""
    count, base = 199_800, 0x1000000
    for first in range(0, count, 600):
        ring.batch(0, [Event(ALLOC, (base + 64 * i, 64, SITE_A)) for i in range(first, first + 600)], 0)
        ring.capture.pump(0.0)
    ring.batch(0, [(base + 64 * (count - 1), 8, False)], 0)
    ring.capture.pump(0.0)
    for first in range(0, count - 1, 600):
        ring.batch(0, [Event(FREE, (base + 64 * i,)) for i in range(first, min(first + 600, count - 1))], 0)
        ring.capture.pump(0.0)
    ring.batch(0, [(base + 64 * (count - 1), 8, True), (base, 8, False)], 0)
    ring.close()
    program = _heap_program(ring)
    assert _objects(program, 0) == [
        ((base + 64 * (count - 1)) // LINE, 1, "heap:a"),
        ((base + 64 * (count - 1)) // LINE, 1, "heap:a"),  # the last block is still live...
        (base // LINE, 1, OTHER),  # ...the first was freed
    ]


def test_the_capture_counts_every_allocation_site_and_stack(ring: RingWriter) -> None:
    sites = [0x400000 + 17 * i for i in range(1500)]  # past the site table's first sizes
    for first in range(0, len(sites), 500):
        ring.batch(
            0,
            [Event(ALLOC, (0x100000 + 64 * i, 16 + i, s)) for i, s in enumerate(sites[first : first + 500])],
            0,
        )
        ring.capture.pump(0.0)
    ring.batch(0, [Event(ALLOC, (0x900000, 8, sites[0])), Event(STACK, (0x7000, 0x8000))], 0)
    ring.batch(3, [Event(STACK, (0x5000, 0x6000))], 0)
    ring.batch(2, [(0x100, 8, False)], 0)
    ring.close()
    ring.drain()
    assert ring.capture.sites() == [
        (s, 1 + (s == sites[0]), 16 + i % 500 + 8 * (s == sites[0])) for i, s in enumerate(sites)
    ]
    assert ring.capture.stacks() == [0, 3]
