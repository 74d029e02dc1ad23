"""Targets: CPU lists, thread units from affinity, thread tracking, pid and command targets."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sectormon.host import roots
from sectormon.host.threads import Lineage
from sectormon.sources.perf.targets import BadTarget, CommandTarget, CpuTarget, PidTarget
from sectormon.sources.perf.thread_units import BINDING_WARNING, ThreadTracker, thread_unit
from tests.perf.perf_helpers import Child

# An FX700-like map: 4 CMGs x 12 CPUs.
CMG_OF = {cpu: cpu // 12 for cpu in range(48)}


def test_thread_unit_pinned() -> None:
    unit = thread_unit(77, {13}, CMG_OF)
    assert (unit.kind, unit.ident, unit.core, unit.cmg) == ("thread", 77, 13, 1)


def test_thread_unit_inside_one_cmg() -> None:
    unit = thread_unit(77, range(24, 36), CMG_OF)
    assert (unit.core, unit.cmg) == (None, 2)


def test_thread_unit_unbound() -> None:
    unit = thread_unit(77, range(48), CMG_OF)
    assert (unit.core, unit.cmg) == (None, None)


def test_thread_unit_outside_topology() -> None:
    # FX1000 assistant cores (0, 1) belong to no CMG.
    assert thread_unit(5, {0}, {12: 0}).cmg is None
    assert thread_unit(5, {0, 12}, {12: 0}).cmg is None


class FakeAffinity:
    def __init__(self, table: dict[int, set[int]]) -> None:
        self.table = table

    def __call__(self, tid: int) -> set[int]:
        if tid not in self.table:
            raise ProcessLookupError(tid)
        return self.table[tid]


def test_a_tracker_told_not_to_warn_of_unbound_threads_does_not() -> None:
    """stat shows no per-core figure: its source's tracker keeps the warning to itself."""
    aff = FakeAffinity({10: set(range(48))})
    quiet = ThreadTracker(CMG_OF, aff, warn_unbound=False).update([10])
    assert quiet.warnings == () and quiet.alive[0].core is None
    assert ThreadTracker(CMG_OF, aff).update([10]).warnings == (BINDING_WARNING,)


def test_tracker_new_ended_warning_rebinding() -> None:
    aff = FakeAffinity({10: {0}, 11: {1}})
    tracker = ThreadTracker(CMG_OF, aff)
    first = tracker.update([10, 11])
    assert [u.key for u in first.alive] == ["thread:10", "thread:11"]
    assert first.ended == () and first.warnings == ()

    aff.table[12] = set(range(48))  # an unbound thread appears
    second = tracker.update([10, 11, 12])
    assert second.warnings == (BINDING_WARNING,)
    assert "6.7" in BINDING_WARNING

    aff.table[13] = set(range(48))
    del aff.table[11]
    third = tracker.update([10, 12, 13])
    assert third.ended == ("thread:11",)
    assert third.warnings == ()  # warned once only

    aff.table[12] = {30}  # rebound: same key, new core/cmg
    fourth = tracker.update([10, 12, 13])
    assert fourth.ended == ()
    unit12 = next(u for u in fourth.alive if u.ident == 12)
    assert (unit12.key, unit12.core, unit12.cmg) == ("thread:12", 30, 2)


def test_tracker_thread_whose_affinity_vanishes_counts_as_ended() -> None:
    aff = FakeAffinity({10: {0}, 11: {0}})
    tracker = ThreadTracker(CMG_OF, aff)
    tracker.update([10, 11])
    del aff.table[11]
    update = tracker.update([10, 11])  # still listed in /proc, but already gone
    assert update.ended == ("thread:11",)
    assert tracker.update([10]).ended == ()


@pytest.mark.parametrize("pid", [0, -5])
def test_pid_target_rejects_non_pids(pid: int) -> None:
    with pytest.raises(BadTarget, match="not a process id"):
        PidTarget(pid)


def test_pid_target_rejects_missing_and_zombie(tmp_path: Path) -> None:
    with roots.use(procfs=tmp_path):
        with pytest.raises(BadTarget, match="--pid 4242: no such process"):
            PidTarget(4242)
        (tmp_path / "4242").mkdir()
        (tmp_path / "4242/stat").write_text("4242 (a) b) Z 1 4242 4242 0 -1\n")
        with pytest.raises(BadTarget, match="already exited"):
            PidTarget(4242)


def test_pid_target_follows_threads(child: Child) -> None:
    target = PidTarget(child.pid)
    assert target.tids() == (child.pid,)
    tid = int(child.ask("spawn"))
    assert set(target.tids()) == {child.pid, tid}
    assert target.cmdline()[-1].endswith("perf_child.py")
    assert not target.finished()
    child.finish(0)
    assert target.finished()
    assert target.tids() == ()


def test_cpu_target() -> None:
    assert CpuTarget([3, 1, 1]).cpus == (1, 3)
    with pytest.raises(BadTarget):
        CpuTarget([])


def test_command_not_found(tmp_path: Path) -> None:
    with pytest.raises(BadTarget, match="command 'no-such-command-xyz' not found"):
        CommandTarget(["no-such-command-xyz"])
    with pytest.raises(BadTarget, match="no command"):
        CommandTarget([])
    with pytest.raises(BadTarget, match="is a directory, not a program"):
        CommandTarget([str(tmp_path)])


def test_command_exec_failure_reported_at_release(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus"
    bogus.write_bytes(b"\x00\x01not an executable\n")
    bogus.chmod(bogus.stat().st_mode | stat.S_IXUSR)
    target = CommandTarget([str(bogus)])
    target.start()
    with pytest.raises(BadTarget, match=r"cannot run .*bogus.*[Ee]xec format"):
        target.release()
    assert target.finished()


def test_command_gated_runs_after_release_and_keeps_exit_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    target = CommandTarget([sys.executable, "-c", f"open({str(marker)!r}, 'w').close(); raise SystemExit(3)"])
    target.start()
    assert target.gated and target.pid is not None
    assert target.tids() == (target.pid,)
    os.sched_yield()
    assert not marker.exists()  # held at the gate
    assert not target.finished()
    target.release()
    assert not target.gated
    os.waitid(os.P_PID, target.pid, os.WEXITED | os.WNOWAIT)  # wait without reaping
    assert target.finished()
    assert target.exit_code == 3
    assert marker.exists()
    assert target.tids() == ()


FORKS_THEN_RUNS = """
import os, time
def run(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        os.stat("/")
child = os.fork()
if child == 0:
    run(0.3)
    os._exit(0)
os.waitpid(child, 0)
run(0.1)
"""


def test_an_ended_command_s_own_cpu_times_are_read_from_its_zombie() -> None:
    """Once reaped, the command's times exist only summed with its children's (RUSAGE_CHILDREN):
    they are read before, from its zombie, so its own part stays known (thread coverage's
    teardown bound under --no-children)."""
    target = CommandTarget([sys.executable, "-c", FORKS_THEN_RUNS])
    target.start()
    target.release()
    assert target.pid is not None
    os.waitid(os.P_PID, target.pid, os.WEXITED | os.WNOWAIT)  # wait without reaping
    assert target.final_times is None
    assert target.finished() and target.exit_code == 0
    final = target.final_times
    assert final is not None
    ticks = os.sysconf("SC_CLK_TCK")
    assert 0.25 <= (final.cutime + final.cstime) / ticks <= 0.4  # the child's 0.3 s
    assert 0.08 <= (final.utime + final.stime) / ticks < 0.3  # its own 0.1 s and its start-up


def test_command_closed_at_the_gate_is_killed() -> None:
    target = CommandTarget([sys.executable, "-c", "pass"])
    target.start()
    pid = target.pid
    target.close()
    assert target.exit_code == -9
    with pytest.raises(ChildProcessError):
        os.waitpid(pid or -1, os.WNOHANG)


def test_command_gets_default_sigpipe(tmp_path: Path) -> None:
    """Python ignores SIGPIPE and exec keeps ignored signals: the command must get the default."""
    out = tmp_path / "status"
    with out.open("w") as sink:
        target = CommandTarget(["cat", "/proc/self/status"], stdout=sink.fileno())
        target.start()
        target.release()
    os.waitid(os.P_PID, target.pid or -1, os.WEXITED | os.WNOWAIT)
    assert target.finished() and target.exit_code == 0
    ignored = int(next(ln for ln in out.read_text().splitlines() if ln.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (13 - 1))  # SIGPIPE is signal 13


def test_thread_count_follows_threads_without_listing(child: Child) -> None:
    """The change detector the sampler polls every timeslice: 2 + threads, from one fstat."""
    target = PidTarget(child.pid)
    first = target.thread_count()
    assert first == 2 + len(target.tids())
    child.ask("spawn")
    assert target.thread_count() == first + 1
    child.ask("end")
    deadline = time.monotonic() + 5
    while target.thread_count() != first and time.monotonic() < deadline:
        time.sleep(0.005)
    assert target.thread_count() == first
    target.close()
    assert target.thread_count() is None  # descriptors released


def test_pid_target_sees_an_unreaped_exit() -> None:
    """A process that exited but was not reaped yet (a zombie) is finished: the pidfd says so."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        target = PidTarget(proc.pid)
        assert not target.finished()
        assert proc.stdin is not None
        proc.stdin.close()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, still a zombie
        assert target.finished()
        assert target.tids() == ()
    finally:
        proc.wait()


def test_fake_procfs_has_no_thread_count(tmp_path: Path) -> None:
    """Off the real /proc nothing is opened (a pidfd of a fake pid could name a real process)."""
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242/stat").write_text("4242 (a) S 1 4242 4242 0 -1\n")
    with roots.use(procfs=tmp_path):
        target = PidTarget(4242)
        assert target.thread_count() is None
        assert not target.finished()


def test_thread_list_outlives_a_read_blocked_by_the_fd_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of fds, /proc/PID/task cannot be listed: that says nothing about the threads, so the
    last list stands (an empty one would end every thread and restart its counts)."""
    (tmp_path / "4242/task/4242").mkdir(parents=True)
    (tmp_path / "4242/task/4243").mkdir()
    (tmp_path / "4242/stat").write_text("4242 (a) S 1 4242 4242 0 -1\n")
    with roots.use(procfs=tmp_path):
        target = PidTarget(4242)
        assert target.tids() == (4242, 4243)
        real_listdir = os.listdir

        def no_fd_left(path: str) -> list[str]:
            raise OSError(errno.EMFILE, "Too many open files", path)

        monkeypatch.setattr(os, "listdir", no_fd_left)
        assert target.tids() == (4242, 4243)
        monkeypatch.setattr(os, "listdir", real_listdir)
        (tmp_path / "4242/task/4243").rmdir()
        assert target.tids() == (4242,)
        (tmp_path / "4242/task").rename(tmp_path / "4242/gone")  # a process that is gone: no threads
        assert target.tids() == ()


def test_tracker_gives_units_their_lineage_and_keeps_exited_roots() -> None:
    aff = FakeAffinity({10: {0}, 11: {1}})
    tracker = ThreadTracker(CMG_OF, aff)
    lineage = {10: Lineage(process=10, family=10), 11: Lineage(process=10, family=10)}
    first = tracker.update([10, 11], lineage, roots=True)
    assert all(u.inherit and u.process == 10 and u.family == 10 for u in first.alive)
    aff.table[12] = {2}
    second = tracker.update([10, 11, 12], {**lineage, 12: Lineage(process=12, family=10)})
    found = next(u for u in second.alive if u.ident == 12)
    assert (found.inherit, found.process, found.family, found.core) == (False, 12, 10, 2)
    del aff.table[11]
    third = tracker.update([10, 12], lineage)
    assert third.ended == ()  # an exited root still sums what it started
    assert {u.ident for u in third.alive} == {10, 11, 12}
    assert sorted(tracker.update([]).ended) == ["thread:10", "thread:11", "thread:12"]


def test_pid_target_takes_a_list(child: Child) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        target = PidTarget([child.pid, other.pid, child.pid])
        assert (target.pid, target.roots) == (child.pid, (child.pid, other.pid))
        threads = target.threads()
        assert threads[child.pid] == Lineage(process=child.pid, family=child.pid)
        assert threads[other.pid] == Lineage(process=other.pid, family=other.pid)
        assert set(target.new_processes()) == {child.pid, other.pid}
        other.kill()
        other.wait()
        assert not target.finished()  # finished once every given process has exited
        child.finish(0)
        assert target.finished()
        target.close()
    finally:
        other.kill()
        other.wait()
    with pytest.raises(BadTarget, match="no process given"):
        PidTarget([])


def test_pid_target_follows_child_processes() -> None:
    script = f"{sys.executable} -c 'import time; time.sleep(30)' & wait"
    shell = subprocess.Popen(["sh", "-c", script])
    children: set[int] = set()
    try:
        target = PidTarget(shell.pid)
        deadline = time.monotonic() + 10
        threads = target.threads()
        while len({w.process for w in threads.values()}) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
            threads = target.threads()
        children = {w.process for w in threads.values()} - {shell.pid}
        assert len(children) == 1, threads
        assert all(w.family == shell.pid for w in threads.values())
        assert target.new_processes() == (shell.pid, *children)
        alone = PidTarget(shell.pid, follow_children=False)
        assert {w.process for w in alone.threads().values()} == {shell.pid}
        alone.close()
        target.close()
    finally:
        for pid in (*children, shell.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shell.wait()


def test_fake_procfs_tree(tmp_path: Path) -> None:
    """Children found under any thread of a followed process, grandchildren too; a gone one is dropped."""
    for pid, tids, children in ((10, (10, 11), {11: "20"}), (20, (20,), {20: "30 "}), (30, (30, 31), {})):
        for tid in tids:
            task = tmp_path / str(pid) / "task" / str(tid)
            task.mkdir(parents=True)
            (task / "children").write_text(children.get(tid, ""))
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (x) S 1\n")
    with roots.use(procfs=tmp_path):
        target = PidTarget(10)
        assert set(target.threads()) == {10, 11}  # the main thread has no child
        threads = target.threads(every_thread=True)
        assert set(threads) == {10, 11, 20, 30, 31}
        assert threads[31] == Lineage(process=30, family=10)
        assert target.new_processes() == (10, 20, 30)
        for entry in sorted((tmp_path / "30").rglob("*"), reverse=True):
            entry.rmdir() if entry.is_dir() else entry.unlink()
        assert set(target.threads()) == {10, 11, 20}


def test_bind_pins_the_command_before_its_exec() -> None:
    cpu = min(os.sched_getaffinity(0))
    target = CommandTarget(["true"], bind=(cpu,))
    try:
        pid = target.launch()
        assert os.sched_getaffinity(pid) == {cpu}  # held at the gate, pinned already
        assert target.pinner is not None and target.pinner.pinned(pid)
    finally:
        target.close()


def test_a_cpu_the_kernel_refuses_ends_the_gated_command_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pid: int, cpus: object) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    target = CommandTarget(["true"], bind=(0,))
    with pytest.raises(BadTarget, match=r"--bind: cannot pin the command to CPU 0: Invalid argument"):
        target.launch()
    assert target.exit_code is not None or target.stopped  # the child is gone, not left at the gate
