"""Frame-aligned spans of a plain recording: where readers sharing one file start and stop.

A replay can read a large recording with several processes, each summing the rows of its own
spans of the file (:mod:`sectormon.session.replay_worker`). No frame interval may be summed by
two readers, so a span starts right after a slice that closes a frame. Whether a slice closes a
frame depends only on its time and on the slice before it (:class:`FrameClock` moves by whole
intervals from its start), so a reader finds the boundary near any byte offset by itself, reading
about one frame's lines from there, and every reader finds the same boundary for the same offset.

Span ``k`` of ``count`` starts at the boundary found from byte ``k * span_bytes`` (span 0 right
after the header) and ends where span ``k + 1`` starts; the last one runs to the end of the file.
A reader of a span does not know the number of its first line (that would take counting the
newlines of every span before it): it numbers lines from the span's start, and whoever takes
the spans in order adds the line counts up.
"""

from __future__ import annotations

import math
from typing import IO, NamedTuple

from sectormon.io.slice_keys import slice_key
from sectormon.session.frame_clock import FrameClock


class Boundary(NamedTuple):
    """Where a span starts: the offset of its first line, and the time and index of the slice
    before it (``-inf`` and ``None`` for the first span: the order check starts afresh)."""

    offset: int
    t_before: float
    index_before: int | None = None


class SpanFinder:
    """The boundaries of one plain recording file, found on demand and kept (one reader's view)."""

    def __init__(self, f: IO[bytes], size: int, span_bytes: int, interval: float, start: float) -> None:
        self._f = f
        self.count = max(1, math.ceil(size / span_bytes))
        self._span_bytes = span_bytes
        self._interval = interval
        self._start = start
        self._found: dict[int, tuple[int, float, int | None] | None] = {}
        self._header_end = _header_end(f)

    def span(self, k: int) -> tuple[Boundary, int | None] | None:
        """Span ``k``: its start and its end offset (``None``: the end of the file), or ``None``
        when it is empty (the boundary after it is its own, or no frame closes after its offset)."""
        begin = self._boundary(k)
        if begin is None:
            return None
        following = self._boundary(k + 1) if k + 1 < self.count else None
        end = following[0] if following is not None else None
        if end is not None and end <= begin[0]:
            return None
        return Boundary(*begin), end

    def _boundary(self, k: int) -> tuple[int, float, int | None] | None:
        if k == 0:
            return self._header_end, -math.inf, None
        if k not in self._found:
            self._found[k] = self._after_frame(max(k * self._span_bytes, self._header_end))
        return self._found[k]

    def _after_frame(self, offset: int) -> tuple[int, float, int | None] | None:
        """The start of the line after the first frame-closing slice that follows the first slice
        at or after ``offset``, with that slice's time and index; ``None`` when the file ends
        before."""
        f = self._f
        f.seek(offset - 1)
        f.readline()  # the rest of the line holding byte offset - 1: the next line starts >= offset
        position = f.tell()
        clock: FrameClock | None = None
        for line in iter(f.readline, b""):
            position += len(line)
            if not line.endswith(b"\n"):
                return None  # the last line, cut or not: no span can start after it
            key = slice_key(line)
            if key is None:
                continue
            t, index = key
            if clock is None:  # the clock as it is after this slice, whatever came before
                clock = FrameClock(self._interval, self._start)
                clock.due(t)
            elif clock.due(t):
                # Only where a line follows: the file's last line is read as the last (a cut one
                # is then only a warning), so it ends a span that runs to the end.
                for following in iter(f.readline, b""):
                    if following.strip():
                        return position, t, index
                return None
        return None


def _header_end(f: IO[bytes]) -> int:
    """The offset after the header, the first line that is not blank (0 if there is none)."""
    f.seek(0)
    position = 0
    for line in iter(f.readline, b""):
        position += len(line)
        if line.strip():
            return position
    return position
