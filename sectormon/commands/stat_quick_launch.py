"""The quick start's system side: the held child, its inherited counter group, the wait.

What :mod:`sectormon.sources.perf.launch` and :mod:`sectormon.perf.group` do for the engine, cut
to one group on one launched command and written against the C modules directly (``_signal``,
``ctypes`` and :mod:`sectormon.perf.abi`): the engine's versions import :mod:`signal`'s enums,
:mod:`typing` and :mod:`dataclasses`, a third of the quick start's whole budget
(:mod:`.stat_quick`). Same protocol as the engine's: the child waits at a pipe before ``execvp``,
the group is opened on it disabled with ``enable_on_exec`` and ``inherit``, so counting starts
exactly at the exec and covers everything the command starts; an exec that fails writes its
errno to a close-on-exec pipe. Ctrl-C ends the command as the engine ends it: SIGTERM, then
SIGKILL after a grace period, so nothing is left running.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import time

from sectormon.perf import abi

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sectormon.commands.stat_quick_regions import QuickRegions

PERF_FLAG_FD_CLOEXEC = 8
GRACE_S = 2.0  # the engine's grace between SIGTERM and SIGKILL
_SIGINT, _SIGKILL, _SIGTERM = 2, 9, 15  # the same numbers on every Linux architecture
_libc: ctypes.CDLL | None = None


class _Stop(Exception):
    """SIGINT or SIGTERM arrived while the command ran."""


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
    """The command, forked and held before its exec until :meth:`release`."""

    def __init__(self, argv: Sequence[str], extra_env: Mapping[str, str] | None) -> None:
        self.argv = list(argv)
        env = dict(os.environ)
        env.update(extra_env or {})
        gate_r, gate_w = os.pipe()
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child, which never returns here
            _child(self.argv, env, gate_r, gate_w, err_r, err_w)
        os.close(gate_r)
        os.close(err_w)
        self.pid = pid
        self._gate_w: int | None = gate_w
        self._err_r = err_r
        self._reaped = False
        self._started = 0.0
        self._previous: dict[int, object] = {}

    def release(self) -> bool:
        """Let the child exec; False when the exec failed (the child is then reaped)."""
        assert self._gate_w is not None
        self._catch_signals()  # from the exec on, a stop signal ends the command, not sectormon
        self._started = time.perf_counter()
        os.write(self._gate_w, b"g")
        os.close(self._gate_w)
        self._gate_w = None
        failed = os.read(self._err_r, 16)  # empty once the exec closed the pipe
        os.close(self._err_r)
        if failed:
            os.waitpid(self.pid, 0)
            self._reaped = True
            self._restore_signals()
            return False
        return True

    def _catch_signals(self) -> None:
        import _signal

        def stop(_signum: int, _frame: object) -> None:
            raise _Stop

        self._previous = {sig: _signal.signal(sig, stop) for sig in (_SIGINT, _SIGTERM)}

    def _restore_signals(self) -> None:
        import _signal

        for sig, handler in self._previous.items():
            _signal.signal(sig, handler)
        self._previous = {}

    def wait(self, regions: QuickRegions | None) -> tuple[int | None, float, bool]:
        """Wait for the command's end, serving ``regions`` meanwhile: its exit code (negative: the
        signal that killed it; ``None``: sectormon ended it), the wall seconds since the exec, and
        whether SIGINT or SIGTERM ended the wait (then no more runs follow)."""
        interrupted = False
        status: int | None = None
        ended_by_us = False
        try:
            while status is None:
                try:
                    status = self._wait_serving(regions)
                except _Stop:
                    interrupted = True
                    status, ended_by_us = self._stop()
        finally:
            self._restore_signals()
        self._reaped = True
        code = None if ended_by_us else _exit_code(status)
        return code, time.perf_counter() - self._started, interrupted

    def _wait_serving(self, regions: QuickRegions | None) -> int:
        if regions is None or not regions.listening:
            return os.waitpid(self.pid, 0)[1]
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:  # a kernel before 5.3: look at the child between polls of the socket
            return self._wait_polling(regions)
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
                    return os.waitpid(self.pid, 0)[1]
        finally:
            os.close(pidfd)

    def _wait_polling(self, regions: QuickRegions) -> int:
        poll = select.poll()
        poll.register(regions.listener_fd, select.POLLIN)
        while True:
            if regions.listening and poll.poll(50):
                poll.unregister(regions.listener_fd)
                regions.upgrade()
            status = self._exited()
            if status is not None:
                return status
            if not regions.listening:
                return os.waitpid(self.pid, 0)[1]

    def _stop(self) -> tuple[int, bool]:
        """End the command as the engine does (SIGTERM, then SIGKILL after the grace period): its
        wait status, and whether it was still running (so sectormon ended it)."""
        status = self._exited()
        if status is not None:
            return status, False
        os.kill(self.pid, _SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline:
            try:
                status = self._exited()
            except _Stop:
                break  # a second signal: no more grace
            if status is not None:
                return status, True
            time.sleep(0.02)
        os.kill(self.pid, _SIGKILL)
        return os.waitpid(self.pid, 0)[1], True

    def _exited(self) -> int | None:
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        return status if pid else None

    def end(self) -> None:
        """Make sure the child is gone after an early end: a held one is let go (it reads the
        closed gate and exits without exec), a running one is ended as :meth:`_stop` ends it."""
        if self._gate_w is not None:
            os.close(self._gate_w)
            self._gate_w = None
            os.close(self._err_r)
        if not self._reaped:
            self._reaped = True
            self._stop()
        self._restore_signals()


def _exit_code(status: int) -> int:
    """A wait status as the engine keeps it: the exit status, or minus the signal that killed it."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _child(
    argv: list[str], env: dict[str, str], gate_r: int, gate_w: int, err_r: int, err_w: int
) -> None:  # pragma: no cover
    """Runs in the forked child: wait for the go byte, then exec. Never returns."""
    try:
        os.close(gate_w)
        os.close(err_r)
        if os.read(gate_r, 1) == b"g":
            os.close(gate_r)
            import _signal

            # Python ignores SIGPIPE and SIGXFSZ, and exec keeps them ignored: the command gets the defaults.
            for name in ("SIGPIPE", "SIGXFSZ"):
                if hasattr(_signal, name):
                    _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
            os.execvpe(argv[0], argv, env)
    except OSError as exc:
        try:  # noqa: SIM105 (contextlib: 1 ms of the quick start)
            os.write(err_w, str(exc.errno or 8).encode())
        except OSError:
            pass
    finally:
        os._exit(127)


def offer_regions(events: Sequence[tuple[str, int, int]], specs: Sequence[str]) -> QuickRegions | None:
    """The marker library's rendezvous for the command (``None``: the library is not built here,
    so no program can have linked it from this install; or the system refused a memfd or a
    socket, which the engine would say as a warning: it runs then)."""
    from sectormon import regions

    library = os.path.join(os.path.dirname(regions.__file__), "lib", "libsectormon-markers.so")
    if not os.path.isfile(library):
        return None
    from sectormon.commands.stat_quick_regions import QuickRegions

    return QuickRegions(events, specs)
