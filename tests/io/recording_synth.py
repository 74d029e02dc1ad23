"""Synthetic slice streams and headers for the recording tests (deterministic, no hardware)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sectormon.data.readings import Mark, Slice
from sectormon.io import RecordingWriter
from tests.rows import readings_of, row

GROUPS: dict[str, tuple[str, ...]] = {
    "SW1": ("TASK_CLOCK", "PAGE_FAULTS"),
    "SW2": ("TASK_CLOCK", "CONTEXT_SWITCHES", "CPU_MIGRATIONS"),
    "SW3": ("TASK_CLOCK", "MINOR_FAULTS", "MAJOR_FAULTS"),
}


def header(profile: dict[str, Any] | None = None, *, interval: float = 1.0) -> dict[str, Any]:
    return {
        "sectormon": "0.1.0",
        "created": "2024-01-01T00:00:00+00:00",
        "host": "testhost",
        "kernel": "6.1.0",
        "cpu": "synthetic",
        "topology": {"cpus": [0, 1], "cmgs": {"0": [0, 1]}},
        "profile": profile if profile is not None else {"name": "synthetic"},
        "source": {"kind": "sim"},
        "target": {"mode": "synthetic"},
        "sector_config": {"l1": [4, 0, 0, 0]},
        "options": {"interval": interval, "timeslice": 0.02, "recent_seconds": 2.0},
        "unavailable": {},
    }


def slices(
    n: int,
    *,
    timeslice: float = 0.02,
    units: Sequence[tuple[str, int | None, int | None]] = (("thread:100", 0, 0), ("thread:101", 1, 0)),
    groups: dict[str, tuple[str, ...]] = GROUPS,
    seed: int = 1,
) -> Iterator[Slice]:
    """``n`` slices rotating ``groups`` over ``units``, with varied but reproducible counts."""
    rng = random.Random(seed)
    names = list(groups)
    te = int(timeslice * 1e9)
    for i in range(n):
        group = names[i % len(names)]
        readings = tuple(
            row(
                unit=unit,
                core=core,
                cmg=cmg,
                group=group,
                time_enabled=te,
                time_running=te if rng.random() > 0.2 else te // 2,
                counts={e: (te if e == "TASK_CLOCK" else rng.randrange(0, 1000)) for e in groups[group]},
            )
            for unit, core, cmg in units
        )
        yield Slice(
            t=round((i + 1) * timeslice, 9),
            index=i,
            duration=timeslice,
            group=group,
            rows=readings,
            overhead_s=i * 1e-5,
        )


def stream(n: int, *, marks: dict[int, Mark] | None = None, end: bool = True) -> list[Slice | Mark]:
    """Slices with marks inserted before the slice of the given index, then an ``end`` mark."""
    marks = marks or {}
    items: list[Slice | Mark] = []
    last = 0.0
    for s in slices(n):
        if s.index in marks:
            items.append(marks[s.index])
        items.append(s)
        last = s.t
    if end:
        items.append(Mark(t=last, kind="end"))
    return items


def v1_slice_record(s: Slice) -> dict[str, Any]:
    """A slice in the version-1 layout (one object per reading), as sectormon <= 0.1 wrote it.

    Written here, not by the package's writer (which writes the current version), so v1 coverage
    does not depend on code that no longer writes it.
    """
    return {
        "schema": "sectormon/slice/1",
        "t": s.t,
        "index": s.index,
        "duration": s.duration,
        "group": s.group,
        "overhead_s": s.overhead_s,
        "ended": list(s.ended),
        "readings": [
            {
                "unit": r.unit,
                "core": r.core,
                "cmg": r.cmg,
                "group": r.group,
                "te": r.time_enabled,
                "tr": r.time_running,
                "counts": dict(r.counts),
            }
            for r in readings_of(s)
        ],
    }


def v1_lines(items: Sequence[Slice | Mark], hdr: dict[str, Any] | None = None) -> list[str]:
    """A whole version-1 recording (header, slices, marks) as compact JSON lines."""

    def compact(value: object) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    out = [compact({"schema": "sectormon/recording/1", **(hdr if hdr is not None else header())})]
    for item in items:
        if isinstance(item, Slice):
            out.append(compact(v1_slice_record(item)))
        else:
            rec = {"schema": "sectormon/mark/1", "t": item.t, "kind": item.kind, "label": item.label}
            out.append(compact({**rec, "data": dict(item.data)}))
    return out


def write(path: Path, items: Iterable[Slice | Mark], hdr: dict[str, Any] | None = None) -> Path:
    """A recording of ``items`` written by today's :class:`RecordingWriter` (format version 2)."""
    with RecordingWriter(path, hdr if hdr is not None else header()) as w:
        for item in items:
            if isinstance(item, Mark):
                w.write_mark(item)
            else:
                w.write_slice(item)
        assert w.failed is None
    return path
