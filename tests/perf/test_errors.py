"""errno -> typed exception mapping, messages, and the E2BIG / EMFILE recoveries of the syscall path."""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

import pytest

from sectormon.errors import SectormonError
from sectormon.perf import abi, syscall
from sectormon.perf.errors import (
    Attempt,
    CounterBusy,
    EventUnsupported,
    GroupTooLarge,
    InvalidAttribute,
    PerfError,
    PermissionDenied,
    TargetGone,
    TooManyOpenFiles,
    error_for,
    read_paranoid,
)

THREAD = Attempt(event="TASK_CLOCK", pid=4242, cpu=-1, spec="task-clock")
CPU_WIDE = Attempt(event="CPU_CYCLES", pid=-1, cpu=3, spec="r11")


@pytest.mark.parametrize(
    ("err", "attempt", "cls"),
    [
        (errno.EACCES, CPU_WIDE, PermissionDenied),
        (errno.EPERM, THREAD, PermissionDenied),
        (errno.ENOENT, THREAD, EventUnsupported),
        (errno.EOPNOTSUPP, THREAD, EventUnsupported),
        (errno.ENODEV, CPU_WIDE, EventUnsupported),
        (errno.ESRCH, THREAD, TargetGone),
        (errno.EMFILE, THREAD, TooManyOpenFiles),
        (errno.EBUSY, CPU_WIDE, CounterBusy),
        (errno.EINVAL, THREAD, InvalidAttribute),
        (errno.E2BIG, THREAD, InvalidAttribute),
        (errno.EINVAL, Attempt("L2_MISS", pid=7, member=8), GroupTooLarge),
        (errno.EINVAL, Attempt("L2_MISS", pid=7, member=8, action="enable group of"), InvalidAttribute),
        (errno.EIO, THREAD, PerfError),
    ],
)
def test_mapping(err: int, attempt: Attempt, cls: type[PerfError]) -> None:
    exc = error_for(err, attempt, paranoid=2)
    assert type(exc) is cls
    assert isinstance(exc, SectormonError)
    assert exc.errno == err
    assert exc.event == attempt.event
    assert errno.errorcode[err] in str(exc)
    assert attempt.event in str(exc)
    assert "\n" not in str(exc)


def test_enosys_names_the_syscall_number_sectormon_called(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Linux", "h", "6.1", "#1", "aarch64")))
    monkeypatch.setitem(abi.SYSCALL_NUMBERS, "aarch64", 298)
    message = str(error_for(errno.ENOSYS, CPU_WIDE))
    assert message.startswith("cannot open 'CPU_CYCLES' (r11) on cpu 3 (all processes) (ENOSYS): ")
    assert (
        "this kernel has no system call 298 on aarch64, the number sectormon calls perf_event_open by"
        in message
    )


def test_spec_shown_when_it_differs_from_the_name() -> None:
    assert "'CPU_CYCLES' (r11)" in str(error_for(errno.ENOENT, CPU_WIDE))
    assert "'cycles' (cycles)" not in str(error_for(errno.ENOENT, Attempt("cycles", spec="cycles")))


def test_permission_cpu_wide_explains_level_and_fix() -> None:
    msg = str(error_for(errno.EACCES, CPU_WIDE, paranoid=2))
    assert "cpu 3 (all processes)" in msg
    assert "kernel.perf_event_paranoid is 2 (user-space counting of your own processes only)" in msg
    assert "needs <= 0" in msg
    assert "sysctl kernel.perf_event_paranoid=0" in msg
    assert "CAP_PERFMON" in msg


def test_permission_kernel_counting_needs_level_1() -> None:
    attempt = Attempt("TASK_CLOCK", pid=1234, exclude_kernel=False)
    msg = str(error_for(errno.EACCES, attempt, paranoid=2))
    assert "needs <= 1" in msg and "sysctl kernel.perf_event_paranoid=1" in msg
    assert "user space only" in msg


def test_permission_when_paranoid_already_allows_it_blames_ownership() -> None:
    msg = str(error_for(errno.EACCES, THREAD, paranoid=1))
    assert "which allows counting" in msg
    assert "another user" in msg


def test_permission_paranoid_3_and_unreadable() -> None:
    assert "perf disabled for unprivileged users" in str(error_for(errno.EACCES, THREAD, paranoid=3))
    exc = error_for(errno.EACCES, THREAD, paranoid=None)
    # paranoid None means "read it now": the message must name the real level of this host.
    level = read_paranoid()
    if level is not None:
        assert f"kernel.perf_event_paranoid is {level}" in str(exc)


def test_read_paranoid_fake_procfs(tmp_path: Path) -> None:
    assert read_paranoid(tmp_path) is None
    (tmp_path / "sys/kernel").mkdir(parents=True)
    (tmp_path / "sys/kernel/perf_event_paranoid").write_text("-1\n")
    assert read_paranoid(tmp_path) == -1


def test_emfile_message_has_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    msg = str(error_for(errno.EMFILE, THREAD))
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert "fds open" in msg and f"soft {soft}" in msg

    def no_fd_left(path: str) -> list[str]:
        raise OSError(errno.EMFILE, "Too many open files", path)

    # Listing /proc/self/fd needs an fd too: at EMFILE every one below the soft limit is taken.
    monkeypatch.setattr(os, "listdir", no_fd_left)
    used = f"all {soft}" if soft != resource.RLIM_INFINITY else "unknown"
    assert f"{used} fds open" in str(error_for(errno.EMFILE, THREAD))


class FakeKernel:
    """Replaces the bare syscall: answers from a script and records the attr size of each call."""

    def __init__(self, answers: list[tuple[int, int, int | None]]) -> None:
        self.answers = answers  # (result, errno, size the kernel writes back or None)
        self.sizes: list[int] = []

    def __call__(
        self, attr: abi.PerfEventAttr, pid: int, cpu: int, group_fd: int, flags: int
    ) -> tuple[int, int]:
        self.sizes.append(attr.size)
        result, err, write_size = self.answers.pop(0)
        if write_size is not None:
            attr.size = write_size
        return result, err


def test_e2big_retries_once_with_kernel_size(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = FakeKernel([(-1, errno.E2BIG, 120), (7, 0, None)])
    monkeypatch.setattr(syscall, "_raw_open", kernel)
    fd = syscall.perf_event_open(abi.make_attr(1, 1), 0, -1, attempt=THREAD)
    assert fd == 7
    assert kernel.sizes == [136, 120]


def test_e2big_twice_is_invalid_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = FakeKernel([(-1, errno.E2BIG, 120), (-1, errno.E2BIG, 120)])
    monkeypatch.setattr(syscall, "_raw_open", kernel)
    with pytest.raises(InvalidAttribute):
        syscall.perf_event_open(abi.make_attr(1, 1), 0, -1, attempt=THREAD)
    assert kernel.sizes == [136, 120]


def test_e2big_with_nonsense_size_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = FakeKernel([(-1, errno.E2BIG, 8)])
    monkeypatch.setattr(syscall, "_raw_open", kernel)
    with pytest.raises(InvalidAttribute):
        syscall.perf_event_open(abi.make_attr(1, 1), 0, -1, attempt=THREAD)
    assert kernel.sizes == [136]


def test_emfile_raises_soft_limit_once_then_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = {"now": (64, 4096)}
    monkeypatch.setattr(syscall, "_nofile_raised", False)
    monkeypatch.setattr(syscall.resource, "getrlimit", lambda _which: limits["now"])
    monkeypatch.setattr(syscall.resource, "setrlimit", lambda _which, new: limits.__setitem__("now", new))
    kernel = FakeKernel([(-1, errno.EMFILE, None), (9, 0, None), (-1, errno.EMFILE, None)])
    monkeypatch.setattr(syscall, "_raw_open", kernel)
    assert syscall.perf_event_open(abi.make_attr(1, 1), 0, -1, attempt=THREAD) == 9
    assert limits["now"] == (4096, 4096)
    with pytest.raises(TooManyOpenFiles):  # the raise happens only once per process
        syscall.perf_event_open(abi.make_attr(1, 1), 0, -1, attempt=THREAD)
    assert len(kernel.sizes) == 3


def test_other_errors_are_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = FakeKernel([(-1, errno.ENOENT, None)])
    monkeypatch.setattr(syscall, "_raw_open", kernel)
    with pytest.raises(EventUnsupported):
        syscall.perf_event_open(abi.make_attr(0, 0), 0, -1, attempt=THREAD)
