"""Hot spots of a sampling session (``--sample``): the hottest functions or data objects.

It shows the frame's table for the chosen window exactly as the session made it: the last interval,
or the whole run (hot spots keep no rolling window, so the rolling window shows the whole run and
says so). Rows show the share as a bar, samples, estimate, location and latency buckets; the header
says how the numbers were made. ``o`` switches between functions and data objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.reactive import reactive
from textual.widgets import Static

from sectormon.data.frames import Frame
from sectormon.data.hotspot_table import HotspotRow, HotspotTable
from sectormon.data.hotspots import FrameHotspots
from sectormon.files.text import printable
from sectormon.ui.bars import bar_segments
from sectormon.ui.context import RenderContext, window_title
from sectormon.ui.format import NA

MODES = ("functions", "objects")
BAR_WIDTH = 16
NAME_WIDTH = 28
MODULE_WIDTH = 18
DETAIL_WIDTH = 16
NO_ROLLING = "whole run (hot spots keep no rolling window)"


def hotspot_window(hotspots: FrameHotspots, window: str, frame: Frame) -> tuple[HotspotTable, str]:
    """The table of the chosen window and its title."""
    if window == "interval":
        return hotspots.interval, window_title(window, frame)
    return hotspots.run, NO_ROLLING if window == "recent" else window_title(window, frame)


def _count(value: float | None, digits: int = 0) -> str:
    return NA if value is None else f"{value:,.{digits}f}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class HotspotView(Static):
    """One table of the shown frame's hot spots; :attr:`mode` picks functions or data objects."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "hotspot-view--bar",
        "hotspot-view--empty",
        "hotspot-view--label",
        "hotspot-view--warn",
    }

    mode: reactive[str] = reactive("functions")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._last: tuple[Frame, RenderContext] | None = None

    def watch_mode(self, _mode: str) -> None:
        if self._last is not None:
            self.show(*self._last)

    def next_mode(self) -> str:
        """Switch between functions and data objects; the new mode."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        return self.mode

    def _style(self, role: str) -> Style:
        return self.get_component_rich_style(f"hotspot-view--{role}", partial=True)

    def show(self, frame: Frame, ctx: RenderContext) -> None:
        self._last = (frame, ctx)
        hotspots = frame.hotspots
        if hotspots is None:
            self.update(
                Text("this frame has no hot spots (the session samples nothing)", self._style("label"))
            )
            return
        table, title = hotspot_window(hotspots, ctx.window, frame)
        text = self._header(hotspots, table, title)
        objects = self.mode == "objects"
        rows = table.objects if objects else table.functions
        total = table.counts.get("objects" if objects else "functions", len(rows))
        text.append("\n")
        if objects and table.samples and not table.with_address:
            text.append(
                "Data objects: none (no sample carried a data address: this event or PMU gives none)",
                self._style("label"),
            )
        else:
            text.append_text(self._table(rows, total, table.bucket_names, objects))
        self.update(text)

    def _header(self, hotspots: FrameHotspots, table: HotspotTable, title: str) -> Text:
        settings = hotspots.settings
        if settings.period:
            how = "every event" if settings.period == 1 else f"one in {settings.period:,} events"
        else:
            how = f"about {settings.freq:,} a second"
        label = self._style("label")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(
            printable(f"Hot spots of {settings.event} ({settings.spec}), sampled {how}"), Style(bold=True)
        )
        text.append(f"   window: {title}", label)
        text.append("\n")
        text.append(f"{table.samples:,} samples, ")
        text.append(f"{table.lost:,} lost", self._style("warn") if table.lost else Style())
        if table.total is None:
            text.append("   counted total: n/a (no estimates)", label)
        else:
            scaled = ", scaled for multiplexing" if hotspots.multiplexed else ""
            text.append(f"   counted total {table.total:,} events{scaled}   scale {_count(table.scale, 3)}")
        text.append("\n")
        text.append(printable(f"a sample carries {settings.carries}") if settings.carries else "", label)
        return text

    def _table(self, rows: Sequence[HotspotRow], total: int, buckets: Sequence[str], objects: bool) -> Text:
        label = self._style("label")
        name_head = "data object" if objects else "function"
        detail_head = "kind" if objects else "source"
        head = (
            f"{'share':<{BAR_WIDTH + 7}} {'samples':>9} {'estimate':>12}  {name_head:<{NAME_WIDTH}} "
            f"{'module':<{MODULE_WIDTH}} {detail_head:<{DETAIL_WIDTH}}"
        )
        head += "".join(f" {printable(b):>10}" for b in buckets)
        shown = f"{len(rows)} of {total}" if len(rows) < total else str(total)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{'Data objects' if objects else 'Functions'} ({shown}), hottest first   o: ", label)
        text.append("functions / data objects", label)
        text.append("\n")
        text.append(head, label)
        if not rows:
            text.append("\n  (no samples in this window)", label)
            return text
        for row in rows:
            text.append("\n")
            for run, index in bar_segments([row.share], ("█",), BAR_WIDTH):
                text.append(run, self._style("bar" if index == 0 else "empty"))
            text.append(f" {100 * row.share:5.1f}% {row.samples:>9,} {_count(row.estimate):>12}  ")
            name = _cut(printable(row.name), NAME_WIDTH)  # symbols and paths come from the binaries
            module = _cut(printable(row.module), MODULE_WIDTH)
            detail = _cut(printable(row.detail or ""), DETAIL_WIDTH)
            text.append(f"{name:<{NAME_WIDTH}} {module:<{MODULE_WIDTH}} {detail:<{DETAIL_WIDTH}}")
            if row.buckets is not None:
                text.append("".join(f" {n:>10,}" for n in row.buckets))
        return text

    def on_resize(self, event: events.Resize) -> None:
        if self._last is not None:
            self.show(*self._last)
