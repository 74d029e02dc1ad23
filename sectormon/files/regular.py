"""Opening input files: only what can be read to an end without blocking.

An input path can name a FIFO nobody writes, a character device (``/dev/zero`` never ends), or a
folder. Every reader opens through :func:`open_input`: opened with ``O_NONBLOCK`` (so a FIFO
without a writer cannot block the open), checked with ``fstat`` on the open descriptor (no race
with a rename), then read as an ordinary blocking file. Pipes are accepted only where a stream is
meaningful (``--trace /dev/stdin``), and then read once.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from sectormon.errors import DataError
from sectormon.files.text import clipped, printable


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_error(path: str, exc: OSError, what: str = "file") -> DataError:
    """One line for a failed open (ENAMETOOLONG, ENOENT, EACCES, ...)."""
    if exc.errno == errno.ENAMETOOLONG:
        return DataError(clipped(path), None, f"the {what} name is too long", "give a shorter path")
    reason = exc.strerror or str(exc)
    return DataError(printable(path), None, f"cannot read the {what} ({reason})", "give a readable file")


def open_input(path: str, what: str = "file", allow_pipe: bool = False) -> BinaryIO:
    """``path`` opened for binary reading, or :class:`DataError` when it is not a regular file
    (or a pipe where ``allow_pipe``) or cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise open_error(path, exc, what) from None
    try:
        mode = os.fstat(fd).st_mode
        regular = stat.S_ISREG(mode)
        if not (regular or (allow_pipe and stat.S_ISFIFO(mode))):
            accepted = "a regular file or a pipe" if allow_pipe else "a regular file"
            raise DataError(printable(path), None, f"is {_kind(mode)}", f"the {what} must be {accepted}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_name(path: str, what: str = "file") -> None:
    """The one-line error for a path the system cannot even look up (a name too long, a loop of
    links); a path that merely does not exist is left to the caller, which says what it wanted."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP):
            raise open_error(path, exc, what) from None
    except ValueError:  # a NUL byte in the name
        raise DataError(printable(path), None, "the name holds a NUL byte", "give a real path") from None


def is_regular(path: str) -> bool:
    """True when ``path`` is a regular file (following links); never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
