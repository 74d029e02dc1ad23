"""The wrapper against the real kernel, with software events (they count on PMU-less machines too)."""

from __future__ import annotations

import mmap
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sectormon.perf import probe as perf_probe
from sectormon.perf.errors import EventUnsupported, TargetGone, read_paranoid
from sectormon.perf.events import EventSpec, parse_event
from sectormon.perf.group import PerfGroup
from sectormon.perf.probe import probe_events
from tests.perf.perf_helpers import Child

pytestmark = pytest.mark.syscall

SOFT = ["task-clock", "page-faults", "context-switches"]
REPO = Path(__file__).resolve().parents[2]


def specs(names: list[str]) -> list[EventSpec]:
    return [parse_event(n) for n in names]


def burn(pages: int = 32) -> None:
    """CPU time plus fresh page faults plus a voluntary context switch."""
    end = time.perf_counter() + 0.01
    while time.perf_counter() < end:
        pass
    with mmap.mmap(-1, pages * mmap.PAGESIZE) as region:
        for off in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
            region[off] = 1
    time.sleep(0.002)


def kernel_counting_allowed() -> bool:
    return os.geteuid() == 0 or (read_paranoid() or 2) <= 1


def test_group_counts_only_while_enabled() -> None:
    with PerfGroup(specs(SOFT), pid=0, exclude_kernel=not kernel_counting_allowed()) as group:
        assert group.events == tuple(SOFT)
        burn()
        assert group.read().values == (0, 0, 0)  # created disabled
        group.enable()
        burn()
        group.disable()
        first = group.read()
        assert first.values[0] > 0 and first.values[1] >= 32
        assert first.time_enabled >= first.time_running > 0
        burn()
        still = group.read()
        assert still == first  # disabled: nothing moves, not even the times
        group.enable()
        burn()
        group.disable()
        second = group.read()
        assert second.values[0] > first.values[0]
        assert second.values[1] >= first.values[1] + 32
        assert second.time_enabled > first.time_enabled
        if kernel_counting_allowed():
            assert second.values[2] > first.values[2] > 0  # the sleeps switch context (kernel side)
        group.reset()
        assert group.read().values == (0, 0, 0)


def test_user_only_context_switches_stay_zero() -> None:
    """The kernel counts context switches in kernel mode: a user-only group sees none.

    This is why the probe reports context-switches as unsupported under the default exclude_kernel.
    """
    with PerfGroup(specs(["task-clock", "context-switches"]), pid=0, exclude_kernel=True) as group:
        group.enable()
        burn()
        group.disable()
        values = group.read().values
    assert values[0] > 0 and values[1] == 0


def test_close_is_idempotent_and_frees_fds() -> None:
    group = PerfGroup(specs(SOFT), pid=0)
    fds = list(group._fds)
    group.close()
    group.close()
    assert group.closed
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_child_page_faults(child: Child) -> None:
    pages = 300
    with PerfGroup(specs(SOFT), pid=child.pid, exclude_kernel=True) as group:
        group.enable()
        assert child.ask(f"touch {pages}") == "ok"
        group.disable()
        values = group.read()
    assert values.values[1] >= pages
    assert values.values[0] > 0
    assert values.time_enabled >= values.time_running > 0


def test_child_counts_stop_while_disabled(child: Child) -> None:
    with PerfGroup(specs(SOFT), pid=child.pid) as group:
        group.enable()
        child.ask("touch 50")
        group.disable()
        before = group.read()
        child.ask("touch 50")
        child.ask("spin 20")
        assert group.read() == before


def test_dead_pid_is_target_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(TargetGone) as info:
        PerfGroup(specs(SOFT), pid=proc.pid)
    assert info.value.errno_name == "ESRCH"


@pytest.mark.parametrize("name", ["cycles", "r11"])
def test_hardware_event_unsupported_here(name: str) -> None:
    try:
        PerfGroup(specs([name]), pid=0).close()
    except EventUnsupported as exc:
        assert exc.event == name
        assert exc.errno_name in ("ENOENT", "EOPNOTSUPP", "ENODEV")
    else:
        pytest.skip(f"this host has a PMU that counts {name}")


def test_unsupported_member_fails_whole_group_and_closes() -> None:
    before = len(os.listdir("/proc/self/fd"))
    try:
        PerfGroup(specs(["task-clock", "cycles"]), pid=0)
    except EventUnsupported:
        pass
    else:
        pytest.skip("this host counts cycles")
    assert len(os.listdir("/proc/self/fd")) == before


def test_cpu_wide_open_as_root() -> None:
    if os.geteuid() != 0 and (read_paranoid() or 2) > 0:
        pytest.skip("CPU-wide counting needs root, CAP_PERFMON or paranoid <= 0")
    with PerfGroup(specs(["cpu-clock", "task-clock"]), pid=-1, cpu=0) as group:
        group.enable()
        time.sleep(0.01)
        group.disable()
        values = group.read()
    assert values.values[0] > 0
    assert values.time_enabled >= values.time_running > 0


SNIPPET = textwrap.dedent(
    """
    from sectormon.perf.errors import PermissionDenied
    from sectormon.perf.events import parse_event
    from sectormon.perf.group import PerfGroup
    try:
        PerfGroup([parse_event("cpu-clock")], pid=-1, cpu=0).close()
        print("OPENED")
    except PermissionDenied as exc:
        print("DENIED", exc.errno_name, exc)
    own = PerfGroup([parse_event("task-clock")], pid=0)
    own.enable(); sum(range(100000)); own.disable()
    print("OWN", own.read().values[0] > 0)
    """
)


def test_permission_denied_as_unprivileged_user() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs setpriv and root to drop to an unprivileged user")
    paranoid = read_paranoid()
    if paranoid is None or paranoid <= 0:
        pytest.skip("perf_event_paranoid allows CPU-wide counting for everyone here")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    out = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", SNIPPET],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=60,
    )
    if "Permission denied" in out.stderr and "OPENED" not in out.stdout and "DENIED" not in out.stdout:
        pytest.skip(f"the unprivileged user cannot run the interpreter here: {out.stderr.strip()[-200:]}")
    assert out.returncode == 0, out.stderr
    if "OPENED" in out.stdout:
        pytest.skip("the unprivileged user may count CPU-wide here")
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("DENIED"))
    assert line.split()[1] in ("EACCES", "EPERM")
    assert f"kernel.perf_event_paranoid is {paranoid}" in line
    assert "sysctl kernel.perf_event_paranoid=0" in line
    assert "OWN True" in out.stdout  # user-space counting of one's own process still works


EMFILE_SNIPPET = textwrap.dedent(
    """
    import resource, sys
    from sectormon.perf.errors import TooManyOpenFiles
    from sectormon.perf.events import parse_event
    from sectormon.perf.group import PerfGroup
    soft, hard = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    groups = []
    try:
        for _ in range(40):
            groups.append(PerfGroup([parse_event("task-clock")] * 3, pid=0))
        print("OK", len(groups), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    except TooManyOpenFiles as exc:
        print("EMFILE", len(groups), exc)
    """
)


@pytest.mark.parametrize(("soft", "hard", "expect"), [(40, 40, "EMFILE"), (40, 400, "OK")])
def test_emfile_auto_raise_then_explain(soft: int, hard: int, expect: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", EMFILE_SNIPPET, str(soft), str(hard)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(expect), out.stdout
    if expect == "OK":
        assert out.stdout.split()[2] == str(hard)  # the soft limit was raised to the hard one
    else:
        assert f"RLIMIT_NOFILE soft {soft} / hard {hard}" in out.stdout


def test_probe_classifies() -> None:
    events = [
        ("TASK_CLOCK", "task-clock"),
        ("PAGE_FAULTS", "page-faults"),
        ("CS_USER", "context-switches"),
        ("CYCLES", "cycles"),
        ("BAD", "not-an-event"),
        ("MAJOR", "major-faults"),
    ]
    result = probe_events(events)
    assert list(result) == [name for name, _ in events]
    assert result["TASK_CLOCK"].state == "counts" and result["TASK_CLOCK"].value > 0
    assert result["PAGE_FAULTS"].state == "counts" and result["PAGE_FAULTS"].value >= 16
    # user-only counting never sees context switches: reported missing, not as a measured zero
    assert result["CS_USER"].state == "unsupported" and result["CS_USER"].reason.startswith("user-only")
    assert result["BAD"].state == "unsupported" and "unknown event name" in result["BAD"].reason
    assert result["MAJOR"].state == "zero" and "counted nothing" in result["MAJOR"].reason  # opened, none
    if result["CYCLES"].state == "unsupported":
        assert result["CYCLES"].reason.startswith(("ENOENT", "EOPNOTSUPP", "ENODEV"))
    if kernel_counting_allowed():
        assert probe_events(events[2:3], exclude_kernel=False)["CS_USER"].state == "counts"


def test_probe_runs_the_workload_once_for_the_events_that_count_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counting events share one workload; only one that did not count is probed again alone."""
    runs: list[int] = []
    workload = perf_probe.probe_workload
    monkeypatch.setattr(perf_probe, "probe_workload", lambda: runs.append(1) or workload())
    events = [("TASK_CLOCK", "task-clock"), ("PAGE_FAULTS", "page-faults"), ("MINOR", "minor-faults")]
    result = probe_events([*events, ("MAJOR", "major-faults")])
    assert [r.state for r in result.values()] == ["counts", "counts", "counts", "zero"]
    assert result["PAGE_FAULTS"].value >= 16
    assert len(runs) == 2  # all four together, then the major faults' zero alone


def test_members_keep_counting_across_many_windows() -> None:
    """Regression: with task-clock first, the kernel (6.18) lost member counts across group
    disable/enable cycles; the wrapper now leads with a non-clock event. Each window must count
    every fresh page of that window."""
    with PerfGroup(specs(SOFT), pid=0) as group:
        assert group.leader == 1
        previous = group.read().values
        for _ in range(12):
            group.enable()
            burn(32)
            group.disable()
            values = group.read().values
            assert values[0] > previous[0]
            assert values[1] - previous[1] >= 32
            previous = values


def test_exited_thread_stays_readable(child: Child) -> None:
    """The sampler disables and reads a group after its thread has gone: final counts survive."""
    with PerfGroup(specs(SOFT), pid=child.pid) as group:
        group.enable()
        child.ask("touch 100")
        assert child.finish(0) == 0
        group.disable()
        values = group.read()
        assert values.values[1] >= 100
        assert values.time_enabled >= values.time_running > 0
        group.enable()  # enabling a dead thread's group is harmless and counts nothing more
        assert group.read().values == values.values


def test_failed_toggle_is_a_typed_error() -> None:
    """enable/disable call libc directly; a failure must still become a PerfError naming the group."""
    from sectormon.perf.errors import PerfError

    group = PerfGroup(specs(["page-faults", "task-clock"]), pid=0)
    leader = group._fds[0]
    stand_in = os.open(os.devnull, os.O_RDONLY)  # a valid fd that is not a perf event: ENOTTY
    os.dup2(stand_in, leader)
    os.close(stand_in)
    try:
        with pytest.raises(PerfError) as info:
            group.enable()
        assert "page-faults" in str(info.value)
        with pytest.raises(PerfError):
            group.disable()
    finally:
        group.close()
