"""The warnings log (``l``): every warning of the session, when it came and how often.

Warnings are not notifications: six or seven of them stacked over the right third of the tables
for seconds. The header says how many there are and the newest in one line; this screen keeps
all of them, with the wall-clock time each first came, the session time of the newest frame then,
and how often it came again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sectormon.files.text import printable
from sectormon.ui.format import format_si


@dataclass(slots=True)
class WarningEntry:
    """One distinct warning: its text, when it first came (wall clock and session time), how often."""

    text: str
    wall: float
    t: float | None = None
    count: int = 1


def warning_lines(entries: Sequence[WarningEntry]) -> list[str]:
    """The log as lines, oldest first: ``12:03:04  t 1.50s  text  (×3)``; input text made printable
    (a warning quotes labels and paths from files)."""
    lines = [f"Warnings ({len(entries)})" if entries else "No warnings so far."]
    for entry in entries:
        clock = time.strftime("%H:%M:%S", time.localtime(entry.wall))
        at = f"t {format_si(entry.t, 's')}" if entry.t is not None else "t —"
        again = f"  (×{entry.count})" if entry.count > 1 else ""
        lines.append(f"  {clock}  {at:<10} ⚠ {printable(entry.text)}{again}")
    return lines


class WarningsScreen(ModalScreen[None]):
    """Modal list of every warning; closes on Escape, ``l`` or ``q``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "close"),
        Binding("l", "dismiss", "close", show=False),
        Binding("q", "dismiss", "close", show=False),
    ]

    def __init__(self, entries: Sequence[WarningEntry]) -> None:
        super().__init__()
        self.text = "\n".join([*warning_lines(entries), "", "Esc, l or q closes this list."])

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="warnings-body"):
            yield Static(self.text, id="warnings-text", markup=False)
