"""Opening output paths: the one rule every writer of the project follows.

An output path can name a regular file, a new path, a symlink, a character device
(``/dev/null``, a terminal), a named pipe a script reads, a socket, or a folder. The rule:

- a file written whole (``merge -o``, ``import -o``) is written into a temporary file made with
  ``O_CREAT|O_EXCL|O_NOFOLLOW`` (:func:`tempfile.mkstemp`) in the target's folder and renamed
  over the target when complete (:func:`replace_output`): a failure leaves the older file whole,
  and a symlink planted at a guessed temporary name is never followed. Only a regular file or a
  new path is replaced so: renaming over a device node or a FIFO would replace the node itself,
  for every process of the machine;
- anything else is written in place (:func:`open_output`, also the rule of the streams that
  are readable while they grow: ``--record``, ``-o`` of ``--json``, bookmarks). The open uses
  ``O_NONBLOCK``, so a FIFO nobody reads (or a socket) is one line instead of a hang;
- a symlink is followed to its target, whatever the target is;
- a name the system refuses (too long, a file used as a folder, a missing folder) is one line
  naming the option, exit 2; a failed write is :class:`OutputError`, exit 1 (the input was fine).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from sectormon.errors import SectormonError, UsageError
from sectormon.files.text import clipped, printable

FREE_SPACE = "free space or write it elsewhere"
_HINT_NAME = 32
"""Characters of the target's name in its temporary file's name (a hint for a stray file; the
whole name could exceed the system's 255-byte limit once prefixed)."""


class OutputError(SectormonError):
    """The output could not be written: exit status 1 (the input was fine; 2 is for bad input)."""

    exit_code = 1


def _shown(path: str, *, too_long: bool = False) -> str:
    return clipped(path) if too_long else printable(path)


class OutputPathError(UsageError):
    """An output path the system refused (exit 2). ``reason`` says why without the path or the
    option, for a writer that words its own line (the recorder, bookmarks)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def path_error(path: str, exc: OSError, option: str) -> OutputPathError:
    """One line for an output path the system refused, naming the option and the fix."""
    where = f"{option} {_shown(path)}"
    if exc.errno == errno.ENAMETOOLONG:
        reason = "the name is too long"
        return OutputPathError(
            f"{option} {_shown(path, too_long=True)}: {reason}; give a shorter path", reason
        )
    if exc.errno == errno.ENOTDIR:
        reason = "a part of the path is a file, not a folder"
        return OutputPathError(f"{where}: {reason}; give a file path in a folder", reason)
    if exc.errno == errno.EISDIR:
        return OutputPathError(f"{where}: is a folder; give a file path", "it is a folder")
    if exc.errno == errno.ENXIO:
        reason, fix = _no_reader(path)
        return OutputPathError(f"{where}: {reason}; {fix}", reason)
    reason = exc.strerror or str(exc)
    return OutputPathError(f"{where}: cannot write there ({reason}); give a writable file path", reason)


def _no_reader(path: str) -> tuple[str, str]:
    """Why a write-only open failed with ENXIO (a FIFO without a reader, or a socket), and the fix."""
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.stat(path).st_mode):
            return "it is a socket, which cannot be opened as a file", "give a file path or a named pipe"
    return "it is a named pipe nobody reads", "start its reader first, or give a file path"


def _kind(path: str) -> int | None:
    """The mode of what ``path`` names, links followed; ``None`` for a path that does not exist."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None


def open_output(path: str, option: str, *, append: bool = False) -> BinaryIO:
    """``path`` opened for writing in place (truncated, or ``append``), created if new.

    For a stream read while it grows, or a target that is not a regular file. Non-blocking open:
    a FIFO without a reader (or a socket) is a :class:`UsageError` instead of a wait forever; the
    file is blocking once open."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o666)  # a folder: EISDIR; a FIFO nobody reads: ENXIO
    except OSError as exc:
        raise path_error(path, exc, option) from None
    try:
        os.set_blocking(fd, True)
        return os.fdopen(fd, "ab" if append else "wb")
    except BaseException:
        os.close(fd)
        raise


def _new_file_mode(existing: int | None) -> int:
    """The mode a replacing file gets: the replaced file's, else 0666 less the umask (mkstemp
    makes 0600, which would make a shared job file private)."""
    if existing is not None:
        return stat.S_IMODE(existing)
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where /proc says it (another thread may be
    creating a file meanwhile)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def replace_output(path: str, option: str) -> Iterator[BinaryIO]:
    """A binary file that appears at ``path`` only once written whole.

    A regular file or a new path (a symlink: its target) gets a temporary file in the same folder,
    renamed over it when the block ends without an exception, so a failure (full disk, an
    exception) leaves neither a partial file nor a clobbered older one. A device, FIFO or socket
    is written in place (:func:`open_output`). A path that cannot be written is a
    :class:`UsageError` (exit 2); a failure while writing an :class:`OutputError` (exit 1).
    """
    try:
        mode = _kind(path)
    except OSError as exc:
        raise path_error(path, exc, option) from None
    if mode is not None and not stat.S_ISREG(mode):
        handle = open_output(path, option)  # a folder is refused there
        try:
            with handle:
                yield handle
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise BrokenPipeError(errno.EPIPE, exc.strerror) from None
            raise OutputError(f"cannot write {_shown(path)}: {exc.strerror or exc} ({FREE_SPACE})") from None
        return
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    import tempfile  # only a file written whole needs it, not every start

    try:
        fd, work = tempfile.mkstemp(prefix=f".partial-{name[:_HINT_NAME]}-", dir=folder or ".")
    except OSError as exc:
        raise path_error(path, exc, option) from None
    try:
        try:
            os.fchmod(fd, _new_file_mode(mode))
            with os.fdopen(fd, "wb") as handle:
                yield handle
            os.replace(work, target)
        except OSError as exc:
            shown = _shown(path)
            raise OutputError(
                f"cannot write {shown}: {exc.strerror or exc} ({FREE_SPACE}; nothing was written to {shown})"
            ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(work)


def check_writable(path: str, option: str) -> None:
    """Fail now (exit 2) when the file a session writes only once running cannot be created:
    a missing or read-only folder, a folder named as the file, a name too long. A file created by
    the check is removed again; an existing one is left as it is."""
    try:
        mode = _kind(path)
    except OSError as exc:
        raise path_error(path, exc, option) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{option} {_shown(path)}: is a folder; give a file path")
    if mode is not None and not stat.S_ISREG(mode):
        return  # a device or a pipe: opening it here could consume it or find no reader yet
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise path_error(path, exc, option) from None
    if mode is None:  # the file made, not a dangling symlink that led to it
        with contextlib.suppress(OSError):
            os.unlink(os.path.realpath(path))


def is_stdout(path: str) -> bool:
    """Whether ``path`` names what stdout writes to (compared by device and inode, so
    ``/dev/stdout``, ``/proc/self/fd/1`` and the file a shell redirected stdout to all count).

    A character device that is not a terminal (``/dev/null``) does not count: two writers
    interleaving there harm nothing."""
    try:
        out = os.fstat(1)
        named = os.stat(path)
    except (OSError, ValueError):
        return False
    if (out.st_dev, out.st_ino) != (named.st_dev, named.st_ino):
        return False
    return not (stat.S_ISCHR(out.st_mode) and not os.isatty(1))
