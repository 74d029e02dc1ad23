"""Stall breakdown: per core and in total, the cycle fractions spent waiting on memory (L2 miss),
on L2 (L1 miss) and on other load/store work, as stacked bars of the engine's stall metrics."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widgets import Static

from sectormon.data.frames import Frame, ScopeStats
from sectormon.files.text import printable
from sectormon.ui.bars import bar_segments, grid_text
from sectormon.ui.context import RenderContext
from sectormon.ui.format import NA, format_value, is_low_confidence, metric_value

GLYPHS = ("█", "▓", "▒")
ROLES = ("mem", "l2", "other", "empty")
SHORT = ("mem", "L2", "oth")
LABEL_WIDTH = 8
BAR_WIDTH = 30
ENTRY_WIDTH = LABEL_WIDTH + BAR_WIDTH + 2 + 3 * 11


class StallView(Static):
    """Stacked bars; each segment kind has its own glyph and theme colour."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "stall-view--mem",
        "stall-view--l2",
        "stall-view--other",
        "stall-view--empty",
        "stall-view--low",
        "stall-view--label",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._last: tuple[Frame, RenderContext] | None = None

    def _style(self, role: str) -> Style:
        return self.get_component_rich_style(f"stall-view--{role}", partial=True)

    def _legend(self, ctx: RenderContext) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        names = ("mem: L2 miss wait", "L2: L1 miss wait", "other load/store wait")
        for glyph, role, name in zip(GLYPHS, ROLES, names, strict=False):
            text.append(glyph * 2, self._style(role))
            text.append(f" {name}   ")
        text.append("·· not stalled on loads   ~ low confidence", self._style("label"))
        return text

    def entry(self, label: str, stats: ScopeStats | None, ctx: RenderContext) -> Text:
        metrics = [c.metric for c in ctx.panels.stall]
        values = [metric_value(stats, m) for m in metrics]
        text = Text(no_wrap=True)
        text.append(f"{printable(label):<{LABEL_WIDTH}}", self._style("label"))  # a recording's keys
        for run, index in bar_segments(values, GLYPHS[: len(values)], BAR_WIDTH):
            text.append(run, self._style(ROLES[index] if index < len(values) else "empty"))
        text.append("  ")
        for name, metric, value in zip(SHORT, metrics, values, strict=False):
            low = (
                stats is not None and value is not None and is_low_confidence(stats, metric, ctx.low_coverage)
            )
            shown = format_value(value, ctx.units.get(metric, "ratio"), with_unit=False)
            cell = f"{name} {('~' if low else '') + shown:>6} "
            text.append(cell, self._style("low") if (low or shown == NA) else Style())
        return text

    def show(self, frame: Frame, ctx: RenderContext) -> None:
        self._last = (frame, ctx)
        if not ctx.panels.stall:
            self.update(printable(f"profile {ctx.panels.profile or '?'} defines no stall metrics"))
            return
        entries = [self.entry(label, stats, ctx) for label, stats in ctx.total_and_cores(frame)]
        body = grid_text(entries, max(ENTRY_WIDTH, self.size.width), ENTRY_WIDTH)
        self.update(self._legend(ctx) + Text("\n") + body)

    def on_resize(self, event: events.Resize) -> None:
        if self._last is not None:
            self.show(*self._last)
