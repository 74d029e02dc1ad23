"""Energy panel: power of cores, L2 and memory per CMG and in total, nJ/instruction, memory share."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label

from sectormon.data.frames import Frame
from sectormon.files.text import printable
from sectormon.ui.context import RenderContext
from sectormon.ui.widgets.cmg_panel import cmg_rows, table_labels
from sectormon.ui.widgets.metric_table import MetricTable


class EnergyPanel(Vertical):
    """A read-only table (no cursor): the energy metrics the profile defines, or a note."""

    def __init__(self, ctx: RenderContext, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._ctx = ctx
        self._deltas = False

    def compose(self) -> ComposeResult:
        yield Label(
            "Energy — power per CMG (L2 and memory are CMG-wide)", classes="panel-title", markup=False
        )
        yield MetricTable(cursor=False)
        yield Label("", classes="panel-note", markup=False)

    def on_mount(self) -> None:
        self.set_context(self._ctx)

    @property
    def table(self) -> MetricTable:
        return self.query_one(MetricTable)

    def set_context(self, ctx: RenderContext) -> None:
        self._ctx = ctx
        columns = ctx.panels.energy
        self.table.set_columns([("scope", ""), *table_labels(columns, ctx, self._deltas)], first_width=7)
        self.table.display = bool(columns)
        note = self.query_one(".panel-note", Label)
        note.display = not columns
        note.update(printable(f"profile {ctx.panels.profile or '?'} defines no energy metrics"))

    def show(self, frame: Frame, ctx: RenderContext) -> None:
        deltas = ctx.baseline(frame) is not None
        if ctx.panels != self._ctx.panels or deltas != self._deltas:
            self._deltas = deltas
            self.set_context(ctx)
        self._ctx = ctx
        if ctx.panels.energy:
            self.table.set_rows(cmg_rows(frame, ctx, ctx.panels.energy))
