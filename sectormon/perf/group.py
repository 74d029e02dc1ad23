"""A perf counter group on one unit: leader + members, enabled/disabled/reset/read as one.

The group is opened disabled with ``read_format = GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING |
ID``, so one ``read()`` of the leader returns every member's value with the group's times, and the
ids let values be matched to events whatever order the kernel lists them in. Satisfies the
:class:`sectormon.sources.base.CounterGroup` protocol.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import operator
import os
import struct
from collections.abc import Callable, Sequence
from typing import NamedTuple

from sectormon.perf import abi, syscall
from sectormon.perf.errors import (
    GONE_ERRNOS,
    Attempt,
    GroupReadError,
    PerfError,
    TargetGone,
    errno_name,
    error_for,
    where,
)
from sectormon.perf.events import EventSpec

_HEADER = struct.Struct("=3Q")
ECHILD_RETRIES = 100
"""Reads of an inherited group tried while a thread's copy of it is torn down (see
:meth:`PerfGroup._read_settled`)."""
_IOCTL = syscall.raw_ioctl


class GroupValues(NamedTuple):
    """One read of a counter group: cumulative raw values in group order plus the group's times (ns)."""

    values: tuple[int, ...]
    time_enabled: int
    time_running: int


def group_read_size(nr: int) -> int:
    """Bytes of a GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID read of ``nr`` events."""
    return 8 * (3 + 2 * nr)


def parse_group_read(buf: bytes, ids: Sequence[int]) -> GroupValues:
    """Decode a group read (``nr, time_enabled, time_running, {value, id} x nr``) into ``ids`` order.

    Raises :class:`GroupReadError` when the buffer does not describe exactly the events in ``ids``.
    """
    nr = len(ids)
    if len(buf) < _HEADER.size:
        raise GroupReadError(f"group read returned {len(buf)} bytes, shorter than the 24-byte header")
    count, time_enabled, time_running = _HEADER.unpack_from(buf, 0)
    if count != nr:
        raise GroupReadError(f"group read lists {count} events, the group has {nr}")
    if len(buf) != group_read_size(nr):
        raise GroupReadError(f"group read returned {len(buf)} bytes, expected {group_read_size(nr)}")
    pairs = struct.unpack_from(f"={2 * nr}Q", buf, _HEADER.size)
    by_id = dict(zip(pairs[1::2], pairs[0::2], strict=False))
    if len(by_id) != nr:
        raise GroupReadError("group read repeats an event id")
    try:
        values = tuple(by_id[i] for i in ids)
    except KeyError as exc:
        raise GroupReadError(f"group read lacks event id {exc.args[0]}") from None
    return GroupValues(values=values, time_enabled=time_enabled, time_running=time_running)


class GroupReadDecoder:
    """:func:`parse_group_read` for one group, precompiled for the sampler's hot path.

    The kernel lists a group's events in a stable order, so after the first read the permutation
    from kernel order to ``ids`` order is reused as long as the ids in the buffer are unchanged; any
    other buffer falls back to the general decoder (same results, same errors).
    """

    def __init__(self, ids: Sequence[int]) -> None:
        self.ids = tuple(ids)
        self._struct = struct.Struct(f"=3Q{2 * len(self.ids)}Q")
        self._kernel_ids: tuple[int, ...] | None = None
        self._pick: Callable[[tuple[int, ...]], tuple[int, ...]] = lambda raw: ()

    def decode(self, buf: bytes) -> GroupValues:
        if len(buf) == self._struct.size:
            raw = self._struct.unpack(buf)
            if raw[0] == len(self.ids) and raw[4::2] == self._kernel_ids:
                return GroupValues(self._pick(raw), raw[1], raw[2])
        result = parse_group_read(buf, self.ids)
        kernel_ids = struct.unpack_from(f"={2 * len(self.ids)}Q", buf, _HEADER.size)[1::2]
        self._kernel_ids = kernel_ids
        # value of ids[k] sits at raw position 3 + 2 * (its index in kernel order)
        positions = [3 + 2 * kernel_ids.index(i) for i in self.ids]
        if len(positions) == 1:
            only = positions[0]
            self._pick = lambda raw: (raw[only],)
        else:
            self._pick = operator.itemgetter(*positions)
        return result


_CLOCKS = {
    (abi.PERF_TYPE_SOFTWARE, abi.PERF_COUNT_SW_CPU_CLOCK),
    (abi.PERF_TYPE_SOFTWARE, abi.PERF_COUNT_SW_TASK_CLOCK),
}


def leader_index(specs: Sequence[EventSpec]) -> int:
    """Which event leads the group: the first one that is not a software clock, else the first.

    Measured on Linux 6.18: with cpu-clock/task-clock as leader, software members (page-faults,
    context-switches) silently lose counts across group disable/enable cycles; with any other
    leader they do not. The leader choice is invisible to callers: values come back in the
    caller's order, matched by id.
    """
    for index, spec in enumerate(specs):
        if (spec.type, spec.config) not in _CLOCKS:
            return index
    return 0


class PerfGroup:
    """Leader + members opened on one thread (``pid=tid, cpu=-1``) or one CPU (``pid=-1, cpu=N``).

    ``exclude_kernel``/``exclude_hv`` default to True: user-space counting works at
    perf_event_paranoid 2 without privileges. ``enable_on_exec`` makes the kernel enable the group
    when the target calls exec (the command mode's gated start). ``inherit`` makes every thread and
    child process the task creates afterwards count into this group too, from its first
    instruction (a read sums them, the ended ones included); ``inherit_thread`` limits that to
    threads. ``exclude_user`` leaves user mode out (perf's ``:k``: with ``exclude_kernel`` False,
    kernel mode alone counts).
    """

    def __init__(
        self,
        specs: Sequence[EventSpec],
        *,
        pid: int,
        cpu: int = -1,
        names: Sequence[str] | None = None,
        exclude_kernel: bool = True,
        exclude_hv: bool = True,
        enable_on_exec: bool = False,
        inherit: bool = False,
        inherit_thread: bool = False,
        exclude_user: bool = False,
    ) -> None:
        if not specs:
            raise ValueError("a perf group needs at least one event")
        names = tuple(names) if names is not None else tuple(s.spec for s in specs)
        if len(names) != len(specs):
            raise ValueError("names and specs differ in length")
        self.events: tuple[str, ...] = names
        self.pid = pid
        self.cpu = cpu
        self.exclude_kernel = exclude_kernel
        self.exclude_user = exclude_user
        self._fds: list[int] = []
        self._read_size = group_read_size(len(specs))
        lead = leader_index(specs)
        order = [lead] + [i for i in range(len(specs)) if i != lead]
        ids: dict[int, int] = {}
        try:
            for member, index in enumerate(order):
                ids[index] = self._open_one(
                    member,
                    specs[index],
                    names[index],
                    exclude_kernel,
                    exclude_hv,
                    enable_on_exec,
                    (inherit, inherit_thread),
                )
        except BaseException:
            self.close()
            raise
        self.leader = lead
        self.ids: tuple[int, ...] = tuple(ids[i] for i in range(len(specs)))
        self._decoder = GroupReadDecoder(self.ids)
        self._attempts = {
            request: Attempt(self.events[lead], pid, cpu, action=f"{verb} group of")
            for request, verb in (
                (abi.PERF_EVENT_IOC_ENABLE, "enable"),
                (abi.PERF_EVENT_IOC_DISABLE, "disable"),
                (abi.PERF_EVENT_IOC_RESET, "reset"),
            )
        }

    def _open_one(
        self,
        member: int,
        spec: EventSpec,
        name: str,
        exclude_kernel: bool,
        exclude_hv: bool,
        enable_on_exec: bool,
        inherit: tuple[bool, bool],
    ) -> int:
        """Open one event (``member`` 0 is the leader); returns its kernel id."""
        leader = member == 0
        attr = abi.make_attr(
            spec.type,
            spec.config,
            config1=spec.config1,
            config2=spec.config2,
            config3=spec.config3,
            read_format=abi.GROUP_READ_FORMAT,
            flags={
                "disabled": leader,
                "inherit": inherit[0],
                "inherit_thread": inherit[0] and inherit[1],
                "exclude_kernel": exclude_kernel,
                "exclude_user": self.exclude_user,
                "exclude_hv": exclude_hv,
                "enable_on_exec": enable_on_exec and leader,
            },
        )
        attempt = Attempt(
            event=name,
            pid=self.pid,
            spec=spec.spec,
            cpu=self.cpu,
            member=member,
            exclude_kernel=exclude_kernel,
        )
        group_fd = self._fds[0] if self._fds else -1
        fd = syscall.perf_event_open(attr, self.pid, self.cpu, group_fd, attempt=attempt)
        self._fds.append(fd)
        return syscall.event_id(fd, attempt=Attempt(name, self.pid, self.cpu, action="identify"))

    @property
    def leader_fd(self) -> int:
        if not self._fds:
            raise self._closed_error()
        return self._fds[0]

    def _closed_error(self) -> PerfError:
        return PerfError(f"group {', '.join(self.events)} is closed")

    @property
    def read_size(self) -> int:
        return self._read_size

    @property
    def closed(self) -> bool:
        return not self._fds

    def _leader_ioctl(self, request: int, flags: int) -> None:
        fds = self._fds  # not the leader_fd property: two of these run per unit per timeslice
        if not fds:
            raise self._closed_error()
        # The bare libc call, checked here: enable/disable run twice per unit per timeslice, and
        # each Python frame less is measurable at 48 threads x 50 slices/s.
        if _IOCTL(fds[0], request, flags) < 0:
            err = ctypes.get_errno()
            if err in GONE_ERRNOS:
                raise self._gone(self._attempts[request].action, err)
            raise error_for(err, self._attempts[request])

    def _gone(self, action: str, err: int) -> TargetGone:
        """An open event only fails this way once its task has exited (never a host limitation)."""
        return TargetGone(
            f"cannot {action} {', '.join(self.events)} on {where(self.pid, self.cpu)}: "
            f"the thread has exited ({errno_name(err)})",
            errno=err,
        )

    def enable(self) -> None:
        """Start the group: the leader alone, its members follow (they were opened enabled).

        Not ``PERF_IOC_FLAG_GROUP``: the kernel applies that to every member one by one, each with
        its own cross-CPU call to the target's CPU, so a group of N events would cost N interrupts
        (docs/perf-tuning.md). A member whose leader is off is not
        scheduled, so toggling the leader switches the whole group with one call, and a group read
        reports the leader's enabled/running times for all members.
        """
        self._leader_ioctl(abi.PERF_EVENT_IOC_ENABLE, 0)

    def disable(self) -> None:
        """Stop the group (the leader alone; see :meth:`enable`)."""
        self._leader_ioctl(abi.PERF_EVENT_IOC_DISABLE, 0)

    def reset(self) -> None:
        """Zero every member's count (rare: not on the rotation's path)."""
        self._leader_ioctl(abi.PERF_EVENT_IOC_RESET, abi.PERF_IOC_FLAG_GROUP)

    def read(self) -> GroupValues:
        """Cumulative values in event order with the group's enabled/running times (ns)."""
        fds = self._fds
        if not fds:
            raise self._closed_error()
        try:
            buf = os.read(fds[0], self._read_size)
        except ChildProcessError:
            buf = self._read_settled(fds[0])
        except OSError as exc:
            if exc.errno in GONE_ERRNOS:
                raise self._gone("read", exc.errno or 0) from None
            raise PerfError(
                f"cannot read group {', '.join(self.events)}: {exc.strerror}", errno=exc.errno or 0
            ) from None
        return self._decoder.decode(buf)

    def _read_settled(self, fd: int) -> bytes:
        """Read an inherited group while one of its threads is being torn down.

        The kernel refuses (ECHILD) to sum a group whose copy in an exiting thread has already lost
        members; the exit completes within microseconds, so the read is tried again. Should it
        still fail, the thread counts as ended for this read: the counts are cumulative, and the
        next read has them.
        """
        for _ in range(ECHILD_RETRIES):
            os.sched_yield()
            try:
                return os.read(fd, self._read_size)
            except ChildProcessError:
                continue
            except OSError as exc:
                raise PerfError(
                    f"cannot read group {', '.join(self.events)}: {exc.strerror}", errno=exc.errno or 0
                ) from None
        raise self._gone("read", errno.ECHILD)

    def close(self) -> None:
        """Close members then the leader; safe to call more than once."""
        fds, self._fds = self._fds, []
        for fd in reversed(fds):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> PerfGroup:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"fd {self._fds[0]}"
        return f"PerfGroup({', '.join(self.events)}; pid={self.pid} cpu={self.cpu}; {state})"
