"""The quick start's system side: the held command, its inherited counter group, the wait.

The command is the engine's own :class:`~sectormon.sources.perf.launch.GatedCommand`: held before
its exec, released, reaped, ended with SIGTERM and then SIGKILL after a grace period, so nothing
is left running. The group is one :mod:`sectormon.perf.group` would open, written here against
``ctypes`` and :mod:`sectormon.perf.abi` alone (that module imports :mod:`typing` and the errors'
and events' dataclasses, a third of the quick start's budget, :mod:`.stat_quick`): opened on the
held child disabled, with ``enable_on_exec`` and ``inherit``, so counting starts exactly at the
exec and covers everything the command starts. The wait serves the marker handshake
(:mod:`.stat_quick_regions`) and turns SIGINT and SIGTERM into the end of the command, as they
end the engine's session.
"""

from __future__ import annotations

import _signal
import ctypes
import os
import select
import struct
import time

from sectormon.perf import abi
from sectormon.sources.perf.launch import ExecFailed, GatedCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sectormon.commands.stat_quick_regions import QuickRegions

PERF_FLAG_FD_CLOEXEC = 8
_libc: ctypes.CDLL | None = None


class _Stop(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while the command ran (a second one, while the command is being
    ended, ends sectormon as Ctrl-C does)."""


class InheritedGroup:
    """Software events as one group on a process and everything it starts (read as one)."""

    def __init__(self, fds: list[int]) -> None:
        self._fds = fds
        self._layout = struct.Struct(f"=3Q{2 * len(fds)}Q")  # nr, enabled, running, (value, id)...

    def read(self) -> tuple[int, int, tuple[int, ...]]:
        """Time enabled and running (ns) and each event's count, in the order opened."""
        data = os.read(self._fds[0], self._layout.size)
        fields = self._layout.unpack(data[: self._layout.size])
        return fields[1], fields[2], tuple(fields[3::2])

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []


def open_inherited_group(events: Sequence[tuple[int, int]], pid: int) -> InheritedGroup | None:
    """``events`` ((type, config) pairs) as one group on ``pid``, user mode only, enabled at its
    exec and inherited by all it starts; ``None`` when one does not open (the engine says why)."""
    global _libc
    number = abi.SYSCALL_NUMBERS.get(os.uname().machine)
    if number is None:
        return None
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fds: list[int] = []
    for member, (type_, config) in enumerate(events):
        leader = member == 0
        attr = abi.make_attr(
            type_,
            config,
            read_format=abi.GROUP_READ_FORMAT,
            flags={
                "disabled": leader,
                "inherit": True,
                "exclude_kernel": True,
                "exclude_hv": True,
                "enable_on_exec": leader,
            },
        )
        fd = _libc.syscall(number, ctypes.byref(attr), pid, -1, fds[0] if fds else -1, PERF_FLAG_FD_CLOEXEC)
        if fd < 0:
            for opened in fds:
                os.close(opened)
            return None
        fds.append(fd)
    return InheritedGroup(fds)


class HeldCommand:
    """The command, held before its exec (:class:`~sectormon.sources.perf.launch.GatedCommand`,
    the engine's own), then waited for with the region handshake served and SIGINT and SIGTERM
    ending it as they end the engine's session."""

    def __init__(self, argv: Sequence[str], extra_env: Mapping[str, str] | None) -> None:
        env = dict(os.environ)
        env.update(extra_env or {})
        self.gated = GatedCommand(argv, env, (None, None, None), read_final_times=False)
        self.pid = self.gated.launch()
        self._previous: dict[int, object] = {}

    def run(self, regions: QuickRegions | None) -> tuple[int | None, float, bool] | None:
        """Let the command exec and wait for its end, serving ``regions`` meanwhile: its exit
        code (negative: the signal that killed it; ``None``: sectormon ended it), the wall seconds
        since the exec, and whether SIGINT or SIGTERM ended the wait (then no more runs follow);
        ``None`` when the exec failed (the child is reaped). A stop signal is caught from before
        the exec to the end, so it always ends the command and never sectormon alone."""
        self._catch_signals()
        interrupted = False
        try:
            started = time.perf_counter()
            try:
                self.gated.release()
            except ExecFailed:
                return None
            self._wait_serving(regions)
        except _Stop:
            interrupted = True
            self.gated.end()  # SIGTERM, then SIGKILL after the engine's grace period
        finally:
            self._restore_signals()
        seconds = time.perf_counter() - started
        return (None if self.gated.stopped else self.gated.exit_code), seconds, interrupted

    def _wait_serving(self, regions: QuickRegions | None) -> None:
        if regions is None or not regions.listening:
            self.gated.reap(block=True)
            return
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:  # a kernel before 5.3: look at the child between polls of the socket
            self._wait_polling(regions)
            return
        try:
            poll = select.poll()
            poll.register(pidfd, select.POLLIN)
            poll.register(regions.listener_fd, select.POLLIN)
            while True:
                ready = {fd for fd, _ in poll.poll()}
                if regions.listener_fd in ready:
                    poll.unregister(regions.listener_fd)
                    regions.upgrade()  # the engine's server answers from here on, in its thread
                if pidfd in ready:
                    self.gated.reap(block=True)
                    return
        finally:
            os.close(pidfd)

    def _wait_polling(self, regions: QuickRegions) -> None:
        poll = select.poll()
        poll.register(regions.listener_fd, select.POLLIN)
        while regions.listening:
            if poll.poll(50):
                regions.upgrade()
            elif self.gated.reap(block=False):
                return
        self.gated.reap(block=True)

    def _catch_signals(self) -> None:
        def stop(_signum: int, _frame: object) -> None:
            raise _Stop

        self._previous = {sig: _signal.signal(sig, stop) for sig in (_signal.SIGINT, _signal.SIGTERM)}

    def _restore_signals(self) -> None:
        for sig, handler in self._previous.items():
            _signal.signal(sig, handler)
        self._previous = {}

    def end(self) -> None:
        """Make sure the child is gone after an early end (held: killed at the gate; running:
        ended as the engine ends it)."""
        self.gated.end()
        self._restore_signals()


def offer_regions(events: Sequence[tuple[str, int, int]], specs: Sequence[str]) -> QuickRegions | None:
    """The marker library's rendezvous for the command (``None``: the library is not built here,
    so no program can have linked it from this install; or the system refused a memfd or a
    socket, which the engine would say as a warning: it runs then)."""
    from sectormon.regions.rendezvous import library_built

    if not library_built():
        return None
    from sectormon.commands.stat_quick_regions import QuickRegions

    return QuickRegions(events, specs)
