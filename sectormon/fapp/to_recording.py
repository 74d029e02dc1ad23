"""Turn a fapp measurement into a sectormon recording, so ``replay`` and ``compare`` work on it.

The model: each event set (pa1 .. pa17) was a separate run of the program, which is what the
live monitor's rotation approximates with timeslices. So each set becomes one group of the
profile and one slice of the recording, in set order, each slice lasting the mean thread time of
its set; the engine's rotation scaling then treats the 17 runs like 17 timeslices. In a slice,
each thread is one reading (unit ``thread:<n>``, time enabled = running = its CNTVCT / CNTFRQ)
with the set's per-PE events plus ``CPU_CYCLES`` (the PMCCNTR column); the set's CMG-wide events
are one reading on unit ``cmg:<id>``, as the live sampler opens them once per CMG, with the mean
of the thread rows (every row counted the same whole CMG).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sectormon import __version__
from sectormon.errors import SectormonError
from sectormon.fapp.csvread import EventSet, Measurement
from sectormon.fapp.names import CYCLES_NAME, a64fx_profile, event_def
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile
from sectormon.readings import Mark, Reading, Slice

CPU_CYCLES_CODE = 0x11


@dataclass(frozen=True, slots=True)
class Conversion:
    """A measurement as a recording: the header, the slices and the end mark, ready to write."""

    header: dict[str, Any]
    slices: tuple[Slice, ...]
    end: Mark


def _set_events(event_set: EventSet) -> tuple[list[EventDef], bool]:
    """The set's events (profile names) and whether CPU_CYCLES comes from 0x11 instead of PMCCNTR."""
    events = [event_def(code) for code in event_set.codes]
    return events, CPU_CYCLES_CODE in event_set.codes


def build_profile(m: Measurement) -> Profile:
    """The a64fx profile plus raw events for unknown codes, with one group per event set."""
    base = a64fx_profile()
    if base is None:
        raise SectormonError("the built-in a64fx profile cannot be loaded (reinstall sectormon)")
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
        metrics=_rehint(base.metrics, events, groups),
        constants=base.constants,
        source=f"{base.source or 'builtin:a64fx'} + fapp event sets",
        variant=base.variant,
    )


def _rehint(
    metrics: tuple[MetricDef, ...], events: Mapping[str, EventDef], groups: list[GroupDef]
) -> tuple[MetricDef, ...]:
    """Point each metric's group hint at the first event set that counts all its events ("" if none)."""
    from sectormon.profiles.loader import formula_names

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


def _cmg_id(info: Mapping[str, Any]) -> int:
    cmg = info.get("cmg", 0)
    return cmg if isinstance(cmg, int) and not isinstance(cmg, bool) else 0


def _ns(ticks: int, cntfrq: float) -> int:
    return round(ticks / cntfrq * 1e9)


def _slice(m: Measurement, event_set: EventSet, index: int, start: float, cmg: int) -> Slice:
    defs, has_cycles = _set_events(event_set)
    readings: list[Reading] = []
    cmg_totals: dict[str, int] = {}
    rows = event_set.rows
    for row in rows:
        counts: dict[str, int] = {} if has_cycles else {CYCLES_NAME: row.pmccntr}
        for event in defs:
            assert event.code is not None
            value = row.counts[event.code]
            if event.scope == "cmg":
                cmg_totals[event.name] = cmg_totals.get(event.name, 0) + value
            else:
                counts[event.name] = value
        ns = _ns(row.cntvct, m.cntfrq_hz)
        readings.append(Reading(f"thread:{row.thread}", None, cmg, event_set.name, ns, ns, counts))
    mean_ticks = sum(r.cntvct for r in rows) / len(rows) if rows else 0.0
    duration = mean_ticks / m.cntfrq_hz
    if rows:
        # Every slice has the CMG reading (empty when the set has no CMG-wide event), so the CMG
        # unit is present for the whole measurement, not only from the first set that counts one.
        mean_ns = round(duration * 1e9)
        counts = {name: round(total / len(rows)) for name, total in cmg_totals.items()}
        readings.append(Reading(f"cmg:{cmg}", None, cmg, event_set.name, mean_ns, mean_ns, counts))
    return Slice(
        t=start + duration, index=index, duration=duration, group=event_set.name, readings=tuple(readings)
    )


def convert(m: Measurement) -> Conversion:
    """The recording of a measurement (see the module docstring for the model)."""
    from sectormon.profiles.loader import profile_to_dict

    profile = build_profile(m)
    cmg = _cmg_id(m.info)
    slices: list[Slice] = []
    t = 0.0
    for index, event_set in enumerate(m.sets.values()):
        s = _slice(m, event_set, index, t, cmg)
        slices.append(s)
        t = s.t
    mean_slice = t / len(slices) if slices else 1.0
    interval = mean_slice if mean_slice > 0 else 1.0
    groups = {
        g.name: {
            "pe": [e for e in g.events if profile.events[e].scope == "pe"],
            "cmg": [e for e in g.events if profile.events[e].scope == "cmg"],
        }
        for g in profile.groups
    }
    info = {k: v for k, v in m.info.items() if k != "kind"}
    header: dict[str, Any] = {
        "schema": "sectormon/recording/1",
        "sectormon": __version__,
        "cpu": "A64FX",
        "source": {
            "kind": "fapp",
            **info,
            "path": Path(m.path).name,
            "cntfrq_hz_used": m.cntfrq_hz,
            "event_sets": list(m.sets),
        },
        "profile": profile_to_dict(profile),
        "options": {
            "interval": interval,
            "timeslice": mean_slice,
            "recent_seconds": t if t > 0 else 10.0,
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
            "variant": "",
            "excluded": [],
        },
        "target": {"kind": "fapp", "threads": list(m.threads), "binding": "unknown"},
        "sector_config": {},
        "groups": groups,
        "skipped_groups": [],
        "unavailable": {},
    }
    return Conversion(header=header, slices=tuple(slices), end=Mark(t=t, kind="end"))


def write_recording(m: Measurement, path: str | Path) -> Conversion:
    """Write the recording of ``m`` to ``path`` (``.gz`` compresses); raises if the write failed."""
    from sectormon.io.recording import RecordingWriter

    conversion = convert(m)
    writer = RecordingWriter(path, conversion.header)
    try:
        for s in conversion.slices:
            writer.write_slice(s)
        writer.write_mark(conversion.end)
    finally:
        writer.close()
    if writer.failed is not None:
        raise SectormonError(writer.failed)
    return conversion
