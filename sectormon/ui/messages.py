"""Messages crossing from the pipeline thread into the UI.

The sampler never waits for the UI: its callback only posts :class:`FrameArrived` and returns.
Textual's message loop, on taking a message from the queue, checks whether the *next* pending
message can supersede it (``taken.can_replace(pending)`` in ``MessagePump._process_messages_loop``)
and if so drops the taken one. A newer frame always supersedes an older one, so a slow screen
skips stale frames instead of queueing them; ``seq`` lets the app count what it skipped.
"""

from __future__ import annotations

from textual.message import Message

from sectormon.data.frames import Frame


class FrameArrived(Message, bubble=False):
    """A new frame from the session (posted from the pipeline thread)."""

    def __init__(self, frame: Frame, seq: int) -> None:
        super().__init__()
        self.frame = frame
        self.seq = seq

    def can_replace(self, message: Message) -> bool:
        # Textual calls this on the queued message with the one behind it: a later frame wins.
        return isinstance(message, FrameArrived) and message.seq > self.seq


class SessionWarning(Message, bubble=False):
    """A one-line warning from the session thread (recording failed, units vanished...)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class OpenDetail(Message):
    """The user picked a row: show every metric of this scope (``core``, ``cmg`` or ``total``)."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__()
        self.kind = kind
        self.key = key


class RedrawWanted(Message):
    """A screen that draws frames is shown again: draw the newest frame on it."""


class OpenRegion(Message):
    """The user picked a region (its label, ``name`` or ``name#N``): show its breakdown."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label
