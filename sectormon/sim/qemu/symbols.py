"""A traced program's data objects from its ELF symbols: its global and static variables.

Each sized OBJECT symbol of the program's own file (``.symtab``, else ``.dynsym``: see
:class:`~sectormon.attribution.elf.ElfImage`) becomes a data object at its ELF address plus the
load bias QEMU loaded the program with (0 for a fixed-address executable; a PIE's from the entry
point the plugin reports). So ``--assign table=0,stream=1`` names the program's arrays as the
Fujitsu directives do. Heap blocks and stacks are named after the run (:mod:`.heap`); variables
of shared libraries are ``[other]``. A symbol nested in one already taken is left out (objects
must not overlap); a name used twice (two files' statics) gets its address appended. Past
:data:`~sectormon.sim.objects.MAX_OBJECTS` the largest objects are kept.
"""

from __future__ import annotations

from sectormon.attribution.elf import ElfDamaged, ElfImage, NotElf
from sectormon.errors import DataError, UsageError
from sectormon.sim.objects import MAX_OBJECTS, OTHER, DataObjects, object_sectors
from sectormon.sim.qemu.heap import HEAP_PREFIX, STACK_PREFIX


def check_assign(path: str, assign: dict[str, str]) -> None:
    """``--assign`` checked against the program's variables before it runs (names only: the load
    bias is known once it runs): one error naming what is wrong. Heap and stack names
    (``heap:...``, ``stack:T``) exist only once the program has run: they are checked then."""
    assign = {k: v for k, v in assign.items() if not k.startswith((HEAP_PREFIX, STACK_PREFIX))}
    if not assign:
        return
    objects = symbol_objects(path, 0)
    if objects is None:
        raise UsageError(
            f"--assign: {path} has no symbols naming its variables "
            "(build it without -s, or give --objects FILE)"
        )
    object_sectors(objects, assign)


def symbol_objects(path: str, bias: int) -> DataObjects | None:
    """The variables of the program at ``path`` loaded with ``bias``; None when it has none, or
    its symbols cannot be read (the accesses are then all ``[other]``)."""
    try:
        ranges = list(ElfImage(path).objects.ranges())
    except (NotElf, ElfDamaged, DataError):
        return None
    ranges = [r for r in ranges if r[2] - r[1] > 0]
    if len(ranges) > MAX_OBJECTS:
        ranges = sorted(sorted(ranges, key=lambda r: r[1] - r[2])[:MAX_OBJECTS], key=lambda r: r[1])
    kept: list[tuple[str, int, int]] = []
    for name, start, end in ranges:
        if kept and start + bias < kept[-1][2]:
            continue
        kept.append((name, start + bias, end + bias))
    if not kept:
        return None
    seen: set[str] = {OTHER}
    names = [OTHER]
    for name, start, _ in kept:
        unique = name if name not in seen else f"{name}@0x{start:x}"
        seen.add(unique)
        names.append(unique)
    return DataObjects(
        path,
        tuple(names),
        tuple(k[1] for k in kept),
        tuple(k[2] for k in kept),
        tuple(range(1, len(kept) + 1)),
    )
