"""Per-core table: one row per core plus ``unbound``, sortable, filterable, in two halves when wide.

At 160 columns, when the rows do not fit one table's height, they are split over two tables side
by side, so 48 cores and the unbound row show without scrolling at 160x50; narrower, one table
scrolls. Sorting (``s``, or a click on a
column header) orders all rows before the split, so the halves read as one list.

Grouped by process (``g``), the same columns show one row per counted process, MPI ranks first in
rank order: an MPI job reads rank by rank instead of core by core.
"""

from __future__ import annotations

import math

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label

from sectormon.data.frames import Frame, MetricDelta, scope_order
from sectormon.ui.cells import RELATIVE_METRICS, Cell, column_label, label_cell, scope_cells
from sectormon.ui.context import RenderContext, deltas_for
from sectormon.ui.format import metric_value, sort_key
from sectormon.ui.messages import OpenDetail
from sectormon.ui.widgets.metric_table import VALUE_WIDTH, MetricTable

CPU_KEY = "cpu"
LABEL_WIDTH = 8


def core_label(core: str) -> str:
    """A core's CPU number; in a job, ``node1:12`` for ``node:node1/core:12`` (its node first)."""
    if core.startswith("node:"):
        host, _, scope = core[len("node:") :].partition("/")
        return f"{host}:{scope.partition(':')[2]}"
    return core


def _delta_value(delta: MetricDelta | None, metric: str) -> float | None:
    if delta is None:
        return None
    return delta.relative if metric in RELATIVE_METRICS else delta.improvement


def core_rows(
    frame: Frame, ctx: RenderContext, sort_by: str = CPU_KEY, descending: bool = False
) -> list[tuple[str, list[Cell]]]:
    """Rows of the visible cores in display order (n/a sorts last in either direction)."""
    scopes = ctx.scopes(frame)
    baseline = ctx.baseline(frame)
    cores = [c for c in scopes.cores if ctx.core_visible(c)]
    if sort_by == CPU_KEY:
        cores.sort(key=scope_order, reverse=descending)
    elif baseline is not None:
        cores.sort(
            key=lambda c: (
                sort_key(
                    _delta_value((deltas_for(baseline, "core", c) or {}).get(sort_by), sort_by), descending
                ),
                scope_order(c),
            )
        )
    else:
        cores.sort(
            key=lambda c: (sort_key(metric_value(scopes.cores[c], sort_by), descending), scope_order(c))
        )
    rows: list[tuple[str, list[Cell]]] = []
    for core in cores:
        deltas = deltas_for(baseline, "core", core)
        cells = scope_cells(scopes.cores[core], ctx.panels.core, ctx.units, deltas, ctx.low_coverage)
        rows.append((core, [label_cell(core_label(core)), *cells]))
    return rows


def process_order(frame: Frame, pid: str) -> tuple[int, int, int]:
    """Ranked processes first, by rank; then the others by pid."""
    info = frame.processes.get(pid)
    if info is not None and info.rank is not None:
        return (0, info.rank, int(pid))
    return (1, 0, int(pid))


def process_label(frame: Frame, pid: str) -> str:
    """``r3 4242 app`` for MPI rank 3, ``4242 app`` without a rank."""
    info = frame.processes.get(pid)
    if info is None:
        return pid
    named = f"{pid} {info.command}"
    return named if info.rank is None else f"r{info.rank} {named}"


def process_rows(
    frame: Frame, ctx: RenderContext, sort_by: str = CPU_KEY, descending: bool = False
) -> list[tuple[str, list[Cell]]]:
    """Rows of the counted processes (of the frame's interval: processes have no rolling window)."""
    procs = frame.procs
    pids = sorted(procs, key=lambda pid: process_order(frame, pid), reverse=descending)
    if sort_by != CPU_KEY:
        pids.sort(key=lambda pid: sort_key(metric_value(procs[pid], sort_by), descending))
    return [
        (
            pid,
            [
                label_cell(process_label(frame, pid)),
                *scope_cells(procs[pid], ctx.panels.core, ctx.units, None, ctx.low_coverage),
            ],
        )
        for pid in pids
    ]


class CoreTable(Vertical):
    """The per-core metrics; Enter opens a core's detail screen."""

    def __init__(self, ctx: RenderContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._ctx = ctx
        self._frame: Frame | None = None
        self.sort_by = CPU_KEY
        self.descending = False
        self._split = False
        self._shown_title = ""
        self._label_width = len("CPU") + 1  # widened to the longest row label ("unbound", "node1:12")
        self._deltas = False  # baseline deltas shown: directionless metrics' labels carry Δ
        self.by_process = False  # rows per process (``g``) instead of per core

    def compose(self) -> ComposeResult:
        yield Label("", classes="panel-title", markup=False)
        with Horizontal(classes="core-halves"):
            yield MetricTable(id="cores-a", classes="core-half")
            yield MetricTable(id="cores-b", classes="core-half")

    def on_mount(self) -> None:
        self._set_columns()
        self.query_one("#cores-b", MetricTable).display = False

    @property
    def tables(self) -> tuple[MetricTable, MetricTable]:
        return self.query_one("#cores-a", MetricTable), self.query_one("#cores-b", MetricTable)

    def _labels(self) -> list[tuple[str, str]]:
        arrow = "▼" if self.descending else "▲"
        columns = [(CPU_KEY, self._first_label + (arrow if self.sort_by == CPU_KEY else ""))]
        for column, base in zip(self._ctx.panels.core, self._base_labels()[1:], strict=True):
            mark = arrow if column.metric == self.sort_by else ""
            columns.append((column.metric, base + mark))
        return columns

    def _base_labels(self) -> list[str]:
        info = self._ctx.profile.info
        labels = (column_label(c, info(c.metric).better, self._deltas) for c in self._ctx.panels.core)
        return [self._first_label, *labels]

    @property
    def _first_label(self) -> str:
        return "Process" if self.by_process else "CPU"

    def _set_columns(self) -> None:
        # Widths come from the labels without the sort arrow, so sorting never changes the layout.
        # The row labels' column is as wide as the longest label shown so far ("unbound", a job's
        # "node1:12"): the value columns after it start with a space, and 80 columns hold the
        # a64fx table.
        labels = self._labels()
        widths: dict[str, int | None] = {
            key: max(VALUE_WIDTH, len(base) + 1)
            for key, base in zip([k for k, _ in labels][1:], self._base_labels()[1:], strict=False)
        }
        widths[CPU_KEY] = self._label_width
        for table in self.tables:
            table.set_columns(labels, first_width=LABEL_WIDTH, widths=widths)

    def _wants_split(self, rows: int) -> bool:
        """Two tables side by side when both fit the width and the rows do not fit one table's
        height (three cores in two halves would hide nothing, and take the room the history uses)."""
        needed = MetricTable.table_width(self._base_labels(), LABEL_WIDTH)
        return self.size.width >= 2 * needed + 1 and rows + 2 > self.size.height

    def show(self, frame: Frame, ctx: RenderContext) -> None:
        if ctx.panels != self._ctx.panels:
            self._ctx = ctx
            self._set_columns()
        self._ctx = ctx
        self._frame = frame
        if self.by_process:
            rows = process_rows(frame, ctx, self.sort_by, self.descending)
        else:
            rows = core_rows(frame, ctx, self.sort_by, self.descending)
        widest = max((len(cells[0].text) for _, cells in rows), default=0)
        deltas = ctx.baseline(frame) is not None and not self.by_process
        if widest > self._label_width or deltas != self._deltas:
            self._label_width = max(widest, self._label_width)  # one width for both halves
            self._deltas = deltas
            self._set_columns()
        split = self._wants_split(len(rows)) and len(rows) > 1
        first, second = self.tables
        if split != self._split:
            self._split = split
            second.display = split
        if split:
            half = math.ceil(len(rows) / 2)
            first.set_rows(rows[:half])
            second.set_rows(rows[half:])
        else:
            first.set_rows(rows)
        if self.by_process:
            self._set_title(self._process_title(frame, ctx))
        else:
            self._update_title(frame, ctx, len(rows), len(ctx.scopes(frame).cores))

    def rows_needed(self) -> int:
        """Lines the table needs to show every row without scrolling: title, header, rows (in
        two halves when split)."""
        rows = len(self.tables[0].row_keys) + (len(self.tables[1].row_keys) if self._split else 0)
        return 2 + (math.ceil(rows / 2) if self._split else rows)

    def _update_title(self, frame: Frame, ctx: RenderContext, shown: int, total: int) -> None:
        # 80 columns hold the title whole (the header says "+ = better" too).
        if ctx.baseline(frame) is not None:
            title = "Cores  Δ vs baseline: + better, ratios in points, IPC in %"
        else:
            title = "Cores (+ unbound threads)"
        if ctx.core_filter is not None:
            title += f"  filter {ctx.filter_text!r}: {shown} of {total}"
        title += "   ~ low confidence"
        self._set_title(title)

    def _process_title(self, frame: Frame, ctx: RenderContext) -> str:
        if not frame.procs:
            return "Processes: none known (CPU-wide, or not followed)   g: cores"
        title = f"Processes ({len(frame.procs)}, ranks rN first)"
        if ctx.window != "interval" or ctx.baseline(frame) is not None:
            title += "  whole run" if frame.final else "  last interval only"
        return title + "   g: cores   ~ low confidence"

    def _set_title(self, title: str) -> None:
        if title != self._shown_title:
            self._shown_title = title
            self.query_one(".panel-title", Label).update(title)

    def group_by_process(self, by_process: bool) -> None:
        """Rows per process or per core (the ``g`` key); the sort order and label width start over."""
        self.by_process = by_process
        self.sort_by = CPU_KEY
        self.descending = False
        self._label_width = len(self._first_label) + 1
        self._set_columns()
        if self._frame is not None:
            self.show(self._frame, self._ctx)

    def on_resize(self, event: events.Resize) -> None:
        if self._frame is not None:
            self.show(self._frame, self._ctx)

    # -- sorting -------------------------------------------------------------------------------

    def sort_keys(self) -> list[str]:
        return [CPU_KEY, *(c.metric for c in self._ctx.panels.core)]

    def set_sort(self, key: str, descending: bool | None = None) -> None:
        """Sort by ``key`` (``cpu`` or a metric); metrics default to largest first."""
        if descending is None:
            descending = key != CPU_KEY
        self.sort_by = key
        self.descending = descending
        self._set_columns()
        if self._frame is not None:
            self.show(self._frame, self._ctx)

    def cycle_sort(self) -> str:
        """The ``s`` key: next sort column."""
        keys = self.sort_keys()
        index = keys.index(self.sort_by) if self.sort_by in keys else -1
        self.set_sort(keys[(index + 1) % len(keys)])
        return self.sort_by

    def on_metric_table_header_selected(self, event: MetricTable.HeaderSelected) -> None:
        event.stop()
        key = event.column
        if key == self.sort_by:
            self.set_sort(key, not self.descending)
        else:
            self.set_sort(key)

    def on_metric_table_row_selected(self, event: MetricTable.RowSelected) -> None:
        event.stop()
        self.post_message(OpenDetail("proc" if self.by_process else "core", event.key))

    def focus_table(self) -> None:
        self.tables[0].focus()
