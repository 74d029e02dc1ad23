"""Line readers with a length cap: a file of one endless line (``/dev/zero``, a gzip bomb, a cut
binary) ends with a one-line error naming the file and the line, instead of filling memory.

``readline(cap + 1)`` never holds more than ``cap + 1`` bytes of one line, so the memory a reader
needs is bounded by its cap whatever the input.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from sectormon.errors import DataError
from sectormon.files.text import printable

KIB = 1024
MIB = 1024 * KIB


def too_long(name: str, line: int, cap: int, what: str = "line") -> DataError:
    """The error for a line over ``cap`` bytes."""
    return DataError(
        printable(name), line, f"{what} longer than {cap:,} bytes", "the file is damaged or not of this kind"
    )


def bounded_lines(stream: BinaryIO, name: str, cap: int, first_line: int = 1) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, line)`` with the line ending kept; a line over ``cap`` bytes raises
    :class:`DataError` at that line."""
    number = first_line
    while True:
        line = stream.readline(cap + 1)
        if not line:
            return
        if len(line) > cap:
            raise too_long(name, number, cap)
        yield number, line
        number += 1
