"""Bookmarks set while replaying a recording, kept beside it in ``RECORDING.bookmarks.jsonl``.

A recording is not changed once written: it may be compressed, read-only, shared, or the
baseline of a compare. So a bookmark (``m``) set during a replay goes to a small file next to it:
JSON Lines of ``sectormon/mark/2`` records of kind ``bookmark``, one appended and flushed per
``m``, so a crash loses none. The next replay of the recording reads the file and shows its
bookmarks on the timeline with the recording's own marks. A line that is not a bookmark record
is skipped with a warning naming the file and line; the recording replays all the same.
"""

from __future__ import annotations

import os
from pathlib import Path

from sectormon.data.readings import Mark
from sectormon.errors import DataError, SectormonError
from sectormon.files.lines import KIB, bounded_lines
from sectormon.files.output import OutputPathError, open_output
from sectormon.files.regular import open_input
from sectormon.files.text import printable
from sectormon.io.jsonl import BadRecord, encode_mark, loads, mark_from_record, parse_schema

SUFFIX = ".bookmarks.jsonl"
MAX_LINE = 64 * KIB
"""The longest bookmark line (a label is typed at a prompt)."""
MAX_BOOKMARKS = 10_000
"""Bookmarks read from one file at most (the timeline shows a few dozen)."""


def bookmarks_path(recording: str | Path) -> Path:
    """The bookmark file of a recording: its name with :data:`SUFFIX` added."""
    return Path(f"{recording}{SUFFIX}")


class BookmarkFile:
    """A recording's bookmark file: the bookmarks in it, and :meth:`add` for a new one."""

    def __init__(self, recording: str | Path) -> None:
        self.path = bookmarks_path(recording)
        self.marks: list[Mark] = []
        self.warnings: list[str] = []
        if not os.path.lexists(self.path):
            return
        shown = printable(str(self.path))
        # A FIFO or a link to /dev/zero in its place must not hang the replay before it starts.
        try:
            with open_input(str(self.path), "bookmarks file") as f:
                for number, line in bounded_lines(f, shown, MAX_LINE):
                    if line.strip():
                        self._read(number, line)
        except (DataError, OSError) as exc:
            reason = exc.message if isinstance(exc, DataError) else f"{shown}: {exc.strerror or exc}"
            self.warnings.append(f"{reason}; the bookmarks after it are not shown")

    def _read(self, number: int, line: bytes) -> None:
        if len(self.marks) >= MAX_BOOKMARKS:
            raise DataError(printable(str(self.path)), number, f"more than {MAX_BOOKMARKS:,} bookmarks")
        try:
            mark = _bookmark(line)
        except ValueError as exc:  # BadRecord is a ValueError, and so is bad JSON or UTF-8
            self.warnings.append(
                f"{printable(str(self.path))}:{number}: not a bookmark record ({exc}); skipped"
            )
            return
        self.marks.append(mark)

    def add(self, mark: Mark) -> None:
        """Keep ``mark``: appended to the file and flushed. A file that cannot be written is a
        one-line :class:`SectormonError`; the bookmark then lasts for this replay only."""
        self.marks.append(mark)
        try:
            with open_output(str(self.path), "bookmarks", append=True) as f:
                f.write((encode_mark(mark) + "\n").encode("utf-8"))
        except (OSError, OutputPathError) as exc:  # OutputPathError: a folder, a FIFO nobody reads
            reason = exc.reason if isinstance(exc, OutputPathError) else exc.strerror or str(exc)
            raise SectormonError(f"kept for this replay only: cannot write {self.path} ({reason})") from None


def _bookmark(line: bytes) -> Mark:
    record = loads(line)
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object")
    kind, _version = parse_schema(record.get("schema"))
    if kind != "mark":
        raise BadRecord(f"a {kind} record, not a mark")
    mark = mark_from_record(record)
    if mark.kind != "bookmark":
        raise BadRecord(f"a {mark.kind!r} mark, not a bookmark")
    return mark
