"""One fapp measurement, analysed: the CPU PA report, the section-3 metrics, and the raw counts.

This is what ``sectormon fapp`` prints and what ``sectormon compare`` reads (through
:func:`run_metrics`), so both always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sectormon.fapp.csvread import Measurement, read_measurement
from sectormon.fapp.names import CYCLES_NAME, event_name, is_cmg_scoped
from sectormon.fapp.report import Report, Value, compute_report
from sectormon.fapp.section3 import Section3, compute_section3
from sectormon.runmetrics import RunMetrics

KIND = "fapp"
SECTION3_IPC_NAME = "IPC (INST_RETIRED)"
"""Section 3's IPC (INST_RETIRED / CPU_CYCLES) when 0x8 was counted; ``IPC`` is the report's (0x121)."""


@dataclass(frozen=True, slots=True)
class Analysis:
    measurement: Measurement
    report: Report
    section3: Section3

    @property
    def split(self) -> tuple[str, ...]:
        """Metrics (report and section 3) whose inputs come from more than one run."""
        return tuple(self.report.split) + tuple(self.section3.split)

    def to_json(self) -> dict[str, Any]:
        """``threads``/``cmg_total`` exactly like the report's expected files, then extras."""
        data: dict[str, Any] = self.report.to_json()
        data["section3"] = self.section3.to_json()
        data["split"] = list(self.split)
        data["sources"] = {name: list(sets) for name, sets in self.report.sources.items()}
        data["info"] = {
            **dict(self.measurement.info),
            "cntfrq_hz_used": self.measurement.cntfrq_hz,
            "vector_length_bits_used": self.measurement.vector_length_bits,
            "event_sets": list(self.measurement.sets),
        }
        if self.measurement.warnings:
            data["warnings"] = list(self.measurement.warnings)
        return data


def analyze(path: str | Path, region: str | None = None) -> Analysis:
    m = read_measurement(path, region)
    return Analysis(m, compute_report(m), compute_section3(m))


def event_homes(m: Measurement) -> dict[int, str]:
    """The set each event code is read from when a single count is needed: the first set that has it."""
    homes: dict[int, str] = {}
    for set_name, event_set in m.sets.items():
        for code in event_set.codes:
            homes.setdefault(code, set_name)
    return homes


def counts_by_name(m: Measurement) -> dict[str, dict[str, float]]:
    """Raw counts by event name per scope (``thread:<n>``, ``total``): each event from its home set.

    ``CPU_CYCLES`` is pa1's (first set's) PMCCNTR. In ``total``, per-PE events are summed over the
    threads and CMG-wide events averaged (each thread's row counts the same whole CMG).
    """
    homes = event_homes(m)
    first = next(iter(m.sets), None)
    per_thread: dict[str, dict[str, float]] = {}
    for thread in m.threads:
        counts: dict[str, float] = {}
        if first is not None:
            cycles = m.value(first, "PMCCNTR", thread)
            if cycles is not None:
                counts[CYCLES_NAME] = float(cycles)
        for code, set_name in homes.items():
            value = m.value(set_name, code, thread)
            if value is not None:
                counts[event_name(code)] = float(value)
        per_thread[f"thread:{thread}"] = counts
    total: dict[str, float] = {}
    names = {event_name(code): code for code in homes}
    for name in dict.fromkeys([CYCLES_NAME, *names]):
        values = [c[name] for c in per_thread.values() if name in c]
        if not values or len(values) != len(per_thread):
            continue
        name_code = names.get(name)
        scoped = name_code is not None and is_cmg_scoped(name_code)
        total[name] = sum(values) / len(values) if scoped else float(sum(values))
    return {**per_thread, "total": total}


def _merge(report: Mapping[str, Value], section3: Mapping[str, float | None]) -> dict[str, float | None]:
    merged: dict[str, float | None] = {k: (None if v is None else float(v)) for k, v in report.items()}
    for name, value in section3.items():
        if name in merged:
            if value is None:
                continue
            name = SECTION3_IPC_NAME if name == "IPC" else f"{name} (section 3)"
        merged[name] = value
    return merged


def run_metrics(path: str | Path, region: str | None = None) -> RunMetrics:
    """A fapp measurement folder as a :class:`RunMetrics` for ``sectormon compare``.

    Scopes: ``thread:<n>`` per thread, ``total`` = the CMG total, and ``cmg:<id>`` (same values).
    Metrics: the CPU PA report's plus section 3's (``None`` = n/a). Coverage is 1.0 for every
    value present: each event was counted for the whole run of its set.
    """
    a = analyze(path, region)
    m = a.measurement
    cmg = m.info.get("cmg", 0)
    cmg_id = cmg if isinstance(cmg, int) and not isinstance(cmg, bool) else 0
    metrics: dict[str, dict[str, float | None]] = {}
    for thread, values in a.report.threads.items():
        metrics[f"thread:{thread}"] = _merge(values, a.section3.threads.get(thread, {}))
    total = _merge(a.report.cmg_total, a.section3.cmg_total)
    metrics["total"] = total
    metrics[f"cmg:{cmg_id}"] = dict(total)
    counts = counts_by_name(m)
    counts[f"cmg:{cmg_id}"] = dict(counts["total"])
    coverage = {
        scope: {name: 1.0 for name, value in values.items() if value is not None}
        for scope, values in metrics.items()
    }
    info: dict[str, Any] = dict(m.info)
    info.setdefault("split", list(a.split))
    if m.warnings:
        info.setdefault("warnings", list(m.warnings))
    return RunMetrics(
        label=Path(path).name or str(path),
        kind=KIND,
        metrics=metrics,
        coverage=coverage,
        counts=counts,
        info=info,
    )
