"""One process's address space as sampled code and data see it: mappings and loaded ELF modules.

Mappings come from the sampler's MMAP2 records (and ``/proc/PID/maps``, read by
:mod:`sectormon.host.maps`, for what existed before sampling began); a new mapping replaces
whatever it overlaps, as in the kernel. A file mapping of an ELF image also places the whole
module: every PT_LOAD segment at its load bias, including the ``.bss`` part past the file, which
the kernel maps anonymously (so an address there still belongs to the binary's variables, not to
``//anon``).
"""

from __future__ import annotations

import bisect
import mmap
from dataclasses import dataclass

from sectormon.attribution.elf import ElfCache, ElfImage
from sectormon.data.samples import MapEvent

PAGE_SIZE = mmap.PAGESIZE


@dataclass(frozen=True, slots=True)
class Region:
    """A mapping ``[start, end)`` of ``path`` (file offset ``pgoff`` at ``start``)."""

    start: int
    end: int
    pgoff: int
    path: str


@dataclass(frozen=True, slots=True)
class Module:
    """An ELF image loaded at ``bias`` (address = ELF vaddr + bias)."""

    image: ElfImage
    bias: int


class AddressSpace:
    """Sorted regions and module ranges of one process, looked up by address."""

    def __init__(self) -> None:
        self._regions: list[Region] = []
        self._region_starts: list[int] = []
        self._modules: dict[str, Module] = {}
        self._ranges: list[tuple[int, int, str]] = []
        self._range_starts: list[int] = []

    def copy(self) -> AddressSpace:
        """A forked child's space: the same mappings, changed independently from now on."""
        other = AddressSpace()
        other._regions = list(self._regions)
        other._region_starts = list(self._region_starts)
        other._modules = dict(self._modules)
        other._ranges = list(self._ranges)
        other._range_starts = list(self._range_starts)
        return other

    def map(self, event: MapEvent, images: ElfCache) -> None:
        """Add a mapping (replacing what it overlaps) and, for an ELF file, place its module."""
        if event.end <= event.start:
            return
        self._insert(Region(event.start, event.end, event.pgoff, event.path))
        if not event.path.startswith("/"):
            return
        image = images.get(event.path)
        if image is None:
            return
        known = self._modules.get(event.path)
        # The mapping of the file's start fixes where the module is; a later mapping of another part
        # of the same file only places it when nothing did yet (a reloaded library starts at 0 again).
        if known is not None and event.pgoff != 0:
            return
        bias = image.load_bias(event.start, event.pgoff, event.prot, PAGE_SIZE)
        if bias is None or (known is not None and known.bias == bias):
            return
        self._modules[event.path] = Module(image, bias)
        placed = [(s.vaddr + bias, s.vaddr + bias + s.memsz, event.path) for s in image.segments if s.memsz]
        # A module placed over another one's addresses replaced it (dlclose, then dlopen).
        self._ranges = [
            r
            for r in self._ranges
            if r[2] != event.path and all(r[1] <= lo or r[0] >= hi for lo, hi, _ in placed)
        ]
        self._ranges += placed
        self._ranges.sort()
        self._range_starts = [r[0] for r in self._ranges]

    def _insert(self, new: Region) -> None:
        kept: list[Region] = []
        for region in self._regions:
            if region.end <= new.start or region.start >= new.end:
                kept.append(region)
                continue
            if region.start < new.start:
                kept.append(Region(region.start, new.start, region.pgoff, region.path))
            if region.end > new.end:
                moved = region.pgoff + (new.end - region.start) if region.path.startswith("/") else 0
                kept.append(Region(new.end, region.end, moved, region.path))
        kept.append(new)
        kept.sort(key=lambda r: r.start)
        self._regions = kept
        self._region_starts = [r.start for r in kept]

    def region_at(self, addr: int) -> Region | None:
        i = bisect.bisect_right(self._region_starts, addr) - 1
        if i >= 0 and addr < self._regions[i].end:
            return self._regions[i]
        return None

    def module_at(self, addr: int) -> Module | None:
        i = bisect.bisect_right(self._range_starts, addr) - 1
        if i >= 0 and addr < self._ranges[i][1]:
            return self._modules[self._ranges[i][2]]
        return None

    def outside_modules(self, addr: int, start: int, end: int) -> tuple[int, int]:
        """The part of ``[start, end)`` around ``addr`` (itself in no module) that no module covers."""
        i = bisect.bisect_right(self._range_starts, addr)
        if i < len(self._ranges):
            end = min(end, self._ranges[i][0])
        if i > 0:
            start = max(start, self._ranges[i - 1][1])
        return start, end

    @property
    def regions(self) -> tuple[Region, ...]:
        return tuple(self._regions)
