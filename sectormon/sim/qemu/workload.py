"""A traced program's threads as the simulator's workload: one simulated thread per traced thread.

Each thread reads its records file again for every run (a loop's next pass, each configuration of
the advisor): the compiled reader (``_capture.Reader``) looks up each record's data object and gives
chunks of packed int64 ``(line, n, flags)`` triples. The compiled core reads such a chunk in place;
the Python model iterates the same chunk as record tuples (:class:`PackedChunk`), so both cores run
from the same records. Threads are placed on cores as the kernels' are
(:func:`~sectormon.sim.workload.placement`); the instructions are the plugin's counts (ifetch
records), not an assumed number per access. The program's own objects (globals, heap blocks,
stacks: :mod:`.heap`) name its accesses unless ``--objects FILE`` names address ranges instead.
With ``marks=True`` a thread's stream also yields its marker calls, between its chunks, as
:class:`~sectormon.sim.stream.RegionMark` objects (off by default: the simulated threads learn
to consume them).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, cast

from sectormon.errors import UsageError
from sectormon.sim.config import MAX_THREADS
from sectormon.sim.objects import OTHER, DataObjects
from sectormon.sim.qemu.capture import CapturedThread, Program
from sectormon.sim.qemu.heap import HeapObjects
from sectormon.sim.stream import Chunks, RegionMark, ThreadSpec, flags
from sectormon.sim.workload import Workload, placement

CHUNK = 4096
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


def _stream(
    thread: CapturedThread,
    objects: DataObjects | None,
    table: list[int],
    heap: HeapObjects | None,
    marks: bool,
) -> Iterator[PackedChunk | RegionMark]:
    from sectormon.sim.qemu._capture import Reader

    starts = objects.starts if objects is not None else ()
    ends = objects.ends if objects is not None else ()
    ids = objects.ids if objects is not None else ()
    fd = thread.records.fileno()
    if heap is None:
        reader = Reader(fd, starts, ends, ids, table)
    else:
        events = heap.events.fileno() if heap.events is not None else -1
        reader = Reader(fd, starts, ends, ids, table, events, heap.sites, heap.site_ids, heap.stacks)
    while (chunk := reader.chunk(CHUNK)) is not None:
        if isinstance(chunk, tuple):
            if marks:
                yield RegionMark(*chunk)
        else:
            yield PackedChunk(chunk)


def program_workload(
    program: Program,
    tag_override: bool,
    prefetch: bool,
    objects: DataObjects | None = None,
    assign: tuple[int | None, ...] | None = None,
    marks: bool = False,
) -> Workload:
    """The traced threads of ``program`` as simulated threads (see the module docstring)."""
    threads = program.threads
    if not threads:
        raise UsageError(f"sim -- {program.argv[0]}: the program made no memory access QEMU could trace")
    if len(threads) > MAX_THREADS:
        raise UsageError(
            f"sim -- {program.argv[0]}: {len(threads)} threads; the simulated A64FX has {MAX_THREADS} cores "
            "(run it with fewer threads, e.g. OMP_NUM_THREADS)"
        )
    names = objects.names if objects is not None else (OTHER,)
    table = flag_table(len(names), tag_override, prefetch, assign)
    heap = program.heap if objects is program.objects else None  # not with --objects FILE

    def factory(thread: CapturedThread) -> Any:
        # The engine's chunks are record lists by type; a PackedChunk reads as one (see above).
        return lambda: cast(Chunks, _stream(thread, objects, table, heap, marks))

    specs = tuple(
        ThreadSpec(t, placement(t, len(threads)), factory(thread), 1.0, 0.0, names)
        for t, thread in enumerate(threads)
    )
    return Workload(
        specs,
        {
            **program.to_json(),
            "threads": len(threads),
            "cpus": [s.cpu for s in specs],
            **({"data_objects": objects.to_json()} if objects is not None else {}),
            **(
                {"object_sectors": {n: s for n, s in zip(names, assign, strict=True) if s is not None}}
                if assign is not None
                else {}
            ),
            "note": "instructions are QEMU's counts of the program's executed blocks; an access that "
            "straddles two 256-byte lines counts as one access to each",
        },
    )
