"""The Regions view's rows: one per marked region of the whole run so far, and a region's breakdown
per thread, CMG, core, MPI rank and process; with a baseline, each region's change since then.

Columns: the region (or scope) label, calls, threads, open, time inside, the counts of the events
the layout names for regions (:data:`sectormon.ui.layout.LAYOUTS` ``region_counts``) and the core
table's metrics, written by the same cell functions as the other tables (n/a for a missing value).
A region's count is exact when its groups counted throughout it; a count scaled from part of the
region (coverage below 100 %) or a metric from different groups (split) is marked ``~`` and
dimmed, as the other tables mark low confidence.

**Baseline.** With a baseline (:mod:`sectormon.ui.region_baseline` says which regions it is and
why the UI keeps them), calls, time and counts show their plain change since then (the column
labels carry ``Δ``: counts are what the region counted since), the metrics their improvement
against the region's value then (``+`` = better, :mod:`sectormon.metrics.baseline`'s convention
for every table); a region or scope that did not exist then counts from 0, its metrics are n/a.
Pure functions and data, no Textual.
"""

from __future__ import annotations

from collections.abc import Mapping

from sectormon.data.frames import MetricDelta, RegionStats, ScopeStats, scope_order
from sectormon.data.regions import region_label
from sectormon.metrics.baseline import scope_deltas
from sectormon.ui.cells import LOW_MARK, Cell, column_label, label_cell, scope_cells
from sectormon.ui.context import RenderContext
from sectormon.ui.format import CELL_WIDTH, CHANGE_MARK, NA, coverage_of, format_number, format_si
from sectormon.ui.region_baseline import RegionBase

FULL_COVERAGE = 1.0 - 1e-9
"""Coverage under which a region's value is marked scaled (``~``): anything short of the whole
region, less float rounding of running/enabled times."""

COUNT_WIDTH = 12
"""A count column: exact in 10 characters (``24,000`` page faults read as such, up to
``99,999,999``), with SI prefixes above; the other two hold a sign or ``~`` and the gap."""

LABEL_KEY = "label"
COUNT_PREFIX = "count:"
REGION_FIXED = (("calls", "calls", 8), ("threads", "thr", 4), ("open", "open", 5), ("seconds", "time", 9))
"""The region table's columns before the counts: key, label, width."""
SCOPE_FIXED = (("seconds", "time", 9),)
"""A breakdown's: calls, threads and open belong to the region, not to one of its threads."""
CHANGED = frozenset({"calls", "seconds"})
"""Fixed columns that show their plain change against a baseline (their label carries Δ)."""

BREAKDOWNS = (
    ("threads", "Threads", "tid"),
    ("cmgs", "CMGs", "CMG"),
    ("cores", "Cores (CPU of the thread's last stop)", "CPU"),
    ("ranks", "MPI ranks", "rank"),
    ("procs", "Processes", "pid"),
)
"""A region's breakdowns in the drill-down: its field, the section title and the row label word."""


def ordered_labels(order: list[str], regions: Mapping[str, RegionStats]) -> list[str]:
    """The regions' labels in first-marked order: ``order`` (kept by the caller across frames)
    extended with the new ones, so a row never moves when a region marks again."""
    known = set(order)
    order.extend(label for label in regions if label not in known)
    return [label for label in order if label in regions]


def count_events(ctx: RenderContext) -> tuple[str, ...]:
    """The events whose counts the view shows: the layout's, less those this session cannot count."""
    unavailable = ctx.header.unavailable
    return tuple(e for e in ctx.panels.region_counts if e not in unavailable)


def columns(
    ctx: RenderContext, *, first: str, deltas: bool, fixed: tuple[tuple[str, str, int], ...] = REGION_FIXED
) -> tuple[list[tuple[str, str]], dict[str, int | None]]:
    """(key, label) pairs and widths: the row label, ``fixed``, the counts, then the core
    table's metrics. With deltas the columns of a plain change carry ``Δ`` in their label."""
    out: list[tuple[str, str]] = [(LABEL_KEY, first)]
    widths: dict[str, int | None] = {}
    for key, label, width in fixed:
        out.append((key, CHANGE_MARK + label if deltas and key in CHANGED else label))
        widths[key] = width
    for event in count_events(ctx):
        key = COUNT_PREFIX + event
        out.append((key, CHANGE_MARK + event if deltas else event))
        widths[key] = max(COUNT_WIDTH, len(event) + 2)
    for column in ctx.panels.core:
        label = column_label(column, ctx.profile.info(column.metric).better, deltas)
        out.append((column.metric, label))
        widths[column.metric] = max(CELL_WIDTH + 1, len(label) + 1)
    return out, widths


def _count_text(value: float) -> str:
    exact = f"{value:,.0f}"
    return exact if len(exact) <= COUNT_WIDTH - 2 else format_number(value)


def _signed(text_of_magnitude: str, change: float) -> str:
    return ("+" if change > 0 else "-" if change < 0 else "±") + text_of_magnitude


def count_cell(stats: ScopeStats, event: str, base: ScopeStats | None, *, deltas: bool) -> Cell:
    """An event's count in a region scope (scaled counts marked ``~``); with deltas, what it
    counted since the baseline: from 0 when the scope did not exist then (``base`` None)."""
    value = stats.counts.get(event)
    if value is None:
        return Cell(NA, ("na",))
    coverage = coverage_of(stats, event)
    low = coverage is not None and coverage < FULL_COVERAGE
    if deltas:
        before = base.counts.get(event) if base is not None else 0.0
        if before is None:  # the scope was there but this event unknown: no change to tell
            return Cell(NA, ("na",))
        change = value - before
        text = _signed(_count_text(abs(change)), change)
    else:
        text = _count_text(value)
    return Cell(LOW_MARK + text, ("low",)) if low else Cell(text)


def _seconds_cell(seconds: float, before: float | None, *, deltas: bool) -> Cell:
    """Time inside; with deltas, its change since then (``before``: 0 for a scope that was not
    there, ``None`` when its time then is unknown). A scope that entered the region spent time in
    it, so 0 s is a time the frame does not carry: n/a, never a measured 0."""
    if seconds <= 0 or (deltas and before is None):
        return Cell(NA, ("na",))
    if not deltas:
        return Cell(format_si(seconds, "s"))
    assert before is not None
    change = seconds - before
    return Cell(_signed(format_si(abs(change), "s") if change else "0s", change))


def scope_cells_of(
    stats: ScopeStats, base: ScopeStats | None, ctx: RenderContext, *, deltas: bool
) -> list[Cell]:
    """A scope's counts then metrics; with deltas, its counts since the baseline and its metrics'
    improvement against their values then (n/a where the scope had none)."""
    cells = [count_cell(stats, event, base, deltas=deltas) for event in count_events(ctx)]
    metric_deltas: Mapping[str, MetricDelta] | None = None
    if deltas:
        better = {name: info.better for name, info in ctx.profile.metrics.items()}
        metric_deltas = scope_deltas(base.metrics, stats.metrics, better) if base is not None else {}
    cells += scope_cells(stats, ctx.panels.core, ctx.units, metric_deltas, FULL_COVERAGE)
    return cells


def region_row(
    region: RegionStats, base: RegionStats | None, ctx: RenderContext, *, deltas: bool
) -> list[Cell]:
    """One region: its label, calls, threads, open, time, counts and metrics."""
    if deltas:
        calls = region.calls - (base.calls if base is not None else 0)
        calls_cell = Cell(_signed(f"{abs(calls):,}", calls))
        time_cell = _seconds_cell(region.seconds, base.seconds if base is not None else 0.0, deltas=True)
    else:
        calls_cell = Cell(f"{region.calls:,}")
        time_cell = _seconds_cell(region.seconds, None, deltas=False)
    return [
        label_cell(region_label(region.name, region.number)),
        calls_cell,
        Cell(str(region.thread_count)),
        Cell("open" if region.open else "", right=False),
        time_cell,
        *scope_cells_of(region.total, base.total if base is not None else None, ctx, deltas=deltas),
    ]


def region_rows(
    labels: list[str], regions: Mapping[str, RegionStats], ctx: RenderContext, base: RegionBase | None
) -> list[tuple[str, list[Cell]]]:
    """The rows of ``labels`` (in that order); against ``base`` when given."""
    deltas = base is not None
    old = base.regions if base is not None else {}
    return [(label, region_row(regions[label], old.get(label), ctx, deltas=deltas)) for label in labels]


def breakdown_rows(
    region: RegionStats, base: RegionStats | None, field: str, word: str, ctx: RenderContext, *, deltas: bool
) -> list[tuple[str, list[Cell]]]:
    """One breakdown of a region (``threads``, ``cmgs``, ``cores``, ``ranks``, ``procs``), its
    keys in numeric order: ``tid 8573``, ``CMG 0``..."""
    scopes: Mapping[str, ScopeStats] = getattr(region, field)
    old: Mapping[str, ScopeStats] = getattr(base, field) if base is not None else {}
    rows: list[tuple[str, list[Cell]]] = []
    for key in sorted(scopes, key=scope_order):
        stats, before = scopes[key], old.get(key)
        then = 0.0 if before is None else (before.seconds if before.seconds > 0 else None)
        time_cell = _seconds_cell(stats.seconds, then, deltas=deltas)
        cells = [label_cell(f"{word} {key}"), time_cell, *scope_cells_of(stats, before, ctx, deltas=deltas)]
        rows.append((key, cells))
    return rows
