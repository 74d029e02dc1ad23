"""The merged job file's own header: the job's interval and span, each node's file and offset.

It is the first line of a job file (``sectormon merge`` writes it, every reader of the job reads
it), a record of its own beside the nodes' session headers, which the job file carries verbatim.
Written by :meth:`JobHeader.to_json` and checked in one place, :meth:`JobHeader.from_json`: a
damaged one is a one-line error naming the field, so no reader meets a wrong type later.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from sectormon import __version__
from sectormon.errors import DataError
from sectormon.io.header_codec import MIN_INTERVAL
from sectormon.io.jsonl import MAX_SECONDS, finite_float
from sectormon.job.nodes import Alignment

JOB_SCHEMA = "sectormon/job/1"
MAX_NODES = 4096
"""Nodes a job file may list (a node is a temporary file while the job is read)."""
_FIX = "merge again with sectormon merge"


@dataclass(frozen=True, slots=True)
class JobNodeEntry:
    """One node as the job header lists it: its file (as given to merge) and its offset on the
    job's timeline; ``host``, ``first_t`` and ``end_t`` say what merge found (readers take them
    from the node's own recording)."""

    file: str
    offset: float
    host: str = ""
    first_t: float = 0.0
    end_t: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "file": self.file,
            "offset": self.offset,
            "first_t": self.first_t,
            "end_t": self.end_t,
        }


@dataclass(frozen=True, slots=True)
class JobHeader:
    """A job file's header record."""

    interval: float
    nodes: tuple[JobNodeEntry, ...]
    warnings: tuple[str, ...] = ()
    start: float = 0.0
    end: float = 0.0
    version: str = __version__
    created: str = ""

    @classmethod
    def of(cls, alignment: Alignment) -> JobHeader:
        """The header of a job merged from ``alignment``."""
        return cls(
            interval=alignment.interval,
            nodes=tuple(
                JobNodeEntry(Path(n.label).name, n.offset, n.host, n.first_t, n.end_t)
                for n in alignment.nodes
            ),
            warnings=alignment.warnings,
            start=alignment.start,
            end=alignment.end,
            created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": JOB_SCHEMA,
            "sectormon": self.version,
            "created": self.created,
            "interval": self.interval,
            "start": self.start,
            "end": self.end,
            "nodes": [n.to_json() for n in self.nodes],
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, path: str, rec: Mapping[str, Any]) -> JobHeader:
        """The header ``rec`` of the job file ``path``; a :class:`DataError` naming the first field
        a reader cannot use. Only what readers use is checked and kept: the interval, each node's
        offset and file (``node <i>`` when it names none), the warnings."""
        interval = finite_float(rec.get("interval"))
        if interval is None or not MIN_INTERVAL <= interval <= MAX_SECONDS:
            _bad(path, "interval", f"a number of seconds from {MIN_INTERVAL:g} to {MAX_SECONDS:g}")
        entries = rec.get("nodes")
        if type(entries) is not list or not 2 <= len(entries) <= MAX_NODES:
            raise DataError(path, 1, f"the job header must list 2 to {MAX_NODES} nodes", _FIX)
        nodes: list[JobNodeEntry] = []
        for i, entry in enumerate(entries):
            if type(entry) is not dict:
                _bad(path, f"nodes[{i}]", "an object (host, file, offset)")
            offset = finite_float(entry.get("offset"))
            if offset is None or not 0.0 <= offset <= MAX_SECONDS:
                _bad(path, f"nodes[{i}].offset", f"a number of seconds from 0 to {MAX_SECONDS:g}")
            file = entry.get("file")
            nodes.append(JobNodeEntry(file if type(file) is str else f"node {i}", offset))
        warnings = rec.get("warnings", [])
        if type(warnings) is not list or not all(type(w) is str for w in warnings):
            _bad(path, "warnings", "a list of strings")
        return cls(interval=interval, nodes=tuple(nodes), warnings=tuple(warnings))


def _bad(path: str, key: str, expected: str) -> NoReturn:
    raise DataError(path, 1, f"job header field {key!r} must be {expected}", _FIX)
