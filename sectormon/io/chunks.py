"""The bytes of a recording file as chunks, plain or gzip, salvaging what precedes damage.

The reader splits lines out of these chunks itself; this module only turns a file into bytes. A
gzip stream is decompressed in small pieces so that, when the data turns out corrupt, every whole
line before the damage is still delivered (a recording is flushed line by line, so what a crash
left intact is worth reading), and the offset of the damage is reported for the error message.
Concatenated members (``cat a.gz b.gz``) and zero padding after the last one are read as tools
write them. Chunk sizes are the caller's, so it decides how much is held at once.
"""

from __future__ import annotations

import zlib
from collections.abc import Generator, Iterator
from typing import IO, Any

GZIP_PIECE = 1 << 16
"""Compressed bytes fed to the decompressor at once: a failure is retried in 256-byte steps only
within one piece."""
GZIP_MAGIC = b"\x1f\x8b"


class CorruptStream(Exception):
    """The compressed data cannot be decompressed from about byte ``offset`` of the file on."""

    def __init__(self, text: str, offset: int) -> None:
        super().__init__(text)
        self.offset = offset


def plain_chunks(f: IO[bytes], first: bytes, size: int) -> Iterator[bytes]:
    """``first``, then the rest of ``f`` in reads of ``size`` bytes."""
    if first:
        yield first
    while chunk := f.read(size):
        yield chunk


def span_chunks(f: IO[bytes], end: int, size: int) -> Iterator[bytes]:
    """The bytes of ``f`` from where it is up to offset ``end``."""
    left = end - f.tell()
    while left > 0 and (chunk := f.read(min(size, left))):
        left -= len(chunk)
        yield chunk


def gzip_chunks(f: IO[bytes], first: bytes, size: int, flags: dict[str, bool]) -> Iterator[bytes]:
    """Decompress (possibly concatenated) gzip members; sets ``flags['truncated']`` on a cut stream.

    Input goes in pieces of :data:`GZIP_PIECE`; when one fails, it is fed again in small steps from
    a copy of the decompressor, so every whole line before the damage is still delivered.
    """
    d = zlib.decompressobj(31)
    started = False
    pending = first
    while True:
        if not pending:
            pending = f.read(size)
            if not pending:
                break
        data, pending = pending[:GZIP_PIECE], pending[GZIP_PIECE:]
        while data:
            backup = d.copy()
            try:
                out = d.decompress(data)
            except zlib.error as exc:
                at = f.tell() - len(pending) - len(data)  # the file offset of data[0]
                good = yield from _salvage(backup, data)
                raise CorruptStream(str(exc), at + good) from None
            started = True
            if out:
                yield out
            if d.eof:
                data = d.unused_data + pending
                pending = b""
                d = zlib.decompressobj(31)
                started = False
                if data and not data.strip(b"\0"):
                    data = b""  # zero padding after the last member (tape/pipe tools add it)
                pending, data = data[GZIP_PIECE:], data[:GZIP_PIECE]
            else:
                data = b""
    if started and not d.eof:
        tail = d.flush()
        if tail:
            yield tail
        flags["truncated"] = True


def _salvage(d: Any, data: bytes) -> Generator[bytes, None, int]:
    """What a damaged piece still decompresses to before the damage; returns the offset in
    ``data`` of the 256 bytes the damage is in."""
    for i in range(0, len(data), 256):
        try:
            out = d.decompress(data[i : i + 256])
        except zlib.error:
            return i
        if out:
            yield out
    return len(data)
