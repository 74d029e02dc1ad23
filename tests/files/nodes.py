"""Device nodes and named pipes of a test's own, in its tmp_path: a writer pointed at them shows
whether it replaces what is not a regular file. Never the machine's /dev/null or /dev/full: a
writer that replaces its target would replace them for every process of the machine."""

from __future__ import annotations

import os
import select
import stat
import threading
from pathlib import Path

import pytest

NULL = (1, 3)  # /dev/null's device numbers: discards what is written
FULL = (1, 7)  # /dev/full's: every write fails with ENOSPC


def char_device(path: Path, numbers: tuple[int, int] = NULL) -> Path:
    """A character device node at ``path`` (skips the test where mknod is not permitted)."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(*numbers))
    except PermissionError:
        pytest.skip("mknod is not permitted here (needs root or CAP_MKNOD)")
    return path


def is_char_device(path: Path, numbers: tuple[int, int] = NULL) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == numbers


def is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


class FifoReader:
    """A named pipe at ``path`` and a thread that reads what is written to it until the writer
    closes. Its read end is open before the writer starts (so a writer that refuses a pipe
    nobody reads finds a reader); the thread waits for the first writer with poll, as a read
    before any writer would see an end at once."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.data = b""
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN | select.POLLHUP)
        poller.poll()  # a writer wrote or came and went
        os.set_blocking(self._fd, True)
        chunks = []
        while chunk := os.read(self._fd, 1 << 16):
            chunks.append(chunk)
        self.data = b"".join(chunks)

    def result(self, timeout: float = 60.0, *, wake: bool = False) -> bytes:
        """What was written, once the writer closed; ``wake``: first come and go as a writer, for
        a writer under test that may never have opened the pipe."""
        if wake:
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"the writer never closed {self.path}"
        os.close(self._fd)
        return self.data
