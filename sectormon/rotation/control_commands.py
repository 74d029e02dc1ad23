"""The words of perf's control protocol (``perf stat --control``), read as perf reads them.

A controlling script writes one command per line (or NUL-terminated) to the control descriptor;
perf matches the start of the line against its command words, so ``enable`` and ``enable NAME``
are one command with an optional argument after a single space, and ``enablex`` is a malformed
``enable`` (perf says "wrong command" and acks it all the same). Every command perf acks gets
``ack\\n`` followed by a NUL byte on the ack descriptor (perf writes ``sizeof("ack\\n")`` bytes;
checked against perf 6.1), except ``snapshot`` (perf stat never acks it), ``ack`` itself and
words perf does not know. Matching perf byte for byte is what lets a script written for
``perf stat --control`` drive sectormon unchanged. What each command does is
:mod:`sectormon.rotation.control`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

ACK = b"ack\n\x00"
"""What perf writes on the ack descriptor once a command is done: ``ack\\n`` and its C string's
NUL byte."""

MAX_LENGTH = 63
"""perf reads at most this many bytes of one command (its buffer is 64 with the NUL); the rest of
a longer line is read as the next command, as perf does."""

ENABLE = "enable"
DISABLE = "disable"
PING = "ping"
STOP = "stop"
EVLIST = "evlist"
SNAPSHOT = "snapshot"
UNKNOWN = "unknown"

_WORDS = (ENABLE, DISABLE, SNAPSHOT, EVLIST, STOP, PING, "ack")
"""perf's command words in the order it tries them (a prefix match, so the order matters)."""

_NOT_ACKED = frozenset({SNAPSHOT, "ack", UNKNOWN})


@dataclass(frozen=True, slots=True)
class ControlCommand:
    """One command as read: its ``verb`` (one of this module's words, or ``unknown``), the
    ``name`` after ``enable``/``disable`` (``None``: all counting), the line as written, and
    whether the line was malformed after a known word (perf: "wrong command")."""

    verb: str
    text: str
    name: str | None = None
    malformed: bool = False

    @property
    def acked(self) -> bool:
        """Whether perf writes an ack once the command is done."""
        return self.verb not in _NOT_ACKED


def parse_command(text: str) -> ControlCommand:
    """One command line (without its terminator), read like perf's ``evlist__ctlfd_recv``."""
    verb = next((word for word in _WORDS if text.startswith(word)), UNKNOWN)
    if verb == "ack":
        return ControlCommand("ack", text)
    if verb not in (ENABLE, DISABLE, EVLIST):
        return ControlCommand(verb, text)
    rest = text[len(verb) :]
    if not rest:
        return ControlCommand(verb, text)
    if rest[0] != " ":
        return ControlCommand(verb, text, malformed=True)
    return ControlCommand(verb, text, name=rest[1:])


class CommandReader:
    """Cuts the bytes read from a control descriptor into commands, as perf does: a command ends
    at a newline or a NUL, or after :data:`MAX_LENGTH` bytes; empty lines are no command."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> list[ControlCommand]:
        """The commands completed by ``data`` (a partial line waits for the rest)."""
        commands: list[ControlCommand] = []
        pending = self._pending
        for byte in data:
            if byte in (0x0A, 0x00):
                self._emit(commands)
                continue
            pending.append(byte)
            if len(pending) == MAX_LENGTH:
                self._emit(commands)
        return commands

    def _emit(self, commands: list[ControlCommand]) -> None:
        if self._pending:
            commands.append(parse_command(self._pending.decode("utf-8", errors="replace")))
            self._pending.clear()
