"""Where commands write: the one way a report, a JSON stream or an output file is written.

A failed write is one ``sectormon: cannot write ...`` line and exit status 1 (the input was fine;
2 is for bad input), never a traceback or the interpreter's "Exception ignored" at exit:

- a report (``compare``, ``fapp``, ``check``, ``events``, ``sim --summary``, ``hotspots``) is built
  whole, then written and flushed by :func:`write_stdout`, so a full disk, ``> /dev/full`` or a
  closed stdout (``>&-``) shows up while the command can still say so;
- a JSON stream (``--json``, ``replay --json``) goes through :class:`StreamOutput`: stdout, or
  ``-o FILE`` opened before anything starts; a stream that fails mid-way leaves its file as
  ``FILE.partial`` (whole lines up to the failure, the last one possibly cut) and says so;
- a file written whole (``merge -o``, ``import -o``) goes through
  :func:`sectormon.files.output.replace_output`.

How an output path is opened (a regular file replaced atomically, a device or FIFO written in
place, never replaced) is the rule of :mod:`sectormon.files.output`, shared with the recorder.
A reader that went away (``| head``) stays a quiet :class:`BrokenPipeError`, which the CLI ends
with status 0 like other Unix filters. The TUI needs a terminal (:func:`require_terminal`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from typing import IO, TextIO

from sectormon.errors import UsageError
from sectormon.files.output import FREE_SPACE, OutputError, open_output

STDOUT_CLOSED = "stdout is closed (redirect it to a file or a pipe)"
PARTIAL_SUFFIX = ".partial"
NO_TERMINAL = "no terminal: use --json for a headless stream"


def _silence_fd(fd: int) -> None:
    """Point ``fd`` at /dev/null so later flushes of what is left (the interpreter's at exit, a
    file's close) go nowhere instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def require_stdout(what: str = "report") -> TextIO:
    """stdout, or :class:`OutputError` when it is closed: a command that works long before it
    writes (sampling, a simulation, a compare of large recordings) asks first."""
    stream = sys.stdout
    if stream is None:
        raise OutputError(f"cannot write the {what}: {STDOUT_CLOSED}")
    return stream


def write_stdout(text: str, what: str = "report") -> None:
    """Write ``text`` to stdout and flush it; a failure raises :class:`OutputError`."""
    stream = require_stdout(what)
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise BrokenPipeError(errno.EPIPE, exc.strerror) from None
        _discard_buffer(stream)
        reason = exc.strerror or str(exc)
        raise OutputError(f"cannot write the {what} to stdout: {reason} ({FREE_SPACE})") from None
    except ValueError:  # a closed stdout object
        raise OutputError(f"cannot write the {what}: {STDOUT_CLOSED}") from None


def _discard_buffer(stream: TextIO) -> None:
    """Drop what the failed write left in stdout's buffer: flushed into /dev/null, not again at exit."""
    _silence_fd(1)
    with contextlib.suppress(OSError, ValueError):
        stream.flush()


class StreamOutput:
    """Where a JSON stream goes: stdout (``path`` ``None`` or ``-``) or ``-o FILE``, opened now so
    that a bad path fails before anything starts (exit 2)."""

    def __init__(self, path: str | None, option: str = "-o") -> None:
        self.path = None if path in (None, "-") else path
        self.handle: IO[str]
        if self.path is None:
            self.handle = require_stdout("JSON stream")
            return
        self.handle = io.TextIOWrapper(open_output(self.path, option), encoding="utf-8")

    @property
    def name(self) -> str:
        return self.path or "stdout"

    def failed(self) -> None:
        """The stream's last write failed: nothing more will be written, and no later flush may
        fail again (the file's close, the interpreter's flush of stdout at exit)."""
        with contextlib.suppress(OSError, ValueError):
            _silence_fd(self.handle.fileno())
            self.handle.flush()

    def close(self) -> None:
        """Close a file output without a word (the command is failing for another reason)."""
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.handle.close()

    def finish(self, error: str | None) -> None:
        """Close the stream; when it failed (``error``: the reason), raise :class:`OutputError`,
        a file kept as ``FILE.partial``."""
        if self.path is not None:
            try:
                self.handle.close()
            except OSError as exc:
                error = error or (exc.strerror or str(exc))
        if error is None:
            return
        message = f"cannot write the JSON stream to {self.name}: {error}"
        kept = self._keep_partial()
        raise OutputError(f"{message} ({FREE_SPACE}{kept})")

    def _keep_partial(self) -> str:
        """Rename a regular output file to ``FILE.partial``; the note that says where it is."""
        if self.path is None or not os.path.isfile(self.path):
            return ""
        partial = self.path + PARTIAL_SUFFIX
        try:
            os.replace(self.path, partial)
        except OSError as exc:
            return f"; {self.path} is incomplete ({exc.strerror or exc} renaming it to {partial})"
        return f"; the stream up to the failure is in {partial}"


def require_terminal() -> None:
    """The TUI draws on stdout and reads keys from stdin: without a terminal on both it would
    write escape codes into a file until killed, so it does not start (exit 2)."""
    for stream in (sys.stdin, sys.stdout):
        try:
            tty = stream is not None and stream.isatty()
        except ValueError:  # closed
            tty = False
        if not tty:
            raise UsageError(NO_TERMINAL)
