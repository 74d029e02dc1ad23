"""One scrape's families, written at most once per format (and once gzipped) however many
scrapers ask for them."""

from __future__ import annotations

import threading

from isal import isal_zlib

from sectormon.export.exposition import Family, Format, render, sample_lines

GZIP_LEVEL = 1
"""ISA-L's level 1 (of 0-3): the exposition repeats its labels line after line, and level 1 finds
those repeats as well as zlib's levels 1-2 for a fraction of their CPU; level 0 finds fewer, level
2 no more, level 3 costs more for nothing (docs/perf-tuning.md)."""

GZIP_WBITS = 31
"""zlib's way of asking for the gzip container (a 32 KiB window), which Content-Encoding: gzip means."""


def gzip_body(plain: bytes) -> bytes:
    """``plain`` as one gzip member (no file name, modification time 0), as every gzip reader
    (Go's compress/gzip in Prometheus) reads it."""
    return isal_zlib.compress(plain, GZIP_LEVEL, GZIP_WBITS)


class Scrape:
    """The families of the frame folded as number ``serial``, and their exposition by format."""

    def __init__(self, serial: int, families: list[Family]) -> None:
        self.serial = serial
        self.families = families
        self._lock = threading.Lock()
        self._blocks: list[str] | None = None
        self._bodies: dict[tuple[Format, bool], bytes] = {}

    def body(self, fmt: Format, *, gzipped: bool = False) -> bytes:
        """The exposition in ``fmt`` (gzip-compressed when ``gzipped``)."""
        key = (fmt, gzipped)
        with self._lock:
            body = self._bodies.get(key)
            if body is None:
                body = gzip_body(self._plain(fmt)) if gzipped else self._plain(fmt)
                self._bodies[key] = body
            return body

    def _plain(self, fmt: Format) -> bytes:
        body = self._bodies.get((fmt, False))
        if body is None:
            if self._blocks is None:
                self._blocks = [sample_lines(family) for family in self.families]
            body = self._bodies[(fmt, False)] = render(self.families, self._blocks, fmt)
        return body
