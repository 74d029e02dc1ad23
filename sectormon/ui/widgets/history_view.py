"""History: a sparkline per selected metric (total scope, last frames), with its latest value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Label, Static

from sectormon.files.text import printable
from sectormon.ui.bars import spark_rows
from sectormon.ui.context import RenderContext
from sectormon.ui.format import format_value
from sectormon.ui.history import History

NAME_WIDTH = 40


def _key(metric: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in metric)


class SparkText(Static):
    """A sparkline as text, as tall as the widget: the upper half of the range in the theme's
    "max" colour, the lower in its "min" colour. One line of text per row: Textual's Sparkline
    draws one renderable per bar, most of a frame's drawing with the history on screen
    (docs/perf-tuning.md)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"spark-text--low", "spark-text--high"}

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes, markup=False)
        self._values: list[float] = []
        self._shown: Text | None = None

    def show(self, values: Sequence[float]) -> None:
        self._values = list(values)
        width, height = self.content_size
        text = Text(no_wrap=True, overflow="crop")
        low = self.get_component_rich_style("spark-text--low", partial=True)
        high = self.get_component_rich_style("spark-text--high", partial=True)
        for index, (line, upper) in enumerate(spark_rows(self._values, width, height)):
            if index:
                text.append("\n")
            start = 0
            for column in range(1, len(line) + 1):
                if column == len(line) or upper[column] != upper[start]:
                    text.append(line[start:column], high if upper[start] else low)
                    start = column
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)

    def on_resize(self, _event: events.Resize) -> None:
        self.show(self._values)


class HistoryView(VerticalScroll):
    """One row per metric of the layout's ``history`` panel."""

    def __init__(self, ctx: RenderContext, history: History, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._ctx = ctx
        self._history = history

    def compose(self) -> ComposeResult:
        yield Label(
            f"History of the total (last {self._history.length} frames; n/a points left out)",
            classes="panel-title",
            markup=False,
        )
        if not self._ctx.panels.history:
            yield Label("no metrics to plot", classes="panel-note", markup=False)
        for column in self._ctx.panels.history:
            with Horizontal(classes="history-row"):
                yield Label("", id=f"hist-label-{_key(column.metric)}", classes="history-label", markup=False)
                yield SparkText(id=f"hist-spark-{_key(column.metric)}", classes="history-spark")

    def set_row_height(self, rows: int) -> None:
        """Give each sparkline ``rows`` lines (the panel below the tables on a tall screen)."""
        for row in self.query(".history-row"):
            if row.styles.height is None or row.styles.height.value != rows:
                row.styles.height = rows

    def refresh_history(self) -> None:
        for column in self._ctx.panels.history:
            key = _key(column.metric)
            latest = self._history.latest(column.metric)
            unit = self._ctx.units.get(column.metric, "")
            values = self._history.values(column.metric)
            text = printable(f"{column.metric} {format_value(latest, unit)}")  # a profile's names
            if values:
                # The line is scaled to its own lowest and highest point: say what they are, or a
                # 0.07 % wobble reads as a swing and a constant as zero.
                low = format_value(min(values), unit, with_unit=False)
                high = format_value(max(values), unit, with_unit=False)
                text += f"  {low}…{high}"
            # A fixed-size label: no relayout of the screen per frame (the panel below the
            # tables redraws on every frame).
            self.query_one(f"#hist-label-{key}", Label).update(f"{text:<{NAME_WIDTH}}", layout=False)
            self.query_one(f"#hist-spark-{key}", SparkText).show(values)
