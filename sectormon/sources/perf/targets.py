"""What a perf session counts: a running process, a set of CPUs, or a command it launches.

The design notes of this module are in docs/internals.md.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sectormon.data.readings import Unit, unit_key
from sectormon.errors import UsageError
from sectormon.files.text import is_ascii_digits
from sectormon.host.cpu_time import StatTimes, stat_times
from sectormon.sources.base import UnitsUpdate

BINDING_WARNING = (
    "some threads are not bound to a single CPU: per-core figures need thread binding "
    "(e.g. OMP_PROC_BIND=close OMP_PLACES=cores, numactl, taskset; PMU document section 6.7 note 1); "
    "an unbound thread counts in no core, in its CMG only when all its CPUs are in that CMG, and "
    "always in the process total"
)


class BadTarget(UsageError):
    """A pid, CPU list or command that cannot be counted."""


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a thread belongs: its process (pid) and the target process whose inherited groups
    also count it (``family``); :class:`ThreadTracker` copies both onto the thread's unit."""

    process: int | None = None
    family: int | None = None


def thread_unit(
    tid: int,
    affinity: Iterable[int],
    cmg_of: Mapping[int, int],
    lineage: Lineage = Lineage(),
    *,
    inherit: bool = False,
) -> Unit:
    """The unit of a thread: pinned to one CPU -> that core and its CMG; else core None, and the
    CMG only when the whole affinity lies inside one CMG."""
    cpus = set(affinity)
    core: int | None = None
    if len(cpus) == 1:
        (core,) = cpus
        cmg = cmg_of.get(core)
    else:
        cmgs = {cmg_of.get(c) for c in cpus}
        cmg = next(iter(cmgs)) if len(cmgs) == 1 else None
    return Unit(
        "thread", tid, core=core, cmg=cmg, process=lineage.process, family=lineage.family, inherit=inherit
    )


class ThreadTracker:
    """Turns successive thread lists into :class:`UnitsUpdate`: new, rebound and ended threads.

    Threads passed with ``roots=True`` get inherited groups (``Unit.inherit``) and stay units after
    they exit while any thread is left: their groups go on summing the threads and processes they
    started, which may outlive them.
    """

    def __init__(
        self,
        cmg_of: Mapping[int, int],
        affinity: Callable[[int], Iterable[int]] = os.sched_getaffinity,
        *,
        refresh_every: int = 1,
    ) -> None:
        self._cmg_of = cmg_of
        self._affinity = affinity
        self._units: dict[int, Unit] = {}
        self._warned = False
        self._refresh_every = refresh_every
        self._polls = 0
        self._last_tids: list[int] = []
        self._last_alive: tuple[Unit, ...] = ()

    @property
    def units(self) -> tuple[Unit, ...]:
        return tuple(self._units.values())

    @property
    def polls(self) -> int:
        """Polls so far (:meth:`update` and :meth:`unchanged`)."""
        return self._polls

    @property
    def refresh_due(self) -> bool:
        """Whether the next poll re-reads every thread's affinity (it needs the thread list)."""
        return (self._polls + 1) % self._refresh_every == 0

    def unchanged(self) -> UnitsUpdate:
        """A poll whose caller knows the thread list is the same as last time (and no refresh is due).

        Returns the very same ``alive`` tuple, which tells the sampler nothing changed.
        """
        self._polls += 1
        return UnitsUpdate(alive=self._last_alive)

    def update(
        self, tids: Iterable[int], lineage: Mapping[int, Lineage] | None = None, *, roots: bool = False
    ) -> UnitsUpdate:
        """New threads get their affinity read at once; known ones every ``refresh_every`` polls.

        Rebinding is rare while the thread list changes at any time, so the sampler can poll the
        list every timeslice without paying one affinity syscall per thread each time. A thread
        whose affinity cannot be read has exited. ``lineage`` says where each thread belongs;
        ``roots``: the threads new in this update get inherited groups.
        """
        self._polls += 1
        refresh = self._polls % self._refresh_every == 0
        ordered = sorted(set(tids))
        if not refresh and ordered == self._last_tids:
            # The common case at every timeslice: same threads, no affinity due. Nothing is new or
            # ended and the binding warning was already decided for exactly these units.
            return UnitsUpdate(alive=self._last_alive)
        current: dict[int, Unit] = {}
        listed: list[int] = []
        for tid in ordered:
            known = self._units.get(tid)
            if known is not None and not refresh:
                current[tid] = known
                listed.append(tid)
                continue
            try:
                cpus = self._affinity(tid)
            except OSError:
                if known is not None and known.inherit:
                    current[tid] = known
                continue
            where = lineage.get(tid, Lineage()) if lineage is not None else Lineage()
            inherit = known.inherit if known is not None else roots
            current[tid] = thread_unit(tid, cpus, self._cmg_of, where, inherit=inherit)
            listed.append(tid)
        for tid, known in self._units.items():
            if listed and known.inherit and tid not in current:
                current[tid] = known  # an exited root: its groups count what it started, still running
        ended = tuple(unit_key("thread", tid) for tid in self._units if tid not in current)
        self._units = current
        self._last_tids = listed  # threads whose affinity could not be read are not kept
        self._last_alive = tuple(current.values())
        warnings: tuple[str, ...] = ()
        if not self._warned and any(u.core is None for u in current.values()):
            self._warned = True
            warnings = (BINDING_WARNING,)
        return UnitsUpdate(alive=self._last_alive, ended=ended, warnings=warnings)


def describe_exit(code: int) -> str:
    """A command's end in words, from :attr:`CommandTarget.exit_code` (negative: a signal)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the command was killed by {name} (exit status {128 - code})"
    return f"the command exited with status {code}"


def shell_status(code: int) -> int:
    """The exit status a shell reports for ``code`` (128 + N for signal N)."""
    return 128 - code if code < 0 else code


def children_warning(pid: int, children: Sequence[tuple[int, str]]) -> str:
    """What to tell a user whose target started processes sectormon does not count."""
    shown = ", ".join(f"{name} (pid {child})" for child, name in children[:3])
    more = f" and {len(children) - 3} more" if len(children) > 3 else ""
    return (
        f"pid {pid} started child processes ({shown}{more}): with --no-children sectormon counts "
        f"only the threads of pid {pid}, not its children (perf stat counts both); to count them "
        "drop --no-children"
    )


def _read_proc_file(path: str) -> bytes | None:
    """The content of a small /proc file, or None when it cannot be read.

    Plain ``os.open``/``os.read``: the sampler reads /proc/PID/stat every timeslice, and pathlib
    plus a text wrapper cost several times the syscalls themselves.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)  # /proc/PID/stat is well under 1 KiB, returned whole
    except OSError:
        return None
    finally:
        os.close(fd)


def task_state(pid: int, procfs_root: Path | str = "/proc") -> str | None:
    """The one-letter state of process or thread ``pid`` from /proc/PID/stat, or None when it
    does not exist."""
    stat = _read_proc_file(os.path.join(procfs_root, str(pid), "stat"))
    if stat is None:
        return None
    fields = stat.rpartition(b")")[2].split()
    return fields[0].decode("ascii", "replace") if fields else None


@dataclass(slots=True)
class _Followed:
    """A process whose threads are counted: its family (the target process it descends from), the
    descriptor of its task directory (None: unknown) and the threads listed last time."""

    family: int
    task_fd: int | None = None
    tids: tuple[int, ...] = ()


class _ProcessTarget:
    """Shared thread and process discovery for the pid and command modes.

    The target's processes (the pids given, or the launched command) are followed with every
    process they start, as ``perf stat`` counts a command (``follow_children``; off: their own
    threads only). The sampler asks every timeslice whether the target has finished and whether
    its threads changed. Reading /proc/PID/stat and listing /proc/PID/task answer both, but cost
    more than the counters themselves right after the sampler's sleep next to a busy target
    (docs/perf-tuning.md), so on the real /proc the answers come from descriptors kept open: a
    pidfd per target process, readable once it has exited (one ``poll``), and each followed
    process's /proc/PID/task, whose link count is 2 + the number of threads (one ``fstat``).
    """

    mode = "pid"

    def __init__(self, procfs_root: str | Path = "/proc", *, follow_children: bool = True) -> None:
        self.procfs_root = Path(procfs_root)
        self.follow_children = follow_children
        self.pid: int | None = None  # the first target process (the command)
        self.roots: tuple[int, ...] = ()  # every target process
        self._exit_poll: select.poll | None = None
        self._exit_fds: dict[int, int] = {}  # root pid -> pidfd
        self._followed: dict[int, _Followed] = {}
        self._new: list[int] = []  # processes followed since the last new_processes()
        self._exited = False

    def start(self) -> None:
        """Nothing to do for an existing process."""

    def _real_proc(self) -> bool:
        return str(self.procfs_root) == "/proc"

    def _watch(self, *, exit_fd: bool) -> None:
        """Follow the roots; with ``exit_fd``, watch each with a pidfd (real /proc only; best
        effort). A launched command needs no pidfd: :meth:`CommandTarget.finished` reaps it."""
        for root in self.roots:
            self._follow(root, root)
        pidfd_open = getattr(os, "pidfd_open", None)  # Python 3.9+ on Linux 5.3+
        if not exit_fd or pidfd_open is None or not self._real_proc():
            return
        poller = select.poll()
        with contextlib.suppress(OSError):
            for root in self.roots:
                pidfd = pidfd_open(root)
                os.set_inheritable(pidfd, False)
                self._exit_fds[root] = pidfd
                poller.register(pidfd, select.POLLIN)
        if len(self._exit_fds) == len(self.roots):
            self._exit_poll = poller

    def _follow(self, pid: int, family: int) -> None:
        task_fd = None
        if self._real_proc():
            with contextlib.suppress(OSError):
                task_fd = os.open(f"/proc/{pid}/task", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._followed[pid] = _Followed(family, task_fd)
        self._new.append(pid)

    def _unfollow(self, pid: int) -> None:
        followed = self._followed.pop(pid, None)
        if followed is not None and followed.task_fd is not None:
            with contextlib.suppress(OSError):
                os.close(followed.task_fd)

    def _unwatch(self) -> None:
        for pid in list(self._followed):
            self._unfollow(pid)
        fds, self._exit_fds = self._exit_fds, {}
        self._exit_poll = None
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)

    def finished(self) -> bool:
        """True once every target process has exited (whatever their children still do)."""
        if self.pid is None:
            return False
        if self._exited:
            return True
        if self._exit_poll is not None:
            self._exited = len(self._exit_poll.poll(0)) == len(self._exit_fds)
        else:
            self._exited = all(
                task_state(root, self.procfs_root) in (None, "Z", "X", "x") for root in self.roots
            )
        return self._exited

    def thread_count(self) -> int | None:
        """A cheap change detector for the thread list: 2 + the number of threads of each followed
        process, summed, or None when unknown (fake procfs, a task directory not open)."""
        total = 0
        for followed in self._followed.values():
            if followed.task_fd is None:
                return None
            try:
                total += os.fstat(followed.task_fd).st_nlink
            except OSError:
                return None
        return total if self._followed else None

    def tids(self) -> tuple[int, ...]:
        """Threads of the first target process now; () once the target has exited."""
        if self.pid is None or self.finished():
            return ()
        followed = self._followed.get(self.pid)
        return followed.tids if followed is not None and self._list(self.pid, followed) else ()

    def _list(self, pid: int, followed: _Followed) -> bool:
        """Re-read ``pid``'s threads into ``followed.tids``; False once the process is gone."""
        try:
            names = os.listdir(os.path.join(self.procfs_root, str(pid), "task"))
        except OSError as exc:
            # Out of fds (sectormon's own limit, see Sampler._skip_for_fds) says nothing about the
            # threads: ending them all would restart every thread's counts at the next read.
            return exc.errno in (errno.EMFILE, errno.ENFILE)
        followed.tids = tuple(sorted(int(n) for n in names if is_ascii_digits(n)))
        return True

    def threads(self, *, every_thread: bool = False) -> dict[int, Lineage]:
        """Every thread of every followed process now, with where it belongs; {} once finished.

        With ``follow_children``, the processes started by followed ones are looked for first:
        under each process's main thread at every call (scripts and launchers fork from it), under
        all its threads with ``every_thread``.
        """
        if self.pid is None or self.finished():
            return {}
        if self.follow_children:
            self._find_children(every_thread=every_thread)
        found: dict[int, Lineage] = {}
        for pid, followed in list(self._followed.items()):
            if not self._list(pid, followed):
                self._unfollow(pid)
                continue
            where = Lineage(process=pid, family=followed.family)
            for tid in followed.tids:
                found[tid] = where
        return found

    def _find_children(self, *, every_thread: bool) -> None:
        queue = list(self._followed)
        while queue:
            pid = queue.pop()
            followed = self._followed[pid]
            tids = followed.tids if every_thread and followed.tids else (pid,)
            for child in self._children_of(pid, tids):
                if child not in self._followed:
                    self._follow(child, followed.family)
                    queue.append(child)

    def _children_of(self, pid: int, tids: Iterable[int]) -> list[int]:
        task = os.path.join(self.procfs_root, str(pid), "task")
        found: list[int] = []
        for tid in tids:
            data = _read_proc_file(os.path.join(task, str(tid), "children"))
            if data:
                found += [int(p) for p in data.split() if p.isdigit()]
        return found

    def new_children(self) -> bool:
        """Whether a followed process's main thread has started a process not followed yet (one
        small read per process: cheaper than listing threads, and a new process changes no
        followed process's thread count)."""
        if not self.follow_children or self.pid is None:
            return False
        followed = self._followed
        return any(child not in followed for pid in list(followed) for child in self._children_of(pid, [pid]))

    def followed_pids(self) -> tuple[int, ...]:
        """The processes followed now, the target processes first."""
        return tuple(self._followed)

    def new_processes(self) -> tuple[int, ...]:
        """Processes followed since the last call (the roots first)."""
        new, self._new = tuple(self._new), []
        return new

    def child_pids(self, tids: Iterable[int]) -> tuple[int, ...]:
        """Live processes that threads ``tids`` of the first target process started
        (``/proc/PID/task/TID/children``; () where the kernel lacks that file)."""
        if self.pid is None:
            return ()
        return tuple(self._children_of(self.pid, tids))

    def process_name(self, pid: int) -> str:
        """A process's command name (``/proc/PID/comm``), or its pid when it is gone."""
        data = _read_proc_file(os.path.join(self.procfs_root, str(pid), "comm"))
        return data.decode(errors="replace").strip() if data else str(pid)

    def cmdline(self) -> list[str]:
        if self.pid is None:
            return []
        try:
            raw = (self.procfs_root / str(self.pid) / "cmdline").read_bytes()
        except OSError:
            return []
        return [a.decode(errors="replace") for a in raw.split(b"\0") if a]

    def cpus(self) -> list[int]:
        """CPUs the first target process may run on (its affinity), [] when unreadable."""
        if self.pid is None:
            return []
        try:
            return sorted(os.sched_getaffinity(self.pid))
        except OSError:
            return []

    def close(self) -> None:
        """Release the descriptors that watch the processes."""
        self._unwatch()


class PidTarget(_ProcessTarget):
    """Running processes (``--pid`` takes a list), followed thread by thread."""

    mode = "pid"

    def __init__(
        self,
        pids: int | Sequence[int],
        *,
        follow_children: bool = True,
        procfs_root: str | Path = "/proc",
    ) -> None:
        super().__init__(procfs_root, follow_children=follow_children)
        wanted = (pids,) if isinstance(pids, int) else tuple(dict.fromkeys(pids))
        if not wanted:
            raise BadTarget("--pid: no process given (write e.g. --pid 4242 or --pid 4242,4243)")
        for pid in wanted:
            if pid <= 0:
                raise BadTarget(f"--pid {pid}: not a process id (give the pid of a running process)")
            state = task_state(pid, self.procfs_root)
            if state is None:
                raise BadTarget(f"--pid {pid}: no such process (check the pid with `ps -e`)")
            if state in ("Z", "X", "x"):
                raise BadTarget(f"--pid {pid}: the process has already exited (zombie); give a running pid")
        self.roots = wanted
        self.pid = wanted[0]
        self._watch(exit_fd=True)


class CommandTarget(_ProcessTarget):
    """A command launched gated: forked, held before exec until :meth:`release`.

    ``stdin``/``stdout``/``stderr`` are file descriptors the child gets as 0/1/2 (default: inherit).
    ``env`` is the command's environment (default: a copy of ours taken now); ``exit_code`` is set
    once the child has been reaped (negative: killed by that signal).
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
        procfs_root: str | Path = "/proc",
    ) -> None:
        super().__init__(procfs_root, follow_children=follow_children)
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
        self._stdio = (stdin, stdout, stderr)
        if any(fd is not None and fd < 0 for fd in self._stdio):
            raise ValueError("stdin/stdout/stderr must be open file descriptors or None")
        self._gate_w: int | None = None
        self._err_r: int | None = None
        self.exit_code: int | None = None
        self.stopped = False  # True: the session ended the command (its exit code is not its own)
        self._reaped = False
        self.final_times: StatTimes | None = None  # its own CPU times at exit (_has_exited)

    @property
    def gated(self) -> bool:
        """True while the child is waiting before exec."""
        return self._gate_w is not None

    def start(self) -> None:
        """Fork the child; it waits on the gate pipe. Idempotent."""
        if self.pid is None:
            self.launch()

    def launch(self) -> int:
        gate_r, gate_w = os.pipe()
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which never returns here
            self._child(gate_r, gate_w, err_r, err_w)
        os.close(gate_r)
        os.close(err_w)
        self.pid = pid
        self.roots = (pid,)
        self._gate_w = gate_w
        self._err_r = err_r
        self._watch(exit_fd=False)
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
                for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
                    if hasattr(signal, name):
                        with contextlib.suppress(OSError, ValueError):
                            signal.signal(getattr(signal, name), signal.SIG_DFL)
                os.execvpe(self.argv[0], self.argv, self.env)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.write(err_w, str(exc.errno or errno.ENOEXEC).encode())
        finally:
            os._exit(code)

    def release(self) -> None:
        """Let the child exec; raise :class:`BadTarget` if the exec failed."""
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
            self._reap(block=True)
            raise BadTarget(
                f"cannot run '{self.argv[0]}': {os.strerror(err)} (check the command and its permissions)"
            )

    def _has_exited(self, pid: int, *, block: bool) -> bool:
        """Whether the command has exited (``block``: wait for it), not reaping it: its CPU times
        are read from its zombie first (``final_times``), since once reaped only
        ``RUSAGE_CHILDREN`` holds them, summed with those of the children it reaped. True also
        when it cannot be waited for (reaped elsewhere): the reaping says so."""
        try:
            ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG))
        except ChildProcessError:
            return True
        if ended is None:
            return False
        stat = _read_proc_file(os.path.join(self.procfs_root, str(pid), "stat"))
        self.final_times = stat_times(stat) if stat else None
        return True

    def _reap(self, *, block: bool) -> bool:
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
        if self._reap(block=False):
            return
        self.stopped = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)  # type: ignore[arg-type]
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if self._reap(block=False):
                return
            time.sleep(0.02)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # type: ignore[arg-type]
        self._reap(block=True)

    def kill(self) -> None:
        """SIGKILL the command at once, without waiting: sectormon is ending without closing
        its session (:mod:`sectormon.session.stopping`) and leaves no orphan behind."""
        if self.pid is not None and not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def finished(self) -> bool:
        """True once the command has exited (reaps it and records ``exit_code``)."""
        if self.pid is None or self.gated:
            return False
        return self._reap(block=False)

    def close(self) -> None:
        """End the command with the session, like ``perf stat -- CMD`` does.

        A child still held at the gate is killed and reaped. A command still running when the
        session stops (Ctrl-C, SIGTERM, ``| head``) gets SIGTERM, then SIGKILL after a grace period,
        so sectormon never leaves an orphan behind.
        """
        if self.pid is None:
            return
        self._unwatch()
        if not self.gated:
            self._terminate()
            return
        self.stopped = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # before closing the gate, so it cannot run on
        for fd in (self._gate_w, self._err_r):
            if fd is not None:
                os.close(fd)
        self._gate_w = self._err_r = None
        self._reap(block=True)


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
