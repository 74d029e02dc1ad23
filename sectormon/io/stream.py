"""The headless JSON Lines stream: a header record, then one frame record per interval.

Only JSON goes to the stream (stdout by default); diagnostics go to stderr. Each record is flushed
as written so a consumer sees frames live, and a closed pipe ends the session quietly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import IO, Any

from sectormon.frames import HEADER_SCHEMA, Frame
from sectormon.io.strict_json import finite

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=str)


def encode(record: Mapping[str, Any]) -> str:
    """One compact JSON line (without the newline)."""
    try:
        return _ENCODER.encode(record)
    except ValueError:
        return _ENCODER.encode(finite(dict(record)))


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

    def write_header(self, header: Mapping[str, Any]) -> None:
        record = dict(header)
        record["schema"] = HEADER_SCHEMA
        self._write(record)

    def write_frame(self, frame: Frame) -> None:
        self._write(frame.to_json())

    def _write(self, record: Mapping[str, Any]) -> None:
        if self.closed:
            return
        try:
            self._out.write(encode(record) + "\n")
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
