"""Detail of one scope (a core, a CMG or the total): every metric with its coverage, split flag,
baseline comparison and formula, then the raw counts the engine used. Updated live."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label

from sectormon.data.frames import Frame, MetricDelta, ScopeStats
from sectormon.data.header import Header
from sectormon.files.text import printable
from sectormon.ui.cells import LOW_MARK, PROXY_MARK, Cell, delta_cell, label_cell
from sectormon.ui.context import RenderContext, deltas_for, window_title
from sectormon.ui.format import (
    LOW_COVERAGE,
    NA,
    coverage_of,
    format_coverage,
    format_number,
    format_si,
    format_value,
    is_low_confidence,
    metric_value,
)
from sectormon.ui.widgets.metric_table import MetricTable

METRIC_COLUMNS = (
    ("metric", "metric"),
    ("value", "value"),
    ("unit", "unit"),
    ("coverage", "cover"),
    ("split", "split"),
    ("formula", "formula"),
)
DELTA_COLUMNS = (("base", "baseline"), ("now", "now"), ("improvement", "improv"), ("relative", "rel %"))
COUNT_COLUMNS = (
    ("event", "event"),
    ("count", "count"),
    ("rate", "rate /s"),
    ("coverage", "cover"),
    ("scope", "scope"),
    ("code", "code"),
    ("note", "note"),
)
MAX_UNIT_WIDTH = 16
WIDTHS: dict[str, int | None] = {
    "metric": 26,
    "value": 11,
    "unit": 8,
    "coverage": 6,
    "split": 6,
    "base": 10,
    "now": 10,
    "improvement": 9,
    "relative": 8,
    "formula": None,
    "event": 30,
    "count": 10,
    "rate": 10,
    "scope": 6,
    "code": 7,
    "note": None,
}


def scope_stats(frame: Frame, ctx: RenderContext, kind: str, key: str) -> ScopeStats | None:
    if kind == "proc":  # processes are in the frame's own window only
        return frame.procs.get(key)
    scopes = ctx.scopes(frame)
    if kind == "total":
        return scopes.total
    if kind == "node":
        return scopes.nodes.get(key)
    table = scopes.cmgs if kind == "cmg" else scopes.cores
    return table.get(key)


def scope_title(kind: str, key: str, ctx: RenderContext) -> str:
    if kind == "total":
        return "Total (all cores and CMGs)"
    if kind == "node":
        return f"Node {key} (its cores and CMGs)"
    if kind == "cmg":
        return f"CMG {key} — CMG-wide events count the whole CMG, not only the target"
    if kind == "proc":
        return f"Process {key} (its threads; the frame's own window)"
    cmg = ctx.cmg_map.get(key)
    where = f" (CMG {cmg})" if cmg is not None else ""
    if key == "unbound":
        return "Unbound threads (not pinned to one CPU)"
    return f"Core {key}{where}"


SCOPES_AT = {
    "core": ("any", "core"),
    "proc": ("any", "core"),
    "cmg": ("any", "cmg"),
    "total": ("any", "cmg", "total"),
    "node": ("any", "cmg", "total"),
}
"""Metric scopes (``MetricDef.scope``) the engine computes at each level; the others are left out."""


def metric_rows(
    stats: ScopeStats | None,
    ctx: RenderContext,
    deltas: Mapping[str, MetricDelta] | None,
    kind: str = "total",
) -> list[tuple[str, list[Cell]]]:
    """Every metric of this level: the profile's order first, then any extra the frame carries."""
    allowed = SCOPES_AT.get(kind, SCOPES_AT["total"])
    names = [
        n
        for n, info in ctx.profile.metrics.items()
        if info.scope in allowed or n in (stats.metrics if stats else {})
    ]
    if stats is not None:
        names += [n for n in stats.metrics if n not in ctx.profile.metrics]
    rows: list[tuple[str, list[Cell]]] = []
    for name in names:
        info = ctx.profile.info(name)
        value = metric_value(stats, name)
        low = stats is not None and is_low_confidence(stats, name, ctx.low_coverage)
        proxied = stats is not None and name in stats.proxy
        mark = LOW_MARK if low else PROXY_MARK if proxied else ""
        text = format_value(value, info.unit, with_unit=False) + (proxy_bound(stats, name) if proxied else "")
        value_cell = Cell(NA, ("na",)) if value is None else Cell(mark + text, ("low",) if low else ())
        coverage = coverage_of(stats, name) if stats is not None else None
        split = stats is not None and name in stats.split
        cells = [
            label_cell(name),
            value_cell,
            Cell(info.unit or "", right=False),
            Cell(
                format_coverage(coverage),
                ("low",) if coverage is not None and coverage < ctx.low_coverage else (),
            ),
            Cell("split" if split else "", ("low",) if split else (), right=False),
        ]
        if deltas is not None:
            delta = deltas.get(name)
            base = delta.base if delta is not None else None
            now = delta.now if delta is not None else None
            now_text = format_value(now, info.unit, with_unit=False)
            cells += [
                Cell(format_value(base, info.unit, with_unit=False)),
                Cell(PROXY_MARK + now_text if proxied and now is not None else now_text),
                delta_cell(delta, info.unit, relative=False, proxied=proxied),
                delta_cell(delta, info.unit, relative=True, proxied=proxied),
            ]
        cells.append(Cell(info.formula or "—", right=False))
        rows.append((name, cells))
    return rows


def proxy_bound(stats: ScopeStats | None, name: str) -> str:
    """The error bound after a proxied value: `` ±12 %`` (the 95 % half-width), `` ±n/a`` where
    it is unknown (one stand-in), never a made-up 0."""
    bound = stats.proxy_error.get(name) if stats is not None else None
    if bound is None:
        return " ±n/a"
    return f" ±{100 * bound:.2g} %" if bound < 0.995 else f" ±{100 * bound:.0f} %"


def count_rows(
    stats: ScopeStats | None,
    header: Header,
    events: Mapping[str, Any],
    threshold: float = LOW_COVERAGE,
) -> list[tuple[str, list[Cell]]]:
    """Raw (scaled) counts, their per-second rates and coverage, then the unavailable events."""
    unavailable = header.unavailable
    names = list(stats.counts) if stats is not None else []
    names += [n for n in events if n not in names and n not in unavailable]
    rows: list[tuple[str, list[Cell]]] = []
    for name in names:
        fields = events.get(name, {})
        fields = fields if isinstance(fields, Mapping) else {}
        count = stats.counts.get(name) if stats is not None else None
        rate = stats.rates.get(name) if stats is not None else None
        mark = PROXY_MARK if stats is not None and name in stats.proxy else ""
        bound = proxy_bound(stats, name) if mark else ""
        coverage = coverage_of(stats, name) if stats is not None else None
        code = fields.get("code")
        rows.append(
            (
                name,
                [
                    label_cell(name),
                    Cell(
                        mark + format_number(count) + bound if isinstance(count, (int, float)) else NA,
                        () if count is not None else ("na",),
                    ),
                    Cell(
                        mark + format_number(rate) if isinstance(rate, (int, float)) else NA,
                        () if rate is not None else ("na",),
                    ),
                    Cell(
                        format_coverage(coverage),
                        ("low",) if coverage is not None and coverage < threshold else (),
                    ),
                    Cell(str(fields.get("scope", "")), right=False),
                    Cell(f"0x{code:03x}" if isinstance(code, int) else "", right=False),
                    Cell("CMG-wide" if fields.get("scope") == "cmg" else "", right=False),
                ],
            )
        )
    for name, reason in unavailable.items():
        rows.append(
            (
                f"unavailable:{name}",
                [
                    label_cell(str(name)),
                    Cell(NA, ("na",)),
                    Cell(NA, ("na",)),
                    Cell("", ()),
                    Cell(""),
                    Cell(""),
                    Cell(f"unavailable: {reason}", ("low",), right=False),
                ],
            )
        )
    return rows


class DetailScreen(Screen[None]):
    """Pushed by Enter on a core or CMG row; Escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("backspace", "app.pop_screen", "back", show=False),
    ]

    def __init__(self, kind: str, key: str, ctx: RenderContext) -> None:
        super().__init__()
        self.kind = kind
        self.key = key
        self._ctx = ctx
        self._with_deltas: bool | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-body"):
            yield Label(
                printable(scope_title(self.kind, self.key, self._ctx)),
                id="detail-title",
                classes="panel-title",
                markup=False,
            )
            yield Label("", id="detail-window", classes="panel-note", markup=False)
            yield MetricTable(id="detail-metrics", classes="detail-table", padding=1)
            yield Label("Raw counts (scaled for multiplexing) and rates", classes="panel-title", markup=False)
            yield MetricTable(id="detail-counts", classes="detail-table", padding=1)
        yield Footer()

    def _set_columns(self, with_deltas: bool) -> None:
        self._with_deltas = with_deltas
        columns = (
            list(METRIC_COLUMNS[:-1]) + (list(DELTA_COLUMNS) if with_deltas else []) + [METRIC_COLUMNS[-1]]
        )
        # The unit column as wide as the profile's longest unit (a fixed width cuts "inst/cycle").
        units = (len(info.unit or "") for info in self._ctx.profile.metrics.values())
        widths = {**WIDTHS, "unit": max(len("unit"), min(MAX_UNIT_WIDTH, max(units, default=0)))}
        self.query_one("#detail-metrics", MetricTable).set_columns(columns, widths=widths)
        self.query_one("#detail-counts", MetricTable).set_columns(list(COUNT_COLUMNS), widths=WIDTHS)

    def show(self, frame: Frame | None, ctx: RenderContext) -> None:
        self._ctx = ctx
        stats = scope_stats(frame, ctx, self.kind, self.key) if frame is not None else None
        baseline = ctx.baseline(frame) if frame is not None else None
        deltas = deltas_for(baseline, self.kind, self.key) if baseline is not None else None
        if self._with_deltas != (deltas is not None):
            self._set_columns(deltas is not None)
        window = window_title(ctx.window, frame)
        if deltas is not None:
            window = "rolling window (baseline comparison)"
        if stats is None:
            note = f"{window}: no data for this scope in the current frame"
        else:
            note = (
                f"{window}: {format_si(stats.seconds, 's')}   ~ = low confidence "
                f"(coverage < {ctx.low_coverage:.0%}, half a rotation share; or split)"
            )
            if stats.proxy:
                note += f"   {PROXY_MARK} = estimated from --proxy stand-ins (± its 95 % error bound)"
        self.query_one("#detail-window", Label).update(printable(note))
        self.query_one("#detail-metrics", MetricTable).set_rows(metric_rows(stats, ctx, deltas, self.kind))
        self.query_one("#detail-counts", MetricTable).set_rows(
            count_rows(stats, ctx.header, ctx.profile.events, ctx.low_coverage)
        )
