"""A traced program's threads as the simulator's workload: one simulated thread per traced thread.

Each thread reads its records file again for every run (a loop's next pass, each configuration of
the advisor): the compiled reader (``_capture.Reader``) looks up each record's data object and gives
chunks of packed int64 ``(line, n, flags)`` triples. The compiled core reads such a chunk in place;
the Python model iterates the same chunk as record tuples (:class:`PackedChunk`), so both cores run
from the same records. The instructions are the plugin's counts (ifetch records), not an assumed
number per access.

Placement (:func:`thread_cpus`): the t-th thread on the t-th CPU of ``--bind``, else spread over
the CMGs as the kernels' threads are (:func:`~sectormon.sim.workload.placement`). A simulated core
runs one thread (its own L1D: time-sharing one would need a context switch the model does not
have), so threads past the CPUs are not simulated; their accesses are counted and said.

A running program (:class:`LiveProgram`): its threads are handed out as they appear, and a thread
at the end of its file waits for more, for its end record, or for the program's end; a thread that
waits while others have records is idle, one that ended is finished, so neither holds the machine
(:mod:`.live_threads`).

The program's own objects (globals, and once it has run its heap blocks and stacks:
:mod:`.heap`) name its accesses unless ``--objects FILE`` names address ranges instead; a
running program's heap sites and stacks are named as its threads meet them (:mod:`.live_objects`).
With ``marks=True`` a thread's stream also yields its marker calls, between its chunks, as
:class:`~sectormon.sim.stream.RegionMark` objects, for the simulated threads to count regions.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from sectormon.errors import UsageError
from sectormon.sim.config import MAX_THREADS
from sectormon.sim.objects import OTHER, DataObjects
from sectormon.sim.qemu.capture import CapturedThread, Program, TracedRun
from sectormon.sim.qemu.heap import HeapObjects
from sectormon.sim.qemu.live_objects import LiveObjects
from sectormon.sim.qemu.live_threads import IDLE_GRACE_S, Ended, LiveThreads
from sectormon.sim.stream import IDLE, Chunks, Idle, RegionMark, ThreadSpec, flags
from sectormon.sim.workload import Workload, placement

if TYPE_CHECKING:
    from sectormon.sim.qemu._capture import Reader

CHUNK = 4096
LIVE_WAIT_S = 0.1  # a live thread at the end of its file waits so long for more, then looks again
NOTE = (
    "instructions are QEMU's counts of the program's executed blocks; an access that straddles two "
    "256-byte lines counts as one access to each"
)
_RECORD = struct.Struct("=qqq")


class PackedChunk(bytes):
    """Packed engine records; iterated (by the Python model) as ``(line, n, flags)`` tuples."""

    def __iter__(self) -> Iterator[tuple[Any, ...]]:  # type: ignore[override]
        return _RECORD.iter_unpack(self)


def flag_table(count: int, tag_override: bool, pfe: bool, assign: tuple[int | None, ...] | None) -> list[int]:
    """``flags[2 * object + write]`` for objects ``0..count-1``, as :func:`~sectormon.sim.trace.records`
    flags a trace's accesses: an object with an assigned sector is tagged, the others untagged."""
    out: list[int] = []
    for obj in range(count):
        sector = assign[obj] if assign is not None else None
        tagged = tag_override and sector is not None
        out += [flags(sector or 0, write, tagged, pfe and tagged, obj) for write in (False, True)]
    return out


def _reader(
    fd: int, objects: DataObjects | None, table: list[int], heap: HeapObjects | None = None
) -> Reader:
    from sectormon.sim.qemu._capture import Reader

    starts = objects.starts if objects is not None else ()
    ends = objects.ends if objects is not None else ()
    ids = objects.ids if objects is not None else ()
    if heap is None:
        return Reader(fd, starts, ends, ids, table)
    events = heap.events.fileno() if heap.events is not None else -1
    return Reader(fd, starts, ends, ids, table, events, heap.sites, heap.site_ids, heap.stacks)


def _stream(
    thread: CapturedThread,
    objects: DataObjects | None,
    table: list[int],
    heap: HeapObjects | None,
    marks: bool,
) -> Iterator[PackedChunk | RegionMark]:
    reader = _reader(thread.records.fileno(), objects, table, heap)
    while (chunk := reader.chunk(CHUNK)) is not None:
        if isinstance(chunk, bool):  # a thread's end: the next one QEMU gave its index goes on
            continue
        if isinstance(chunk, tuple):
            if marks:
                yield RegionMark(*chunk)
        else:
            yield PackedChunk(chunk)


def _live_reader(
    run: TracedRun, fd: int, objects: DataObjects | None, table: list[int], live: LiveObjects | None
) -> Reader:
    """The reader of a running program's thread: with ``live``, it names heap sites and stacks as
    it meets them, from the run's events file (through a descriptor of the reader's own)."""
    from sectormon.sim.qemu._capture import Reader

    if live is None or run.events_fd < 0:
        return _reader(fd, objects, table)
    starts = objects.starts if objects is not None else ()
    ends = objects.ends if objects is not None else ()
    ids = objects.ids if objects is not None else ()
    return Reader(fd, starts, ends, ids, table, run.events_fd, live=live)


def _live_stream(
    run: TracedRun,
    fd: int,
    objects: DataObjects | None,
    table: list[int],
    marks: bool = False,
    place: _Place | None = None,
    live: LiveObjects | None = None,
) -> Iterator[PackedChunk | RegionMark | Idle]:
    """A running program's thread: at the end of what its file holds, wait for more, for its end
    record, or for the program's end. It reads a descriptor of its own: the run closing its
    descriptors at the end cannot pull the file from under a read. With ``place`` (its simulated
    thread among the program's others), its end record ends it and, once its file has been quiet
    for :data:`IDLE_GRACE_S` while another thread has records, it yields :data:`IDLE` instead of
    waiting (:mod:`.live_threads`); without, only the program's end ends it. With ``live``, it
    names heap sites and stacks as it meets them (:func:`_live_reader`)."""
    if place is not None and place.threads.finished(place.tid):
        return  # a looping run's next pass of a thread that ended: it stays finished
    own = os.dup(fd)
    try:
        reader = _live_reader(run, own, objects, table, live)
        if place is not None:
            reader.offset = place.start
            place.threads.reading(place.tid, fd, reader)
        news = time.monotonic()  # when the file last had something new
        while True:
            ended = run.ended  # before the read: everything written before the end is read after
            chunk = reader.chunk(CHUNK)
            if chunk is not None:
                news = time.monotonic()
            if isinstance(chunk, bool):
                if place is not None:
                    place.threads.ended(place.tid, Ended(place.vcpu, fd, place.cpu, reader.offset))
                    return
            elif isinstance(chunk, tuple):
                if marks:
                    yield RegionMark(*chunk)
            elif chunk is not None:
                yield PackedChunk(chunk)
            elif ended:
                return
            elif _idle(place, news):
                yield IDLE
            else:
                run.wait(LIVE_WAIT_S)
    finally:
        if place is not None:
            place.threads.stopped(place.tid)
        os.close(own)


class _Place(NamedTuple):
    """A live stream's simulated thread: its id, the traced thread's vCPU, its CPU, where its
    records start in the vCPU's file, and the program's other threads."""

    tid: int
    vcpu: int
    cpu: int
    start: int
    threads: LiveThreads


def _idle(place: _Place | None, news: float) -> bool:
    """Whether a live thread with nothing to read is idle rather than waited for (see
    :mod:`.live_threads`)."""
    if place is None or time.monotonic() - news < IDLE_GRACE_S:
        return False
    return place.threads.others_have_records(place.tid)


def thread_cpus(threads: int, cpus: Sequence[int] = ()) -> list[int]:
    """The simulated CPUs of a program's first threads, one each: the t-th of ``cpus``
    (``--bind``), else spread over the CMGs like a kernel's threads (:func:`placement`), as many
    as there are CPUs to place them on (the listed ones, or the 48 cores)."""
    if cpus:
        return list(cpus[:threads])
    return [placement(t, MAX_THREADS) for t in range(min(threads, MAX_THREADS))]


def not_simulated(program: Program, cpus: Sequence[int] = ()) -> tuple[CapturedThread, ...]:
    """A program's threads past the CPUs its threads are placed on (:func:`thread_cpus`)."""
    return program.threads[len(thread_cpus(len(program.threads), cpus)) :]


def left_out_note(threads: int, accesses: int, cores: int) -> str:
    """The warning for threads past the cores: what was not simulated, and why."""
    fix = (
        f"give --bind more CPUs, up to {MAX_THREADS}"
        if cores < MAX_THREADS
        else f"run it with at most {MAX_THREADS} threads, e.g. OMP_NUM_THREADS={MAX_THREADS}"
    )
    return (
        f"{threads:,} thread(s) past the {cores} simulated CPU(s) were not simulated "
        f"({accesses:,} accesses left out: a simulated core runs one thread; {fix})"
    )


def program_workload(
    program: Program,
    tag_override: bool,
    prefetch: bool,
    objects: DataObjects | None = None,
    assign: tuple[int | None, ...] | None = None,
    cpus: Sequence[int] = (),
    marks: bool = False,
) -> Workload:
    """The traced threads of ``program`` as simulated threads (see the module docstring)."""
    threads = program.threads
    if not threads:
        raise UsageError(f"sim -- {program.argv[0]}: the program made no memory access QEMU could trace")
    names = objects.names if objects is not None else (OTHER,)
    table = flag_table(len(names), tag_override, prefetch, assign)
    heap = program.heap if objects is program.objects else None  # not with --objects FILE

    def factory(thread: CapturedThread) -> Any:
        # The engine's chunks are record lists by type; a PackedChunk reads as one (see above).
        return lambda: cast(Chunks, _stream(thread, objects, table, heap, marks))

    placed = thread_cpus(len(threads), cpus)
    specs = tuple(
        ThreadSpec(t, cpu, factory(thread), 1.0, 0.0, names)
        for t, (thread, cpu) in enumerate(zip(threads, placed, strict=False))
    )
    left_out = not_simulated(program, cpus)
    return Workload(
        specs,
        {
            **program.to_json(),
            "threads": len(threads),
            "cpus": [s.cpu for s in specs],
            **(
                {"not_simulated": {"threads": len(left_out), "accesses": sum(t.accesses for t in left_out)}}
                if left_out
                else {}
            ),
            **({"data_objects": objects.to_json()} if objects is not None else {}),
            **(
                {"object_sectors": {n: s for n, s in zip(names, assign, strict=True) if s is not None}}
                if assign is not None
                else {}
            ),
            "note": NOTE,
        },
    )


class LiveProgram:
    """A running program's threads (:class:`TracedRun` with ``live``) as simulated threads,
    handed out as they appear (:meth:`new_specs`): the t-th thread on :func:`thread_cpus`' t-th
    CPU; threads past the CPUs are not simulated (:meth:`left_out` counts them at the end)."""

    def __init__(
        self,
        run: TracedRun,
        tag_override: bool,
        prefetch: bool,
        objects: DataObjects | None,
        assign: tuple[int | None, ...] | None,
        cpus: Sequence[int] = (),
        marks: bool = False,
    ) -> None:
        self.run = run
        self.marks = marks
        self.objects = objects
        base = objects.names if objects is not None else (OTHER,)
        # The program's own objects (not --objects FILE): its heap sites and stacks are named too.
        own = objects is run.objects
        self.live_objects = LiveObjects(run.target.path, run.load_bias, base) if own else None
        self.names: Sequence[str] = self.live_objects.names if self.live_objects is not None else base
        capacity = self.live_objects.capacity if self.live_objects is not None else len(base)
        padded = (*assign, *(None,) * (capacity - len(assign))) if assign is not None else None
        self._table = flag_table(capacity, tag_override, prefetch, padded)
        self._capacity = capacity
        self.cpus = thread_cpus(MAX_THREADS if not cpus else len(cpus), cpus)
        self._handed = 0  # threads seen and handed out (placed or left out)
        self.simulated: list[int] = []  # vCPU of each simulated thread, by thread id
        self.threads = LiveThreads(lambda: bool(self.run.threads_seen(self._handed)))
        self._placed = 0  # threads seen that got a CPU (the others are left out)

    def new_specs(self) -> list[ThreadSpec]:
        """Specs of the threads seen since the last call that have a CPU to run on, then of the
        threads given an ended one's vCPU (on its CPU, :mod:`.live_threads`)."""
        fresh = self.run.threads_seen(self._handed)
        out = []
        for vcpu, fd in fresh:
            if self._placed < len(self.cpus):
                out.append(self._spec(vcpu, fd, self.cpus[self._placed], 0))
                self._placed += 1
        self._handed += len(fresh)
        out += [self._spec(e.vcpu, e.fd, e.cpu, e.offset) for e in self.threads.reused()]
        return out

    def _spec(self, vcpu: int, fd: int, cpu: int, start: int) -> ThreadSpec:
        place = _Place(len(self.simulated), vcpu, cpu, start, self.threads)
        run, objects, table, marks, live = self.run, self.objects, self._table, self.marks, self.live_objects
        self.simulated.append(vcpu)

        def stream() -> Chunks:
            return cast(Chunks, _live_stream(run, fd, objects, table, marks, place, live))

        return ThreadSpec(place.tid, cpu, stream, 1.0, 0.0, self.names, self._capacity)

    def exhausted(self) -> bool:
        """Whether the program has ended and every thread it had was handed out."""
        return self.run.ended and not self.run.threads_seen(self._handed) and not self.threads.pending()

    def left_out(self, program: Program) -> tuple[int, int]:
        """Threads not simulated (past the CPUs) and their accesses, from the ended run (a vCPU
        whose threads were simulated is, all of them: a later one runs on an ended one's CPU)."""
        simulated = set(self.simulated)
        rest = [t for t in program.threads if t.vcpu not in simulated]
        return len(rest), sum(t.accesses for t in rest)

    def describe(self) -> dict[str, Any]:
        """The header's description: what is known when the frames start."""
        run = self.run
        return {
            "kind": "program",
            "argv": list(run.argv),
            "arch": run.target.arch,
            "dynamic": run.target.dynamic,
            "live": True,
            "placement": self.cpus,
            **({"data_objects": self.objects.to_json()} if self.objects is not None else {}),
            "note": NOTE + "; simulated while the program runs: its t-th thread on the t-th CPU of placement",
        }
