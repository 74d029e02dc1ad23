"""A traced program's heap blocks and stacks as named data objects (docs/sim.md, "Real programs").

The preloaded shim (``shim.c``) reports every block with its allocation site, and every thread's
stack; the capture keeps these events in order (``_capture.c``). Here each call site gets a name
a user can type in ``--assign NAME=SECTOR``:

- ``heap:FUNCTION:LINE``, the function and source line of the call, when the program has DWARF
  line information (``-g``); a call in inlined code (C++'s ``std::vector``) has the line the
  outermost inlined call has in FUNCTION (:mod:`.call_lines`), so two vectors of one function
  are two objects; ``heap:FUNCTION+0xOFFSET`` with symbols only; outside the program's
  own file (a library allocating for it, C++'s ``operator new``) ``heap:lib``. Sites with the same
  name are one object: a loop's allocations, or two calls on one line, are the same array.
- ``stack:T`` for traced thread ``T`` (the summary's thread number).

Names are looked up with the project's ELF reader (:class:`~sectormon.attribution.elf.ElfImage`)
at the call's address less the program's load bias. Past
:data:`~sectormon.sim.objects.MAX_OBJECTS` objects, the sites that allocated the fewest bytes are
``[other]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from sectormon.attribution.elf import ElfDamaged, ElfImage, NotElf
from sectormon.errors import DataError
from sectormon.sim.objects import MAX_OBJECTS, OTHER, DataObjects
from sectormon.sim.qemu.call_lines import inlined_call_lines

LIBRARY_SITE = "heap:lib"
HEAP_PREFIX = "heap:"
STACK_PREFIX = "stack:"


@dataclass(frozen=True, slots=True)
class Site:
    """One allocation site: the return address of its call, the blocks and bytes it allocated."""

    address: int
    blocks: int
    bytes: int


@dataclass(frozen=True, slots=True)
class HeapObjects:
    """What the compiled reader needs to name each access to a heap block or a stack: the
    program's events file (``Capture.events()``, None: there were none), its sorted call sites
    and each one's object id, and the object id of each vCPU's stack (0, ``[other]``, where none)."""

    events: IO[bytes] | None
    sites: tuple[int, ...]
    site_ids: tuple[int, ...]
    stacks: tuple[int, ...]
    blocks: tuple[tuple[str, int, int], ...] = ()  # per heap object: name, blocks, bytes allocated

    def to_json(self) -> list[dict[str, object]]:
        return [{"name": n, "blocks": b, "bytes": size} for n, b, size in self.blocks]


@dataclass(frozen=True, slots=True)
class Shim:
    """Whether the shim reported: ``loaded``, or why not (a static binary, a missing build)."""

    loaded: bool
    reason: str = ""

    def to_json(self) -> str:
        return "loaded" if self.loaded else f"not loaded: {self.reason}"


NO_SHIM = Shim(False, "not traced with the shim")


def site_name(image: ElfImage | None, vaddr: int, call_line: int | None = None) -> str:
    """The object name of a call site at ELF address ``vaddr`` of the program (see the module);
    ``call_line`` its line in its function when it is in inlined code."""
    if image is None or not image.contains(vaddr):
        return LIBRARY_SITE
    function = image.functions.lookup(vaddr)
    if function is None:
        return f"{HEAP_PREFIX}{image.name}+0x{vaddr:x}"
    place = image.source(vaddr)
    if place is not None:
        line = call_line if call_line is not None else place.rpartition(":")[2]
        return f"{HEAP_PREFIX}{function[0]}:{line}"
    return f"{HEAP_PREFIX}{function[0]}+0x{function[1]:x}"


def image_of(path: str) -> ElfImage | None:
    """The program's ELF image; None when it cannot be read (its sites are then ``heap:lib``)."""
    try:
        return ElfImage(path)
    except (NotElf, ElfDamaged, DataError):
        return None


def heap_objects(
    path: str,
    bias: int,
    globals_: DataObjects | None,
    sites: Sequence[Site],
    vcpus: Sequence[int],
    stack_vcpus: Sequence[int],
    events: IO[bytes] | None,
) -> tuple[DataObjects, HeapObjects]:
    """The program's objects (``globals_``, then one per site name, then ``stack:T`` for each
    traced thread whose stack the shim reported: ``vcpus[T]`` is its vCPU, ``stack_vcpus`` the
    vCPUs with a stack) and the reader's tables for them."""
    image = image_of(path) if sites else None
    # The call's return address less one: the call instruction itself, on the caller's line.
    vaddrs = [s.address - bias - 1 for s in sites]
    calls = inlined_call_lines(path, vaddrs) if image is not None and image.has_lines else {}
    named = [(site_name(image, v, calls.get(v)), s) for v, s in zip(vaddrs, sites, strict=True)]
    base = globals_.names if globals_ is not None else (OTHER,)
    stacked = set(stack_vcpus)
    stack_names = [f"{STACK_PREFIX}{t}" for t, vcpu in enumerate(vcpus) if vcpu in stacked]
    room = MAX_OBJECTS + 1 - len(base) - len(stack_names)
    by_bytes: dict[str, int] = {}
    blocks: dict[str, int] = {}
    for name, site in named:
        by_bytes[name] = by_bytes.get(name, 0) + site.bytes
        blocks[name] = blocks.get(name, 0) + site.blocks
    kept = sorted(sorted(by_bytes, key=lambda n: -by_bytes[n])[: max(room, 0)])
    ids = {name: len(base) + i for i, name in enumerate(kept)}
    stack_ids = {vcpu: len(base) + len(kept) + i for i, vcpu in enumerate(v for v in vcpus if v in stacked)}
    names = (*base, *kept, *stack_names)
    objects = DataObjects(
        globals_.path if globals_ is not None else path,
        names,
        globals_.starts if globals_ is not None else (),
        globals_.ends if globals_ is not None else (),
        globals_.ids if globals_ is not None else (),
    )
    stacks = tuple(stack_ids.get(v, 0) for v in range(max(stack_ids, default=-1) + 1))
    tables = HeapObjects(
        events,
        tuple(s.address for _, s in named),
        tuple(ids.get(name, 0) for name, _ in named),
        stacks,
        tuple((name, blocks[name], by_bytes[name]) for name in sorted(by_bytes)),
    )
    return objects, tables
