"""Typed perf failures with one-line, actionable messages.

perf_event_open reports everything through a handful of errno values whose meaning depends on what
was being opened (a CPU-wide event needs a lower perf_event_paranoid than a per-thread one; EINVAL on
a group member usually means the group does not fit). :func:`error_for` is the one place that turns
an errno plus that context into the right exception, so every caller reports failures the same way.
"""

from __future__ import annotations

import errno as _errno
import os
import resource
from dataclasses import dataclass
from pathlib import Path

from sectormon.errors import SectormonError
from sectormon.perf.abi import SYSCALL_NUMBERS

PARANOID_MEANING: dict[int, str] = {
    -1: "no restrictions",
    0: "CPU-wide counting allowed, raw tracepoints not",
    1: "per-process user and kernel counting, no CPU-wide counting",
    2: "user-space counting of your own processes only",
}


class PerfError(SectormonError):
    """A perf_event_open family failure; ``errno`` (0 if none) and ``event`` name what failed."""

    def __init__(self, message: str, *, errno: int = 0, event: str = "") -> None:
        super().__init__(message)
        self.errno = errno
        self.event = event

    @property
    def errno_name(self) -> str:
        return errno_name(self.errno)


class PermissionDenied(PerfError):
    """EACCES/EPERM: perf_event_paranoid, a missing capability, or ptrace rights on the target."""


class EventUnsupported(PerfError):
    """ENOENT/EOPNOTSUPP/ENODEV: this host's kernel or PMU has no such event."""


class GroupTooLarge(PerfError):
    """EINVAL on a group member: the group cannot be scheduled on the PMU's counters."""


class TargetGone(PerfError):
    """ESRCH: the thread or process exited."""

    unit_gone = True


GONE_ERRNOS = frozenset({_errno.ESRCH, _errno.ENODEV, _errno.ENOENT})
"""What the kernel answers when a thread exits under an open, ioctl or read: ESRCH once it is
gone, ENODEV or ENOENT while it is exiting. On an event that opened, or on a thread an event
already opened on, they mean the thread ended, never that the host lacks the event."""


class TooManyOpenFiles(PerfError):
    """EMFILE/ENFILE: one fd per event per unit exhausted the file-descriptor limit."""

    out_of_fds = True


class CounterBusy(PerfError):
    """EBUSY: another user holds the counters exclusively."""


class InvalidAttribute(PerfError):
    """EINVAL (not on a member) or E2BIG: the kernel rejected the attribute structure."""


class BadEventSpec(PerfError):
    """An event spec string that cannot be parsed or resolved (no syscall involved)."""


class UnsupportedArchitecture(PerfError):
    """The machine's architecture has no known perf_event_open syscall number."""


class GroupReadError(PerfError):
    """A group read buffer that does not match the group (wrong size, count or ids)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """What was being done when a call failed: the context :func:`error_for` needs for its message."""

    event: str
    pid: int = 0
    cpu: int = -1
    member: int = 0
    exclude_kernel: bool = True
    action: str = "open"
    spec: str = ""


def errno_name(err: int) -> str:
    return _errno.errorcode.get(err, f"errno {err}")


def read_paranoid(procfs_root: str | Path = "/proc") -> int | None:
    """The current ``kernel.perf_event_paranoid`` level, or ``None`` when it cannot be read."""
    try:
        return int((Path(procfs_root) / "sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        return None


def paranoid_meaning(level: int) -> str:
    if level >= 3:
        return "perf disabled for unprivileged users (distribution patch)"
    return PARANOID_MEANING.get(level, PARANOID_MEANING[-1] if level < -1 else "unknown")


def where(pid: int, cpu: int) -> str:
    """Human name of an open target: ``thread 42``, ``cpu 3 (all processes)``, ``this thread``."""
    if pid == -1:
        return f"cpu {cpu} (all processes)"
    who = "this thread" if pid == 0 else f"thread {pid}"
    return who if cpu < 0 else f"{who} on cpu {cpu}"


def required_paranoid(attempt: Attempt) -> int:
    """The highest paranoid level that still permits this open (without CAP_PERFMON)."""
    if attempt.pid == -1:
        return 0
    if not attempt.exclude_kernel:
        return 1
    return 2


def fd_numbers() -> str:
    """``N fds open, RLIMIT_NOFILE soft S / hard H`` for the EMFILE message.

    Listing /proc/self/fd takes an fd itself, which EMFILE has just said there is none of; the
    kernel gives EMFILE only when every number below the soft limit is taken, so that many are open.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        used: int | str = len(os.listdir("/proc/self/fd")) - 1  # not the listing's own fd
    except OSError as exc:
        used = f"all {soft}" if exc.errno == _errno.EMFILE and soft != resource.RLIM_INFINITY else "unknown"

    def fmt(v: int) -> str:
        return "unlimited" if v == resource.RLIM_INFINITY else str(v)

    return f"{used} fds open, RLIMIT_NOFILE soft {fmt(soft)} / hard {fmt(hard)}"


def _permission_message(head: str, attempt: Attempt, paranoid: int | None) -> str:
    need = required_paranoid(attempt)
    what = {0: "CPU-wide counting", 1: "counting kernel mode", 2: "counting"}[need]
    if paranoid is None:
        state = "kernel.perf_event_paranoid could not be read"
    else:
        state = f"kernel.perf_event_paranoid is {paranoid} ({paranoid_meaning(paranoid)})"
    if paranoid is not None and paranoid <= need:
        return (
            f"{head}: {state}, which allows {what}; the target may belong to another user or a "
            "security policy refused it (fix: run as the target's user, or grant CAP_PERFMON)"
        )
    fix = f"`sudo sysctl kernel.perf_event_paranoid={need}`, or grant CAP_PERFMON"
    if need == 0:
        fix += ", or count a process (--pid PID or -- CMD) instead of CPUs"
    elif need == 1:
        fix += ", or count user space only"
    return f"{head}: {state} and {what} needs <= {need} (fix: {fix})"


def error_for(err: int, attempt: Attempt, *, paranoid: int | None = None) -> PerfError:
    """The typed exception for ``err`` raised while doing ``attempt``.

    ``paranoid`` is read from /proc when not given (tests pass it to stay host-independent).
    """
    name = errno_name(err)
    target = where(attempt.pid, attempt.cpu)
    event = attempt.event
    label = f"'{event}'" if not attempt.spec or attempt.spec == event else f"'{event}' ({attempt.spec})"
    head = f"cannot {attempt.action} {label} on {target} ({name})"
    if err in (_errno.EACCES, _errno.EPERM):
        if paranoid is None:
            paranoid = read_paranoid()
        return PermissionDenied(_permission_message(head, attempt, paranoid), errno=err, event=event)
    if err in (_errno.ENOENT, _errno.EOPNOTSUPP, _errno.ENODEV):
        why = {
            _errno.ENOENT: "this kernel/PMU has no such event (a VM without a hardware PMU has none)",
            _errno.EOPNOTSUPP: "the hardware lacks a feature this event needs",
            _errno.ENODEV: "no PMU for this event on this CPU",
        }[err]
        return EventUnsupported(
            f"event {label} is not supported on this host ({name}): {why} "
            "(fix: drop it from the profile; `sectormon check` lists what counts here)",
            errno=err,
            event=event,
        )
    if err == _errno.ESRCH:
        return TargetGone(
            f"{head}: the process or thread no longer exists (fix: give a running pid)",
            errno=err,
            event=event,
        )
    if err in (_errno.EMFILE, _errno.ENFILE):
        return TooManyOpenFiles(
            f"{head}: out of file descriptors, {fd_numbers()} "
            "(fix: raise the hard limit with `ulimit -Hn` as root, or count fewer threads or events)",
            errno=err,
            event=event,
        )
    if err == _errno.EBUSY:
        return CounterBusy(
            f"{head}: another perf user holds the counters exclusively "
            "(fix: stop the other pinned/exclusive perf session, or `sysctl kernel.nmi_watchdog=0`)",
            errno=err,
            event=event,
        )
    if err == _errno.EINVAL and attempt.member > 0 and attempt.action == "open":
        return GroupTooLarge(
            f"{head}: member {attempt.member + 1} cannot join the group; the group does not fit on "
            "the PMU's counters or mixes incompatible PMUs (fix: split the group into smaller ones)",
            errno=err,
            event=event,
        )
    if err == _errno.ENOSYS and attempt.action == "open":
        machine = os.uname().machine
        return PerfError(
            f"{head}: this kernel has no system call {SYSCALL_NUMBERS.get(machine, '?')} on {machine}, "
            "the number sectormon calls perf_event_open by (fix: a kernel built with CONFIG_PERF_EVENTS; "
            "if it has one, SYSCALL_NUMBERS in sectormon/perf/abi.py is wrong for this architecture)",
            errno=err,
            event=event,
        )
    if err in (_errno.EINVAL, _errno.E2BIG):
        return InvalidAttribute(
            f"{head}: the kernel rejected the event attributes (fix: check the spec's fields against "
            "/sys/bus/event_source/devices/<pmu>/format, or whether this kernel is too old for them)",
            errno=err,
            event=event,
        )
    return PerfError(f"{head}: {os.strerror(err)}", errno=err, event=event)
