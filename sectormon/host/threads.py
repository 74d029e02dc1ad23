"""Which threads a family of processes has now, read from procfs: new ones, ended ones, new children.

A perf target is one or more processes and, as ``perf stat`` counts a command, every process they
start (``follow_children``; off: their own threads only). :class:`FollowedProcesses` lists each
followed process's threads from ``/proc/PID/task`` and finds the processes they started in
``/proc/PID/task/TID/children``. The sampler asks every timeslice whether the processes have
ended and whether their threads changed; reading ``/proc/PID/stat`` and listing the task folder
answer both, but cost more than the counters themselves right after the sampler's sleep next to
a busy target (docs/perf-tuning.md, the sampler's second pass). So on the real procfs the answers
come from descriptors kept open: a pidfd per target process, readable once it has exited (one
``poll``), and each followed process's task folder, whose link count is 2 + its number of threads
(one ``fstat``). In a fake procfs tree (tests) nothing is kept open: a pid there is only a folder
name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sectormon.files.text import is_ascii_digits
from sectormon.host import roots

ENDED_STATES = ("Z", "X", "x")
"""``/proc/PID/stat`` states of a task that has exited (a zombie, or dead)."""


def _read_small_file(path: str) -> bytes | None:
    """The content of a small procfs file, or None when it cannot be read.

    Plain ``os.open``/``os.read``: the sampler reads such files every timeslice, and pathlib plus
    a text wrapper cost several times the syscalls themselves.
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


def task_state(pid: int) -> str | None:
    """The one-letter state of process or thread ``pid`` from /proc/PID/stat, or None when it
    does not exist."""
    stat = _read_small_file(roots.procfs(pid, "stat"))
    if stat is None:
        return None
    fields = stat.rpartition(b")")[2].split()
    return fields[0].decode("ascii", "replace") if fields else None


def has_ended(pid: int) -> bool:
    """Whether process or thread ``pid`` is gone or has exited (a zombie not reaped yet included)."""
    return task_state(pid) in (None, *ENDED_STATES)


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a thread belongs: its process (pid) and the target process whose inherited groups
    also count it (``family``)."""

    process: int | None = None
    family: int | None = None


@dataclass(slots=True)
class _Followed:
    """A process whose threads are counted: its family (the target process it descends from), the
    descriptor of its task directory (None: unknown) and the threads listed last time."""

    family: int
    task_fd: int | None = None
    tids: tuple[int, ...] = ()


class FollowedProcesses:
    """The target processes (``roots``, the first is ``pid``) and the processes they start, thread
    by thread. Nothing is followed until :meth:`follow_roots`."""

    def __init__(self, *, follow_children: bool = True) -> None:
        self.follow_children = follow_children
        self.pid: int | None = None  # the first target process (the command)
        self.roots: tuple[int, ...] = ()  # every target process
        self._exit_poll: select.poll | None = None
        self._exit_fds: dict[int, int] = {}  # root pid -> pidfd
        self._followed: dict[int, _Followed] = {}
        self._new: list[int] = []  # processes followed since the last new_processes()
        self._exited = False
        self.listing_short_of_fds: int | None = None  # a process whose threads could not be listed (EMFILE)

    def follow_roots(self, pids: Sequence[int], *, exit_fd: bool) -> None:
        """Follow the target processes ``pids``; with ``exit_fd``, watch each with a pidfd (real
        procfs only; best effort). A launched command needs no pidfd: its parent reaps it."""
        self.roots = tuple(pids)
        self.pid = self.roots[0]
        for root in self.roots:
            self._follow(root, root)
        pidfd_open = getattr(os, "pidfd_open", None)  # Python 3.9+ on Linux 5.3+
        if not exit_fd or pidfd_open is None or not roots.real_procfs():
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
        if roots.real_procfs():
            with contextlib.suppress(OSError):
                task_fd = os.open(roots.procfs(pid, "task"), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._followed[pid] = _Followed(family, task_fd)
        self._new.append(pid)

    def _unfollow(self, pid: int) -> None:
        followed = self._followed.pop(pid, None)
        if followed is not None and followed.task_fd is not None:
            with contextlib.suppress(OSError):
                os.close(followed.task_fd)

    def stop_following(self) -> None:
        """Release the descriptors that watch the processes (nothing is followed after)."""
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
            self._exited = all(has_ended(root) for root in self.roots)
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
            names = os.listdir(roots.procfs(pid, "task"))
        except OSError as exc:
            # Out of fds (sectormon's own limit, see Sampler._skip_for_fds) says nothing about the
            # threads: ending them all would restart every thread's counts at the next read. The
            # threads started meanwhile are not found: said by the source (listing_short_of_fds).
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                self.listing_short_of_fds = pid
                return True
            return False
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
        task = roots.procfs(pid, "task")
        found: list[int] = []
        for tid in tids:
            data = _read_small_file(os.path.join(task, str(tid), "children"))
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
        data = _read_small_file(roots.procfs(pid, "comm"))
        return data.decode(errors="replace").strip() if data else str(pid)

    def cmdline(self) -> list[str]:
        """The first target process's command line ([] when it is gone or not readable)."""
        if self.pid is None:
            return []
        try:
            raw = Path(roots.procfs(self.pid, "cmdline")).read_bytes()
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
