"""The Regions view: every region the program marked, over the whole run so far, one row each.

Rows come from the frame's ``run.regions`` (:mod:`sectormon.ui.region_rows` builds them) in the
order the regions were first marked, kept across frames so a row never moves; Enter opens a
region's breakdown per thread, CMG, core, MPI rank and process. With a baseline the rows show each
region's change since its moment (:mod:`sectormon.ui.region_baseline`). A session with no region
says how to get some instead of showing an empty table.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Static

from sectormon.data.frames import Frame
from sectormon.ui.context import RenderContext
from sectormon.ui.format import format_si
from sectormon.ui.messages import OpenRegion
from sectormon.ui.region_rows import columns, ordered_labels, region_rows
from sectormon.ui.widgets.metric_table import MetricTable

FIRST_LABEL = "Region"
LABEL_MAX = 32
"""The label column grows with the longest label up to this width; a longer name (fapp allows 127
bytes) is cut with ``…`` (the drill-down's title shows it whole)."""
EMPTY = (
    "No marked regions: build the program with $(sectormon markers --cflags) and "
    "$(sectormon markers --libs), mark it with fapp_start/fapp_stop, LIKWID_MARKER_START/STOP or "
    "sectormon_region_begin/end, and run it under sectormon (sectormon -- ./prog: a process "
    "attached with --pid cannot reach the markers); docs/regions.md"
)
MARKS = "~ scaled or split"


def regions_title(frame: Frame, ctx: RenderContext, shown: int) -> str:
    """What the table covers (the whole run so far, or the change since the baseline); fits 80
    columns as the other views' titles do (the help and docs/ui.md say the rest)."""
    run = "whole run" if frame.final else "whole run so far"
    baseline = ctx.baseline(frame)
    base = ctx.regions_base
    if baseline is None:
        return f"Regions ({shown}): {run}   {MARKS}   Enter: per thread, CMG"
    if base is None:
        at = format_si(baseline.t_to, "s")
        return f"Regions ({shown}): {run}, values: no frame shown before the baseline (t {at})"
    return f"Regions Δ since baseline (t {format_si(base.t, 's')}): + better, counts since   {MARKS}"


class RegionView(Vertical):
    """The regions table, or how to get regions when there are none."""

    def __init__(self, ctx: RenderContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._ctx = ctx
        self._order: list[str] = []  # first-marked order, kept across frames
        self._label_width = len(FIRST_LABEL) + 1
        self._deltas: bool | None = None  # the columns' state: labels carry Δ with a baseline
        self._title = ""

    def compose(self) -> ComposeResult:
        yield Label("", classes="panel-title", markup=False)
        yield Static(EMPTY, id="regions-empty", classes="panel-note", markup=False)
        yield MetricTable(id="regions-table")

    @property
    def table(self) -> MetricTable:
        return self.query_one("#regions-table", MetricTable)

    def focus_table(self) -> None:
        self.table.focus()

    def remember(self, frame: Frame) -> None:
        """Note the order regions were first marked in (every frame, shown or not)."""
        if len(frame.run.regions) != len(self._order):
            ordered_labels(self._order, frame.run.regions)

    def show(self, frame: Frame, ctx: RenderContext) -> None:
        regions = frame.run.regions
        labels = ordered_labels(self._order, regions)
        base = ctx.regions_base if ctx.baseline(frame) is not None else None
        empty = not labels
        self.query_one("#regions-empty", Static).display = empty
        self.table.display = not empty
        if empty:
            self._set_title("Regions: none marked in this run" if frame.final else "Regions: none marked yet")
            return
        rows = region_rows(labels, regions, ctx, base)
        widest = min(LABEL_MAX, max(len(cells[0].text) for _, cells in rows) + 1)
        deltas = base is not None
        if ctx.panels != self._ctx.panels or widest > self._label_width or deltas != self._deltas:
            self._label_width = max(widest, self._label_width)
            self._deltas = deltas
            specs, widths = columns(ctx, first=FIRST_LABEL, deltas=deltas)
            self.table.set_columns(specs, widths={**widths, specs[0][0]: self._label_width})
        self._ctx = ctx
        self.table.set_rows(rows)
        self._set_title(regions_title(frame, ctx, len(rows)))

    def _set_title(self, title: str) -> None:
        if title != self._title:
            self._title = title
            self.query_one(".panel-title", Label).update(title)

    def on_metric_table_row_selected(self, event: MetricTable.RowSelected) -> None:
        event.stop()
        self.post_message(OpenRegion(event.key))
