"""The region table: sectormon creates it, the marked program's library writes it, this reads it.

An anonymous shared-memory file (``memfd_create``), sized by its bounds and mapped by both sides;
the program opens it as ``/proc/<sectormon's pid>/fd/<fd>``. Nothing is left behind however
sectormon ends, ``kill -9`` included: the memory goes with the last process that maps it.

Each thread record and each (region, thread) slot has one writer, the marking thread, and a
sequence counter (seqlock): odd while the writer is in the middle of an update. The reader copies a
record through the library's ``sectormon_markers_copy`` (the copy must sit between
acquire-ordered reads of the counter, which Python cannot express) and leaves out a record it could
not copy whole this time (the next read has it: the deltas accumulate); it never takes a lock, so
reading never slows the program. Nothing here trusts the table's contents beyond its bounds: counts
and indexes are clamped to the sizes this process wrote into the header.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import threading
from collections.abc import Callable, Sequence

from sectormon.data.regions import GroupDelta, RegionSnapshot, ThreadRegion
from sectormon.host import roots
from sectormon.perf.errors import PerfError
from sectormon.perf.group import GroupValues
from sectormon.regions import layout, rendezvous
from sectormon.regions.library import require_library
from sectormon.regions.server import MarkerGroup


class RegionTable:
    """A table with room for ``max_threads`` marking threads and ``max_slots`` (region, thread) pairs."""

    def __init__(self, *, max_threads: int = 1024, max_slots: int = 4096, fd: int | None = None) -> None:
        """``fd``: a table made by :func:`~sectormon.regions.rendezvous.create_table_file` with these
        bounds, taken over (closed with the table)."""
        if max_threads < 1 or max_slots < 1:
            raise ValueError("a region table needs room for at least one thread and one region")
        self.max_threads = max_threads
        self.max_slots = max_slots
        size = layout.table_bytes(max_threads, max_slots)
        copy = ctypes.CDLL(str(require_library())).sectormon_markers_copy
        copy.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)
        copy.restype = ctypes.c_int
        self._copier = copy
        fd = rendezvous.create_table_file(max_threads, max_slots) if fd is None else fd
        # The real /proc whatever root host/ reads: the program opens this path, not sectormon.
        self.path = os.path.join(roots.REAL_PROCFS, str(os.getpid()), "fd", str(fd))
        try:
            self._map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd  # open while the table is offered: its path names it
        self._anchor: ctypes.Array[ctypes.c_char] | None = (ctypes.c_char * size).from_buffer(self._map)
        self._base = ctypes.addressof(self._anchor)
        self._buffer = ctypes.create_string_buffer(max(layout.SLOT_BYTES, layout.THREAD.size))
        self._reading_lock = threading.Lock()
        self._threads_at = layout.HEADER_BYTES
        self._slots_at = layout.HEADER_BYTES + max_threads * layout.THREAD.size

    def close(self) -> None:
        """Unmap and close the table (a program still running keeps its own mapping)."""
        self._anchor = None  # the buffer export: mmap refuses to close while it lives
        with contextlib.suppress(ValueError, BufferError):
            self._map.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _copy(self, offset: int, size: int) -> bytes | None:
        """The record at ``offset`` as one consistent copy, or None (never written, or kept busy)."""
        if not self._copier(self._base + offset, size, self._buffer):
            return None
        return self._buffer.raw[:size]

    def read(self, groups_of: Callable[[int], Sequence[MarkerGroup]] = lambda tid: ()) -> RegionSnapshot:
        """Every (region, thread) now. ``groups_of(tid)`` gives the groups sectormon handed that
        thread: their event names, and for a region still open a read of the counts so far."""
        fields = layout.HEADER.unpack_from(self._map, 0)
        nthreads, nslots, overflow_bits = fields[9], fields[10], fields[11]
        unpaired, dropped = fields[13], fields[14]
        readings = []
        with self._reading_lock:  # one copy buffer
            threads = self._threads(min(nthreads, self.max_threads))
            for index in range(min(nslots, self.max_slots)):
                data = self._copy(self._slots_at + index * layout.SLOT_BYTES, layout.SLOT_BYTES)
                if data is not None:
                    readings.append(self._reading(data, threads, groups_of))
        overflow = frozenset(name for bit, name in layout.OVERFLOW_BITS.items() if overflow_bits & bit)
        return RegionSnapshot(threads=tuple(readings), overflow=overflow, unpaired=unpaired, dropped=dropped)

    def _threads(self, nthreads: int) -> dict[int, tuple[int, int, bool]]:
        """Thread record index -> (rank, groups, exited)."""
        out = {}
        for index in range(nthreads):
            data = self._copy(self._threads_at + index * layout.THREAD.size, layout.THREAD.size)
            if data is not None:
                _seq, _tid, _pid, rank, ngroups, state, *_rest = layout.THREAD.unpack(data)
                out[index] = (rank, min(ngroups, layout.MAX_GROUPS), state == layout.THREAD_EXITED)
        return out

    def _reading(
        self,
        data: bytes,
        threads: dict[int, tuple[int, int, bool]],
        groups_of: Callable[[int], Sequence[MarkerGroup]],
    ) -> ThreadRegion:
        head = layout.SLOT_HEAD.unpack_from(data, 0)
        (
            _seq,
            thread,
            number,
            cpu,
            tid,
            pid,
            is_open,
            _flags,
            calls,
            wall_ns,
            _start_wall,
            cpu_ns,
            *_,
            raw_name,
        ) = head
        rank, ngroups, exited = threads.get(thread, (-1, 0, False))
        acc = layout.SLOT_ROWS.unpack_from(data, layout.SLOT_HEAD.size)
        start = layout.SLOT_ROWS.unpack_from(data, layout.SLOT_HEAD.size + layout.SLOT_ROWS.size)
        given = tuple(groups_of(tid))[:ngroups]
        now: Sequence[GroupValues] | None = _read_now(given) if is_open else None
        groups = []
        for g, group in enumerate(given):
            n = min(len(group.events), layout.MAX_EVENTS)
            row = acc[g * layout.ROW : (g + 1) * layout.ROW]
            values = list(row[:n])
            enabled, running = row[layout.MAX_EVENTS], row[layout.MAX_EVENTS + 1]
            if now is not None:
                begun = start[g * layout.ROW : (g + 1) * layout.ROW]
                values = [_delta(v, now[g].values[k], begun[k]) for k, v in enumerate(values)]
                enabled = _delta(enabled, now[g].time_enabled, begun[layout.MAX_EVENTS])
                running = _delta(running, now[g].time_running, begun[layout.MAX_EVENTS + 1])
            groups.append(GroupDelta(tuple(group.events[:n]), tuple(values), enabled, running, cpu_ns))
        return ThreadRegion(
            name=raw_name.split(b"\0", 1)[0].decode("utf-8", "replace"),
            number=number,
            pid=pid,
            tid=tid,
            rank=rank if rank >= 0 else None,
            last_cpu=cpu,
            calls=calls,
            open=bool(is_open),
            open_counted=bool(is_open) and now is not None,
            wall_ns=wall_ns,
            groups=tuple(groups),
            thread_exited=exited,
        )


def _delta(done: int, now: int, begun: int) -> int:
    """Closed entries' count plus the open entry's so far (never negative: a reset group reads less)."""
    return done + max(0, now - begun)


def _read_now(groups: Sequence[MarkerGroup]) -> list[GroupValues] | None:
    """The thread's groups read now (for a region still open), or None when one cannot be read."""
    try:
        return [group.read() for group in groups]
    except (PerfError, OSError):
        return None
