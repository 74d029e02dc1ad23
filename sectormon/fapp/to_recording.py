"""Turn a fapp measurement into a sectormon recording, so ``replay`` and ``compare`` work on it.

Every event set measured the same region once, so the recording is one slice as long as that region
(the mean pa1 time), holding one reading per thread and set and one per CMG and set for CMG-wide
events. The engine then gives each event's raw count (or its mean over the sets that counted it),
with no multiplexing correction. The thread readings keep their rows whole so that ``compare`` can
rebuild the measurement exactly (``fapp/from_recording.py``).

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sectormon import __version__
from sectormon.data.header import Header
from sectormon.data.readings import Mark, Row, Slice
from sectormon.errors import DataError, SectormonError, UsageError
from sectormon.fapp.counts import cmg_counts, row_columns
from sectormon.fapp.model import CPU_CYCLES_CODE, EventSet, Measurement, cmg_of
from sectormon.fapp.names import CYCLES_NAME, event_def, event_name
from sectormon.fapp.report import report_profile
from sectormon.files.output import OutputError, replace_output
from sectormon.files.regular import is_regular
from sectormon.io.header_codec import MIN_INTERVAL, header_from_json
from sectormon.io.jsonl import MAX_SECONDS, RECORDING_SCHEMA
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile

_DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
SLICE_GROUP = "fapp"
"""The slice's ``group``: all event sets at once (each reading names its own set)."""


@dataclass(frozen=True, slots=True)
class Conversion:
    """A measurement as a recording: the header, the slices and the end mark, ready to write."""

    header: Header
    slices: tuple[Slice, ...]
    end: Mark


def _set_events(event_set: EventSet) -> tuple[list[EventDef], bool]:
    """The set's events (profile names) and whether CPU_CYCLES comes from 0x11 instead of PMCCNTR."""
    events = [event_def(code) for code in event_set.codes]
    return events, CPU_CYCLES_CODE in event_set.codes


def set_columns(event_set: EventSet) -> dict[str, str]:
    """A set's event columns in file order: hex code -> the name its counts have in the readings."""
    return {f"0x{code:04x}": event_name(code) for code in event_set.codes}


def build_profile(m: Measurement) -> Profile:
    """The a64fx profile (the part's energy factors) plus raw events for unknown codes, one group per set."""
    base = report_profile(m)
    events: dict[str, EventDef] = dict(base.events)
    groups: list[GroupDef] = []
    for name, event_set in m.sets.items():
        defs, has_cycles = _set_events(event_set)
        for event in defs:
            events.setdefault(event.name, event)
        members = [e.name for e in defs]
        if not has_cycles:
            members.insert(0, CYCLES_NAME)
        groups.append(
            GroupDef(name, tuple(members), f"fapp event set {name} (a separate run; CPU_CYCLES = PMCCNTR)")
        )
    counters = max([base.counters, *(len(g.events) for g in groups)])
    return Profile(
        name=base.name,
        description=f"{base.description}; groups = the fapp event sets",
        counters=counters,  # 8 event counters + the cycle counter (PMCCNTR)
        events=events,
        groups=tuple(groups),
        metrics=_rehint(_ipc_stand_in(base.metrics, m), events, groups),
        constants=base.constants,
        source=f"{base.source or 'builtin:a64fx'} + fapp event sets",
        variant=base.variant,
    )


INST_RETIRED_CODE = 0x8
EFFECTIVE_INST_CODE = 0x121
"""EFFECTIVE_INST_SPEC: the instructions the CPU PA report's IPC counts (pa1, pa16)."""


def _ipc_stand_in(metrics: tuple[MetricDef, ...], m: Measurement) -> tuple[MetricDef, ...]:
    """The profile's IPC over EFFECTIVE_INST_SPEC (0x121) when no set counted INST_RETIRED (0x8).

    The CPU PA sets count no INST_RETIRED, so a replay of their import showed ``IPC n/a`` where
    ``sectormon fapp`` shows the report's IPC: the import's profile (which the recording carries,
    formula and description) takes the report's instruction count instead, so the replay shows
    an IPC, and says which. compare rebuilds the rows and keeps the two apart (``IPC`` and
    ``report:IPC``), so this changes only what a replay shows.
    """
    codes = {code for event_set in m.sets.values() for code in event_set.codes}
    if INST_RETIRED_CODE in codes or EFFECTIVE_INST_CODE not in codes:
        return metrics
    instructions = event_name(EFFECTIVE_INST_CODE)
    return tuple(
        MetricDef(
            metric.name,
            f"{instructions} / {CYCLES_NAME}",
            metric.unit,
            "Instructions per cycle as the CPU PA report counts them: EFFECTIVE_INST_SPEC (0x121) / "
            "cycles (these fapp sets count no INST_RETIRED)",
            metric.better,
            metric.scope,
            metric.group_hint,
        )
        if metric.name == "IPC"
        else metric
        for metric in metrics
    )


def _rehint(
    metrics: tuple[MetricDef, ...], events: Mapping[str, EventDef], groups: list[GroupDef]
) -> tuple[MetricDef, ...]:
    """Point each metric's group hint at the first event set that counts all its events ("" if none)."""
    from sectormon.profiles.expr import formula_names

    inputs: dict[str, frozenset[str]] = {}
    out: list[MetricDef] = []
    for metric in metrics:
        needed: set[str] = set()
        for name in formula_names(metric.formula):
            if name in events:
                needed.add(name)
            else:
                needed |= inputs.get(name, frozenset())
        inputs[metric.name] = frozenset(needed)
        hint = next((g.name for g in groups if needed and needed <= set(g.events)), "")
        out.append(
            MetricDef(
                metric.name,
                metric.formula,
                metric.unit,
                metric.description,
                metric.better,
                metric.scope,
                hint,
            )
        )
    return tuple(out)


def _ns(ticks: int, cntfrq: float) -> int:
    return round(ticks / cntfrq * 1e9)


def _rows(m: Measurement, event_set: EventSet, cmg: int) -> list[Row]:
    """The set's readings: one per thread row, plus one on the CMG unit for its CMG-wide events.

    Time enabled = running (the row's CNTVCT in ns): fapp counted each event the whole run, so the
    engine's multiplexing correction must not act.
    """
    rows: list[Row] = []
    for row in event_set.rows:
        ns = _ns(row.cntvct or 0, m.cntfrq_hz)
        counts = row_columns(event_set, row)
        unit = f"thread:{row.thread}"
        rows.append(Row(unit, None, cmg, event_set.name, ns, ns, tuple(counts), tuple(counts.values())))
    cmg_values = cmg_counts(event_set)
    if cmg_values:
        ticks = sum(r.cntvct or 0 for r in event_set.rows) / len(event_set.rows)
        ns = _ns(round(ticks), m.cntfrq_hz)
        names, values = tuple(cmg_values), tuple(cmg_values.values())
        rows.append(Row(f"cmg:{cmg}", None, cmg, event_set.name, ns, ns, names, values))
    return rows


def check_representable(m: Measurement) -> None:
    """Refuse, in one line, a measurement a recording cannot hold as it is (replay would refuse it).

    Every reading's time enabled is its row's CNTVCT, and a recording's times lie within
    :data:`~sectormon.io.jsonl.MAX_SECONDS` (31 years): a CNTVCT of 2**64 - 1 is a valid count,
    but 5,800 years at 100 MHz is no measured region, so it is refused naming its line rather
    than written into a recording nothing can replay. A set without CNTVCT or cycles (the PMU
    document's XML form) has no time to give its readings.
    """
    for event_set in m.sets.values():
        missing = [
            what
            for what, has in (
                ("CNTVCT", event_set.has_time),
                ("cycles (PMCCNTR or 0x0011)", event_set.has_cycles),
            )
            if not has
        ]
        if missing:
            raise DataError(
                event_set.path,
                None,
                f"the export has no {' and no '.join(missing)}: "
                "a recording needs each set's measured time and cycles",
                "export with CNTVCT and PMCCNTR ('fapppx -A -Icpupa'), or read it with 'sectormon fapp'",
            )
        for row in event_set.rows:
            seconds = (row.cntvct or 0) / m.cntfrq_hz
            if seconds > MAX_SECONDS:
                raise DataError(
                    event_set.path,
                    row.line,
                    f"thread {row.thread}: CNTVCT {row.cntvct} is {seconds:.3g} s at {m.cntfrq_hz:g} Hz, "
                    f"longer than a recording holds ({MAX_SECONDS:g} s)",
                    "check CNTVCT and the timer frequency (info.json cntfrq_hz)",
                )


def region_seconds(m: Measurement) -> float:
    """The slice's duration: T̄, the mean pa1 time of the threads with a time."""
    seconds = m.mean_seconds()
    if seconds is None or not seconds > 0:
        raise DataError(
            m.path,
            None,
            f"no thread has a time in {m.time_set or 'the first set'} (CNTVCT and PMCCNTR are 0 or missing)",
            "a recording needs the measured time: export pa1 with its CNTVCT column",
        )
    if seconds < MIN_INTERVAL:
        raise DataError(
            m.path,
            None,
            f"the region's mean time in {m.time_set} is {seconds:.3g} s, shorter than a recording's "
            f"shortest interval ({MIN_INTERVAL:g} s)",
            "check CNTVCT and the timer frequency (info.json cntfrq_hz)",
        )
    return seconds


def convert(m: Measurement) -> Conversion:
    """The recording of a measurement (see the module docstring for the model)."""
    from sectormon.profiles.codec import profile_to_dict

    check_representable(m)
    profile = build_profile(m)
    cmg = cmg_of(m.info)
    t = region_seconds(m)
    rows = [r for event_set in m.sets.values() for r in _rows(m, event_set, cmg)]
    slices = [Slice(t=t, index=0, duration=t, group=SLICE_GROUP, rows=tuple(rows))]
    groups = {
        g.name: {
            "pe": [e for e in g.events if profile.events[e].scope == "pe"],
            "cmg": [e for e in g.events if profile.events[e].scope == "cmg"],
        }
        for g in profile.groups
    }
    info = {k: v for k, v in m.info.items() if k != "kind"}
    # Written in its own field order (as recordings of earlier imports are), read back by the codec.
    header = header_from_json(
        {
            "schema": RECORDING_SCHEMA,
            "sectormon": __version__,
            "cpu": "A64FX",
            "source": {
                "kind": "fapp",
                **info,
                "path": Path(m.path).name,
                "cntfrq_hz_used": m.cntfrq_hz,
                "vector_length_bits_used": m.vector_length_bits,
                "event_sets": {name: set_columns(event_set) for name, event_set in m.sets.items()},
            },
            "profile": profile_to_dict(profile),
            "options": {
                "interval": t,
                "timeslice": t,
                "recent_seconds": t,
                "count": None,
                "duration": None,
                "baseline_after": None,
            },
            "topology": {
                "cpus": [],
                "cmgs": {str(cmg): []},
                "is_a64fx": True,
                "model": "A64FX",
                "domain": "cmg",
                "variant": profile.variant,
                "excluded": [],
            },
            "target": {"kind": "fapp", "threads": list(m.threads), "binding": "unknown"},
            "sector_config": {},
            "groups": groups,
            "skipped_groups": [],
            "unavailable": {},
        }
    )
    return Conversion(header=header, slices=tuple(slices), end=Mark(t=t, kind="end"))


def write_recording(m: Measurement, path: str, stream: IO[bytes] | None = None) -> Conversion:
    """Write the recording of ``m`` to ``path`` (``.gz`` compresses), or to ``stream`` (stdout,
    ``path`` then only names it); raises if the write failed.

    A file is replaced whole by the project's output rule
    (:func:`sectormon.files.output.replace_output`), so a failed write (full disk) leaves neither
    a partial recording nor a clobbered older file; a device or a pipe is written in place.
    """
    if stream is not None:
        return _write(m, path, stream, atomic=False)
    with replace_output(path, "-o") as out:
        return _write(m, path, out, atomic=_is_regular_or_new(path))


def _is_regular_or_new(path: str) -> bool:
    return is_regular(path) or not os.path.lexists(path)


def _write(m: Measurement, shown: str, out: IO[bytes], *, atomic: bool) -> Conversion:
    from sectormon.io.recording import RecordingWriter

    conversion = convert(m)
    writer = RecordingWriter(shown, conversion.header, option="-o", stream=out)
    opened = writer.failed is None  # else the file or its header line could not be written
    try:
        if opened:
            for s in conversion.slices:
                writer.write_slice(s)
            writer.write_mark(conversion.end)
    finally:
        writer.close()
    if writer.failed is None:
        return conversion
    failed = writer.failed
    if writer.failed_errno == errno.EPIPE:
        raise BrokenPipeError(errno.EPIPE, failed)  # `-o - | head`: the CLI ends quietly
    if writer.failed_errno in _DISK_FULL:
        fix = f"free space or write it elsewhere; nothing was written to {shown}" if atomic else "free space"
        raise OutputError(f"{failed} ({fix})")
    if not opened:
        raise UsageError(f"{failed} (check -o: its folder must exist and be writable)")
    raise SectormonError(f"{failed} (nothing was written to {shown})" if atomic else failed)
