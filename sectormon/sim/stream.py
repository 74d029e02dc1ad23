"""What a simulated thread runs: a stream of access records, their flags, and the thread's spec.

A thread consumes a stream of *records* ``(line, n, flags)``: ``n`` consecutive accesses to one
256-byte line (an unrolled SVE loop touches a line several times in a row). Only the first access
of a record can miss: the others hit the line it just made MRU, so grouping them is exact, and it
is what lets pure Python simulate over a million accesses per second. Streams come in chunks
(lists of records), so the run loop iterates a list, not a generator, per record.

Flags: bit 0 write, bits 1-2 sector id, bit 3 SCE (tag override on), bit 4 PFE, bits 7 and up
the data object's id (``ThreadSpec.objects``). Two special records carry no access: ``FL_EXIT``
(loop exits; frontend mispredict penalty) and ``FL_IFETCH`` (instruction fetches of a din trace);
their count is ``-1 - line``. Kernels and traces write these records; both cores read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

FL_WRITE = 1
FL_SCE = 8
FL_PFE = 16
FL_EXIT = 32
FL_IFETCH = 64
FL_SPECIAL = FL_EXIT | FL_IFETCH
FLAG_SLOTS = 128
# Bits 7 and up: the data object (kernel array, trace object) of the access, so per-object counts
# and samples cost one list index; ThreadSpec.objects names them.
OBJECT_SHIFT = 7

Record = tuple[int, int, int]
Chunks = Iterator[list[Record]]


@dataclass(frozen=True, slots=True)
class RegionMark:
    """A marker call of a traced program between two chunks of its thread's stream: the thread
    entered (``start``) or left region ``(name, number)`` (fapp's identity, as in
    :mod:`sectormon.data.regions`) after the accesses before it and before those after it."""

    start: bool
    name: str
    number: int = 0


@dataclass(frozen=True, slots=True)
class Idle:
    """A running program's thread waiting (in ``pthread_join``, a barrier's sleep, I/O) while others
    have accesses to simulate, between two chunks of its stream: the machine moves its clock to
    where it runs the others to, without accesses, as an idle core's (cycles pass, no instructions).
    Yielded by a live program's streams alone (:mod:`sectormon.sim.qemu.live_threads`)."""


IDLE = Idle()


def flags(sector: int, write: bool, tagged: bool, pfe: bool, obj: int = 0) -> int:
    """The flags of an access to data object ``obj``: an untagged access uses the default sector 0."""
    base = (obj << OBJECT_SHIFT) | (FL_WRITE if write else 0)
    if not tagged:
        return base
    return base | (sector << 1) | FL_SCE | (FL_PFE if pfe else 0)


@dataclass(frozen=True, slots=True)
class ThreadSpec:
    """What one simulated thread runs: its stream factory (called again when looping), its ISA mix,
    and the names of the data objects its flags number (``flags(..., obj=i)`` is ``objects[i]``).

    A running program's threads share one list of names that grows as its heap sites and stacks
    are met (:mod:`sectormon.sim.qemu.live_objects`): ``object_capacity`` is how many objects their
    flags may number, the counters' size (0: ``len(objects)``)."""

    tid: int
    cpu: int
    stream: Callable[[], Chunks]
    cycles_per_access: float = 1.0
    inst_per_access: float = 2.0
    objects: Sequence[str] = ("",)
    object_capacity: int = 0
