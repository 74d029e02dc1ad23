"""The one libc binding of the perf wrapper and its one checked-call path.

libc is loaded once with ``use_errno=True`` and every foreign function has declared argument and
result types; every call goes through :func:`_check`, which turns ``-1`` + errno into the typed
exception from :func:`sectormon.perf.errors.error_for`. Two recoveries live here because they are
properties of the syscall, not of any caller: E2BIG (kernel older than our attr: retry once with the
size it wrote back) and EMFILE (raise the soft fd limit to the hard limit once, then retry).
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource

from sectormon.perf.abi import (
    ATTR_SIZE,
    PERF_ATTR_SIZE_VER0,
    PERF_EVENT_IOC_ID,
    PERF_FLAG_FD_CLOEXEC,
    SYSCALL_NUMBERS,
    PerfEventAttr,
)
from sectormon.perf.errors import Attempt, UnsupportedArchitecture, error_for

_libc = ctypes.CDLL(None, use_errno=True)

# Private function objects (indexing, unlike attribute access, is not shared with other users of libc).
_syscall = _libc["syscall"]
_syscall.argtypes = [
    ctypes.c_long,
    ctypes.c_void_p,
    ctypes.c_long,
    ctypes.c_long,
    ctypes.c_long,
    ctypes.c_ulong,
]
_syscall.restype = ctypes.c_long

_ioctl = _libc["ioctl"]
_ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
_ioctl.restype = ctypes.c_int

raw_ioctl = _ioctl

_mutex_lock = _libc["pthread_mutex_lock"]
_mutex_unlock = _libc["pthread_mutex_unlock"]
for _function in (_mutex_lock, _mutex_unlock):
    _function.argtypes = [ctypes.c_void_p]
    _function.restype = ctypes.c_int
# A private, never contended mutex; PTHREAD_MUTEX_INITIALIZER is all zeros in glibc and musl, and 64
# bytes cover pthread_mutex_t on every Linux ABI (40 on x86_64, 48 on aarch64).
_barrier_mutex = ctypes.create_string_buffer(64)
_barrier_address = ctypes.addressof(_barrier_mutex)
"""libc ``ioctl(fd, request, arg)`` with errno kept: returns -1 and leaves the error in
``ctypes.get_errno()``. For hot paths that check the result themselves (PerfGroup enable/disable)."""

_nofile_raised = False


def syscall_number(machine: str | None = None) -> int:
    """perf_event_open's syscall number on ``machine`` (default: this one)."""
    machine = machine or os.uname().machine
    try:
        return SYSCALL_NUMBERS[machine]
    except KeyError:
        raise UnsupportedArchitecture(
            f"perf_event_open is not wired up for architecture '{machine}' "
            "(supported: x86_64, aarch64; use --source sim or a recording elsewhere)"
        ) from None


def _raw_open(attr: PerfEventAttr, pid: int, cpu: int, group_fd: int, flags: int) -> tuple[int, int]:
    """One bare syscall: (result, errno). Replaced in tests to simulate kernel answers."""
    result = _syscall(syscall_number(), ctypes.addressof(attr), pid, cpu, group_fd, flags)
    return int(result), (ctypes.get_errno() if result < 0 else 0)


def _raise_nofile_limit() -> bool:
    """Raise RLIMIT_NOFILE's soft limit to its hard limit, once per process; True if it grew."""
    global _nofile_raised
    if _nofile_raised:
        return False
    _nofile_raised = True
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft >= hard:
        return False
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        return False
    return True


def perf_event_open(
    attr: PerfEventAttr,
    pid: int,
    cpu: int,
    group_fd: int = -1,
    flags: int = PERF_FLAG_FD_CLOEXEC,
    *,
    attempt: Attempt,
) -> int:
    """Open one event; returns its fd or raises the typed :class:`~sectormon.perf.errors.PerfError`."""
    e2big_retried = False
    emfile_retried = False
    while True:
        fd, err = _raw_open(attr, pid, cpu, group_fd, flags)
        if fd >= 0:
            return fd
        if err == errno.E2BIG and not e2big_retried and PERF_ATTR_SIZE_VER0 <= attr.size < ATTR_SIZE:
            # The kernel wrote its own attr size back: it is older than our struct. Its size covers
            # every field it knows; the fields past it are ones it could not honour anyway.
            e2big_retried = True
            continue
        if err == errno.EMFILE and not emfile_retried and _raise_nofile_limit():
            emfile_retried = True
            continue
        raise error_for(err, attempt)


def memory_barrier() -> None:
    """A full memory barrier between the loads and stores before it and those after it.

    The ring buffer protocol needs one after reading ``data_head`` (so no record byte is read
    before the kernel published it) and one before storing ``data_tail`` (so every byte is read
    before the kernel may overwrite it). Python has no fence of its own; POSIX lists
    ``pthread_mutex_unlock``/``pthread_mutex_lock`` among the functions that synchronize memory
    (XBD 4.12), and an unlock followed by a lock is a release then an acquire, which is a full
    fence on arm64 (stlr then ldaxr are ordered) and on x86 (locked instructions).
    """
    _mutex_lock(_barrier_address)
    _mutex_unlock(_barrier_address)
    _mutex_lock(_barrier_address)
    _mutex_unlock(_barrier_address)


def _check(result: int, attempt: Attempt) -> int:
    if result < 0:
        raise error_for(ctypes.get_errno(), attempt)
    return result


def ioctl(fd: int, request: int, arg: int, *, attempt: Attempt) -> int:
    """A perf ioctl with an integer argument (enable, disable, reset; see PerfGroup)."""
    return _check(_ioctl(fd, request, arg), attempt)


def event_id(fd: int, *, attempt: Attempt) -> int:
    """The kernel's id of the event behind ``fd`` (PERF_EVENT_IOC_ID), matched in group reads."""
    value = ctypes.c_uint64(0)
    _check(_ioctl(fd, PERF_EVENT_IOC_ID, ctypes.addressof(value)), attempt)
    return int(value.value)
