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
from sectormon.sim.objects import parse_objects
from sectormon.sim.qemu.capture import CapturedThread, Program
from sectormon.sim.qemu.target import Target
from sectormon.sim.qemu.workload import PackedChunk, flag_table, program_workload
from sectormon.sim.stream import FL_IFETCH, FL_WRITE, OBJECT_SHIFT, flags
from tests.sim.cores import NOT_BUILT
from tests.sim.golden_cases import machine_state
from tests.sim.qemu.ring_writer import Access, RingWriter

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
