"""The control descriptor of a live session (``--control``) and the ``--delay`` timer.

A thread of its own waits on the control descriptor (``poll``, with a pipe of its own to be told
to end), cuts what it reads into perf's commands (:mod:`sectormon.rotation.control_commands`) and
posts each to the session's :class:`~sectormon.rotation.control.CountingControl`, which wakes the
sampler: the sampler thread owns the counters, so it carries the command out and then calls back
here to write the ack. A control FIFO is opened read-write, as perf opens it, so a script may open
and close its end once per command without the reader ever seeing an end of file; a descriptor
handed down (``fd:``) that reaches its end is no longer listened to, as with perf.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass

from sectormon.rotation.control import CountingControl
from sectormon.rotation.control_commands import ACK, ENABLE, CommandReader, ControlCommand

READ_SIZE = 4096

WarningCallback = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ControlFds:
    """``--control``'s descriptors, open: commands are read from ``ctl`` and acks written to
    ``ack`` (``None``: no acks). ``owned``: sectormon opened them (``fifo:``) and closes them;
    ``fd:`` descriptors are the caller's and stay open. ``shown``: the option as given."""

    ctl: int
    ack: int | None
    owned: bool
    shown: str


class ControlChannel:
    """Reads ``fds.ctl`` into ``control`` from :meth:`start` to :meth:`close`; writes the acks."""

    def __init__(self, fds: ControlFds, control: CountingControl, on_warning: WarningCallback) -> None:
        self._fds = fds
        self._control = control
        self._on_warning = on_warning
        self._ack_failed = False
        self._wakeup_r, self._wakeup_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._listen, name="sectormon-control", daemon=True)
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop listening; close what sectormon opened (from any thread but the listener)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            os.write(self._wakeup_w, b"x")
        if self._thread.is_alive():
            self._thread.join()
        os.close(self._wakeup_r)
        os.close(self._wakeup_w)
        if self._fds.owned:
            os.close(self._fds.ctl)
            if self._fds.ack is not None and self._fds.ack != self._fds.ctl:
                os.close(self._fds.ack)

    def _listen(self) -> None:
        reader = CommandReader()
        poller = select.poll()
        poller.register(self._fds.ctl, select.POLLIN)
        poller.register(self._wakeup_r, select.POLLIN)
        while True:
            events = dict(poller.poll())
            if self._wakeup_r in events:
                return
            try:
                data = os.read(self._fds.ctl, READ_SIZE)
            except BlockingIOError:
                continue
            except InterruptedError:
                continue
            except OSError as exc:
                self._on_warning(f"--control {self._fds.shown}: reading stopped ({exc.strerror or exc})")
                return
            if not data:
                return  # the writer closed a descriptor handed down: nothing more can come
            for command in reader.feed(data):
                self._control.post(command, self._ack)

    def _ack(self) -> None:
        """Tell the controlling script a command is done (called on the sampler thread)."""
        ack = self._fds.ack
        if ack is None or self._ack_failed:
            return
        try:
            os.write(ack, ACK)
        except OSError as exc:
            self._ack_failed = True
            why = "nobody reads it and it is full" if exc.errno == errno.EAGAIN else exc.strerror or str(exc)
            self._on_warning(f"--control {self._fds.shown}: acks stopped ({why})")


class DelayTimer:
    """``--delay MS``: counting starts MS milliseconds after the session started counting."""

    def __init__(self, seconds: float, control: CountingControl) -> None:
        self._timer = threading.Timer(seconds, control.post, (ControlCommand(ENABLE, "--delay"),))
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def close(self) -> None:
        self._timer.cancel()
