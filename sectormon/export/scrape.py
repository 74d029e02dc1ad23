"""One scrape's families, written at most once per format (and once gzipped) however many
scrapers ask for them."""

from __future__ import annotations

import gzip
import threading

from sectormon.export.exposition import Family, Format, render, sample_lines

GZIP_LEVEL = 1
"""The exposition repeats its labels line after line: the fastest level already shrinks it tenfold."""


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
                if gzipped:
                    body = gzip.compress(self._plain(fmt), compresslevel=GZIP_LEVEL)
                else:
                    body = self._plain(fmt)
                self._bodies[key] = body
            return body

    def _plain(self, fmt: Format) -> bytes:
        body = self._bodies.get((fmt, False))
        if body is None:
            if self._blocks is None:
                self._blocks = [sample_lines(family) for family in self.families]
            body = self._bodies[(fmt, False)] = render(self.families, self._blocks, fmt)
        return body
