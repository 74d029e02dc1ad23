"""SIGINT and SIGTERM end a live session cleanly at any moment after sectormon starts.

A session's own handlers (:meth:`~sectormon.session.live.LiveSession.run_headless`) exist only once
it runs, but under load sectormon spends seconds before that: importing, probing the events,
opening the counters. Python's defaults would then end it with exit 130 (SIGINT) or be killed
outright (SIGTERM), with no final frame and a launched command orphaned. So the live monitor
installs this latch first thing. Until the session is set up a signal is only remembered: set-up
never stops half-done (an exception raised into an import can even crash a C extension's module
initialisation); :meth:`StopLatch.attach` then hands the session's stop to the latch, and a
remembered signal ends the session before it counts (:func:`~sectormon.commands.front_end.run_session`
discards it: nothing on stdout, exit 0), a later one stops it with its final frame.

A handler runs only when the main thread runs Python code: a main thread blocked in a system call
(a write to a pipe nobody reads, an ``open`` of a FIFO) would never end. A watcher thread therefore
reads the signal numbers CPython writes to its wakeup fd whatever the main thread does, and ends
the process itself (one line on stderr, exit 128+N as a shell reports a signal) when the session
has not ended :data:`GRACE` seconds after the first signal, or at once on a second one.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

GRACE = 10.0
"""Seconds a session has after a stop signal to write its final frame (it stops counting within a
timeslice) before the watcher ends the process without it."""


class StopLatch:
    """The process's stop signals while a live command runs (see the module docstring)."""

    def __init__(self) -> None:
        self.received: int | None = None
        """The first stop signal's number, once one arrived."""
        self._stop: Callable[[], None] | None = None
        self.on_force: Callable[[], None] | None = None
        """Called by the watcher just before it ends the process (a launched command is killed
        with it: sectormon leaves no orphan behind)."""

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        if self._stop is not None:
            self._stop()

    def attach(self, stop: Callable[[], None]) -> bool:
        """Stop signals call ``stop`` from now on; True when one has already arrived (the caller
        then ends the session before it counts)."""
        self._stop = stop
        return self.received is not None


_latch: StopLatch | None = None


def current() -> StopLatch | None:
    """The installed latch (``None``: no live command installed one, e.g. a library caller)."""
    return _latch


@contextlib.contextmanager
def installed() -> Iterator[StopLatch]:
    """Install a fresh latch and its watcher for the ``with`` block; restore the previous
    handlers and wakeup fd after it. Outside the main thread (an in-process caller) signals
    cannot be handled: the latch is returned uninstalled and does nothing."""
    global _latch
    latch = StopLatch()
    if threading.current_thread() is not threading.main_thread():
        yield latch
        return
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    os.set_blocking(write_fd, False)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = {sig: signal.signal(sig, latch._handle) for sig in STOP_SIGNALS}
    threading.Thread(target=_watch, args=(read_fd, latch), name="sectormon-stop-watch", daemon=True).start()
    _latch = latch
    try:
        yield latch
    finally:
        _latch = None
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)  # the watcher reads end-of-file and returns


def release() -> None:
    """Give the stop signals back to their defaults (the TUI catches them its own way)."""
    global _latch
    if _latch is None:
        return
    _latch = None
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _watch(read_fd: int, latch: StopLatch) -> None:
    """The watcher thread: ends the process when a stop signal is not honoured in time."""
    first: int | None = None
    deadline = None
    try:
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], timeout)
            if not ready:
                assert first is not None
                _force_exit(latch, first, f"the session did not end within {GRACE:g} s of {_name(first)}")
            data = os.read(read_fd, 64)
            if not data:
                return  # the latch was uninstalled
            for signum in data:
                if signum not in STOP_SIGNALS:
                    continue
                if first is None:
                    first, deadline = signum, time.monotonic() + GRACE
                else:
                    _force_exit(latch, signum, f"a second stop signal ({_name(signum)})")
    finally:
        os.close(read_fd)


def _name(signum: int) -> str:
    return signal.Signals(signum).name


def _force_exit(latch: StopLatch, signum: int, why: str) -> None:
    """End the process now: the recording and the stream are flushed line by line, so what was
    written stays readable; the final frame is not written. ``os.write`` takes no lock the
    blocked main thread may hold."""
    if latch.on_force is not None:
        with contextlib.suppress(Exception):
            latch.on_force()
    with contextlib.suppress(OSError):
        os.write(2, f"sectormon: {why}: ending without the final frame\n".encode())
    os._exit(128 + signum)
