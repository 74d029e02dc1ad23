"""A fast table of metric cells (Line API): a fixed header row, a row cursor, click-to-sort headers.

Textual's DataTable renders every cell through Rich on each change, too slow for a 48-core frame
(bench_ui in docs/perf-tuning.md); this table builds each line's segments directly (cells are
short, fixed-width strings) and only rebuilds the rows whose cells changed. Styles come from the
theme through component classes; the cursor follows its row's key, not its position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from sectormon.files.text import printable
from sectormon.ui.cells import Cell

VALUE_WIDTH = 7
"""Width of a metric column: a 6-character cell (``+12.3%``, ``~1.23k``) and one space before it.

Cell padding is 0 by default so that 48 cores fit two tables side by side at 160 columns."""

ROLES = ("low", "na", "better", "worse", "label")


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    key: str
    label: str
    width: int | None
    right: bool


def _fit(text: str, width: int, right: bool) -> str:
    """Pad or cut to ``width`` cells. Labels come from files and profiles (process names, metric
    names): control characters are escaped (a Segment goes to the terminal as it is) and wide
    characters counted as two cells; the usual cell (short, ASCII) takes the fast path."""
    if not (text.isascii() and text.isprintable()):
        text = printable(text)
        size = cell_len(text)
        if size > width:
            return set_cell_size(text, max(0, width - 1)) + "…" if width > 0 else ""
        pad = " " * (width - size)
        return pad + text if right else text + pad
    if len(text) > width:
        return text[: max(0, width - 1)] + "…" if width > 0 else ""
    return text.rjust(width) if right else text.ljust(width)


class MetricTable(ScrollView, can_focus=True):
    """Rows keyed by scope (a core, a CMG), columns keyed by metric."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "open", show=False),
        Binding("up", "cursor(-1)", show=False),
        Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("ctrl+home", "first", show=False),
        Binding("ctrl+end", "last", show=False),
        Binding("left", "scroll_left", show=False),
        Binding("right", "scroll_right", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metric-table--header",
        "metric-table--cursor",
        "metric-table--cursor-blurred",
        *(f"metric-table--{role}" for role in ROLES),
    }

    class RowSelected(Message):
        """Enter (or a click on the cursor row) picked a row."""

        def __init__(self, table: MetricTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> MetricTable:
            return self.table

    class HeaderSelected(Message):
        """A click on a column header."""

        def __init__(self, table: MetricTable, column: str) -> None:
            super().__init__()
            self.table = table
            self.column = column

        @property
        def control(self) -> MetricTable:
            return self.table

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, cursor: bool = True, padding: int = 0
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.can_focus = cursor
        self.show_cursor = cursor
        self.padding = padding
        self._columns: list[ColumnSpec] = []
        self._widths: list[int] = []
        self._order: list[str] = []
        self._cells: dict[str, list[Cell]] = {}
        self._strips: dict[tuple[str, bool], Strip] = {}
        self._header: Strip | None = None
        self._styles: dict[str, Style] = {}
        self.cursor_row = 0

    # -- columns -------------------------------------------------------------------------------

    def set_columns(
        self,
        columns: Sequence[tuple[str, str]],
        *,
        first_width: int | None = None,
        widths: Mapping[str, int | None] | None = None,
    ) -> None:
        """Replace the columns: (key, label) pairs; the first is the left-aligned row label.

        Value columns get :data:`VALUE_WIDTH` (or ``widths[key]``; ``None`` there = fit content).
        """
        specs: list[ColumnSpec] = []
        for index, (key, label) in enumerate(columns):
            if widths is not None and key in widths:
                width = widths[key]
                right = index != 0 and width is not None
            elif index == 0:
                width, right = max(first_width or 0, cell_len(label) + 1), False
            else:
                width, right = max(VALUE_WIDTH, cell_len(label) + 1), True
            specs.append(ColumnSpec(key, label, width, right))
        self._columns = specs
        self._order = []
        self._cells.clear()
        self._layout()

    @property
    def column_keys(self) -> list[str]:
        return [c.key for c in self._columns]

    @staticmethod
    def table_width(labels: Sequence[str], first_width: int) -> int:
        """Columns the table needs with default widths (what :meth:`set_columns` allocates)."""
        if not labels:
            return 0
        first = max(first_width, cell_len(labels[0]) + 1)
        return first + sum(max(VALUE_WIDTH, cell_len(label) + 1) for label in labels[1:])

    def _layout(self) -> None:
        """Resolve automatic widths, then size the virtual canvas; drop every cached line."""
        widths: list[int] = []
        for index, column in enumerate(self._columns):
            if column.width is not None:
                widths.append(column.width)
                continue
            longest = max(
                (cell_len(self._cells[k][index].text) for k in self._order if index < len(self._cells[k])),
                default=0,
            )
            widths.append(max(longest, cell_len(column.label)))
        self._widths = widths
        self._strips.clear()
        self._header = None
        self.virtual_size = Size(self._line_width(), len(self._order) + 1)
        self.refresh()

    def _line_width(self) -> int:
        return sum(self._widths) + 2 * self.padding * len(self._widths)

    # -- rows ----------------------------------------------------------------------------------

    def set_rows(self, rows: Sequence[tuple[str, Sequence[Cell]]]) -> None:
        """Show these rows in this order; only rows whose cells changed are redrawn."""
        keys = [key for key, _ in rows]
        selected = self.selected_key()
        reordered = keys != self._order
        changed = False
        for key, cells in rows:
            cells = list(cells)
            if self._cells.get(key) != cells:
                self._cells[key] = cells
                self._strips.pop((key, True), None)
                self._strips.pop((key, False), None)
                changed = True
        if reordered:
            for gone in set(self._order) - set(keys):
                self._cells.pop(gone, None)
            self._order = keys
            if selected in keys:
                self.cursor_row = keys.index(selected)
            self.cursor_row = min(self.cursor_row, max(0, len(keys) - 1))
        if any(c.width is None for c in self._columns) and (changed or reordered):
            self._layout()
        elif reordered:
            self.virtual_size = Size(self._line_width(), len(keys) + 1)
            self.refresh()
        elif changed:
            self.refresh()

    def selected_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        if self.show_cursor and 0 <= self.cursor_row < len(self._order):
            return self._order[self.cursor_row]
        return None

    @property
    def row_keys(self) -> list[str]:
        return list(self._order)

    def cell_text(self, key: str, column: str) -> str:
        """The text shown in one cell (for tests and the detail screen)."""
        index = self.column_keys.index(column)
        return self._cells[key][index].text

    # -- rendering -----------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        """Styles changed (theme, focus): rebuild the cached lines with the new colours."""
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()
        self._header = None

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self.get_component_rich_style(f"metric-table--{name}", partial=True)
            self._styles[name] = style
        return style

    def _base(self) -> Style:
        # Widget.rich_style walks the ancestors: once per style change, not once per line.
        style = self._styles.get("")
        if style is None:
            style = self._styles[""] = self.rich_style
        return style

    def _build(self, texts: Sequence[tuple[str, Style | None]], base: Style) -> Strip:
        pad = " " * self.padding
        segments = [
            Segment(pad + _fit(text, width, column.right) + pad, base + style if style else base)
            for (text, style), width, column in zip(texts, self._widths, self._columns, strict=False)
        ]
        return Strip(segments, self._line_width())

    def _header_strip(self) -> Strip:
        if self._header is None:
            header = self._style("header")
            self._header = self._build([(c.label, None) for c in self._columns], self._base() + header)
        return self._header

    def _row_strip(self, index: int) -> Strip:
        key = self._order[index]
        cursor = self.show_cursor and index == self.cursor_row
        cached = self._strips.get((key, cursor))
        if cached is not None:
            return cached
        base = self._base()
        if cursor:
            base = base + self._style("cursor" if self.has_focus else "cursor-blurred")
        texts: list[tuple[str, Style | None]] = []
        for cell in self._cells.get(key, []):
            style: Style | None = None
            for role in cell.roles:
                style = self._style(role) if style is None else style + self._style(role)
            texts.append((cell.text, style))
        strip = self._build(texts, base)
        self._strips[(key, cursor)] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            strip = self._header_strip()
        else:
            index = y - 1 + scroll_y
            if not 0 <= index < len(self._order):
                return Strip.blank(width, self._base())
            strip = self._row_strip(index)
        return strip.crop_extend(scroll_x, scroll_x + width, self._base())

    # -- cursor and selection ------------------------------------------------------------------

    def _visible_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def move_cursor(self, row: int) -> None:
        if not self._order:
            return
        row = max(0, min(len(self._order) - 1, row))
        self.cursor_row = row
        top = int(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + self._visible_rows():
            self.scroll_to(y=row - self._visible_rows() + 1, animate=False)
        self.refresh()

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + int(step))

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + int(direction) * self._visible_rows())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self._order) - 1)

    def action_select(self) -> None:
        key = self.selected_key()
        if key is not None:
            self.post_message(self.RowSelected(self, key))

    def _column_at(self, x: int) -> str | None:
        position = 0
        for column, width in zip(self._columns, self._widths, strict=False):
            position += width + 2 * self.padding
            if x < position:
                return column.key
        return None

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            column = self._column_at(event.x + int(self.scroll_x))
            if column is not None:
                event.stop()
                self.post_message(self.HeaderSelected(self, column))
            return
        index = event.y - 1 + int(self.scroll_y)
        if not self.show_cursor or not 0 <= index < len(self._order):
            return
        event.stop()
        if index == self.cursor_row or event.chain > 1:
            self.move_cursor(index)
            self.action_select()
        else:
            self.move_cursor(index)

    def on_focus(self) -> None:
        self._strips.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()
