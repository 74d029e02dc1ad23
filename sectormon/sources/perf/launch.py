"""Launching the command a perf session counts: forked, held before exec, released, reaped, ended.

The command is launched *gated*: the child blocks on a pipe before ``execvp``, so the parent can
open the first counter groups with ``enable_on_exec`` and counting starts exactly at the exec. An
exec that fails writes its errno to a second, close-on-exec pipe, which reads empty once the exec
has succeeded. The command ends with the session as ``perf stat -- CMD`` ends it (SIGTERM, then
SIGKILL after a grace period), so sectormon never leaves an orphan behind. :func:`describe_exit`
and :func:`shell_status` say how it ended, in words and as a shell would.

``sectormon stat``'s quick start launches its command with this class too, so the module imports
only C modules and ``os`` at its top (``_signal``, not :mod:`signal` and its enums; no
:mod:`contextlib` or :mod:`typing`): the engine's other imports are no part of that start.
"""

from __future__ import annotations

import _signal
import errno
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sectormon.host.cpu_time import StatTimes

_IGNORED_BY_PYTHON = ("SIGPIPE", "SIGXFZ", "SIGXFSZ")


class ExecFailed(OSError):
    """The command could not be executed (``errno`` and ``strerror`` say why)."""


def describe_exit(code: int) -> str:
    """A command's end in words, from :attr:`GatedCommand.exit_code` (negative: a signal)."""
    if code < 0:
        import signal  # its names: only for a command that a signal ended

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the command was killed by {name} (exit status {128 - code})"
    return f"the command exited with status {code}"


def shell_status(code: int) -> int:
    """The exit status a shell reports for ``code`` (128 + N for signal N)."""
    return 128 - code if code < 0 else code


class GatedCommand:
    """One command, forked by :meth:`launch` and held before its exec until :meth:`release`.

    ``stdio`` are the file descriptors the child gets as 0/1/2 (None: inherit ours); ``env`` is
    its environment. ``exit_code`` is set once the child has been reaped (negative: killed by
    that signal); ``stopped`` says the session ended it, so that code is not the command's own;
    ``final_times`` are its own CPU times at its exit, read from its zombie just before the reaping
    (after it, only ``RUSAGE_CHILDREN`` holds them, summed with those of the children it reaped).
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stdio: tuple[int | None, int | None, int | None],
        *,
        read_final_times: bool = True,
    ) -> None:
        """``read_final_times``: read ``final_times`` at the exit (the engine's thread coverage
        needs them; ``stat``'s quick start, which counts with inherited counters alone, does not)."""
        self.argv = list(argv)
        self.read_final_times = read_final_times
        self.env = env
        self._stdio = stdio
        self.pid: int | None = None
        self._gate_w: int | None = None
        self._err_r: int | None = None
        self.exit_code: int | None = None
        self.stopped = False
        self._reaped = False
        self.final_times: StatTimes | None = None

    @property
    def gated(self) -> bool:
        """True while the child is waiting before exec."""
        return self._gate_w is not None

    def launch(self) -> int:
        """Fork the child, held at the gate; its pid."""
        gate_r, gate_w = os.pipe()
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which never returns here
            self._child(gate_r, gate_w, err_r, err_w)
        os.close(gate_r)
        os.close(err_w)
        self.pid = pid
        self._gate_w = gate_w
        self._err_r = err_r
        return pid

    def _child(self, gate_r: int, gate_w: int, err_r: int, err_w: int) -> None:  # pragma: no cover
        """Runs in the forked child: wait for the go byte, then exec. Never returns."""
        code = 127
        try:
            os.close(gate_w)
            os.close(err_r)
            for target_fd, fd in enumerate(self._stdio):
                if fd is not None:
                    os.dup2(fd, target_fd)
            if os.read(gate_r, 1) == b"g":
                os.close(gate_r)
                # Python ignores SIGPIPE/SIGXFSZ; exec keeps ignored signals ignored (as subprocess's
                # restore_signals does, give the command the defaults).
                for name in _IGNORED_BY_PYTHON:
                    if hasattr(_signal, name):
                        try:  # noqa: SIM105 (contextlib is not imported here, see the module)
                            _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
                        except (OSError, ValueError):
                            pass
                os.execvpe(self.argv[0], self.argv, self.env)
        except OSError as exc:
            try:  # noqa: SIM105
                os.write(err_w, str(exc.errno or errno.ENOEXEC).encode())
            except OSError:
                pass
        finally:
            os._exit(code)

    def release(self) -> None:
        """Let the child exec; raise :class:`ExecFailed` (the child reaped) if the exec failed."""
        if self._gate_w is None:
            return
        os.write(self._gate_w, b"g")
        os.close(self._gate_w)
        self._gate_w = None
        assert self._err_r is not None
        chunks = []
        while chunk := os.read(self._err_r, 64):
            chunks.append(chunk)
        os.close(self._err_r)
        self._err_r = None
        if chunks:
            err = int(b"".join(chunks) or b"0")
            self.reap(block=True)
            raise ExecFailed(err, os.strerror(err))

    def _has_exited(self, pid: int, *, block: bool) -> bool:
        """Whether the command has exited (``block``: wait for it), not reaping it: its
        ``final_times`` are read from its zombie first. True also when it cannot be waited for
        (reaped elsewhere): the reaping says so."""
        try:
            ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG))
        except ChildProcessError:
            return True
        if ended is None:
            return False
        if self.read_final_times:
            from sectormon.host.cpu_time import process_times

            self.final_times = process_times(pid)
        return True

    def reap(self, *, block: bool) -> bool:
        """Whether the child has exited (and is reaped now, its ``exit_code`` recorded)."""
        if self._reaped or self.pid is None:
            return self._reaped
        if not self._has_exited(self.pid, block=block):
            return False
        try:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self._reaped = True  # reaped elsewhere (SIGCHLD ignored): exit code unknown
            return True
        if pid == 0:
            return False
        self.exit_code = os.waitstatus_to_exitcode(status)
        self._reaped = True
        return True

    def _terminate(self, grace: float = 2.0) -> None:
        if self.reap(block=False):
            return
        self.stopped = True
        self._send(_signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if self.reap(block=False):
                return
            time.sleep(0.02)
        self._send(_signal.SIGKILL)
        self.reap(block=True)

    def _send(self, signum: int) -> None:
        """Send the command ``signum`` (nothing if it is already gone)."""
        if self.pid is None:
            return
        try:  # noqa: SIM105
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL the command at once, without waiting: sectormon is ending without closing
        its session (:mod:`sectormon.session.stopping`) and leaves no orphan behind."""
        if not self._reaped:
            self._send(_signal.SIGKILL)

    def end(self) -> None:
        """End the command with the session, like ``perf stat -- CMD`` does.

        A child still held at the gate is killed and reaped. A command still running when the
        session stops (Ctrl-C, SIGTERM, ``| head``) gets SIGTERM, then SIGKILL after a grace period.
        """
        if self.pid is None:
            return
        if not self.gated:
            self._terminate()
            return
        self.stopped = True
        self._send(_signal.SIGKILL)  # before closing the gate, so it cannot run on
        for fd in (self._gate_w, self._err_r):
            if fd is not None:
                os.close(fd)
        self._gate_w = self._err_r = None
        self.reap(block=True)
