"""Resolve samples to code and data locations, following each process's address space in time.

Map, exec and fork events change each process's address space as they come, and every sample is
resolved against its process's space as it was when the sample was taken. IPs repeat, so resolved
code locations are cached per process until its mappings change; data addresses come in runs, so
the last data range is remembered. Equal locations are interned (one object), cheap to count.
"""

from __future__ import annotations

import os

from sectormon.attribution.elf import ElfCache
from sectormon.attribution.space import AddressSpace, Region
from sectormon.data.samples import (
    AttributedSample,
    CodeLocation,
    DataLocation,
    Event,
    MapEvent,
    Sample,
)
from sectormon.host.maps import read_proc_maps

KERNEL = CodeLocation("[kernel]", "[kernel]")
UNKNOWN_CODE = CodeLocation("[unknown]", "[unknown]")
UNKNOWN_DATA = DataLocation("[unknown]", "unknown")


class Symbolizer:
    """Address spaces of every sampled process plus one :class:`ElfCache` for the session.

    A sample of a process never announced (a ``--cpus`` target's processes that were running
    before sampling began) gets its mappings from ``/proc/PID/maps`` the first time, when
    ``read_proc`` is set and the process still exists.
    """

    def __init__(
        self,
        images: ElfCache | None = None,
        *,
        read_proc: bool = False,
    ) -> None:
        self.images = images if images is not None else ElfCache()
        self._spaces: dict[int, AddressSpace] = {}
        self._code: dict[int, dict[int, CodeLocation]] = {}
        self._last_data: dict[int, tuple[int, int, DataLocation]] = {}
        self._interned: dict[DataLocation, DataLocation] = {}
        self._read_proc = read_proc

    def feed(self, event: Event) -> AttributedSample | None:
        """Apply an address-space event, or resolve a sample (the only case that returns one)."""
        if isinstance(event, Sample):
            return self.resolve(event)
        if isinstance(event, MapEvent):
            self._space(event.pid).map(event, self.images)
        elif event.kind == "exec":
            self._spaces[event.pid] = AddressSpace()
        elif event.kind == "fork" and event.parent in self._spaces and event.pid != event.parent:
            self._spaces[event.pid] = self._spaces[event.parent].copy()
        else:
            return None
        self._code.pop(event.pid, None)
        self._last_data.pop(event.pid, None)
        return None

    def _space(self, pid: int) -> AddressSpace:
        space = self._spaces.get(pid)
        if space is None:
            space = self._spaces[pid] = AddressSpace()
            if self._read_proc:
                for event in read_proc_maps(pid, 0):
                    space.map(event, self.images)
        return space

    def resolve(self, sample: Sample) -> AttributedSample:
        time, pid, tid, cpu, ip, addr, period, weight, kernel = sample
        cache = self._code.get(pid)
        if cache is None:
            cache = self._code[pid] = {}
        code = cache.get(ip)
        if code is None:
            code = KERNEL if kernel else self._code_at(self._space(pid), ip)
            cache[ip] = code
        data = None
        if addr is not None:
            last = self._last_data.get(pid)
            if last is not None and last[0] <= addr < last[1]:
                data = last[2]
            else:
                start, end, data = self._data_at(self._space(pid), addr)
                self._last_data[pid] = (start, end, data)
        return AttributedSample(time, tid, cpu, period, weight, code, data, addr)

    def _code_at(self, space: AddressSpace, ip: int) -> CodeLocation:
        module = space.module_at(ip)
        if module is not None:
            image = module.image
            vaddr = ip - module.bias
            found = image.functions.lookup(vaddr)
            name = found[0] if found is not None else f"{image.name}+{vaddr:#x}"
            return CodeLocation(name, image.name, image.source(vaddr))
        region = space.region_at(ip)
        if region is not None:
            label = _region_label(region)
            if _is_file(region.path):
                # A file whose ELF could not be read (damaged, replaced by a FIFO): its file offset
                # still tells one place of the code from another.
                return CodeLocation(f"{label}+{ip - region.start + region.pgoff:#x}", label)
            return CodeLocation(label, label)
        return UNKNOWN_CODE

    def _data_at(self, space: AddressSpace, addr: int) -> tuple[int, int, DataLocation]:
        """The location of a data address and the address range it holds for."""
        module = space.module_at(addr)
        if module is not None:
            image = module.image
            bias = module.bias
            vaddr = addr - bias
            found = image.objects.find(vaddr)
            kind = "symbol"
            if found is None:
                found = image.sections.find(vaddr)
                kind = "section"
            if found is None:
                return addr, addr + 1, self._intern(DataLocation(image.name, "section", image.name))
            name, start, end = found
            return start + bias, end + bias, self._intern(DataLocation(name, kind, image.name))
        region = space.region_at(addr)
        if region is None:
            return addr, addr + 1, UNKNOWN_DATA
        label = _region_label(region)
        if label == "[heap]":
            where = DataLocation(label, "heap")
        elif label.startswith("[stack"):
            where = DataLocation("[stack]", "stack")
        else:
            where = DataLocation(label, "mapping")
        # Addresses of this mapping that lie in a module (a .bss in //anon) belong to the module.
        start, end = space.outside_modules(addr, region.start, region.end)
        return start, end, self._intern(where)

    def _intern(self, location: DataLocation) -> DataLocation:
        return self._interned.setdefault(location, location)


def _is_file(path: str) -> bool:
    """A mapping of a file (not anonymous memory, ``/dev/zero`` or a kernel-named one)."""
    return path.startswith("/") and path != "//anon" and not path.startswith("/dev/zero")


def _region_label(region: Region) -> str:
    """A mapping's name as tables show it: a file's base name, ``[anon]``, or the kernel's name."""
    path = region.path
    if _is_file(path):
        return os.path.basename(path)
    if path and not path.startswith("/"):
        return path
    return "[anon]"
