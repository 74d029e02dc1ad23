"""A running program's threads as simulated threads (sim/qemu/workload.py): a live thread's stream
waits at the end of its records file until the program hands over more or ends, and threads are
handed out as they appear, on the CPUs of ``--bind`` or spread over the CMGs, those past the CPUs
counted as not simulated."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from sectormon.sim.qemu.capture import CapturedThread, Program, TracedRun
from sectormon.sim.qemu.target import Target
from sectormon.sim.qemu.workload import LiveProgram, _live_stream, flag_table, thread_cpus
from sectormon.sim.stream import FL_IFETCH
from tests.sim.qemu.ring_writer import RingWriter

pytest.importorskip("sectormon.sim.qemu._capture", reason="the QEMU ring consumer is not built")

LINE = 256


class FakeRun:
    """A :class:`TracedRun` stand-in: each wait of a stream does the next of ``steps`` (what the
    program and the pump do meanwhile); ``seen`` are the threads as ``threads_seen`` gives them."""

    def __init__(self, steps: list[Callable[[FakeRun], None]] | None = None) -> None:
        self.steps = steps or []
        self.ended = False
        self.waits = 0
        self.seen: list[tuple[int, int]] = []
        self.argv = ("./prog",)
        self.target = Target("./prog", "x86_64", False)
        self.objects = None  # its globals: none known
        self.load_bias = None
        self.events_fd = -1  # no events file: no heap sites or stacks

    def wait(self, timeout: float) -> None:
        self.waits += 1
        assert self.steps, "the stream waited after the program's end"
        self.steps.pop(0)(self)

    def threads_seen(self, first: int = 0) -> list[tuple[int, int]]:
        return self.seen[first:]


@pytest.fixture
def ring() -> Iterator[RingWriter]:
    writer = RingWriter()
    yield writer
    writer.release()


def test_a_live_thread_waits_at_the_end_of_its_file_until_the_program_ends(ring: RingWriter) -> None:
    base = 0x10000
    ring.batch(0, [(base, 8, False), (base + LINE, 8, False)], 3)
    ring.capture.pump(0.0)
    assert ring.capture.sync() == [0]
    fd = ring.capture.records_fd(0)
    closed: list[int] = []

    def more(run: FakeRun) -> None:  # a batch whose run of accesses is still growing: not in the file
        ring.batch(0, [(base + 2 * LINE, 8, True)], 0)
        ring.capture.pump(0.0)
        ring.capture.sync()

    def end(run: FakeRun) -> None:  # the program ends: the last run is written, then the end said
        closed.extend(fd for _vcpu, fd, *_ in ring.capture.threads())
        run.ended = True

    run = FakeRun([more, end])
    try:
        stream = _live_stream(cast(TracedRun, run), fd, None, flag_table(1, True, True, None))
        records = [rec for chunk in stream for rec in chunk]
    finally:
        for descriptor in (fd, *closed):
            os.close(descriptor)
    line = base // LINE
    assert records == [(line, 1, 0), (line + 1, 1, 0), (-1 - 3, 0, FL_IFETCH), (line + 2, 1, 1)]
    assert run.waits == 2  # it waited through the batch still growing, and ended only at the end


def _program(accesses: list[int]) -> Program:
    threads = tuple(CapturedThread(vcpu, cast(Any, None), n, 0) for vcpu, n in enumerate(accesses))
    return Program(("./prog",), Target("./prog", "x86_64", False), threads, 0, 0, 0, 0.0)


def test_threads_are_handed_out_as_they_appear_spread_over_the_cmgs() -> None:
    run = FakeRun()
    live = LiveProgram(cast(TracedRun, run), True, True, None, None)
    assert live.new_specs() == []
    run.seen = [(0, -1)]
    first = live.new_specs()
    run.seen += [(1, -1), (2, -1)]
    later = live.new_specs()
    assert [(s.tid, s.cpu) for s in first + later] == [(0, 0), (1, 12), (2, 24)]
    assert live.new_specs() == []
    assert not live.exhausted()
    run.ended = True
    assert live.exhausted()
    assert live.left_out(_program([5, 6, 7])) == (0, 0)


def test_threads_past_the_bound_cpus_are_left_out_and_counted() -> None:
    run = FakeRun()
    run.seen = [(0, -1), (3, -1), (7, -1)]
    live = LiveProgram(cast(TracedRun, run), True, True, None, None, cpus=(0, 1))
    assert [(s.tid, s.cpu) for s in live.new_specs()] == [(0, 0), (1, 1)]
    program = _program([5, 0, 0, 6, 0, 0, 0, 7])
    assert live.left_out(program) == (6, 7)  # every thread the capture had but vCPUs 0 and 3


def test_the_default_placement_is_the_kernels_spread() -> None:
    assert thread_cpus(5) == [0, 12, 24, 36, 1]
    assert len(thread_cpus(1000)) == 48
    assert thread_cpus(2, (5, 6, 17)) == [5, 6]
