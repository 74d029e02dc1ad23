"""The merged job file: the nodes' recordings, verbatim, behind one job header.

The design notes of this module are in docs/internals.md.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

from sectormon import __version__
from sectormon.errors import DataError
from sectormon.job.nodes import Alignment, Node, node_from_recording

JOB_SCHEMA = "sectormon/job/1"
NODE_SCHEMA = "sectormon/job-node/1"
_NODE_PREFIX = b'{"schema":"' + NODE_SCHEMA.encode() + b'"'
_GZIP_MAGIC = b"\x1f\x8b"


def _open_read(path: str | Path) -> IO[bytes]:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")  # type: ignore[return-value]  # a GzipFile reads as a binary IO
    return open(path, "rb")


def _lines(path: str | Path) -> Iterator[bytes]:
    """The file's lines, each ending in a newline; a gzip stream cut short ends where it was cut."""
    with _open_read(path) as f:
        try:
            for line in f:
                yield line if line.endswith(b"\n") else line + b"\n"
        except (EOFError, OSError):  # a recording cut by a crash: its reader skips the cut line
            return


def first_record(path: str | Path) -> dict[str, Any] | None:
    """The first line of a file as a JSON object, or None when it is not one."""
    try:
        with _open_read(path) as f:
            line = f.readline(1 << 24)
    except (OSError, EOFError):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def is_job_file(path: str | Path) -> bool:
    record = first_record(path)
    return record is not None and str(record.get("schema", "")).startswith("sectormon/job/")


def write_job(alignment: Alignment, out: IO[bytes], *, compress: bool) -> None:
    """Write the aligned nodes as one job file to ``out`` (gzip-compressed when ``compress``).

    A failed write raises its ``OSError``: the caller owns the file (``sectormon merge`` writes
    it under a temporary name and renames it when whole)."""
    header = {
        "schema": JOB_SCHEMA,
        "sectormon": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "interval": alignment.interval,
        "start": alignment.start,
        "end": alignment.end,
        "nodes": [
            {
                "host": n.host,
                "file": Path(n.label).name,
                "offset": n.offset,
                "first_t": n.first_t,
                "end_t": n.end_t,
            }
            for n in alignment.nodes
        ],
        "warnings": list(alignment.warnings),
    }
    with ExitStack() as stack:
        f: IO[bytes] = out
        if compress:
            f = stack.enter_context(gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0))  # type: ignore[arg-type]
        f.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        for i, node in enumerate(alignment.nodes):
            marker = {"schema": NODE_SCHEMA, "node": i, "host": node.host}
            f.write(json.dumps(marker, separators=(",", ":")).encode() + b"\n")
            for line in _lines(node.path):
                f.write(line)


@contextmanager
def open_job(path: str | Path, *, skip_bad: bool = False) -> Iterator[Alignment]:
    """The job's nodes, each extracted to a temporary recording for as long as the context lasts."""
    lines = _lines(path)
    first = next(lines, b"")
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("schema") != JOB_SCHEMA:
        raise DataError(
            str(path), 1, f"not a sectormon job file (the first line is not a {JOB_SCHEMA} header)"
        )
    entries = header.get("nodes")
    if not isinstance(entries, list) or len(entries) < 2:
        raise DataError(
            str(path), 1, "the job header lists fewer than two nodes", "merge again with sectormon merge"
        )
    tmp = Path(tempfile.mkdtemp(prefix="sectormon-job-"))
    try:
        paths = _extract(path, lines, tmp, len(entries))
        nodes = []
        for i, entry in enumerate(entries):
            node = node_from_recording(
                str(paths[i]), label=f"{path} node {entry.get('host')}", skip_bad=skip_bad
            )
            nodes.append(
                Node(
                    node.host,
                    node.path,
                    node.label,
                    node.header,
                    node.first_t,
                    node.end_t,
                    float(entry["offset"]),
                )
            )
        yield Alignment(
            tuple(nodes),
            float(header["interval"]),
            float(header["start"]),
            float(header["end"]),
            tuple(str(w) for w in header.get("warnings", ())),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract(path: str | Path, lines: Iterator[bytes], tmp: Path, count: int) -> list[Path]:
    paths = [tmp / f"node{i}.jsonl" for i in range(count)]
    seen: set[int] = set()
    with ExitStack() as files:
        outs = [files.enter_context(open(p, "wb")) for p in paths]
        out: IO[bytes] | None = None
        for lineno, line in enumerate(lines, start=2):
            if line.startswith(_NODE_PREFIX):
                index = json.loads(line).get("node")
                if not isinstance(index, int) or not 0 <= index < count or index in seen:
                    raise DataError(
                        str(path), lineno, f"bad node marker {line.decode(errors='replace').strip()}"
                    )
                seen.add(index)
                out = outs[index]
            elif out is None:
                raise DataError(str(path), lineno, "a record before the first node marker")
            else:
                out.write(line)
    if len(seen) != count:
        raise DataError(
            str(path), None, f"the job lists {count} nodes but holds {len(seen)} (the file was cut)"
        )
    return paths
