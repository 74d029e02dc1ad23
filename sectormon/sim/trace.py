"""Dinero ``din`` traces as simulator input: ``<label> <hex address> [sector]`` per line.

Labels: 0 data read, 1 data write, 2 instruction fetch (counted as an instruction, not simulated:
the model has no L1I). The optional third field is the access's sector id (0-3), as if the address
carried the HPC tag override bits; without it the access uses the default sector 0 untagged.
Blank lines and lines starting with ``#`` are skipped.

A trace is validated in full before the simulation starts (a bad line is one error naming the file
and line), then streamed in chunks so a large trace never sits in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sectormon.errors import DataError
from sectormon.sim.config import LINE_SHIFT
from sectormon.sim.engine import FL_IFETCH, FL_WRITE, Chunks, Record, flags
from sectormon.sim.objects import DataObjects

LABELS = {"0": "read", "1": "write", "2": "ifetch"}
_HEX = frozenset("0123456789abcdefABCDEF")
CHUNK = 4096


@dataclass(frozen=True, slots=True)
class TraceInfo:
    """What validation learned: counts the header and the instruction model need."""

    path: str
    reads: int
    writes: int
    ifetches: int
    tagged: int

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "reads": self.reads,
            "writes": self.writes,
            "ifetches": self.ifetches,
            "tagged": self.tagged,
            "format": "din",
        }


def parse_line(text: str, path: str, number: int) -> tuple[int, int, int | None] | None:
    """``(label, address, sector or None)`` of one line, ``None`` for a blank/comment line."""
    fields = text.split()
    if not fields or fields[0].startswith("#"):
        return None
    if len(fields) not in (2, 3):
        raise DataError(
            path,
            number,
            f"expected '<label> <hex address> [sector]', got {len(fields)} fields",
            "write e.g. '0 7fff5a10' (0 read, 1 write, 2 ifetch)",
        )
    label = fields[0]
    if label not in LABELS:
        raise DataError(
            path,
            number,
            f"unknown din label {label!r}",
            "use 0 (read), 1 (write) or 2 (instruction fetch); labels 3 and 4 are not supported",
        )
    raw = fields[1]
    digits = raw[2:] if raw[:2].lower() == "0x" else raw
    if not digits or not all(c in _HEX for c in digits):
        raise DataError(
            path, number, f"address {raw!r} is not hexadecimal", "write it like 7fff5a10 or 0x7fff5a10"
        )
    address = int(digits, 16)
    sector: int | None = None
    if len(fields) == 3:
        if fields[2] not in ("0", "1", "2", "3"):
            raise DataError(
                path,
                number,
                f"sector {fields[2]!r} is not 0, 1, 2 or 3",
                "the optional third field is the sector id (0-3)",
            )
        sector = int(fields[2])
    return int(label), address, sector


def validate(path: str) -> TraceInfo:
    """Read the whole trace once: every line must parse; at least one data access."""
    counts = [0, 0, 0]
    tagged = 0
    try:
        with open(path, encoding="utf-8", errors="strict") as handle:
            for number, text in enumerate(handle, 1):
                parsed = parse_line(text, path, number)
                if parsed is None:
                    continue
                counts[parsed[0]] += 1
                if parsed[2] is not None:
                    tagged += 1
    except FileNotFoundError:
        raise DataError(path, None, "trace file not found", "check the --trace path") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            path, None, f"not a text file ({exc.reason})", "give a din trace: '<label> <hex address>'"
        ) from None
    except IsADirectoryError:
        raise DataError(path, None, "is a directory, not a trace file", "give a din trace file") from None
    if counts[0] + counts[1] == 0:
        raise DataError(
            path, None, "the trace has no data accesses (labels 0 or 1)", "give a din trace with reads/writes"
        )
    return TraceInfo(path, counts[0], counts[1], counts[2], tagged)


def records(
    path: str,
    tag_override: bool,
    pfe: bool,
    objects: DataObjects | None = None,
    assign: tuple[int | None, ...] | None = None,
) -> Iterator[Record]:
    """The trace's accesses as engine records, consecutive accesses to one line grouped; with
    ``objects``, each access carries the id of the data object its address falls in, and
    ``assign`` (per object id) overrides the sector of that object's accesses."""
    lookup = objects.lookup if objects is not None else None
    line_prev = -1
    n = 0
    fl_prev = 0
    ifetch = 0
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, 1):
            parsed = parse_line(text, path, number)
            if parsed is None:
                continue
            label, address, sector = parsed
            if label == 2:
                ifetch += 1
                continue
            obj = lookup(address) if lookup else 0
            if assign is not None and assign[obj] is not None:
                sector = assign[obj]
            tagged = tag_override and sector is not None
            fl = flags(sector or 0, label == 1, tagged, pfe and tagged, obj)
            line = address >> LINE_SHIFT
            if line == line_prev and (fl | FL_WRITE) == (fl_prev | FL_WRITE):
                n += 1
                fl_prev |= fl
                continue
            if n:
                yield (line_prev, n, fl_prev)
            if ifetch:
                yield (-1 - ifetch, 0, FL_IFETCH)
                ifetch = 0
            line_prev, n, fl_prev = line, 1, fl
    if n:
        yield (line_prev, n, fl_prev)
    if ifetch:
        yield (-1 - ifetch, 0, FL_IFETCH)


def stream_factory(
    path: str | Path,
    tag_override: bool,
    pfe: bool,
    objects: DataObjects | None = None,
    assign: tuple[int | None, ...] | None = None,
) -> Callable[[], Chunks]:
    """A callable making a fresh chunked stream of the (already validated) trace."""
    text = str(path)

    def make() -> Chunks:
        chunk: list[Record] = []
        for rec in records(text, tag_override, pfe, objects, assign):
            chunk.append(rec)
            if len(chunk) >= CHUNK:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    return make
