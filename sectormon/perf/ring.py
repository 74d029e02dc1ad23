"""The ring buffer of one sampling event: a shared mapping the kernel writes and we read.

One metadata page, then ``2^n`` data pages: the kernel appends at ``data_head`` and never overwrites
past ``data_tail``, which the reader stores when done. ``RingBuffer.read`` copies all published bytes
out in one slice (two at the wrap) between the two barriers the protocol needs, so the kernel gets
its space back at once and parsing happens on the copy.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import mmap
import struct

from sectormon.perf import abi
from sectormon.perf.errors import PerfError, PermissionDenied
from sectormon.perf.syscall import memory_barrier

PAGE = mmap.PAGESIZE
_U64 = struct.Struct("=Q")


def check_pages(pages: int) -> int:
    """``pages`` if it is a power of two >= 1 (the kernel's rule for the data area), else ValueError."""
    if pages < 1 or pages & (pages - 1):
        raise ValueError(f"ring buffer pages must be a power of two >= 1, not {pages}")
    return pages


class RingBuffer:
    """The mapping of a sampling event's fd with ``pages`` data pages; :meth:`read` drains it."""

    def __init__(self, fd: int, pages: int, *, event: str = "") -> None:
        self.pages = check_pages(pages)
        self.size = pages * PAGE
        self._mask = self.size - 1
        try:
            self._map: mmap.mmap | None = mmap.mmap(
                fd, (pages + 1) * PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
            )
        except OSError as exc:
            raise _mmap_error(exc, pages, event) from None
        self._tail = _U64.unpack_from(self._map, abi.DATA_TAIL_OFFSET)[0]

    def read(self) -> bytes:
        """Every byte the kernel has published since the last read, and give the space back."""
        buf = self._map
        if buf is None:
            return b""
        head = _U64.unpack_from(buf, abi.DATA_HEAD_OFFSET)[0]
        tail = self._tail
        if head == tail:
            return b""
        memory_barrier()  # the records' bytes are read only after data_head
        start = PAGE + (tail & self._mask)
        length = head - tail
        if length > self.size:  # cannot happen with a writable mapping; never read stale bytes
            length = self.size
        first = min(length, PAGE + self.size - start)
        data = buf[start : start + first]
        if first < length:
            data += buf[PAGE : PAGE + length - first]
        memory_barrier()  # every byte is copied before the kernel may reuse it
        _U64.pack_into(buf, abi.DATA_TAIL_OFFSET, head)
        self._tail = head
        return data

    @property
    def pending(self) -> int:
        """Bytes published and not read yet."""
        if self._map is None:
            return 0
        return int(_U64.unpack_from(self._map, abi.DATA_HEAD_OFFSET)[0] - self._tail)

    def close(self) -> None:
        buf, self._map = self._map, None
        if buf is not None:
            with contextlib.suppress(BufferError):
                buf.close()


def _mmap_error(exc: OSError, pages: int, event: str) -> PerfError:
    """EPERM from mmap means the locked-memory allowance is used up (perf_event_mlock_kb)."""
    kib = (pages + 1) * PAGE // 1024
    label = f" of '{event}'" if event else ""
    if exc.errno in (_errno.EPERM, _errno.EACCES):
        return PermissionDenied(
            f"cannot map the {kib} KiB ring buffer{label}: over the locked-memory allowance of "
            "kernel.perf_event_mlock_kb (per CPU) and RLIMIT_MEMLOCK (fix: fewer --mmap-pages, "
            "or raise `sysctl kernel.perf_event_mlock_kb` / `ulimit -l`)",
            errno=exc.errno,
            event=event,
        )
    return PerfError(
        f"cannot map the {kib} KiB ring buffer{label}: {exc.strerror} (fix: fewer --mmap-pages)",
        errno=exc.errno or 0,
        event=event,
    )
