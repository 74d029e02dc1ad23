"""A fapp measurement's counts by profile event name: one definition for section 3, import and compare.

A thread row's counts are its columns by profile event name (``CPU_CYCLES`` from 0x11 when the set
counted it, else PMCCNTR). A CMG-wide event was counted whole by every thread's row, so its value is
the mean of the rows (summing would count the CMG 12 times), rounded so a recording and the analysis
hold the same integer. Across event sets, an event counted in several is their mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from sectormon.fapp.model import CPU_CYCLES_CODE, EventSet, Measurement, ThreadRow
from sectormon.fapp.names import CYCLES_NAME, event_name, is_cmg_scoped


def counts_cycles(event_set: EventSet) -> bool:
    """Whether the set counted CPU_CYCLES (0x11) itself; else its PMCCNTR stands for it."""
    return CPU_CYCLES_CODE in event_set.codes


def has_event(event_set: EventSet, name: str) -> bool:
    """Whether the set has a count of ``name`` (``CPU_CYCLES``: through PMCCNTR unless the export
    has none)."""
    if name == CYCLES_NAME:
        return event_set.has_cycles
    return any(event_name(code) == name for code in event_set.codes)


def row_counts(event_set: EventSet, row: ThreadRow) -> dict[str, int]:
    """One thread row's per-PE counts by name, ``CPU_CYCLES`` included (when it has cycles)."""
    counts: dict[str, int] = {}
    if not counts_cycles(event_set) and row.pmccntr is not None:
        counts[CYCLES_NAME] = row.pmccntr
    for code, name in _pe_names(event_set.codes):
        counts[name] = row.counts[code]
    return counts


@lru_cache(maxsize=64)
def _pe_names(codes: tuple[int, ...]) -> tuple[tuple[int, str], ...]:
    """A set's per-PE codes with their names, worked out once per set rather than once per row:
    a report of many threads asks for every row's counts several times."""
    return tuple((code, event_name(code)) for code in codes if not is_cmg_scoped(code))


def row_columns(event_set: EventSet, row: ThreadRow) -> dict[str, int]:
    """One thread row whole by name: :func:`row_counts` plus its CMG-wide columns (that thread's
    reading of the whole CMG), so the row can be rebuilt from a recording exactly."""
    counts = row_counts(event_set, row)
    for code in event_set.codes:
        if is_cmg_scoped(code):
            counts[event_name(code)] = row.counts[code]
    return counts


def cmg_counts(event_set: EventSet) -> dict[str, int]:
    """The set's CMG-wide counts by name: the mean of the thread rows, rounded (module docstring)."""
    rows = event_set.rows
    if not rows:
        return {}
    return {
        event_name(code): round(sum(r.counts[code] for r in rows) / len(rows))
        for code in event_set.codes
        if is_cmg_scoped(code)
    }


@dataclass(frozen=True, slots=True)
class Counts:
    """Counts per thread, of the CMG-wide events, and the total (per-PE summed + CMG-wide)."""

    threads: Mapping[int, Mapping[str, float]]
    cmg: Mapping[str, float]
    total: Mapping[str, float]


def _mean_of(samples: Mapping[str, list[int]]) -> dict[str, float]:
    return {name: sum(values) / len(values) for name, values in samples.items()}


def measurement_counts(m: Measurement) -> Counts:
    """Each event's mean over the sets that counted it, per thread and for the CMG (module docstring)."""
    per_thread: dict[int, dict[str, list[int]]] = {t: {} for t in m.threads}
    cmg: dict[str, list[int]] = {}
    for event_set in m.sets.values():
        for row in event_set.rows:
            samples = per_thread.setdefault(row.thread, {})
            for name, value in row_counts(event_set, row).items():
                samples.setdefault(name, []).append(value)
        for name, value in cmg_counts(event_set).items():
            cmg.setdefault(name, []).append(value)
    threads = {t: _mean_of(samples) for t, samples in per_thread.items()}
    cmg_means = _mean_of(cmg)
    total: dict[str, float] = {}
    for counts in threads.values():
        for name, mean in counts.items():
            total[name] = total.get(name, 0.0) + mean
    total.update(cmg_means)
    return Counts(threads=threads, cmg=cmg_means, total=total)
