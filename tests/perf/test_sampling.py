"""Sampling through the real perf_event_open: page-fault samples, the ring buffer, lost samples.

Software page-fault events sample on any Linux host and carry the exact faulting address, so
each test knows the truth: which pages it touched and how many.
"""

from __future__ import annotations

import ctypes
import itertools
import mmap
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sectormon.data.samples import Sample
from sectormon.host.topology import online_cpus
from sectormon.perf.events import parse_event
from sectormon.perf.records import LostRecord, MmapRecord, Record, SampleRecord
from sectormon.perf.ring import check_pages
from sectormon.perf.sampling import SamplingConfig, SamplingEvent
from sectormon.sources.perf.samples import (
    RecordStream,
    SamplingRings,
    make_target,
    sample_target,
)
from tests.perf.perf_helpers import Child

pytestmark = pytest.mark.syscall
PAGE = mmap.PAGESIZE
FAULTS = parse_event("page-faults")


def touch(pages: int) -> tuple[mmap.mmap, int]:
    """Fault in ``pages`` fresh pages (huge pages off: one write, one fault); returns the mapping
    (keep it alive) and its address."""
    region = mmap.mmap(-1, pages * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    region.madvise(mmap.MADV_NOHUGEPAGE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(region))
    for offset in range(0, pages * PAGE, PAGE):
        region[offset] = 1
    return region, address


def samples(records: list[Record]) -> list[SampleRecord]:
    return [r for r in records if isinstance(r, SampleRecord)]


@pytest.fixture
def event_on_this_thread() -> Iterator[SamplingEvent]:
    event = SamplingEvent(FAULTS, SamplingConfig(period=1), pid=0)
    try:
        yield event
    finally:
        event.close()


def test_every_fault_is_a_sample_at_its_address(event_on_this_thread: SamplingEvent) -> None:
    event = event_on_this_thread
    before = time.monotonic_ns()
    event.enable()
    region, address = touch(300)
    event.disable()
    after = time.monotonic_ns()
    result = event.read_records()
    assert not result.error and not result.malformed
    inside = [s for s in samples(result.records) if address <= s.addr < address + 300 * PAGE]
    assert sorted(s.addr - address for s in inside) == [i * PAGE for i in range(300)]
    assert all(before <= s.time <= after for s in inside)  # CLOCK_MONOTONIC, as asked for
    assert all(s.tid == threading.get_native_id() for s in inside)
    # The kernel may merge the new mapping with a neighbour: the record then covers both.
    maps = [
        r
        for r in result.records
        if isinstance(r, MmapRecord) and r.addr <= address and address + 300 * PAGE <= r.addr + r.length
    ]
    assert maps and not maps[-1].executable and maps[-1].prot == 3  # PROT_READ | PROT_WRITE
    assert event.lost() == 0
    region.close()


def test_a_period_takes_every_nth_fault() -> None:
    with SamplingEvent(FAULTS, SamplingConfig(period=10), pid=0) as event:
        event.enable()
        region, address = touch(1000)
        event.disable()
        found = samples(event.read_records().records)
        inside = [s for s in found if address <= s.addr < address + 1000 * PAGE]
        region.close()
    assert 99 <= len(inside) <= 101
    gaps = {b.addr - a.addr for a, b in itertools.pairwise(inside)}
    assert gaps == {10 * PAGE}


def test_freq_mode_samples_carry_their_period() -> None:
    with SamplingEvent(FAULTS, SamplingConfig(freq=1000), pid=0) as event:
        event.enable()
        region, _ = touch(2000)
        event.disable()
        found = samples(event.read_records().records)
        region.close()
    assert found and all(s.period >= 1 for s in found)


def test_the_ring_wraps_without_losing_anything() -> None:
    """A one-page ring read between batches smaller than it: many wraps, every sample arrives."""
    with SamplingEvent(FAULTS, SamplingConfig(period=1, pages=1), pid=0) as event:
        event.enable()
        regions, found = [], []
        for _ in range(40):
            region, address = touch(20)
            regions.append((region, address))
            found += samples(event.read_records().records)
        event.disable()
        found += samples(event.read_records().records)
        lost = event.lost()
    expected = {a + i * PAGE for _, a in regions for i in range(20)}
    assert expected <= {s.addr for s in found}
    assert lost == 0
    for region, _ in regions:
        region.close()


def test_a_ring_too_small_reports_lost_samples_instead_of_dropping_them_silently() -> None:
    """2000 faults into a one-page ring nobody reads: most are dropped, and the kernel says how
    many, in a LOST record (once there is room again) and in the event's own lost count."""
    with SamplingEvent(FAULTS, SamplingConfig(period=1, pages=1), pid=0) as event:
        event.enable()
        first, address = touch(2000)
        kept = samples(event.read_records().records)
        second, _ = touch(1)  # the next write finds room and reports the drops first
        event.disable()
        rest = event.read_records().records
        lost_records = sum(r.lost for r in rest if isinstance(r, LostRecord))
        lost_counted = event.lost()
    inside = [s for s in kept + samples(rest) if address <= s.addr < address + 2000 * PAGE]
    assert lost_records > 1000
    assert lost_counted == lost_records
    # Every fault is a sample or counted as lost; the kernel's count also takes in the odd side-band
    # record dropped with them (an mmap of the interpreter's allocator).
    assert 2000 <= len(inside) + lost_records <= 2005
    first.close()
    second.close()


def test_pages_must_be_a_power_of_two() -> None:
    assert check_pages(8) == 8
    for bad in (0, 3, 100):
        with pytest.raises(ValueError, match="power of two"):
            check_pages(bad)


def test_sampling_a_running_process_by_pid(child: Child) -> None:
    """A process sampled from outside, thread by thread: its faults in its own mappings."""
    target = make_target(pid=child.pid)
    done = threading.Event()

    def work() -> None:
        time.sleep(0.2)
        child.ask("touch 500")
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    run = sample_target(target, FAULTS, SamplingConfig(period=1), duration=3.0, stop=done)
    worker.join()
    stream = run.stream()
    found = [e for e in stream if isinstance(e, Sample)]
    assert len(found) >= 500
    assert run.counted is not None and run.counted.value is not None and run.counted.value >= len(found)
    assert run.before  # the process's mappings from /proc before sampling began
    assert stream.lost == 0 and run.lost == 0


def test_sampling_a_command_counts_the_same_event_in_the_same_run() -> None:
    workload = Path(__file__).resolve().parents[1] / "workloads" / "pagefaults.py"
    target = make_target(command=[sys.executable, str(workload), "3000", "0.2"], stdout=2)
    run = sample_target(target, FAULTS, SamplingConfig(period=1))
    stream: RecordStream = run.stream()
    found = [e for e in stream if isinstance(e, Sample)]
    assert run.counted is not None and run.counted.value is not None
    assert abs(run.counted.value - len(found)) <= max(5, run.counted.value // 1000)
    assert len(found) > 3000
    assert run.target_cpu_seconds is not None and run.target_cpu_seconds > 0


def test_sampling_cpus_sees_every_process_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU-wide: this process's faults are among the samples, with its mappings read from /proc.

    The worker touches its pages once every event is enabled, not after a fixed sleep: under load
    opening one event per CPU took longer than the sleep and the first faults went unsampled.
    """
    from sectormon.perf.errors import PermissionDenied

    cpus = tuple(sorted(os.sched_getaffinity(0)))
    enabled = threading.Event()
    done = threading.Event()
    regions: list[tuple[mmap.mmap, int]] = []
    enable = SamplingRings.enable

    def enable_then_tell(rings: SamplingRings) -> None:
        enable(rings)
        enabled.set()

    monkeypatch.setattr(SamplingRings, "enable", enable_then_tell)

    def work() -> None:
        if enabled.wait(timeout=60):
            regions.append(touch(400))
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        # The stop event ends the run once the pages are touched; the duration only bounds a hang.
        config = SamplingConfig(period=1)
        run = sample_target(make_target(cpus=cpus), FAULTS, config, duration=60.0, stop=done)
    except PermissionDenied as exc:
        enabled.set()
        worker.join()
        pytest.skip(f"CPU-wide sampling is not allowed here: {exc}")
    enabled.set()
    worker.join()
    region, address = regions[0]
    samples_here = [e for e in run.stream() if isinstance(e, Sample) and e.pid == os.getpid()]
    mine = [e for e in samples_here if address <= (e.addr or 0) < address + 400 * PAGE]
    assert len(mine) == 400
    assert run.units == len(cpus) and any(e.pid == os.getpid() for e in run.before)
    region.close()


def test_a_ring_over_the_locked_memory_allowance_says_how_to_fix_it() -> None:
    import errno

    from sectormon.perf.errors import PermissionDenied
    from sectormon.perf.ring import _mmap_error

    error = _mmap_error(OSError(errno.EPERM, "Operation not permitted"), 1024, "page-faults")
    assert isinstance(error, PermissionDenied)
    assert f"{1025 * PAGE // 1024} KiB ring buffer of 'page-faults'" in str(error)
    assert "perf_event_mlock_kb" in str(error) and "fewer --mmap-pages" in str(error)


def test_records_dropped_beside_the_samples_are_not_counted_as_lost_samples() -> None:
    """A full ring drops side-band records too (an mmap's MMAP2, a task's EXIT at its end), and the
    kernel counts every dropped record, of any kind, in one lost count: the run's lost samples must
    be its samples alone, so that every fault the sampling events counted is a sample or a lost
    sample, exactly. (Their own count, not the counting group's: this thread runs between the
    ioctls that enable the two, and the command targets' exact comparison with the counting group
    relies on enable_on_exec, which enables both at once.)"""
    rings = SamplingRings(FAULTS, SamplingConfig(period=1, pages=1), "page-faults")
    mappings: list[mmap.mmap] = []
    try:
        rings.open_task(threading.get_native_id(), online_cpus())
        rings.enable()
        region, _ = touch(1000)  # a one-page ring nobody reads holds about 70 samples
        mappings += [mmap.mmap(-1, PAGE) for _ in range(20)]  # 20 MMAP2 records (no faults) dropped
        rings.disable()
        found = [r for chunk in rings.read_new() for r in rings.config.layout().parse(chunk).records]
        lost = rings.lost()
        counted = 0
        for event in rings.sampling_events():  # read(): the event's count, then its lost count
            assert event.fd is not None
            counted += int.from_bytes(os.read(event.fd, 16)[:8], sys.byteorder)
    finally:
        rings.close()
    if lost is None:
        pytest.skip("this kernel has no PERF_FORMAT_LOST (Linux 6.0): lost samples come from LOST records")
    assert counted >= 1000 and lost > 0
    assert len(samples(found)) + lost == counted
    region.close()
    for mapping in mappings:
        mapping.close()
