"""What the scheduler says about one thread: how often it migrated, where it last ran, its name.

Binding matters for sector cache (PMU document section 6.7, note 1), so the perf source reports
per thread whether it moved between CPUs. The kernel counts that itself, ``se.nr_migrations`` in
``/proc/PID/task/TID/sched``, but only with ``CONFIG_SCHED_DEBUG`` (distribution kernels mostly
have it; some HPC kernels do not). Without it, the CPU a thread last ran on (field 39 of its
``stat``) read twice and found different says it moved at least once in between. Each reader
returns ``None`` when the file or the field is not there: a thread that ended, or a kernel that
does not say.
"""

from __future__ import annotations

import os

from sectormon.host import roots

MAX_SCHED_BYTES = 64 * 1024
"""Read no more of a sched file than this (about 2 KiB on current kernels)."""

_NR_MIGRATIONS = b"se.nr_migrations"
_PROCESSOR_FIELD = 39 - 3
"""``stat``'s field 39 (``processor``, 1-based) among the fields after the command's ``)``,
which start at field 3."""


def _task_file(pid: int | None, tid: int, name: str) -> str:
    """``/proc/PID/task/TID/NAME``; a thread's own id stands in for an unknown process (its
    ``/proc/TID/task`` lists its whole thread group)."""
    return roots.procfs(pid if pid is not None else tid, "task", tid, name)


def _read(path: str, limit: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    chunks: list[bytes] = []
    size = 0
    try:
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def nr_migrations(sched: bytes) -> int | None:
    """``se.nr_migrations`` of a sched file's text (``None``: not there, or not a count)."""
    at = sched.find(_NR_MIGRATIONS)
    if at < 0:
        return None
    end = sched.find(b"\n", at)
    line = sched[at:] if end < 0 else sched[at:end]
    _, colon, value = line.partition(b":")
    text = value.strip()
    return int(text) if colon and text.isdigit() else None


def last_cpu(stat: bytes) -> int | None:
    """The CPU a ``stat`` line says the task last ran on (``None``: not such a line)."""
    _, sep, rest = stat.rpartition(b")")
    fields = rest.split()
    if not sep or len(fields) <= _PROCESSOR_FIELD or not fields[_PROCESSOR_FIELD].isdigit():
        return None
    return int(fields[_PROCESSOR_FIELD])


def thread_migrations(pid: int | None, tid: int) -> int | None:
    """The kernel's count of thread ``tid``'s migrations so far (``None``: no sched file here, or
    the thread has ended)."""
    data = _read(_task_file(pid, tid, "sched"), MAX_SCHED_BYTES)
    return nr_migrations(data) if data is not None else None


def thread_last_cpu(pid: int | None, tid: int) -> int | None:
    """The CPU thread ``tid`` last ran on (``None``: it has ended)."""
    data = _read(_task_file(pid, tid, "stat"), 4096)  # well under 1 KiB
    return last_cpu(data) if data is not None else None


def thread_name(pid: int | None, tid: int) -> str | None:
    """Thread ``tid``'s command name (``comm``; ``None``: it has ended)."""
    data = _read(_task_file(pid, tid, "comm"), 256)
    return data.decode(errors="replace").strip() if data is not None else None
