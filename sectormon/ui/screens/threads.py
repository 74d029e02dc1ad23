"""The thread list (``T``): the counted processes' threads, where they run and whether bound.

Binding matters for the sector cache (PMU document section 6.7): this list shows, per thread, its
CPU % (of one core, over the last refresh), the kernel's state letter, the CPU it last ran on, its
affinity as a compact CPU list and whether that is one CPU (bound). It is read from procfs
(:mod:`sectormon.host.thread_table`) once a second while the list is open, not with every frame:
two small reads per thread, about 2 ms for 48 threads (bench_thread_list in docs/perf-tuning.md),
which a 0.1 s interval would pay ten times a second for figures no one reads faster. Only a live
session on this host's processes has threads to list; :func:`thread_list_refusal` says why
another has none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.files.text import printable
from sectormon.host.thread_table import ThreadRow, ThreadTable

REFRESH_SECONDS = 1.0

ThreadSnapshot = Callable[[], Sequence[ThreadRow]]

STATES = "R running, S sleeping, D waiting, T stopped"


def thread_list_refusal(header: Header, *, replay: bool) -> str | None:
    """Why this session has no threads of this host's processes to list (``None``: it has)."""
    if replay:
        return "threads: a replay's threads ran when it was recorded; they are not this host's processes now"
    if header.source.modelled:
        return "threads: the simulated A64FX's threads are not processes of this host"
    if header.target.mode == "cpus":
        return "threads: a --cpus session counts CPUs, not processes (the g key groups them by process)"
    return None


def target_pids(header: Header, counted: Sequence[str]) -> list[int]:
    """The processes whose threads are listed: the header's target processes and every counted
    process (``counted``: the frame's ``processes`` keys, children the target started)."""
    listed = header.target.fields.get("pids")
    pids = {p for p in listed if isinstance(p, int)} if isinstance(listed, list) else set()
    pids.update(int(key) for key in counted if key.isdigit())
    return sorted(pids)


class ThreadListScreen(ModalScreen[None]):
    """The threads ``snapshot`` reads (the app gives a procfs reader, tests fixed rows)."""

    DEFAULT_CSS = """
    ThreadListScreen { background: $background; }
    ThreadListScreen #threads-title {
        height: auto; background: $primary-background; color: $text; padding: 0 1;
    }
    ThreadListScreen DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "close"),
        Binding("T", "dismiss", "close", show=False),
        Binding("q", "dismiss", "close", show=False),
    ]

    def __init__(self, snapshot: ThreadSnapshot, *, refresh_seconds: float = REFRESH_SECONDS) -> None:
        super().__init__()
        self._snapshot = snapshot
        self._refresh_seconds = refresh_seconds
        self.shown: list[int] = []  # the tids in display order

    @classmethod
    def of_target(cls, header: Header, latest: Callable[[], Frame | None]) -> ThreadListScreen:
        """The list of a live session's threads, read from procfs: those of the target processes
        and of every process the ``latest`` frame counts."""
        table = ThreadTable()

        def snapshot() -> list[ThreadRow]:
            frame = latest()
            return table.snapshot(target_pids(header, list(frame.processes) if frame is not None else []))

        return cls(snapshot)

    def compose(self) -> ComposeResult:
        yield Static("", id="threads-title", markup=False)
        table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=True)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("TID", "PID", "NAME", "CPU%", "S", "LAST", "AFFINITY", "BOUND")
        self._take_snapshot()
        self.set_interval(self._refresh_seconds, self._take_snapshot)
        table.focus()

    def _take_snapshot(self) -> None:
        rows = list(self._snapshot())
        table: DataTable[Text] = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        self.shown = []
        for row in rows:
            bound = {True: "yes", False: "no", None: "n/a"}[row.bound]
            table.add_row(
                Text(str(row.tid), justify="right"),
                Text(str(row.pid), justify="right"),
                Text(printable(row.name)),  # the thread's own name: text, never markup
                Text("n/a" if row.cpu_percent is None else f"{row.cpu_percent:.1f}", justify="right"),
                Text(row.state),
                Text("n/a" if row.last_cpu is None else str(row.last_cpu), justify="right"),
                Text(row.affinity_text),
                Text(bound),
                key=str(row.tid),
            )
            self.shown.append(row.tid)
        if 0 <= cursor < len(rows):
            table.move_cursor(row=cursor)
        bound_count = sum(1 for r in rows if r.bound)
        self.query_one("#threads-title", Static).update(
            f"{len(rows)} threads, {bound_count} bound to one CPU. CPU%: of one core over "
            f"{self._refresh_seconds:g} s (n/a at first); LAST: the CPU it ran on last; S: {STATES}. "
            "Esc closes."
        )


def open_thread_list(
    app: App[Any], header: Header, latest: Callable[[], Frame | None], *, replay: bool
) -> None:
    """``T``: the list of a live session's threads over ``app``, or a notification saying why not."""
    refusal = thread_list_refusal(header, replay=replay)
    if refusal is not None:
        app.notify(refusal, severity="warning", timeout=6)
        return
    app.push_screen(ThreadListScreen.of_target(header, latest))
