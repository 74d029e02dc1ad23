"""Per-CMG panel: the L2 and memory metrics, counted CMG-wide (not attributable to the target)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label

from sectormon.data.frames import Frame, scope_order
from sectormon.ui.cells import Cell, column_label, label_cell, scope_cells
from sectormon.ui.context import RenderContext, deltas_for
from sectormon.ui.layout import Column
from sectormon.ui.messages import OpenDetail
from sectormon.ui.widgets.metric_table import MetricTable

TOTAL_KEY = "total"
NODE_PREFIX = "node:"


def cmg_label(cmg: str, ctx: RenderContext) -> str:
    """``CMG0`` on A64FX; ``dom0`` for the cache domain playing the CMG's role elsewhere; in a job,
    ``node1 CMG0`` for ``node:node1/cmg:0``."""
    if cmg.startswith(NODE_PREFIX):
        host, _, scope = cmg[len(NODE_PREFIX) :].partition("/")
        ident = scope.partition(":")[2]
        return f"  {cmg_label(ident, ctx)}" if ident else host  # under its node's row
    if not cmg.isdigit():
        return cmg
    return f"CMG{cmg}" if ctx.panels.profile == "a64fx" else f"dom{cmg}"


def table_labels(columns: Sequence[Column], ctx: RenderContext, deltas: bool) -> list[tuple[str, str]]:
    """(metric, label) of a table's value columns; ``Δ`` marks a directionless metric's change."""
    return [(c.metric, column_label(c, ctx.profile.info(c.metric).better, deltas)) for c in columns]


def cmg_rows(
    frame: Frame, ctx: RenderContext, columns: Sequence[Column] | None = None
) -> list[tuple[str, list[Cell]]]:
    """One row per CMG (numeric order) and a total row; deltas when a baseline is set.

    ``columns`` defaults to the CMG panel's; the energy panel passes its own.
    """
    scopes = ctx.scopes(frame)
    baseline = ctx.baseline(frame)
    columns = ctx.panels.cmg if columns is None else columns
    rows: list[tuple[str, list[Cell]]] = []
    # A job: each node's total (the Nodes level), then that node's CMGs.
    under: dict[str, list[str]] = {host: [] for host in scopes.nodes}
    alone: list[str] = []
    for cmg in sorted(scopes.cmgs, key=scope_order):
        host = cmg[len(NODE_PREFIX) :].partition("/")[0] if cmg.startswith(NODE_PREFIX) else ""
        under.get(host, alone).append(cmg)

    def cmg_row(cmg: str) -> tuple[str, list[Cell]]:
        deltas = deltas_for(baseline, "cmg", cmg)
        cells = scope_cells(scopes.cmgs[cmg], columns, ctx.units, deltas, ctx.low_coverage)
        return cmg, [label_cell(cmg_label(cmg, ctx)), *cells]

    for host, stats in scopes.nodes.items():
        cells = scope_cells(stats, columns, ctx.units, None, ctx.low_coverage)
        rows.append((NODE_PREFIX + host, [label_cell(host), *cells]))
        rows += [cmg_row(cmg) for cmg in under[host]]
    rows += [cmg_row(cmg) for cmg in alone]
    total = scope_cells(
        scopes.total, columns, ctx.units, deltas_for(baseline, "total", TOTAL_KEY), ctx.low_coverage
    )
    rows.append((TOTAL_KEY, [label_cell("total"), *total]))
    return rows


class CmgPanel(Vertical):
    """Title line plus a table; Enter or a click on a row opens that CMG's detail screen."""

    def __init__(self, ctx: RenderContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._ctx = ctx
        self._shown_title = ""
        self._deltas = False  # baseline deltas shown: directionless metrics' labels carry Δ

    def compose(self) -> ComposeResult:
        yield Label(self._title(False), classes="panel-title", markup=False)
        yield MetricTable(id=f"{self.id}-table" if self.id else None)

    def on_mount(self) -> None:
        self.set_context(self._ctx)

    @property
    def table(self) -> MetricTable:
        return self.query_one(MetricTable)

    def _title(self, deltas: bool) -> str:
        title = self._ctx.panels.cmg_title
        if any(fields.get("scope") == "cmg" for fields in self._ctx.profile.events.values()):
            title += " — CMG-wide events count the whole CMG, not only the target"
        return title + ("  Δ vs baseline" if deltas else "")  # 80 columns hold it

    def set_context(self, ctx: RenderContext) -> None:
        self._ctx = ctx
        label = "CMG" if ctx.panels.profile == "a64fx" else "domain"
        self.table.set_columns(
            [("scope", label), *table_labels(ctx.panels.cmg, ctx, self._deltas)], first_width=7
        )

    def show(self, frame: Frame, ctx: RenderContext) -> None:
        deltas = ctx.baseline(frame) is not None
        if ctx.panels != self._ctx.panels or deltas != self._deltas:
            self._deltas = deltas
            self.set_context(ctx)
        self._ctx = ctx
        title = self._title(ctx.baseline(frame) is not None)
        if title != self._shown_title:
            self._shown_title = title
            self.query_one(".panel-title", Label).update(title)
        self.table.set_rows(cmg_rows(frame, ctx))

    def on_metric_table_row_selected(self, event: MetricTable.RowSelected) -> None:
        event.stop()
        if event.key == TOTAL_KEY:
            self.post_message(OpenDetail("total", event.key))
        elif event.key.startswith(NODE_PREFIX) and "/" not in event.key:
            self.post_message(OpenDetail("node", event.key[len(NODE_PREFIX) :]))
        else:
            self.post_message(OpenDetail("cmg", event.key))
