"""The nodes of a job, aligned by their wall-clock start.

Each recording's header says when its stream time 0 was on the wall clock (``wall_t0``, Unix
seconds); a node's *offset* is how much later than the earliest node it started, and its frames at
stream time ``t`` belong to job time ``t + offset``. Simulated recordings have no wall clock (their
seconds are simulated) and recordings made before ``wall_t0`` existed have none either: such nodes
are aligned at their starts, and the job says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sectormon.data.header import Header
from sectormon.errors import UsageError

EDGE_SLACK = 0.5
"""Intervals a node may start after the first or end before the last without being reported."""


@dataclass(frozen=True, slots=True)
class Node:
    """One node's recording in a job."""

    host: str
    path: str  # the recording to replay (extracted from a job file, or the file given)
    label: str  # where it came from, for messages (the file name given to merge)
    header: Header
    first_t: float  # stream time its recording starts at (where its whole-run window starts)
    end_t: float  # stream time of its last record
    offset: float = 0.0  # job time of its stream time 0
    warnings: tuple[str, ...] = ()  # what its reader warned about when it was scanned

    @property
    def start(self) -> float:
        """Job time its recording starts at."""
        return self.first_t + self.offset

    @property
    def end(self) -> float:
        return self.end_t + self.offset


@dataclass(frozen=True, slots=True)
class Alignment:
    """The aligned nodes, the job's interval and span, and what the alignment found."""

    nodes: tuple[Node, ...]
    interval: float
    start: float
    end: float
    warnings: tuple[str, ...]

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


def _interval(header: Header) -> float | None:
    value = header.options.interval
    return float(value) if value is not None else None


def _wall_t0(header: Header) -> float | None:
    return None if header.wall_t0 is None else float(header.wall_t0)


def align(nodes: Sequence[Node]) -> Alignment:
    """Offsets from the headers' wall-clock starts; one interval for all (else a UsageError);
    a warning for each node that started late or ended early (its missing time lowers the job's
    coverage; it is never filled with zeros)."""
    if len(nodes) < 2:
        raise UsageError("a job needs at least two node recordings")
    hosts = [n.host for n in nodes]
    twice = sorted({h for h in hosts if hosts.count(h) > 1})
    if twice:
        raise UsageError(
            f"host {', '.join(twice)} appears in more than one recording; a job has one recording per node "
            "(each node records with its own hostname, or SECTORMON_HOST=NAME)"
        )
    intervals = {n.label: _interval(n.header) for n in nodes}
    distinct = {v for v in intervals.values() if v is not None}
    if len(distinct) != 1 or None in intervals.values():
        shown = ", ".join(f"{label}: {v if v is not None else '?'} s" for label, v in intervals.items())
        raise UsageError(f"the nodes were recorded with different --interval ({shown}); record them with one")
    interval = distinct.pop()
    warnings: list[str] = []
    walls = [_wall_t0(n.header) for n in nodes]
    if all(w is not None for w in walls):
        first = min(w for w in walls if w is not None)
        aligned = [_replace_offset(n, (w or 0.0) - first) for n, w in zip(nodes, walls, strict=True)]
    else:
        aligned = list(nodes)
        if all(n.header.source.simulated for n in nodes):
            warnings.append("simulated nodes have no wall clock: they are aligned at their starts")
        else:
            missing = [n.label for n, w in zip(nodes, walls, strict=True) if w is None]
            warnings.append(
                f"{', '.join(missing)}: no wall-clock start in the header (recorded before sectormon "
                "kept one, or simulated): every node is aligned at its start"
            )
    start = min(n.start for n in aligned)
    end = max(n.end for n in aligned)
    slack = EDGE_SLACK * interval
    for node in aligned:
        if node.start > start + slack:
            warnings.append(
                f"node {node.host} started {node.start - start:.3g} s after the job: "
                "its missing time shows as coverage"
            )
        if node.end < end - slack:
            warnings.append(
                f"node {node.host} ended {end - node.end:.3g} s before the job: "
                "its missing time shows as coverage"
            )
    return Alignment(tuple(aligned), interval, start, end, tuple(warnings))


def _replace_offset(node: Node, offset: float) -> Node:
    return Node(
        node.host, node.path, node.label, node.header, node.first_t, node.end_t, offset, node.warnings
    )


def node_from_recording(path: str, *, label: str | None = None, skip_bad: bool = False) -> Node:
    """A node from a recording file: its host, header and time span (scanned, not replayed): from
    where its engine's whole run starts (the recording's start) to its last record."""
    from sectormon.io.reader import scan_recording

    scan = scan_recording(path, skip_bad=skip_bad, name=label)
    host = scan.header.host.name or label or path
    first_t = scan.header.stream_start
    return Node(host, path, label or path, scan.header, first_t, scan.end_t, warnings=scan.warnings)
