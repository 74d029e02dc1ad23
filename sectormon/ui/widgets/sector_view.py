"""Sector utilization: per core, bars of SCE usage (accesses under sector-cache control) and of the
non-sector-0 share, with each CMG's configured sector ways when the session knows them."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widgets import Static

from sectormon.data.frames import Frame, ScopeStats, scope_order
from sectormon.files.text import printable
from sectormon.ui.bars import bar_segments, grid_text
from sectormon.ui.context import RenderContext
from sectormon.ui.format import NA, format_value, is_low_confidence, metric_value
from sectormon.ui.header_info import l1_sector_ways, sector_ways

ROLES = ("sce", "nonsec0")
GLYPHS = ("█", "▓")
LABEL_WIDTH = 8
BAR_WIDTH = 20
ENTRY_WIDTH = LABEL_WIDTH + 2 * (BAR_WIDTH + 9)


class SectorView(Static):
    """Two bars per core (and the total); the first line per CMG names its sector ways."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "sector-view--sce",
        "sector-view--nonsec0",
        "sector-view--empty",
        "sector-view--low",
        "sector-view--label",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._last: tuple[Frame, RenderContext] | None = None

    def _style(self, role: str) -> Style:
        return self.get_component_rich_style(f"sector-view--{role}", partial=True)

    def _config_lines(self, frame: Frame, ctx: RenderContext) -> Text:
        config = ctx.header.sector_config
        cmgs = sorted(ctx.scopes(frame).cmgs, key=scope_order)
        ways = sector_ways(config, cmgs)
        text = Text(no_wrap=True, overflow="ellipsis")
        if ways:
            parts = [f"CMG{cmg}: {ways[cmg]}" for cmg in cmgs if cmg in ways]
            text.append("L2 sector ways  ", self._style("label"))
            text.append(printable("   ".join(parts)))
        else:
            text.append(
                "L2 sector ways: not known (no sector configuration in the session header)",
                self._style("low"),
            )
        l1 = l1_sector_ways(config)
        if l1:
            text.append(printable(f"   L1D sector ways {l1}"))
        text.append("\n")
        names = ("SCE usage (tagged accesses)", "non-sector-0 share")
        for glyph, role, name in zip(GLYPHS, ROLES, names, strict=True):
            text.append(glyph * 2, self._style(role))
            text.append(f" {name}   ")
        text.append("~ low confidence", self._style("label"))
        return text

    def entry(self, label: str, stats: ScopeStats | None, ctx: RenderContext) -> Text:
        text = Text(no_wrap=True)
        text.append(f"{printable(label):<{LABEL_WIDTH}}", self._style("label"))  # a recording's keys
        for column, glyph, role in zip(ctx.panels.sector, GLYPHS, ROLES, strict=False):
            value = metric_value(stats, column.metric)
            for run, index in bar_segments([value], glyph, BAR_WIDTH):
                text.append(run, self._style(role if index == 0 else "empty"))
            low = (
                stats is not None
                and value is not None
                and is_low_confidence(stats, column.metric, ctx.low_coverage)
            )
            shown = format_value(value, ctx.units.get(column.metric, "ratio"), with_unit=False)
            text.append(
                f" {('~' if low else '') + shown:>7} ",
                self._style("low") if (low or shown == NA) else Style(),
            )
        return text

    def show(self, frame: Frame, ctx: RenderContext) -> None:
        self._last = (frame, ctx)
        if not ctx.panels.sector:
            self.update(printable(f"profile {ctx.panels.profile or '?'} defines no sector-cache metrics"))
            return
        entries = [self.entry(label, stats, ctx) for label, stats in ctx.total_and_cores(frame)]
        body = grid_text(entries, max(ENTRY_WIDTH, self.size.width), ENTRY_WIDTH)
        self.update(self._config_lines(frame, ctx) + Text("\n") + body)

    def on_resize(self, event: events.Resize) -> None:
        if self._last is not None:
            self.show(*self._last)
