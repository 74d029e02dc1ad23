"""Table cells as plain data: the text and the style roles (low confidence, better, worse, n/a).

Widgets turn roles into theme colours through their component classes; keeping cells as data
keeps the choice of what to show testable without a terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sectormon.data.frames import MetricDelta, ScopeStats
from sectormon.ui.format import (
    CELL_WIDTH,
    CHANGE_MARK,
    LOW_COVERAGE,
    NA,
    format_improvement,
    format_value,
    improvement_sign,
    is_low_confidence,
    metric_value,
)
from sectormon.ui.layout import Column

LOW_MARK = "~"
"""Prefix of a low-confidence value: dimming alone would not survive a monochrome terminal."""

PROXY_MARK = "≈"
"""Prefix of a figure estimated from ``--proxy`` stand-ins (scaled to their CMG)."""

ROLES = ("low", "na", "better", "worse", "label")


@dataclass(frozen=True, slots=True)
class Cell:
    """One table cell: its text, its style roles and whether it is right-aligned."""

    text: str
    roles: tuple[str, ...] = ()
    right: bool = True


def label_cell(text: str) -> Cell:
    return Cell(text, ("label",), right=False)


def metric_cell(stats: ScopeStats | None, name: str, unit: str, threshold: float = LOW_COVERAGE) -> Cell:
    """A metric's current value, dimmed and marked ``~`` when its confidence is low, marked ``≈``
    when it is estimated from ``--proxy`` stand-ins."""
    value = metric_value(stats, name)
    if value is None:
        return Cell(NA, ("na",))
    if stats is not None and is_low_confidence(stats, name, threshold):
        return Cell(LOW_MARK + format_value(value, unit, with_unit=False, width=CELL_WIDTH - 1), ("low",))
    if stats is not None and name in stats.proxy:
        return Cell(PROXY_MARK + format_value(value, unit, with_unit=False, width=CELL_WIDTH - 1))
    return Cell(format_value(value, unit, with_unit=False))


def delta_cell(
    delta: MetricDelta | None,
    unit: str,
    *,
    relative: bool,
    low: bool = False,
    mark_change: bool = True,
    proxied: bool = False,
) -> Cell:
    """A baseline comparison: signed improvement (``+`` = better), coloured better/worse; the
    plain change of a metric with no better direction is marked ``Δ`` unless ``mark_change`` is
    off (a table marks the column's label instead: :func:`column_label`). ``proxied``: the
    metric is estimated from ``--proxy`` stand-ins, marked ``≈`` (``~`` of low confidence first)."""
    width = CELL_WIDTH - 1 if low or proxied else CELL_WIDTH
    text = format_improvement(delta, unit, relative=relative, width=width, mark_change=mark_change)
    if text == NA:
        return Cell(NA, ("na",))
    sign = improvement_sign(delta)
    roles: tuple[str, ...] = ("better",) if sign > 0 else ("worse",) if sign < 0 else ()
    if low:
        return Cell(LOW_MARK + text, (*roles, "low"))
    if proxied:
        return Cell(PROXY_MARK + text, roles)
    return Cell(text, roles)


RELATIVE_METRICS = frozenset({"IPC"})
"""Metrics compared as a relative change (the PMU document's IPC improvement in %)."""


def column_label(column: Column, better: str, deltas: bool) -> str:
    """A table column's label: with baseline deltas shown, a metric with no better direction
    carries ``Δ`` here, once, rather than in each cell, where the mark and ``~`` would leave too
    little room for the number (``~Δ-0.05`` would fill the column and touch the one before)."""
    return CHANGE_MARK + column.label if deltas and better == "none" else column.label


def scope_cells(
    stats: ScopeStats | None,
    columns: Sequence[Column],
    units: Mapping[str, str],
    deltas: Mapping[str, MetricDelta] | None = None,
    threshold: float = LOW_COVERAGE,
) -> list[Cell]:
    """Cells of one row: values, or baseline improvements when ``deltas`` is given (a change
    without a better direction unmarked: the column's label says it, :func:`column_label`)."""
    cells: list[Cell] = []
    for column in columns:
        unit = units.get(column.metric, "")
        if deltas is None:
            cells.append(metric_cell(stats, column.metric, unit, threshold))
        else:
            low = stats is not None and is_low_confidence(stats, column.metric, threshold)
            cells.append(
                delta_cell(
                    deltas.get(column.metric),
                    unit,
                    relative=column.metric in RELATIVE_METRICS,
                    low=low,
                    mark_change=False,
                    proxied=stats is not None and column.metric in stats.proxy,
                )
            )
    return cells
