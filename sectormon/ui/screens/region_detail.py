"""One region's breakdown (Enter on the Regions view): its rows per thread, CMG, core, MPI rank and
process, with the Regions view's columns and, with a baseline, their change since then. Updated
live; Escape goes back, as from the other detail screens."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label

from sectormon.data.frames import Frame, RegionStats
from sectormon.files.text import printable
from sectormon.ui.context import RenderContext
from sectormon.ui.format import format_si
from sectormon.ui.region_rows import BREAKDOWNS, SCOPE_FIXED, breakdown_rows, columns
from sectormon.ui.widgets.metric_table import MetricTable

NONE_BECAUSE = {
    "ranks": "none (no MPI rank variable in the program's environment: docs/regions.md)",
    "cmgs": "none (the session's topology names no CMG of these CPUs)",
    "cores": "none (no stop recorded a CPU yet)",
}


def region_summary(label: str, region: RegionStats | None, frame: Frame) -> str:
    """``Region worker (run so far): 3 calls, 3 threads, 1.66ms in its longest thread`` (80 columns)."""
    if region is None:
        return f"Region {label}: not in this frame (a replay sought to before its first mark)"
    threads = "1 thread" if region.thread_count == 1 else f"{region.thread_count} threads"
    calls = "1 call" if region.calls == 1 else f"{region.calls:,} calls"
    run = "whole run" if frame.final else "run so far"
    return (
        f"Region {label} ({run}): {calls}, {threads}, {format_si(region.seconds, 's')} in its longest thread"
    )


class RegionScreen(Screen[None]):
    """Pushed by Enter on a region; Escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("backspace", "app.pop_screen", "back", show=False),
    ]

    def __init__(self, label: str, ctx: RenderContext) -> None:
        super().__init__()
        self.label = label
        self._ctx = ctx
        self._deltas: bool | None = None
        self._width = 0  # the label column: as wide as the longest label shown so far

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-body"):
            yield Label("", id="region-title", classes="panel-title", markup=False)
            yield Label("", id="region-note", classes="panel-note", markup=False)
            for field, title, _ in BREAKDOWNS:
                yield Label(title, id=f"region-{field}-title", classes="panel-title", markup=False)
                yield MetricTable(id=f"region-{field}", classes="detail-table", padding=0)
        yield Footer()

    def table(self, field: str) -> MetricTable:
        return self.query_one(f"#region-{field}", MetricTable)

    def show(self, frame: Frame | None, ctx: RenderContext) -> None:
        self._ctx = ctx
        region = frame.run.regions.get(self.label) if frame is not None else None
        baseline = ctx.baseline(frame) if frame is not None else None
        base = ctx.regions_base if baseline is not None else None
        deltas = base is not None
        self.query_one("#region-title", Label).update(
            printable(region_summary(self.label, region, frame) if frame is not None else self.label)
        )
        note = "~ = scaled (counted for part of the region) or split"
        if region is not None and region.open:
            note = f"open: entered and not yet stopped, its counts so far are in   {note}"
        if deltas:
            assert base is not None
            note = f"Δ since the baseline (as at t {format_si(base.t, 's')}): + better, counts since   {note}"
        self.query_one("#region-note", Label).update(note)
        old = base.regions.get(self.label) if base is not None else None
        sections = {
            field: breakdown_rows(region, old, field, word, ctx, deltas=deltas) if region is not None else []
            for field, _, word in BREAKDOWNS
        }
        widest = max((len(cells[0].text) for rows in sections.values() for _, cells in rows), default=0) + 1
        if deltas != self._deltas or widest > self._width:
            self._deltas, self._width = deltas, max(widest, self._width, len("scope") + 1)
            specs, widths = columns(ctx, first="scope", deltas=deltas, fixed=SCOPE_FIXED)
            for field, _, _ in BREAKDOWNS:
                self.table(field).set_columns(specs, widths={**widths, specs[0][0]: self._width})
        for field, title, _ in BREAKDOWNS:
            rows = sections[field]
            heading = f"{title} ({len(rows)})" if rows else f"{title}: {NONE_BECAUSE.get(field, 'none')}"
            self.query_one(f"#region-{field}-title", Label).update(heading)
            table = self.table(field)
            table.display = bool(rows)
            table.set_rows(rows)
