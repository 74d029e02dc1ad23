"""Attaching the live monitor to another process (``p``): what the TUI asks of the command that runs it.

The TUI shows sessions, it does not make them: which source, profile, rotation and recording a
session has is the command line's, read by the command layer (``commands/monitor.py``). So ``p``
only picks a pid; an :class:`AttachOffer`, given by the command that started the session, says
whether this session can be followed by one on another process, what that does to this one (said
above the list), and takes the request. The app then ends its session as ``q`` does and the
command starts the next one, with the same options, on ``--pid PID``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from textual.app import App

from sectormon.ui.process_picker import ProcessListScreen


class AttachOffer(Protocol):
    """The command layer's offer to count another process once this session ends."""

    def refusal(self) -> str | None:
        """Why this session cannot be followed by one on another process (``None``: it can)."""
        ...

    def note(self) -> str:
        """What attaching does to the running session (its recording, a launched command)."""
        ...

    def request(self, pid: int) -> str | None:
        """Count ``pid`` once this session has ended; why not (``None``: requested)."""
        ...


def attach_refusal(offer: AttachOffer | None, *, replay: bool) -> str | None:
    """Why ``p`` cannot attach here (``None``: it can): a replay, a command that offers nothing
    (``sectormon sim``), or the offer's own reason."""
    if replay:
        return "a replay cannot attach to a process: it shows a recording (sectormon --pid PID counts one)"
    if offer is None:
        return "this command cannot attach to another process: sectormon --pid PID (or top) counts one"
    return offer.refusal()


def open_process_list(
    app: App[Any], offer: AttachOffer | None, *, replay: bool, then: Callable[[], None]
) -> None:
    """``p``: the list over ``app``, or a notification saying why not. A pid chosen is requested
    from ``offer``, then ``then`` ends the session (the command starts the next one); Escape
    leaves the monitor untouched."""
    refusal = attach_refusal(offer, replay=replay)
    if refusal is not None or offer is None:
        app.notify(refusal or "", severity="warning", timeout=6)
        return

    def chosen(pid: int | None) -> None:
        if pid is None:
            return
        refused = offer.request(pid)
        if refused is None:
            then()
        else:
            app.notify(refused, severity="error", timeout=8)

    app.push_screen(ProcessListScreen(note=offer.note()), chosen)
