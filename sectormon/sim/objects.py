"""Named data objects of a din trace (``--objects FILE``): which array an address belongs to.

A trace carries only addresses; a kernel knows its arrays. This file gives a trace the same: one
object per line, ``<name> <hex start> <size>``, e.g. ``table 7f3a10000000 48K``. The start is
hexadecimal like the trace's addresses (``0x`` optional), the size in bytes with an optional K, M or
G suffix. Blank lines and lines starting with ``#`` are skipped. Objects must not overlap. An
address outside every object belongs to ``[other]`` (object id 0); the file's objects are ids 1, 2,
... in file order, so every access of the model carries its object (engine flags, bits 7 and up).

The file is read once (a pipe works), every line at most :data:`LINE_CAP` bytes, at most
:data:`MAX_OBJECTS` objects (each costs the model a few KiB per thread of per-flags counters),
every object inside the 64-bit address space.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

from sectormon.errors import DataError, UsageError
from sectormon.files.lines import KIB, bounded_lines
from sectormon.files.regular import open_input
from sectormon.files.text import is_ascii_digits

OTHER = "[other]"
_HEX = frozenset("0123456789abcdefABCDEF")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
FORMAT = "write '<name> <hex start> <size>', e.g. 'table 7f3a10000000 48K'"
LINE_CAP = 4 * KIB
MAX_OBJECTS = 4096
ADDRESS_SPACE = 1 << 64


@dataclass(frozen=True, slots=True)
class DataObjects:
    """Objects sorted by start address; ``names[0]`` is ``[other]``."""

    path: str
    names: tuple[str, ...]
    starts: tuple[int, ...]  # sorted
    ends: tuple[int, ...]  # exclusive, same order as starts
    ids: tuple[int, ...]  # object id of each sorted entry

    def lookup(self, address: int) -> int:
        """The object id of ``address`` (0: in no object)."""
        i = bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.ends[i]:
            return self.ids[i]
        return 0

    def to_json(self) -> dict[str, object]:
        by_id = sorted(zip(self.ids, self.starts, self.ends, strict=True))
        return {
            "path": self.path,
            "objects": [
                {"name": self.names[i], "start": f"0x{start:x}", "size_bytes": end - start}
                for i, start, end in by_id
            ],
            "unmapped": OTHER,
        }


def object_sectors(objects: DataObjects | None, assign: Mapping[str, str]) -> tuple[int | None, ...]:
    """``--assign name=sector`` for a trace: the sector id of each object's accesses (``None``:
    the trace's own third field), as if the addresses carried the tag override bits."""
    if objects is None:
        raise UsageError(
            "--assign on a --trace needs --objects FILE naming the objects (the trace's own third field "
            "gives per-access sectors)"
        )
    out: list[int | None] = [None] * len(objects.names)
    for name, text in assign.items():
        if name not in objects.names:
            raise UsageError(
                f"--assign {name}={text}: {objects.path} has no object {name!r}; "
                f"use {', '.join(objects.names[1:])} or {OTHER}"
            )
        if text not in ("0", "1", "2", "3"):
            raise UsageError(f"--assign {name}={text}: a sector id is 0, 1, 2 or 3")
        out[objects.names.index(name)] = int(text)
    return tuple(out)


def _size(text: str, path: str, number: int) -> int:
    unit = text[-1:].upper() if text[-1:].isalpha() else ""
    digits = text[: len(text) - len(unit)] if unit else text
    if unit not in _UNITS or not is_ascii_digits(digits):
        raise DataError(
            path, number, f"size {text[:40]!r} is not a size", "give bytes, e.g. 4096, 48K, 64M or 1G"
        )
    # 20 digits hold any size of the 64-bit space: longer is refused before int() reads it.
    size = int(digits) * _UNITS[unit] if len(digits.lstrip("0")) <= 20 else ADDRESS_SPACE + 1
    if size == 0:
        raise DataError(path, number, "size 0: an object needs at least one byte", "give its size in bytes")
    return size


def _line(raw: bytes, path: str, number: int, ids: dict[str, int]) -> tuple[str, int, int] | None:
    """``(name, start, end)`` of one line, ``None`` for a blank or comment line."""
    try:
        fields = raw.decode("utf-8").split()
    except UnicodeDecodeError as exc:
        raise DataError(path, number, f"not a text line ({exc.reason})", FORMAT) from None
    if not fields or fields[0].startswith("#"):
        return None
    if len(fields) != 3:
        raise DataError(path, number, f"expected 3 fields, got {len(fields)}", FORMAT)
    name, raw_start, raw_size = fields
    if name in ids:
        raise DataError(path, number, f"object {name!r} is named twice", "give every object its own name")
    digits = raw_start[2:] if raw_start[:2].lower() == "0x" else raw_start
    if not digits or not all(c in _HEX for c in digits):
        raise DataError(
            path, number, f"start {raw_start[:40]!r} is not hexadecimal", "write it like 7f3a10000000"
        )
    start = int(digits, 16) if len(digits.lstrip("0")) <= 16 else ADDRESS_SPACE
    end = start + _size(raw_size, path, number)
    if end > ADDRESS_SPACE:
        raise DataError(
            path, number, f"object {name!r} ends beyond the 64-bit address space", "check its start and size"
        )
    return name, start, end


def parse_objects(path: str) -> DataObjects:
    """Read and check the whole file: one clear error naming the file and line for a bad line."""
    entries: list[tuple[int, int, int, int]] = []  # start, end, id, line
    ids = {OTHER: 0}
    with open_input(path, "objects file", allow_pipe=True) as handle:
        for number, raw in bounded_lines(handle, path, LINE_CAP):
            parsed = _line(raw, path, number, ids)
            if parsed is None:
                continue
            if len(entries) == MAX_OBJECTS:
                raise DataError(
                    path, number, f"more than {MAX_OBJECTS:,} objects", "name the arrays that matter"
                )
            name, start, end = parsed
            entries.append((start, end, len(ids), number))
            ids[name] = len(ids)
    if not entries:
        raise DataError(path, None, "no objects in the file", FORMAT)
    names = tuple(ids)
    entries.sort()
    for (_, end, oid, line), (start, _, other, number) in pairwise(entries):
        if start < end:
            raise DataError(
                path,
                number,
                f"object {names[other]!r} overlaps {names[oid]!r} (line {line})",
                "objects must not share addresses",
            )
    return DataObjects(
        path,
        names,
        tuple(e[0] for e in entries),
        tuple(e[1] for e in entries),
        tuple(e[2] for e in entries),
    )
