"""What the fapp tables show that a reader could take for a mistake, explained where it is shown.

Fujitsu's CPU PA report is kept bit-exact, so a figure that looks wrong is not changed but said:
a negative rate (a difference of counts from two runs, which the workbook clamps only above), a
CMG-wide count far above the threads' own (it counts the whole CMG), the CMG-only rows that are
n/a per thread, and a profile metric that is n/a in every column (which events are missing, or
that the export has no time). ``sectormon fapp`` prints each note under its table with a mark on
the row; ``--json`` gives them by metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sectormon.fapp.analysis import Analysis, is_cpupa_report
from sectormon.fapp.counts import has_event
from sectormon.fapp.names import CYCLES_NAME, measurement_profile
from sectormon.fapp.report import CMG_METRICS, THREAD_METRICS, Value
from sectormon.fapp.section3 import metric_inputs
from sectormon.profiles.expr import formula_names
from sectormon.profiles.model import Profile

IPC = "IPC"
CMG_MISSES = "L2_miss_count_corrected"
THREAD_REFILLS = "L2_refill_corrected"

_WHY_NEGATIVE = {
    "L1D miss software prefetch rate": (
        "(pa4.0x0049 prefetch refills - pa9.0x0202 hardware-prefetch refills) / pa4.0x0003: the two "
        "refill counts come from different runs, so where software prefetch refilled (almost) no "
        "lines their difference is run-to-run noise and can fall below 0; Fujitsu's workbook clamps "
        "this rate at 1 only, and the table keeps its values (read them as about 0)"
    ),
}
_GENERIC_NEGATIVE = (
    "a difference of counts{runs} that the formula does not clamp at 0: the subtracted count "
    "exceeded the other by run-to-run variation or by the errata correction; read it as about 0"
)


@dataclass
class TableNotes:
    """One table's notes: the mark of each noted row, the note lines, and rows left out."""

    marks: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    by_metric: dict[str, str] = field(default_factory=dict)
    count: int = 0

    def add(self, metrics: Sequence[str], text: str) -> None:
        """A note on rows of the table: a mark after each row's name, the note under the table."""
        self.count += 1
        mark = f"[{self.count}]"
        for name in metrics:
            self.marks[name] = (self.marks[name] + mark) if name in self.marks else mark
        self.lines.append(f"{mark} {text}")
        self._record(metrics, text)

    def leave_out(self, metrics: Sequence[str], text: str) -> None:
        """Rows n/a in every column: left out of the table, with one line saying why."""
        self.hidden += metrics
        self.lines.append(f"n/a in every column, not shown: {', '.join(metrics)}: {text}")
        self._record(metrics, f"n/a in every column: {text}")

    def _record(self, metrics: Sequence[str], text: str) -> None:
        for name in metrics:
            self.by_metric[name] = (self.by_metric[name] + " " + text) if name in self.by_metric else text


def _cells(threads: Mapping[str, Mapping[str, Value]], total: Mapping[str, Value], name: str) -> list[Value]:
    return [values.get(name) for values in threads.values()] + [total.get(name)]


def _negatives(cells: list[Value], threads: Sequence[str]) -> str:
    where = [f"thread {t}" for t, v in zip(threads, cells, strict=False) if v is not None and v < 0]
    if cells[-1] is not None and cells[-1] < 0:
        where.append("the CMG total")
    lowest = min(v for v in cells if v is not None)
    shown = ", ".join(where[:4]) + (f" and {len(where) - 4} more" if len(where) > 4 else "")
    return f"below 0 on {shown} (lowest {lowest:.4g})"


def report_notes(a: Analysis) -> TableNotes:
    """Notes for the CPU PA table: CMG-only rows, negative values."""
    notes = TableNotes()
    report = a.report
    if not is_cpupa_report(report):
        return notes  # not the report's sets: its table is not shown
    cmg_only = [name for name in CMG_METRICS if name not in THREAD_METRICS]
    if report.threads:
        notes.add(
            cmg_only,
            "for the CMG only (n/a per thread): L2 and memory are shared by the CMG's cores, so "
            "their busy rates, throughput peak and power have no per-thread value (the report leaves "
            "those cells blank)",
        )
    threads = list(report.threads)
    for name in CMG_METRICS:
        cells = _cells(report.threads, report.cmg_total, name)
        if not any(v is not None and v < 0 for v in cells):
            continue
        sets = report.sources.get(name, ())
        runs = f" from different runs ({', '.join(sets)})" if len(sets) > 1 else ""
        why = _WHY_NEGATIVE.get(name, _GENERIC_NEGATIVE.format(runs=runs))
        notes.add([name], f"{name} is {_negatives(cells, threads)}: {why}.")
    return notes


def _missing_events(a: Analysis, inputs: Sequence[str]) -> list[str]:
    """The input events no set counted, as ``NAME (0xCODE)``."""
    from sectormon.fapp.names import event_name

    m = a.measurement
    profile_events = measurement_profile(a.section3.variant).events
    out: list[str] = []
    for name in inputs:
        if any(has_event(event_set, name) for event_set in m.sets.values()):
            continue
        if name == CYCLES_NAME:
            out.append(f"{name} (PMCCNTR or 0x0011)")
            continue
        code = profile_events[name].code if name in profile_events else None
        out.append(f"{name} (0x{code:04x})" if code is not None and event_name(code) == name else name)
    return out


def _uses_seconds(profile: Profile) -> set[str]:
    """The metrics whose formula divides by the window (``SECONDS``), directly or through another."""
    out: set[str] = set()
    for metric in profile.metrics:  # a metric only references metrics defined before it
        names = formula_names(metric.formula)
        if "SECONDS" in names or out.intersection(names):
            out.add(metric.name)
    return out


def section3_notes(a: Analysis) -> TableNotes:
    """Notes for the a64fx-profile table: rows n/a everywhere (left out, with why), the CMG-wide
    L2 miss count, negative values."""
    notes = TableNotes()
    s3 = a.section3
    m = a.measurement
    profile = measurement_profile(s3.variant)
    inputs = metric_inputs(profile)
    timed_metrics = _uses_seconds(profile)
    timed = bool(m.timed_threads)
    no_cntvct = [event_set.path for event_set in m.sets.values() if not event_set.has_time]
    by_reason: dict[str, list[str]] = {}
    for name in s3.names:
        cells = _cells(s3.threads, s3.cmg_total, name)
        if any(v is not None for v in cells):
            continue
        missing = _missing_events(a, inputs.get(name, ()))
        if missing:
            reason = f"{', '.join(missing)} not counted in these sets"
        elif not timed and name in timed_metrics:
            reason = (
                f"no time: {', '.join(no_cntvct)} {'has' if len(no_cntvct) == 1 else 'have'} no CNTVCT"
                if no_cntvct
                else "no thread has a time (CNTVCT or cycles 0)"
            )
        else:
            reason = "a zero denominator everywhere"
        by_reason.setdefault(reason, []).append(name)
    misses, refills = s3.cmg_total.get(CMG_MISSES), s3.cmg_total.get(THREAD_REFILLS)
    if misses is not None:
        sets = sorted(set(s3.sources.get(CMG_MISSES, {}).values()))
        text = (
            f"{CMG_MISSES} counts the whole CMG (0x0309 L2_MISS_COUNT - 0x0396 - 0x0370, from "
            f"{', '.join(sets)}): every L2 miss of the CMG during that run, by all its cores and the "
            "system, so it has no per-thread value"
        )
        if refills is not None:
            own = sorted(set(s3.sources.get(THREAD_REFILLS, {}).values()))
            text += (
                f"; {THREAD_REFILLS} sums this process's threads' own L2 refills (0x0017 - 0x0325 - "
                f"0x0326, from {', '.join(own)}). {misses:,.0f} against {refills:,.0f} is not a "
                "contradiction: the difference is the rest of the CMG's traffic in that run"
            )
        notes.add([CMG_MISSES], text + ".")
    threads = list(s3.threads)
    for name in s3.names:
        cells = _cells(s3.threads, s3.cmg_total, name)
        if any(v is not None and v < 0 for v in cells):
            sets = sorted(set(s3.sources.get(name, {}).values()))
            runs = f" from different runs ({', '.join(sets)})" if len(sets) > 1 else ""
            why = _GENERIC_NEGATIVE.format(runs=runs)
            notes.add([name], f"{name} is {_negatives(cells, threads)}: {why}.")
    for reason, names in by_reason.items():
        if IPC in names and a.report.cmg_total.get(IPC) is not None:
            reason += (
                "; the CPU PA report's IPC above is another count, EFFECTIVE_INST_SPEC (0x0121) / "
                "PMCCNTR (compare keys it report:IPC)"
            )
        notes.leave_out(names, reason + ".")
    return notes
