"""A DataTable of metric cells whose styles come from the theme (component classes).

Rows are replaced wholesale when their order changes (sorting, filtering) and updated cell by
cell otherwise, so a steady 10 frames/s costs only the cells that changed. The cursor follows its
row's key, not its position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.console import JustifyMethod
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable

from sectormon.ui.cells import Cell

VALUE_WIDTH = 7
"""Width of a metric column: a 6-character cell (``+12.3%``, ``~1.23k``) and one space before it.

Cell padding is 0 so that 48 cores fit two tables side by side at 160 columns."""


class MetricTable(DataTable[Text]):
    """Rows keyed by scope (a core, a CMG), columns keyed by metric."""

    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {
        "metric-table--low",
        "metric-table--na",
        "metric-table--better",
        "metric-table--worse",
        "metric-table--label",
    }

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, cursor: bool = True, padding: int = 0
    ) -> None:
        super().__init__(
            id=id,
            classes=classes,
            cursor_type="row" if cursor else "none",
            show_cursor=cursor,
            zebra_stripes=False,
            cell_padding=padding,
        )
        self.can_focus = cursor
        self._shown: dict[tuple[str, str], Cell] = {}
        self._order: list[str] = []
        self._column_keys: list[str] = []
        self._styles: dict[str, Style] = {}

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
        self.clear(columns=True)
        self._shown.clear()
        self._order = []
        self._column_keys = [key for key, _ in columns]
        for index, (key, label) in enumerate(columns):
            if widths is not None and key in widths:
                width = widths[key]
                justify: JustifyMethod = "left" if index == 0 or width is None else "right"
                self.add_column(Text(label, justify=justify), key=key, width=width)
            elif index == 0:
                width = max(first_width or 0, len(label) + 1)
                self.add_column(Text(label), key=key, width=width)
            else:
                width = max(VALUE_WIDTH, len(label) + 1)
                self.add_column(Text(label, justify="right"), key=key, width=width)

    @property
    def column_keys(self) -> list[str]:
        return list(self._column_keys)

    @staticmethod
    def table_width(labels: Sequence[str], first_width: int) -> int:
        """Columns the table needs (what :meth:`set_columns` will allocate)."""
        if not labels:
            return 0
        first = max(first_width, len(labels[0]) + 1)
        return first + sum(max(VALUE_WIDTH, len(label) + 1) for label in labels[1:])

    # -- rows ----------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        """Styles were re-applied (focus, theme): re-render cells only if a role's colour changed."""
        super().notify_style_update()
        self.restyle()

    def restyle(self) -> None:
        """Re-read the role styles from the theme; redraw the cells when they changed."""
        if not self.is_mounted:
            return
        fresh = {
            role: self.get_component_rich_style(f"metric-table--{role}", partial=True)
            for role in ("low", "na", "better", "worse", "label")
        }
        if fresh == self._styles:
            return
        self._styles = fresh
        for (key, column), cell in self._shown.items():
            self.update_cell(key, column, self.render_cell(cell))

    def _role_style(self, role: str) -> Style:
        style = self._styles.get(role)
        if style is None:
            style = self.get_component_rich_style(f"metric-table--{role}", partial=True)
            self._styles[role] = style
        return style

    def render_cell(self, cell: Cell) -> Text:
        style = Style()
        for role in cell.roles:
            style += self._role_style(role)
        return Text(cell.text, style=style, justify="right" if cell.right else "left", no_wrap=True)

    def set_rows(self, rows: Sequence[tuple[str, Sequence[Cell]]]) -> None:
        """Show these rows in this order; only changed cells are touched when the order holds."""
        keys = [key for key, _ in rows]
        if keys != self._order:
            self._replace_rows(rows)
            return
        for key, cells in rows:
            for column, cell in zip(self._column_keys, cells, strict=False):
                if self._shown.get((key, column)) != cell:
                    self._shown[(key, column)] = cell
                    self.update_cell(key, column, self.render_cell(cell))

    def _replace_rows(self, rows: Sequence[tuple[str, Sequence[Cell]]]) -> None:
        selected = self.selected_key()
        self.clear()
        self._shown.clear()
        self._order = [key for key, _ in rows]
        for key, cells in rows:
            for column, cell in zip(self._column_keys, cells, strict=False):
                self._shown[(key, column)] = cell
            self.add_row(*(self.render_cell(cell) for cell in cells), key=key)
        if selected is not None and selected in self._order:
            self.move_cursor(row=self._order.index(selected), animate=False)

    def selected_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        if not self._order or not self.show_cursor:
            return None
        row = self.cursor_row
        if 0 <= row < len(self._order):
            return self._order[row]
        return None

    @property
    def row_keys(self) -> list[str]:
        return list(self._order)
