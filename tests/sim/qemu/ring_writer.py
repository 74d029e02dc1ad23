"""A stand-in for the QEMU plugin in tests: writes batches into a capture's ring as plugin.c does
(ring.h's layout), so the consumer and the reader can be checked on exact, known accesses."""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from sectormon.sim.qemu._capture import HEADER_BYTES, Capture

WORDS = 1 << 14
_HEAD, _TAIL, _CLOSED = 16, 24, 32
STORE = 1 << 63
EVENT = 1 << 62
ALLOC, FREE, STACK, MARK_NAME, MARK_START, MARK_STOP, HELLO, END = range(1, 9)  # ring.h's SMQ_EV_*
EVENT_ARGS = 5

Access = tuple[int, int, bool]  # address, size in bytes (a power of two), store


@dataclass(frozen=True)
class Event:
    """An event as the plugin puts the shim's system call in a batch: kind, then its words."""

    kind: int
    args: tuple[int, ...] = ()


def word(address: int, size: int, store: bool) -> int:
    return address | ((size.bit_length() - 1) << 56) | (STORE if store else 0)


def mark_events(start: bool, name: bytes, number: int = 0) -> list[Event]:
    """The events shim.c's mark() sends for region (name, number)."""
    out = []
    while len(name) > 32:
        piece, name = name[: min(len(name) - 32, 40)], name[min(len(name) - 32, 40) :]
        out.append(Event(MARK_NAME, struct.unpack("<5Q", piece.ljust(40, b"\0"))))
    last = struct.unpack("<4Q", name.ljust(32, b"\0"))
    out.append(Event(MARK_START if start else MARK_STOP, (number & 0xFFFFFFFF, *last)))
    return out


def words_of(item: Access | Event) -> list[int]:
    if isinstance(item, Event):
        args = [*item.args, *([0] * (EVENT_ARGS - len(item.args)))]
        return [EVENT | item.kind, *args]
    return [word(*item)]


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

    def batch(self, vcpu: int, accesses: Sequence[Access | Event], instructions: int) -> None:
        body = [w for item in accesses for w in words_of(item)]
        words = [(vcpu << 32) | len(body), instructions, *body]
        head = self._get(_HEAD)
        assert head + len(words) - self._get(_TAIL) <= WORDS, "the test writes more than the ring holds"
        for i, w in enumerate(words):
            struct.pack_into("<Q", self.map, HEADER_BYTES + ((head + i) % WORDS) * 8, w)
        struct.pack_into("<Q", self.map, _HEAD, head + len(words))

    def raw_batch(self, vcpu: int, body: Sequence[int], instructions: int = 0) -> None:
        """A batch of the given words as they are (a hostile or cut-short one)."""
        words = [(vcpu << 32) | len(body), instructions, *body]
        head = self._get(_HEAD)
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
