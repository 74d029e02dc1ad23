"""A stand-in for the QEMU plugin in tests: writes batches into a capture's ring as plugin.c does
(ring.h's layout), so the consumer and the reader can be checked on exact, known accesses."""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Sequence

from sectormon.sim.qemu._capture import HEADER_BYTES, Capture

WORDS = 1 << 14
_HEAD, _TAIL, _CLOSED = 16, 24, 32
STORE = 1 << 63

Access = tuple[int, int, bool]  # address, size in bytes (a power of two), store


def word(address: int, size: int, store: bool) -> int:
    return address | ((size.bit_length() - 1) << 56) | (STORE if store else 0)


class RingWriter:
    """A memfd ring with a Capture consuming it; :meth:`batch` writes as one plugin flush does."""

    def __init__(self, max_records: int = 1 << 20) -> None:
        self.fd = os.memfd_create("test-ring", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, HEADER_BYTES + WORDS * 8)
        self.capture = Capture(self.fd, WORDS, max_records)
        self.map = mmap.mmap(self.fd, HEADER_BYTES + WORDS * 8)

    def _get(self, offset: int) -> int:
        value: int = struct.unpack_from("<Q", self.map, offset)[0]
        return value

    def batch(self, vcpu: int, accesses: Sequence[Access], instructions: int) -> None:
        words = [(vcpu << 32) | len(accesses), instructions, *(word(*a) for a in accesses)]
        head = self._get(_HEAD)
        assert head + len(words) - self._get(_TAIL) <= WORDS, "the test writes more than the ring holds"
        for i, w in enumerate(words):
            struct.pack_into("<Q", self.map, HEADER_BYTES + ((head + i) % WORDS) * 8, w)
        struct.pack_into("<Q", self.map, _HEAD, head + len(words))

    def close(self) -> None:
        struct.pack_into("<I", self.map, _CLOSED, 1)

    def drain(self) -> None:
        """Consume everything written, up to the closed ring."""
        while self.capture.pump(0.0) >= 0:
            pass

    def release(self) -> None:
        self.capture.close()
        self.map.close()
        os.close(self.fd)
