"""The kernel's account of a target's CPU time from procfs, and the system time of the counted
processes that ended (the bound of their exit teardown, which no counter sees)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sectormon.host import cpu_time, roots
from sectormon.host.cpu_time import CLOCK_TICKS, StatTimes, TargetCpu, TargetCpuClock, stat_times


def _stat(pid: int, utime: int, stime: int, cutime: int, cstime: int, command: str = "app") -> bytes:
    # state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt, then the four times
    return f"{pid} ({command}) S 1 1 1 0 -1 0 0 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0".encode()


@pytest.fixture
def proc(tmp_path: Path) -> Iterator[Path]:
    """A fake procfs that every host/ reader uses for the test."""
    with roots.use(procfs=tmp_path):
        yield tmp_path


def _procfs(tmp_path: Path, stats: dict[int, bytes]) -> Path:
    for pid, line in stats.items():
        (tmp_path / str(pid)).mkdir(exist_ok=True)
        (tmp_path / str(pid) / "stat").write_bytes(line)
    return tmp_path


def test_stat_times_count_fields_after_the_last_parenthesis() -> None:
    assert stat_times(_stat(7, 1, 2, 3, 4, command="a) (b c")) == StatTimes(1, 2, 3, 4)
    assert stat_times(b"7 (app) S 1") is None
    assert stat_times(b"no parenthesis at all") is None


def test_followed_children_s_system_time_is_the_ended_part(proc: Path) -> None:
    """With children followed, whatever a followed process reaped was counted from its first
    instruction: its system time (cstime) bounds the exit teardown no counter saw."""
    _procfs(proc, {10: _stat(10, 100, 20, 50, 30), 11: _stat(11, 40, 10, 0, 5)})
    clock = TargetCpuClock(lambda: (10, 11))
    reading = clock.read()
    assert reading.total == pytest.approx((100 + 20 + 50 + 30 + 40 + 10 + 5) / CLOCK_TICKS)
    assert reading.ended_system == pytest.approx((30 + 5) / CLOCK_TICKS)


def test_children_not_followed_were_never_counted(proc: Path) -> None:
    """--no-children: a reaped child's time is all of it uncounted, none of it teardown."""
    _procfs(proc, {10: _stat(10, 100, 20, 50, 30)})
    reading = TargetCpuClock(lambda: (10,), children_counted=False).read()
    assert reading == TargetCpu((100 + 20 + 50 + 30) / CLOCK_TICKS, 0.0)


@pytest.mark.parametrize(
    ("children_counted", "final", "ended"),
    [
        (True, None, 0.5),  # followed: all the system time of the command and what it reaped
        (False, StatTimes(100, 25, 20, 30), 0.25),  # its own, as its zombie showed it
        (False, None, 0.1),  # its own at the last reading: never more than it was
    ],
)
def test_a_reaped_root_is_read_from_sectormon_s_children(
    proc: Path,
    monkeypatch: pytest.MonkeyPatch,
    children_counted: bool,
    final: StatTimes | None,
    ended: float,
) -> None:
    """The launched command, once reaped, is in RUSAGE_CHILDREN with its reaped descendants; its
    system time is teardown-bound whole when they were followed, else only the root's own part."""
    usage = iter([(1.0, 0.5), (3.0, 1.0)])  # (user, system) at the clock's creation, then at the end
    monkeypatch.setattr(cpu_time, "_children_usage", lambda: next(usage))
    root = _procfs(proc, {10: _stat(10, 100, 10, 20, 30)})
    clock = TargetCpuClock(
        lambda: (10,),
        reaped_root=lambda: True,
        root_final=lambda: final,
        children_counted=children_counted,
    )
    clock.read()  # alive: its last figure is remembered
    (root / "10" / "stat").unlink()
    reading = clock.read()
    assert reading.total == pytest.approx(2.0 + 0.5)
    assert reading.ended_system == pytest.approx(ended)


def test_a_pid_target_that_ended_keeps_its_last_figure(proc: Path) -> None:
    root = _procfs(proc, {10: _stat(10, 100, 10, 20, 30)})
    clock = TargetCpuClock(lambda: (10,))
    before = clock.read()
    (root / "10" / "stat").unlink()
    assert clock.read() == before
