"""Dinero ``din`` traces as simulator input: ``<label> <hex address> [sector]`` per line.

Labels: 0 data read, 1 data write, 2 instruction fetch (counted as an instruction, not simulated:
the model has no L1I). The optional third field is the access's sector id (0-3), as if the address
carried the HPC tag override bits; without it the access uses the default sector 0 untagged.
Blank lines and lines starting with ``#`` are skipped.

A trace is validated in full before the simulation starts (a bad line is one error naming the file
and line), then streamed in chunks so a large trace never sits in memory. Only a regular file or a
pipe is read (``/dev/zero`` or a FIFO nobody writes is refused), every line at most
:data:`LINE_CAP` bytes, every address at most 64 bits wide (what the hardware has, and what the
compiled core holds). A pipe (``--trace /dev/stdin``, ``<(zcat t.din.gz)``) can be read only once,
so it is copied while it is validated into an anonymous temporary file (at most
:data:`PIPE_CAP` bytes) that the simulation then reads like any trace file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sectormon.errors import DataError
from sectormon.files.lines import KIB, MIB, bounded_lines
from sectormon.files.regular import open_input
from sectormon.sim.config import LINE_SHIFT
from sectormon.sim.objects import DataObjects
from sectormon.sim.stream import FL_IFETCH, FL_WRITE, Chunks, Record, flags

LABELS = {"0": "read", "1": "write", "2": "ifetch"}
_HEX = frozenset("0123456789abcdefABCDEF")
CHUNK = 4096
# A din line is a label, an address and a sector: a few dozen bytes. The cap leaves room for
# comments and padding and stops a file of one endless line (/dev/zero through a pipe) at once.
LINE_CAP = 4 * KIB
ADDRESS_DIGITS = 16  # 64 bits of hex, leading zeros aside
PIPE_CAP = 256 * MIB  # a piped trace's copy on disk: some 20 million accesses


@dataclass(frozen=True, slots=True)
class TraceFile:
    """A trace as the user named it (``name``: messages, the header) and where it is read
    (``path``: the file itself, or the copy of a pipe, kept open by ``copy``)."""

    name: str
    path: str
    copy: IO[bytes] | None = None


def open_trace(path: str) -> TraceFile:
    """The trace ``path``: a regular file as it is, a pipe copied (and validated) once."""
    with open_input(path, "trace", allow_pipe=True) as handle:
        if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return TraceFile(path, path)
        copy = tempfile.TemporaryFile(prefix="sectormon-trace-")  # noqa: SIM115 (kept open: the TraceFile reads it)
        try:
            size = 0
            for number, line in bounded_lines(handle, path, LINE_CAP):
                size += len(line)
                if size > PIPE_CAP:
                    raise DataError(
                        path,
                        number,
                        f"a piped trace is limited to {PIPE_CAP // MIB} MiB",
                        "save it to a file",
                    )
                parse_line(_text(line, path, number), path, number)
                copy.write(line)
            copy.flush()
        except BaseException:
            copy.close()
            raise
    # /proc/self/fd/N opens the copy again with its own offset, however often the trace is read.
    return TraceFile(path, f"/proc/self/fd/{copy.fileno()}", copy)


def _text(line: bytes, path: str, number: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            path, number, f"not a text line ({exc.reason})", "give a din trace: '<label> <hex address>'"
        ) from None


def _lines(trace: TraceFile) -> Iterator[tuple[int, str]]:
    """The trace's lines as text, numbered; every line capped."""
    with open_input(trace.path, "trace") as handle:
        for number, line in bounded_lines(handle, trace.name, LINE_CAP):
            yield number, _text(line, trace.name, number)


def _trace(trace: str | TraceFile) -> TraceFile:
    return trace if isinstance(trace, TraceFile) else TraceFile(trace, trace)


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
    if len(digits.lstrip("0")) > ADDRESS_DIGITS:
        raise DataError(
            path,
            number,
            f"address {raw[:24]!r}{'...' if len(raw) > 24 else ''} is wider than 64 bits",
            "addresses are at most 16 hex digits",
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


def validate(trace: str | TraceFile) -> TraceInfo:
    """Read the whole trace once: every line must parse; at least one data access. A ``str`` is
    a regular file's path (a pipe goes through :func:`open_trace` first)."""
    trace = _trace(trace)
    path = trace.name
    counts = [0, 0, 0]
    tagged = 0
    for number, text in _lines(trace):
        parsed = parse_line(text, path, number)
        if parsed is None:
            continue
        counts[parsed[0]] += 1
        if parsed[2] is not None:
            tagged += 1
    if counts[0] + counts[1] == 0:
        raise DataError(
            path, None, "the trace has no data accesses (labels 0 or 1)", "give a din trace with reads/writes"
        )
    return TraceInfo(path, counts[0], counts[1], counts[2], tagged)


def records(
    trace: str | TraceFile,
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
    trace = _trace(trace)
    for number, text in _lines(trace):
        parsed = parse_line(text, trace.name, number)
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
    trace: str | Path | TraceFile,
    tag_override: bool,
    pfe: bool,
    objects: DataObjects | None = None,
    assign: tuple[int | None, ...] | None = None,
) -> Callable[[], Chunks]:
    """A callable making a fresh chunked stream of the (already validated) trace."""
    text = trace if isinstance(trace, TraceFile) else str(trace)

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
