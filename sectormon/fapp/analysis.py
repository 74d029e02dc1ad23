"""One fapp measurement, analysed: the CPU PA report, the section-3 metrics, and the raw counts.

This is what ``sectormon fapp`` prints and what ``sectormon compare`` reads (through
:func:`run_metrics`), so both always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sectormon.data.run_metrics import REPORT_PREFIX, RunMetrics
from sectormon.fapp.counts import measurement_counts
from sectormon.fapp.measurement import read_measurement
from sectormon.fapp.model import Measurement, cmg_of
from sectormon.fapp.report import Report, Value, compute_report, report_profile
from sectormon.fapp.section3 import Section3, compute_section3

KIND = "fapp"
IMPORT_KIND = "fapp-import"
"""The kind of a compare side read from a recording made by ``sectormon import fapp``."""


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
    return analyze_measurement(read_measurement(path, region))


def analyze_measurement(m: Measurement) -> Analysis:
    profile = report_profile(m)  # the part's energy factors, for the report and section 3 alike
    return Analysis(m, compute_report(m, profile), compute_section3(m, profile))


def counts_by_name(m: Measurement, cmg_id: int = 0) -> dict[str, dict[str, float]]:
    """Counts by event name per scope (``thread:<n>``, ``total``, ``cmg:<id>``).

    :func:`sectormon.fapp.counts.measurement_counts`: an event counted in several sets is their
    mean, CMG-wide events appear once (mean of the thread rows) in ``total`` and ``cmg:<id>``.
    These are the counts a replay of ``sectormon import fapp`` ends with.
    """
    counts = measurement_counts(m)
    out: dict[str, dict[str, float]] = {f"thread:{t}": dict(c) for t, c in counts.threads.items()}
    out["total"] = dict(counts.total)
    out[f"cmg:{cmg_id}"] = dict(counts.total)
    return out


def is_cpupa_report(report: Report) -> bool:
    """Whether the data are Fujitsu's CPU PA report sets: some report metric has a value."""
    return any(v is not None for v in report.cmg_total.values())


def _scope_metrics(
    report: Mapping[str, Value], section3: Mapping[str, float | None], report_first: bool
) -> dict[str, float | None]:
    """One scope's metrics: the profile's by their own names, the report's as ``report:<name>``."""
    of_report = {REPORT_PREFIX + k: (None if v is None else float(v)) for k, v in report.items()}
    of_profile = dict(section3)
    return {**of_report, **of_profile} if report_first else {**of_profile, **of_report}


def run_metrics(path: str | Path, region: str | None = None) -> RunMetrics:
    """A fapp measurement folder as a :class:`RunMetrics` for ``sectormon compare``."""
    return measurement_run_metrics(analyze(path, region), label=Path(path).name or str(path), kind=KIND)


def measurement_run_metrics(a: Analysis, *, label: str, kind: str) -> RunMetrics:
    """An analysed measurement as a :class:`RunMetrics` (a folder's, or an import's rebuilt rows).

    Scopes: ``thread:<n>`` per thread, ``total`` = the CMG total, and ``cmg:<id>`` (same values).
    Metrics: the a64fx profile's (:mod:`~sectormon.fapp.section3`) by their names and the CPU PA
    report's as ``report:<name>`` (``None`` = n/a); the report's first when the data are its
    sets, else the profile's. Coverage is 1.0 for every value present: each event was counted
    for the whole run of its set. Counts: :func:`counts_by_name`.
    """
    m = a.measurement
    cmg_id = cmg_of(m.info)
    report_first = is_cpupa_report(a.report)
    metrics: dict[str, dict[str, float | None]] = {}
    for thread, values in a.report.threads.items():
        metrics[f"thread:{thread}"] = _scope_metrics(values, a.section3.threads.get(thread, {}), report_first)
    total = _scope_metrics(a.report.cmg_total, a.section3.cmg_total, report_first)
    metrics["total"] = total
    metrics[f"cmg:{cmg_id}"] = dict(total)
    counts = counts_by_name(m, cmg_id)
    coverage = {
        scope: {name: 1.0 for name, value in values.items() if value is not None}
        for scope, values in metrics.items()
    }
    info: dict[str, Any] = dict(m.info)
    info.setdefault("split", [REPORT_PREFIX + n for n in a.report.split] + list(a.section3.split))
    if m.warnings:
        info.setdefault("warnings", list(m.warnings))
    return RunMetrics(label=label, kind=kind, metrics=metrics, coverage=coverage, counts=counts, info=info)
