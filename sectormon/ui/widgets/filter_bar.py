"""The ``/`` core filter: a one-line input (CPU ranges, ``cmgN``, ``unbound``), Enter applies,
Escape cancels; an empty filter shows every core."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

PLACEHOLDER = "filter cores: 12-23,40  cmg1  unbound  (empty = all; Enter apply, Esc cancel)"


class FilterBar(Input):
    """Hidden until ``/``; posts :class:`FilterBar.Cancelled` on Escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel", show=False)]

    class Cancelled(Message):
        """The user left the filter without applying it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder=PLACEHOLDER, id=id)

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())
