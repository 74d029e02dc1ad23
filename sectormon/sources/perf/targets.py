"""What a perf session counts: running processes, a command it launches, or a set of CPUs.

A process target is the processes' family as :class:`~sectormon.host.threads.FollowedProcesses`
reads it from procfs (every process they start, unless ``--no-children``); a command target is
that family started from a command :class:`~sectormon.sources.perf.launch.GatedCommand` launches
held before its exec. What cannot be counted (no such pid, a zombie, a command that is not there)
is a :class:`BadTarget`, said in the words of the option that named it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence

from sectormon.errors import UsageError
from sectormon.host.cpu_time import StatTimes
from sectormon.host.threads import ENDED_STATES, FollowedProcesses, task_state
from sectormon.sources.perf.launch import ExecFailed, GatedCommand
from sectormon.sources.perf.thread_binding import Pinner


class BadTarget(UsageError):
    """A pid, CPU list or command that cannot be counted."""


def children_warning(pid: int, children: Sequence[tuple[int, str]]) -> str:
    """What to tell a user whose target started processes sectormon does not count."""
    shown = ", ".join(f"{name} (pid {child})" for child, name in children[:3])
    more = f" and {len(children) - 3} more" if len(children) > 3 else ""
    return (
        f"pid {pid} started child processes ({shown}{more}): with --no-children sectormon counts "
        f"only the threads of pid {pid}, not its children (perf stat counts both); to count them "
        "drop --no-children"
    )


class PidTarget(FollowedProcesses):
    """Running processes (``--pid`` takes a list), followed thread by thread."""

    mode = "pid"

    def __init__(self, pids: int | Sequence[int], *, follow_children: bool = True) -> None:
        super().__init__(follow_children=follow_children)
        wanted = (pids,) if isinstance(pids, int) else tuple(dict.fromkeys(pids))
        if not wanted:
            raise BadTarget("--pid: no process given (write e.g. --pid 4242 or --pid 4242,4243)")
        for pid in wanted:
            if pid <= 0:
                raise BadTarget(f"--pid {pid}: not a process id (give the pid of a running process)")
            state = task_state(pid)
            if state is None:
                raise BadTarget(f"--pid {pid}: no such process (check the pid with `ps -e`)")
            if state in ENDED_STATES:
                raise BadTarget(f"--pid {pid}: the process has already exited (zombie); give a running pid")
        self.follow_roots(wanted, exit_fd=True)

    def start(self) -> None:
        """Nothing to do for an existing process."""

    def close(self) -> None:
        """Release the descriptors that watch the processes."""
        self.stop_following()


class CommandTarget(FollowedProcesses):
    """A command launched gated: forked, held before exec until :meth:`release`.

    ``stdin``/``stdout``/``stderr`` are file descriptors the child gets as 0/1/2 (default: inherit).
    ``env`` is the command's environment (default: a copy of ours taken now); ``exit_code`` is set
    once the child has been reaped (negative: killed by that signal). ``bind`` (``--bind``): CPUs
    the command's threads are pinned to round robin (:attr:`pinner`; the main thread while held
    before its exec, the others as the thread tracker finds them).
    """

    mode = "command"

    def __init__(
        self,
        argv: list[str] | tuple[str, ...],
        *,
        stdin: int | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
        env: Mapping[str, str] | None = None,
        follow_children: bool = True,
        bind: Sequence[int] = (),
    ) -> None:
        super().__init__(follow_children=follow_children)
        self.pinner = Pinner(bind) if bind else None
        if not argv:
            raise BadTarget("no command given (write it after --, e.g. sectormon -- ./app args)")
        if os.path.isdir(argv[0]):
            raise BadTarget(f"'{argv[0]}' is a directory, not a program (give the program after --)")
        if shutil.which(argv[0]) is None:
            raise BadTarget(
                f"command '{argv[0]}' not found (check the name, PATH, or give a path like ./app)"
            )
        self.argv = [str(a) for a in argv]
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        stdio = (stdin, stdout, stderr)
        if any(fd is not None and fd < 0 for fd in stdio):
            raise ValueError("stdin/stdout/stderr must be open file descriptors or None")
        self._command = GatedCommand(self.argv, self.env, stdio)

    @property
    def gated(self) -> bool:
        """True while the child is waiting before exec."""
        return self._command.gated

    @property
    def exit_code(self) -> int | None:
        """The command's exit code once it has been reaped (negative: killed by that signal)."""
        return self._command.exit_code

    @property
    def stopped(self) -> bool:
        """True: the session ended the command (its exit code is not its own)."""
        return self._command.stopped

    @property
    def final_times(self) -> StatTimes | None:
        """The command's own CPU times at its exit, once it has exited (read from its zombie)."""
        return self._command.final_times

    def start(self) -> None:
        """Fork the child; it waits on the gate pipe. Idempotent."""
        if self.pid is None:
            self.launch()

    def launch(self) -> int:
        pid = self._command.launch()
        if self.pinner is not None:
            # Pinned from here rather than by the child itself: done before launch returns, so
            # the first poll already reads the binding, and still before the exec.
            try:
                self.pinner.pin(pid)
            except OSError as exc:
                self._command.end()
                raise BadTarget(
                    f"--bind: cannot pin the command to CPU {self.pinner.cpus[0]}: {exc.strerror} "
                    "(choose CPUs sectormon itself may run on: see taskset -p $$)"
                ) from None
        self.follow_roots((pid,), exit_fd=False)
        return pid

    def release(self) -> None:
        """Let the child exec; raise :class:`BadTarget` if the exec failed."""
        try:
            self._command.release()
        except ExecFailed as exc:
            raise BadTarget(
                f"cannot run '{self.argv[0]}': {exc.strerror} (check the command and its permissions)"
            ) from None

    def kill(self) -> None:
        """SIGKILL the command at once, without waiting (see :meth:`GatedCommand.kill`)."""
        self._command.kill()

    def finished(self) -> bool:
        """True once the command has exited (reaps it and records ``exit_code``)."""
        if self.pid is None or self.gated:
            return False
        return self._command.reap(block=False)

    def close(self) -> None:
        """Stop following the command's processes and end it with the session (see
        :meth:`GatedCommand.end`)."""
        if self.pid is None:
            return
        self.stop_following()
        self._command.end()


class CpuTarget:
    """Every process on a set of CPUs (CPU-wide counting: needs perf_event_paranoid <= 0 or CAP_PERFMON)."""

    mode = "cpus"

    def __init__(self, cpus: Iterable[int]) -> None:
        self.cpus = tuple(sorted(set(cpus)))
        if not self.cpus:
            raise BadTarget("--cpus: no CPUs given (write e.g. 0-3,8)")
        self.pid: int | None = None

    def start(self) -> None:
        """Nothing to launch."""

    def finished(self) -> bool:
        return False

    def close(self) -> None:
        """Nothing to release."""


Target = PidTarget | CommandTarget | CpuTarget
