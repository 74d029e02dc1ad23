"""The headless JSON Lines stream: a header record, then one frame record per interval.

Only JSON goes to the stream (stdout by default); diagnostics go to stderr. Each record is flushed
as written so a consumer sees frames live, and a closed pipe ends the session quietly.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

from sectormon.data.frames import HEADER_SCHEMA, Frame
from sectormon.data.header import Header
from sectormon.io.header_codec import header_to_json
from sectormon.io.strict_json import finite

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=str)


def encode(record: Mapping[str, Any]) -> str:
    """One compact JSON line (without the newline)."""
    try:
        return _ENCODER.encode(record)
    except ValueError:
        return _ENCODER.encode(finite(dict(record)))


_DEFERRED = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until a record is out.

    A signal that lands while a write to a full pipe blocks makes the write partial, and CPython's
    buffered text layer can then drop the rest of the record: the stream would carry a line cut at
    4 KiB and joined to the next record. The handlers only ask the session to stop, so they lose
    nothing by running once the line is written.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class JsonStream:
    """Writes the header and frames as JSON Lines to a text stream."""

    def __init__(
        self,
        out: IO[str],
        on_closed: Callable[[], None] | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> None:
        self._out = out
        self._on_closed = on_closed
        self._on_error = on_error
        self.closed = False
        self.error: str | None = None
        """Why the stream could not be written (the system's reason), once a write failed."""

    def write_header(self, header: Header) -> None:
        self._write(header_to_json(header.with_fields(schema=HEADER_SCHEMA)))

    def write_frame(self, frame: Frame) -> None:
        self._write(frame.to_json())

    def _write(self, record: Mapping[str, Any]) -> None:
        if self.closed:
            return
        line = encode(record) + "\n"
        try:
            with _signals_deferred():
                self._out.write(line)
                self._out.flush()
        except BrokenPipeError:
            # The reader went away (`| head`): stop writing and end the session quietly.
            self.closed = True
            _silence_stdout(self._out)
            if self._on_closed is not None:
                self._on_closed()
        except OSError as exc:
            # Disk full or a dead device: nothing more can be streamed; the owner of the output
            # ends the session and says so in one line.
            self.closed = True
            self.error = exc.strerror or str(exc)
            if self._on_error is not None:
                self._on_error()


def _silence_stdout(out: IO[str]) -> None:
    """Point the dead pipe's fd at /dev/null so the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
