"""The a64fx profile's metrics over fapp cpupa event sets: the PMU document's section 3 and more.

The formulas, energy factors and metric list are the profile's, evaluated by the same code as the
live engine; this module only decides which counts go in. Each event set is a separate run, so a
metric takes all its inputs from the first set that counts them all (a ratio is never skewed by
run-to-run variation), and is flagged ``split`` when no set does. Per thread, CMG-wide events are
left out (no thread owns them); the CMG total takes their mean over the rows.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sectormon.fapp.counts import cmg_counts, has_event, row_counts
from sectormon.fapp.model import Measurement
from sectormon.fapp.names import CYCLES_NAME
from sectormon.fapp.report import report_profile
from sectormon.metrics.formulas import LEVELS_OF_SCOPE, evaluate_metrics
from sectormon.profiles.expr import formula_names
from sectormon.profiles.model import Profile

Choice = Mapping[str, str]  # event name -> the set it is read from


@dataclass(frozen=True, slots=True)
class Section3:
    """The profile's metrics per thread and for the CMG, and the set each input was taken from."""

    threads: Mapping[str, Mapping[str, float | None]]
    cmg_total: Mapping[str, float | None]
    sources: Mapping[str, Mapping[str, str]]  # metric -> {event name: set name}
    split: tuple[str, ...]
    names: tuple[str, ...]  # the profile's metrics, in profile order
    units: Mapping[str, str]
    variant: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "threads": {k: dict(v) for k, v in self.threads.items()},
            "cmg_total": dict(self.cmg_total),
            "sources": {k: dict(v) for k, v in self.sources.items()},
            "split": list(self.split),
            "variant": self.variant,
        }


def metric_inputs(profile: Profile) -> dict[str, tuple[str, ...]]:
    """Each metric's input events in formula order, through referenced metrics."""
    out: dict[str, tuple[str, ...]] = {}
    for metric in profile.metrics:  # a metric only references metrics defined before it
        names: list[str] = []
        for name in formula_names(metric.formula):
            if name in profile.events:
                names.append(name)
            else:
                names += out.get(name, ())
        out[metric.name] = tuple(dict.fromkeys(names))
    return out


def choose_sets(m: Measurement, events: Sequence[str]) -> dict[str, str] | None:
    """Which set each event is read from (one set for all if possible); ``None`` if one is absent."""
    for set_name, event_set in m.sets.items():
        if all(has_event(event_set, name) for name in events):
            return dict.fromkeys(events, set_name)
    chosen: dict[str, str] = {}
    for name in events:
        if name == CYCLES_NAME:
            continue
        home = next((s for s, event_set in m.sets.items() if has_event(event_set, name)), None)
        if home is None:
            return None
        chosen[name] = home
    if CYCLES_NAME in events:
        # Cycles from the set of the metric's first event: the closest thing to "the same run".
        chosen[CYCLES_NAME] = next(iter(chosen.values()))
    return {name: chosen[name] for name in events}


def thread_counts(m: Measurement, choice: Choice, thread: int) -> dict[str, float]:
    """One thread's input counts for ``choice`` (CMG-wide events left out)."""
    counts: dict[str, float] = {}
    rows: dict[str, dict[str, int]] = {}  # the thread's counts per set, each set's worked out once
    for name, set_name in choice.items():
        by_name = rows.get(set_name)
        if by_name is None:
            event_set = m.sets[set_name]
            row = event_set.row(thread)
            by_name = rows[set_name] = {} if row is None else row_counts(event_set, row)
        value = by_name.get(name)
        if value is not None:
            counts[name] = float(value)
    return counts


def cmg_total_counts(m: Measurement, choice: Choice) -> dict[str, float]:
    """The CMG total's input counts: per-PE events summed over every thread, CMG-wide ones as one count."""
    counts: dict[str, float] = {}
    for name, set_name in choice.items():
        event_set = m.sets[set_name]
        cmg = cmg_counts(event_set)
        if name in cmg:
            counts[name] = float(cmg[name])
            continue
        values = [row_counts(event_set, row).get(name) for row in map(event_set.row, m.threads) if row]
        if len(values) == len(m.threads) and all(v is not None for v in values):
            counts[name] = float(sum(v for v in values if v is not None))
    return counts


def thread_seconds(m: Measurement, thread: int) -> float:
    """SECONDS for a thread: its pa1 time, NaN without one (so time-based metrics are n/a)."""
    seconds = m.seconds(thread)
    return math.nan if seconds is None else seconds


def cmg_seconds(m: Measurement) -> float:
    """SECONDS for the CMG total: the mean pa1 time of the threads with a time (NaN if none)."""
    seconds = m.mean_seconds()
    return math.nan if seconds is None else seconds


def compute_section3(m: Measurement, profile: Profile | None = None) -> Section3:
    """Every profile metric per thread and for the CMG total (``None`` where inputs are missing)."""
    profile = profile if profile is not None else report_profile(m)
    inputs = metric_inputs(profile)
    choices = {metric.name: choose_sets(m, inputs[metric.name]) for metric in profile.metrics}
    at_thread = {metric.name for metric in profile.metrics if "thread" in LEVELS_OF_SCOPE[metric.scope]}
    at_cmg = {metric.name for metric in profile.metrics if "cmg" in LEVELS_OF_SCOPE[metric.scope]}
    names = tuple(metric.name for metric in profile.metrics)
    cache: dict[tuple[object, ...], dict[str, float | None]] = {}

    def value(name: str, scope: int | None) -> float | None:
        choice = choices[name]
        if choice is None:
            return None
        key = (scope, tuple(choice.items()))
        values = cache.get(key)
        if values is None:
            if scope is None:
                values = evaluate_metrics(profile, cmg_total_counts(m, choice), cmg_seconds(m))
            else:
                values = evaluate_metrics(profile, thread_counts(m, choice, scope), thread_seconds(m, scope))
            cache[key] = values
        result = values[name]
        # A result too large for a float (absurd counts or times) is not a number to show: n/a.
        return result if result is None or math.isfinite(result) else None

    threads = {
        str(t): {name: value(name, t) if name in at_thread else None for name in names} for t in m.threads
    }
    cmg_total = {name: value(name, None) if name in at_cmg else None for name in names}
    sources = {name: dict(choice) for name, choice in choices.items() if choice is not None}
    split = tuple(name for name, choice in sources.items() if len(set(choice.values())) > 1)
    return Section3(
        threads=threads,
        cmg_total=cmg_total,
        sources=sources,
        split=split,
        names=names,
        units={metric.name: metric.unit for metric in profile.metrics},
        variant=profile.variant,
    )
