"""The merged job file: the nodes' recordings, verbatim, behind one job header.

Line 1 is the job header (interval, nodes with their offsets, warnings); each node follows as a
marker line and then its recording line for line. The raw readings stay raw, so a job replays
through today's formulas, and a node's part replays exactly as its own recording. Reading a job
extracts each node into a temporary recording, one file open at a time, under a name that says
which node of which job it is.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

from sectormon.errors import DataError
from sectormon.files.lines import bounded_lines
from sectormon.files.regular import open_input
from sectormon.files.text import clipped, printable
from sectormon.io.jsonl import loads, loads_record
from sectormon.io.reader import MAX_LINE, open_recording
from sectormon.job.header import JOB_SCHEMA, JobHeader
from sectormon.job.nodes import Alignment, Node, node_from_recording

NODE_SCHEMA = "sectormon/job-node/1"
_NODE_PREFIX = b'{"schema":"' + NODE_SCHEMA.encode() + b'"'
_GZIP_MAGIC = b"\x1f\x8b"


def _open_read(path: str | Path) -> BinaryIO:
    """The file (regular files only), decompressed when it is gzip."""
    f = open_input(str(path), "job file")
    try:
        magic = f.read(2)
        f.seek(0)
    except OSError:
        f.close()
        raise
    if magic == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]  # reads as a binary IO
    return f


def _lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """The file's numbered lines, each ending in a newline, none over
    :data:`~sectormon.io.reader.MAX_LINE` bytes; a gzip stream that is cut or corrupt is an
    error naming the line after the last whole one."""
    name = printable(str(path))
    with _open_read(path) as f:
        number = 0
        try:
            for number, line in bounded_lines(f, name, MAX_LINE):
                yield number, line if line.endswith(b"\n") else line + b"\n"
        except (EOFError, OSError, zlib.error) as exc:
            raise DataError(
                name,
                number + 1,
                f"the job file's compressed data is cut or corrupt ({exc})",
                "merge the nodes again",
            ) from None


def first_record(path: str | Path) -> dict[str, Any] | None:
    """The first line of a file as a JSON object, or None when it is not one (or cannot be read:
    the reader that opens it then says why)."""
    try:
        with _open_read(path) as f:
            line = f.readline(1 << 24)
        record = loads(line)
    except (OSError, EOFError, zlib.error, ValueError, DataError):
        return None
    return record if isinstance(record, dict) else None


def is_job_file(path: str | Path) -> bool:
    record = first_record(path)
    return record is not None and str(record.get("schema", "")).startswith("sectormon/job/")


def write_job(alignment: Alignment, out: IO[bytes], *, compress: bool, skip_bad: bool = False) -> None:
    """Write the aligned nodes as one job file to ``out`` (gzip-compressed when ``compress``).

    Each node's part is the lines its replay reads, as they are in its file (blank lines kept as
    such, so line numbers stay the file's): a last line cut mid-way is left out, so the job
    holds whole lines only. A failed write raises its ``OSError``: the caller owns the file
    (``sectormon merge`` writes it under a temporary name and renames it when whole)."""
    header = JobHeader.of(alignment).to_json()
    with ExitStack() as stack:
        f: IO[bytes] = out
        if compress:
            f = stack.enter_context(gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0))  # type: ignore[arg-type]
        f.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        for i, node in enumerate(alignment.nodes):
            marker = {"schema": NODE_SCHEMA, "node": i, "host": node.host}
            f.write(json.dumps(marker, separators=(",", ":")).encode() + b"\n")
            _copy_node(node, f, skip_bad)


def _copy_node(node: Node, f: IO[bytes], skip_bad: bool) -> None:
    """Copy the lines of ``node``'s recording that its replay reads (what its scan warned about,
    a cut last line among them, is in ``node.warnings``)."""
    with open_recording(node.path, skip_bad=skip_bad, name=node.label) as stream:
        lines = stream.raw_lines()  # the header is read already: its line is copied as it is
        f.write(b"\n" * (stream.last_line - 1) + stream.header_line + b"\n")
        written = stream.last_line
        for number, line, cut in lines:
            if cut:
                try:
                    loads(line)
                except ValueError:
                    continue  # the reader skips it too
            f.write(b"\n" * (number - written - 1) + line + b"\n")
            written = number


@contextmanager
def open_job(path: str | Path, *, skip_bad: bool = False) -> Iterator[Alignment]:
    """The job's nodes, each extracted to a temporary recording for as long as the context lasts.

    Messages about a node name it and the file it was merged from (``simB.jsonl.gz (node B of
    job.jsonl)``), never the temporary file."""
    name = printable(str(path))
    lines = _lines(path)
    _, first = next(lines, (1, b""))
    try:
        record = loads_record(first)
    except ValueError:
        record = None
    if not isinstance(record, dict) or record.get("schema") != JOB_SCHEMA:
        raise DataError(name, 1, f"not a sectormon job file (the first line is not a {JOB_SCHEMA} header)")
    checked = JobHeader.from_json(name, record)
    tmp = Path(tempfile.mkdtemp(prefix="sectormon-job-"))
    try:
        paths = _extract(name, lines, tmp, len(checked.nodes))
        nodes = []
        for i, entry in enumerate(checked.nodes):
            label = f"{printable(entry.file)} (node {i} of {name})"
            node = node_from_recording(str(paths[i]), label=label, skip_bad=skip_bad)
            nodes.append(
                Node(node.host, node.path, label, node.header, node.first_t, node.end_t, entry.offset)
            )
        yield Alignment(
            tuple(nodes),
            checked.interval,
            min(n.start for n in nodes),
            max(n.end for n in nodes),
            checked.warnings,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract(name: str, lines: Iterator[tuple[int, bytes]], tmp: Path, count: int) -> list[Path]:
    """Each node's lines to its own file in ``tmp`` (one open at a time: a node's lines follow
    its marker)."""
    paths = [tmp / f"node{i}.jsonl" for i in range(count)]
    seen: set[int] = set()
    with ExitStack() as files:
        out: IO[bytes] | None = None
        for lineno, line in lines:
            if line.startswith(_NODE_PREFIX):
                try:
                    marker = loads(line)
                except ValueError:
                    marker = None
                index = marker.get("node") if isinstance(marker, dict) else None
                if type(index) is not int or not 0 <= index < count or index in seen:
                    shown = clipped(line.decode("utf-8", "replace").strip())
                    raise DataError(name, lineno, f"bad node marker {shown}", "merge the nodes again")
                seen.add(index)
                files.close()
                out = files.enter_context(open(paths[index], "wb"))
            elif out is None:
                raise DataError(name, lineno, "a record before the first node marker")
            else:
                out.write(line)
    if len(seen) != count:
        raise DataError(name, None, f"the job lists {count} nodes but holds {len(seen)} (the file was cut)")
    return paths
