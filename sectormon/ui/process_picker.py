"""The process list (``sectormon top``, ``sectormon --pid`` with no value, ``p`` in the monitor).

htop's habits: a table of pid, user, CPU %, threads, resident memory and command, refreshed every
second; ``P``/``M``/``N``/``T`` sort by CPU, memory, pid or threads; ``/`` (or F4) filters as you
type; ``t`` (or F5) shows the tree; Enter attaches to the highlighted process; ``q`` or Escape
leaves without choosing. :class:`ProcessListScreen` is the list; it is dismissed with the chosen
pid (``None``: nothing chosen), so whoever opened it decides what attaching means: before a
session (:class:`ProcessPicker`, whose app returns the pid to the command) or over the monitor
(``p``, see :mod:`sectormon.ui.attach`). The list itself counts nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static

from sectormon.files.text import printable
from sectormon.host.process_table import ProcessRow, ProcessTable, as_tree, human_bytes, matching, ordered

REFRESH_SECONDS = 1.0

Snapshot = Callable[[], list[ProcessRow]]


class ProcessListScreen(ModalScreen[int | None]):
    """A list of processes to attach to; ``snapshot`` gives the rows (tests give their own),
    ``note`` says what attaching does (over the monitor: to the running session)."""

    DEFAULT_CSS = """
    ProcessListScreen { background: $background; }
    ProcessListScreen #title { height: 1; background: $primary-background; color: $text; padding: 0 1; }
    ProcessListScreen #note { height: auto; color: $text-warning; padding: 0 1; display: none; }
    ProcessListScreen #note.shown { display: block; }
    ProcessListScreen #filter { height: 3; display: none; }
    ProcessListScreen #filter.shown { display: block; }
    ProcessListScreen DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "attach", "Attach", show=True, priority=False),
        Binding("slash,f4", "filter", "Filter"),
        Binding("t,f5", "tree", "Tree"),
        Binding("P", "sort('cpu')", "CPU%"),
        Binding("M", "sort('memory')", "Mem"),
        Binding("N", "sort('pid')", "PID"),
        Binding("T", "sort('threads')", "Threads"),
        Binding("q,escape", "leave", "Quit"),
    ]

    def __init__(
        self, snapshot: Snapshot | None = None, *, refresh_seconds: float = REFRESH_SECONDS, note: str = ""
    ) -> None:
        super().__init__()
        self._snapshot: Snapshot = snapshot or ProcessTable().snapshot
        self._refresh_seconds = refresh_seconds
        self._note = note
        self._rows: list[ProcessRow] = []
        self._sort = "cpu"
        self._tree = False
        self._filter = ""
        self.shown: list[int] = []  # the pids in display order (what Enter picks from)

    def compose(self) -> ComposeResult:
        yield Static("", id="title", markup=False)
        yield Static(printable(self._note), id="note", markup=False, classes="shown" if self._note else "")
        yield Input(
            placeholder="filter: part of a command, user or pid (Enter or Escape to leave)", id="filter"
        )
        table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=True)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("PID", "USER", "CPU%", "THR", "MEM", "COMMAND")
        self._take_snapshot()
        self.set_interval(self._refresh_seconds, self._take_snapshot)
        table.focus()

    def _take_snapshot(self) -> None:
        self._rows = self._snapshot()
        self._show()

    def _show(self) -> None:
        table: DataTable[Text] = self.query_one(DataTable)
        chosen = (
            self.shown[table.cursor_row] if self.shown and 0 <= table.cursor_row < len(self.shown) else None
        )
        rows = matching(self._rows, self._filter)
        listed = as_tree(rows, self._sort) if self._tree else [(0, r) for r in ordered(rows, self._sort)]
        table.clear()
        self.shown = []
        for depth, row in listed:
            cpu = "n/a" if row.cpu_percent is None else f"{row.cpu_percent:.1f}"
            indent = ("  " * depth + "└ ") if depth else ""
            # Text, never markup: a command line or user name is the host's, not ours to interpret.
            table.add_row(
                Text(str(row.pid), justify="right"),
                Text(printable(row.user)[:10]),
                Text(cpu, justify="right"),
                Text(str(row.threads), justify="right"),
                Text(human_bytes(row.rss), justify="right"),
                Text(indent + printable(row.command)),
                key=str(row.pid),
            )
            self.shown.append(row.pid)
        if chosen in self.shown:
            table.move_cursor(row=self.shown.index(chosen))
        view = "tree" if self._tree else f"sorted by {self._sort}"
        where = f", filter {printable(self._filter)!r}" if self._filter else ""
        self.query_one("#title", Static).update(
            f"{len(self.shown)} of {len(self._rows)} processes, {view}{where}: Enter attaches"
        )

    # -- actions ------------------------------------------------------------------------------

    def _highlighted(self) -> int | None:
        """The pid of the highlighted row (``None``: the list is empty)."""
        row = self.query_one(DataTable).cursor_row
        return self.shown[row] if 0 <= row < len(self.shown) else None

    def action_attach(self) -> None:
        pid = self._highlighted()
        if pid is not None:
            self.dismiss(pid)

    def action_filter(self) -> None:
        box = self.query_one(Input)
        box.add_class("shown")
        box.focus()

    def action_tree(self) -> None:
        self._tree = not self._tree
        self._show()

    def action_sort(self, key: str) -> None:
        self._sort = key
        self._show()

    def action_leave(self) -> None:
        box = self.query_one(Input)
        if box.has_focus:
            self._close_filter()
            return
        self.dismiss(None)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_attach()  # Enter on the table: the table takes the key and says so

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._filter = event.value
        self._show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()  # the monitor's own filter bar answers its own Submitted, not this one's
        self._close_filter()

    def _close_filter(self) -> None:
        box = self.query_one(Input)
        if not box.value:
            box.remove_class("shown")
        self.query_one(DataTable).focus()


class ProcessPicker(App[int | None]):
    """The list on its own, before any session (``sectormon top``): the app's result is the pid."""

    TITLE = "sectormon: pick a process to count"

    def __init__(self, snapshot: Snapshot | None = None, *, refresh_seconds: float = REFRESH_SECONDS) -> None:
        super().__init__()
        self.list = ProcessListScreen(snapshot, refresh_seconds=refresh_seconds)

    @property
    def shown(self) -> list[int]:
        """The pids in display order."""
        return self.list.shown

    def on_mount(self) -> None:
        self.push_screen(self.list, self.exit)
