"""Resolve samples to code and data locations, following each process's address space in time.

:meth:`Symbolizer.feed` takes the time-ordered stream of :mod:`~sectormon.attribution.samples`
events: map, exec and fork events change the address spaces, and each :class:`Sample` is resolved
against its process's space as it was when the sample was taken. IPs repeat a lot, so each
process keeps a cache of resolved code locations, dropped when its mappings change.
"""

from __future__ import annotations

import os
from pathlib import Path

from sectormon.attribution.elf import ElfCache
from sectormon.attribution.samples import (
    AttributedSample,
    CodeLocation,
    DataLocation,
    Event,
    MapEvent,
    Sample,
)
from sectormon.attribution.space import AddressSpace, Region, read_proc_maps

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
        procfs_root: str | Path = "/proc",
    ) -> None:
        self.images = images if images is not None else ElfCache()
        self._spaces: dict[int, AddressSpace] = {}
        self._code: dict[int, dict[int, CodeLocation]] = {}
        self._read_proc = read_proc
        self._procfs_root = procfs_root

    def feed(self, event: Event) -> AttributedSample | None:
        """Apply an address-space event, or resolve a sample (the only case that returns one)."""
        if isinstance(event, Sample):
            return self.resolve(event)
        if isinstance(event, MapEvent):
            self._space(event.pid).map(event, self.images)
            self._code.pop(event.pid, None)
        elif event.kind == "exec":
            self._spaces[event.pid] = AddressSpace()
            self._code.pop(event.pid, None)
        elif event.kind == "fork" and event.parent in self._spaces and event.pid != event.parent:
            self._spaces[event.pid] = self._spaces[event.parent].copy()
            self._code.pop(event.pid, None)
        return None

    def _space(self, pid: int) -> AddressSpace:
        space = self._spaces.get(pid)
        if space is None:
            space = self._spaces[pid] = AddressSpace()
            if self._read_proc:
                for event in read_proc_maps(pid, 0, self._procfs_root):
                    space.map(event, self.images)
        return space

    def resolve(self, sample: Sample) -> AttributedSample:
        cache = self._code.get(sample.pid)
        if cache is None:
            cache = self._code[sample.pid] = {}
        code = cache.get(sample.ip)
        space = self._space(sample.pid)
        if code is None:
            code = KERNEL if sample.kernel else self._code_at(space, sample.ip)
            cache[sample.ip] = code
        data = None if sample.addr is None else self._data_at(space, sample.addr)
        return AttributedSample(
            sample.time, sample.tid, sample.cpu, sample.period, sample.weight, code, data, sample.addr
        )

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
            return CodeLocation(label, label)
        return UNKNOWN_CODE

    def _data_at(self, space: AddressSpace, addr: int) -> DataLocation:
        module = space.module_at(addr)
        if module is not None:
            image = module.image
            vaddr = addr - module.bias
            found = image.objects.lookup(vaddr)
            if found is not None:
                return DataLocation(found[0], "symbol", image.name)
            section = image.sections.lookup(vaddr)
            return DataLocation(section[0] if section is not None else image.name, "section", image.name)
        region = space.region_at(addr)
        if region is None:
            return UNKNOWN_DATA
        label = _region_label(region)
        if label == "[heap]":
            return DataLocation(label, "heap")
        if label.startswith("[stack"):
            return DataLocation("[stack]", "stack")
        return DataLocation(label, "mapping")


def _region_label(region: Region) -> str:
    """A mapping's name as tables show it: a file's base name, ``[anon]``, or the kernel's name."""
    path = region.path
    if not path or path == "//anon" or path.startswith("/dev/zero"):
        return "[anon]"
    if path.startswith("/"):
        return os.path.basename(path)
    return path
