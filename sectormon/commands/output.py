"""A command's report to stdout, written so that a failed write is one line and exit 1.

A report (``compare``, ``fapp``) is built whole, then written and flushed here, so a full disk,
``> /dev/full`` or a closed stdout (``>&-``) shows up while the command can still say so: one
``sectormon: cannot write ...`` line and exit status 1, never a traceback or the interpreter's
"Exception ignored" at exit. A reader that went away (``| head``) stays a quiet
:class:`BrokenPipeError`, which the CLI ends with status 0 like other Unix filters.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import TextIO

from sectormon.errors import SectormonError


class OutputError(SectormonError):
    """The report could not be written: exit status 1 (the input was fine; 2 is for bad input)."""

    exit_code = 1


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush of what is left does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def write_stdout(text: str) -> None:
    """Write ``text`` to stdout and flush it; a failure raises :class:`OutputError`."""
    stream = sys.stdout
    if stream is None:
        raise OutputError("cannot write the report: stdout is closed (redirect it to a file or a pipe)")
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise BrokenPipeError(errno.EPIPE, exc.strerror) from None
        _discard_buffer(stream)
        raise OutputError(
            f"cannot write the report to stdout: {exc.strerror or exc} (free space or write it elsewhere)"
        ) from None
    except ValueError:  # a closed stdout object
        raise OutputError(
            "cannot write the report: stdout is closed (redirect it to a file or a pipe)"
        ) from None


def _discard_buffer(stream: TextIO) -> None:
    """Drop what the failed write left in stdout's buffer: flushed into /dev/null, not again at exit."""
    _silence_stdout()
    with contextlib.suppress(OSError, ValueError):
        stream.flush()
