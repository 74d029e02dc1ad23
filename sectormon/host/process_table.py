"""The processes of this host as a table to pick from (``sectormon top``, ``sectormon --pid``).

One :class:`ProcessRow` per process: what htop's default columns show (pid, user, CPU %, threads,
resident memory, command) and the parent, for the tree. CPU % is the process's CPU time over the
wall time between two snapshots, so the first snapshot of a :class:`ProcessTable` has none
(``None``: shown as n/a, never a made-up 0). psutil reads ``/proc`` under the root
:mod:`sectormon.host.roots` sets, so tests give it a tree of their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import psutil


@dataclass(frozen=True, slots=True)
class ProcessRow:
    """One process; ``cpu_percent`` of one core (200 = two cores busy), ``rss`` in bytes."""

    pid: int
    parent: int | None
    user: str
    cpu_percent: float | None
    threads: int
    rss: int
    command: str


_ATTRS = ["pid", "ppid", "username", "num_threads", "memory_info", "cmdline", "name", "cpu_times"]


class ProcessTable:
    """Successive snapshots of the host's processes, each with the CPU % since the one before."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._last: dict[int, float] = {}  # pid -> CPU seconds at the previous snapshot
        self._last_t: float | None = None
        self._clock = clock

    def snapshot(self) -> list[ProcessRow]:
        now = self._clock()
        elapsed = None if self._last_t is None else now - self._last_t
        rows: list[ProcessRow] = []
        seen: dict[int, float] = {}
        for process in psutil.process_iter(_ATTRS, ad_value=None):
            info = process.info
            pid = info["pid"]
            times = info["cpu_times"]
            cpu = (times.user + times.system) if times is not None else None
            if cpu is not None:
                seen[pid] = cpu
            before = self._last.get(pid)
            percent = (
                max(0.0, (cpu - before) / elapsed * 100.0)
                if cpu is not None and before is not None and elapsed
                else None
            )
            memory = info["memory_info"]
            rows.append(
                ProcessRow(
                    pid=pid,
                    parent=info["ppid"] or None,
                    user=info["username"] or "?",
                    cpu_percent=percent,
                    threads=info["num_threads"] or 0,
                    rss=memory.rss if memory is not None else 0,
                    command=command_line(info["cmdline"], info["name"]),
                )
            )
        self._last, self._last_t = seen, now
        return rows


def command_line(argv: Sequence[str] | None, name: str | None) -> str:
    """The command as htop shows it: the arguments, or ``[name]`` for a kernel thread."""
    if argv:
        return " ".join(argv)
    return f"[{name}]" if name else "?"


SORT_KEYS = {
    "cpu": lambda r: (-(r.cpu_percent or 0.0), r.pid),
    "memory": lambda r: (-r.rss, r.pid),
    "pid": lambda r: (r.pid,),
    "threads": lambda r: (-r.threads, r.pid),
}
"""How the list can be ordered (htop's ``P``, ``M``, ``N`` and ``T``-like keys)."""


def matching(rows: Iterable[ProcessRow], text: str) -> list[ProcessRow]:
    """The rows whose command, user or pid contains ``text`` (case-insensitive)."""
    needle = text.casefold()
    return [r for r in rows if not needle or needle in f"{r.pid} {r.user} {r.command}".casefold()]


def ordered(rows: Iterable[ProcessRow], key: str) -> list[ProcessRow]:
    return sorted(rows, key=SORT_KEYS[key])


def as_tree(rows: Sequence[ProcessRow], key: str) -> list[tuple[int, ProcessRow]]:
    """``(depth, row)`` in tree order: each process under its parent, siblings by ``key``; a
    process whose parent is not listed (filtered out, or gone) starts a tree of its own, and so
    does a process caught in a parent loop (pids reused between two reads): every row once."""
    listed = {r.pid for r in rows}
    children: dict[int | None, list[ProcessRow]] = {}
    for row in rows:
        parent = row.parent if row.parent in listed and row.parent != row.pid else None
        children.setdefault(parent, []).append(row)
    out: list[tuple[int, ProcessRow]] = []
    done: set[int] = set()
    for root in (*ordered(children.get(None, []), key), *ordered(rows, key)):
        if root.pid in done:
            continue
        todo: list[tuple[int, ProcessRow]] = [(0, root)]
        while todo:  # iterative: a deep tree cannot exhaust the stack
            depth, row = todo.pop()
            if row.pid in done:
                continue
            done.add(row.pid)
            out.append((depth, row))
            todo.extend((depth + 1, c) for c in reversed(ordered(children.get(row.pid, []), key)))
    return out


def human_bytes(n: int) -> str:
    """Resident memory as htop writes it: 512K, 38.2M, 1.5G."""
    value = n / 1024
    for unit in ("K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return f"{value:.0f}{unit}" if unit == "K" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}T"
