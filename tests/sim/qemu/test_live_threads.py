"""A running program's threads that end or wait (sim/qemu/live_threads.py, workload.py's live
streams): a thread's end record ends its live stream, and a later thread given its vCPU is a new
simulated thread on its CPU, while ``--summary`` reads the vCPU's file through; a thread whose file
is quiet while another has records is idle instead of holding the machine."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import cast

import pytest

from sectormon.sim.qemu import workload
from sectormon.sim.qemu.capture import CapturedThread, TracedRun
from sectormon.sim.qemu.workload import LiveProgram, _stream
from sectormon.sim.stream import FL_IFETCH, IDLE
from tests.sim.qemu.ring_writer import END, Event, RingWriter
from tests.sim.qemu.test_workload import FakeRun

pytest.importorskip("sectormon.sim.qemu._capture", reason="the QEMU ring consumer is not built")

LINE = 256


@pytest.fixture
def ring() -> Iterator[RingWriter]:
    writer = RingWriter()
    yield writer
    writer.release()


def _records(chunks: object) -> list[tuple[int, int, int]]:
    return [rec for chunk in cast(Iterator[list[tuple[int, int, int]]], chunks) for rec in chunk]


def _seen(ring: RingWriter, run: FakeRun) -> None:
    """The pump's look: the records so far in the files, the new threads listed."""
    ring.capture.pump(0.0)
    known = {vcpu for vcpu, _fd in run.seen}
    run.seen += [(v, ring.capture.records_fd(v)) for v in ring.capture.sync() if v not in known]


def test_an_ended_threads_vcpu_given_to_a_later_thread_is_a_new_simulated_thread_on_its_cpu(
    ring: RingWriter,
) -> None:
    first, later = 0x10000, 0x90000
    ring.batch(0, [(first, 8, False), Event(END)], 5)  # the thread's last access, then its end
    run = FakeRun()
    _seen(ring, run)
    live = LiveProgram(cast(TracedRun, run), True, True, None, None)
    (spec,) = live.new_specs()
    assert _records(spec.stream()) == [(first // LINE, 1, 0), (-1 - 5, 0, FL_IFETCH)]  # ended: no wait
    assert run.waits == 0 and live.new_specs() == [] and not live.threads.pending()
    assert list(spec.stream()) == []  # a looping run's next pass: it stays finished
    ring.batch(0, [(later, 8, True)], 3)  # QEMU gave vCPU 0 to a thread created later
    _seen(ring, run)
    (reused,) = live.new_specs()
    assert (reused.tid, reused.cpu) == (1, spec.cpu) and live.simulated == [0, 0]
    run.steps = [lambda r: setattr(r, "ended", True)]
    assert _records(reused.stream()) == [(later // LINE, 1, 1), (-1 - 3, 0, FL_IFETCH)]  # its own alone
    assert live.exhausted()
    # Read through, as --summary does: one thread, the later one's accesses after the first's.
    ((vcpu, fd, _records_n, accesses, instructions),) = ring.capture.threads()
    summary = _stream(
        CapturedThread(vcpu, os.fdopen(fd, "rb"), accesses, instructions), None, [0, 1], None, False
    )
    assert _records(summary) == [
        (first // LINE, 1, 0),
        (-1 - 5, 0, FL_IFETCH),
        (later // LINE, 1, 1),
        (-3 - 1, 0, FL_IFETCH),
    ]
    for _vcpu, descriptor in run.seen:
        os.close(descriptor)


def _two_threads(ring: RingWriter, run: FakeRun) -> tuple[Iterator[object], Iterator[object]]:
    """A thread with 4,202 records and one with 2, their live streams (the first read in part)."""
    ring.batch(0, [(0x10000 + LINE * i, 8, False) for i in range(4000)], 1)
    ring.batch(0, [(0x800000 + LINE * i, 8, False) for i in range(200)], 1)
    ring.batch(1, [(0x400000, 8, False)], 1)
    _seen(ring, run)
    live = LiveProgram(cast(TracedRun, run), True, True, None, None)
    busy, quiet = (cast(Iterator[object], spec.stream()) for spec in live.new_specs())
    assert len(cast(bytes, next(busy))) == 3 * 8 * workload.CHUNK  # read in part: the rest is to simulate
    assert list(cast(bytes, next(quiet))) == [(0x400000 // LINE, 1, 0), (-1 - 1, 0, FL_IFETCH)]
    return busy, quiet


def test_a_quiet_thread_is_idle_while_another_has_records_and_waits_when_none_has(
    ring: RingWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workload, "IDLE_GRACE_S", 0.0)
    run = FakeRun([lambda r: setattr(r, "ended", True)])
    busy, quiet = _two_threads(ring, run)
    assert next(quiet) is IDLE and run.waits == 0  # it does not hold the machine
    assert len(_records([next(busy)])) == 4202 - workload.CHUNK  # the other read all it had
    assert list(quiet) == [] and run.waits == 1  # now it waited, until the program's end
    for _vcpu, descriptor in run.seen:
        os.close(descriptor)


def test_a_thread_waits_through_the_grace_before_it_is_idle(
    ring: RingWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workload, "IDLE_GRACE_S", 3600.0)

    def more(run: FakeRun) -> None:  # within the grace, its next records come
        ring.batch(1, [(0x500000, 8, True)], 0)
        ring.batch(1, [(0x600000, 8, True)], 0)  # (the first run of accesses is written once another starts)
        _seen(ring, run)

    run = FakeRun([more])
    _busy, quiet = _two_threads(ring, run)
    assert list(cast(bytes, next(quiet))) == [(0x500000 // LINE, 1, 1)] and run.waits == 1
    for _vcpu, descriptor in run.seen:
        os.close(descriptor)
