"""PerfSource end to end on this host: units, CMG stand-ins, groups, command gating, description."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sectormon.sources.perf.source as perf_source
from sectormon.data.readings import Unit
from sectormon.host.threads import Lineage
from sectormon.perf.errors import PermissionDenied, TargetGone
from sectormon.profiles.model import EventDef
from sectormon.sources.base import Source
from sectormon.sources.perf.source import PerfSource
from sectormon.sources.perf.targets import BadTarget, CommandTarget, CpuTarget, PidTarget
from sectormon.sources.perf.thread_units import BINDING_WARNING
from tests.perf.perf_helpers import Child, FakeTopology

pytestmark = pytest.mark.syscall

EVENTS = [EventDef("TASK_CLOCK", "task-clock"), EventDef("PAGE_FAULTS", "page-faults")]
TWO_CMGS = FakeTopology(cpus=(0, 1), cmg_of={0: 0, 1: 1}, cmgs={0: (0,), 1: (1,)})


def needs_two_cpus() -> None:
    if not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")


def test_is_a_source(child: Child) -> None:
    source: Source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    assert source.kind == "perf"
    source.close()


def test_pid_mode_units_follow_threads(child: Child) -> None:
    needs_two_cpus()
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    source.start()
    first = source.poll_units()
    assert [u.key for u in first.alive] == [f"thread:{child.pid}"]
    main = first.alive[0]
    assert (main.core, main.cmg) == (None, None)  # unbound across two CMGs
    assert first.warnings == (BINDING_WARNING,)

    spawned = int(child.ask("spawn"))
    pinned = int(child.ask("pin 1"))
    second = source.poll_units()
    by_tid = {u.ident: u for u in second.alive}
    assert set(by_tid) == {child.pid, spawned, pinned}
    assert (by_tid[pinned].core, by_tid[pinned].cmg) == (1, 1)
    assert by_tid[spawned].core is None
    assert second.ended == () and second.warnings == ()

    child.ask("end")  # the pinned thread (newest) exits; the OS thread may linger a moment
    ended: list[str] = []
    deadline = time.monotonic() + 5
    while not ended and time.monotonic() < deadline:
        ended += source.poll_units().ended
        time.sleep(0.005)
    assert ended == [f"thread:{pinned}"]
    assert source.poll_units().ended == ()  # reported once
    assert not source.finished()
    child.finish(0)  # reaped by the fixture's Popen: the process is gone from /proc
    last = source.poll_units()
    assert last.alive == ()
    assert set(last.ended) == {f"thread:{child.pid}", f"thread:{spawned}"}
    assert source.finished()
    source.close()


def test_thread_group_counts_the_thread(child: Child) -> None:
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    source.start()
    unit = source.poll_units().alive[0]
    group = source.open_group(unit, EVENTS)
    assert group.events == ("TASK_CLOCK", "PAGE_FAULTS")
    group.enable()
    child.ask("touch 200")
    group.disable()
    values = group.read()
    assert values.values[1] >= 200
    source.close()
    with pytest.raises(Exception):  # noqa: B017 - closed by the source: the fd is gone
        group.read()


def test_cmg_units_pid_mode() -> None:
    needs_two_cpus()
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, text=True
    )
    try:
        os.sched_setaffinity(proc.pid, {1})
        source = PerfSource(PidTarget(proc.pid), TWO_CMGS)
        source.poll_units()
        if source.cmg_unavailable_reason is not None:
            pytest.skip(source.cmg_unavailable_reason)
        assert source.cmg_units() == (Unit("cmg", 1, core=1, cmg=1),)  # only the bound thread's CMG
        os.sched_setaffinity(proc.pid, {0, 1})
        for _ in range(perf_source.AFFINITY_REFRESH_POLLS):  # rebinding is noticed within this many polls
            source.poll_units()
        assert [u.ident for u in source.cmg_units()] == [0, 1]  # unbound: every CMG
        group = source.open_group(source.cmg_units()[0], [EventDef("CPU_CLOCK", "cpu-clock")])
        group.enable()
        time.sleep(0.01)
        group.disable()
        assert group.read().time_enabled > 0
        source.close()
    finally:
        proc.kill()
        proc.wait()


def test_cmg_unavailable_reason(monkeypatch: pytest.MonkeyPatch, child: Child) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionDenied("cannot open 'cpu-clock' on cpu 0 (EACCES): kernel.perf_event_paranoid is 2")

    monkeypatch.setattr(perf_source, "PerfGroup", refuse)
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    source.poll_units()
    assert source.cmg_units() == ()
    reason = source.cmg_unavailable_reason
    assert reason is not None and "perf_event_paranoid is 2" in reason


def test_cpus_mode() -> None:
    with pytest.raises(BadTarget, match="CPU 7 does not exist"):
        PerfSource(CpuTarget([0, 7]), TWO_CMGS)
    source = PerfSource(CpuTarget([1]), TWO_CMGS)
    update = source.poll_units()
    assert update.alive == (Unit("cpu", 1, core=1, cmg=1),)
    assert update.warnings == ()
    assert not source.finished()
    if source.cmg_unavailable_reason is None:
        assert source.cmg_units() == (Unit("cmg", 1, core=1, cmg=1),)
    assert source.describe() == {
        "target": {"mode": "cpus", "pid": None, "cmdline": [], "threads": 0, "cpus": [1]},
        "sector_config": {},
        "source": "perf",
    }
    if os.geteuid() == 0:
        group = source.open_group(update.alive[0], [EventDef("CPU_CLOCK", "cpu-clock")])
        group.enable()
        time.sleep(0.01)
        group.disable()
        assert group.read().values[0] > 0
    source.close()


def test_command_mode_counts_start_at_exec() -> None:
    code = (
        "import mmap\n"
        "m = mmap.mmap(-1, 300 * mmap.PAGESIZE)\n"
        "for i in range(0, 300 * mmap.PAGESIZE, mmap.PAGESIZE): m[i] = 1\n"
        "raise SystemExit(5)\n"
    )
    env_before = os.environ.get("FLIB_SCCR_CNTL")
    os.environ["FLIB_SCCR_CNTL"] = "TRUE"  # the child inherits it: describe() must show it
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        target = CommandTarget([sys.executable, "-c", code], stdout=devnull)
        source = PerfSource(target, TWO_CMGS)
        source.start()
    finally:
        os.close(devnull)
        if env_before is None:
            del os.environ["FLIB_SCCR_CNTL"]
        else:
            os.environ["FLIB_SCCR_CNTL"] = env_before
    units = source.poll_units().alive
    assert [u.ident for u in units] == [target.pid]
    group = source.open_group(units[0], EVENTS)
    idle = source.open_group(units[0], EVENTS)  # opened, never enabled: must not count at exec
    group.reset()
    group.enable()  # deferred: the kernel enables it at exec
    time.sleep(0.05)
    before = group.read()
    assert before.values == (0, 0) and before.time_enabled == 0  # nothing counted at the gate
    described = source.describe()
    assert described["target"]["mode"] == "command"
    assert described["target"]["cmdline"][0] == sys.executable
    assert described["sector_config"] == {"FLIB_SCCR_CNTL": "TRUE"}
    deadline = source.now() + 10
    while not source.finished() and source.now() < deadline:
        source.wait_until(source.now() + 0.02)  # the first wait releases the command
    assert source.finished()
    assert source.exit_code == 5
    after = group.read()
    assert after.values[0] > 0 and after.values[1] >= 300
    assert after.time_enabled >= after.time_running > 0
    assert idle.read().values == (0, 0)
    source.close()


def test_wait_until_sleeps_instead_of_spinning(child: Child) -> None:
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    source.start()
    cpu0 = time.process_time()
    source.wait_until(source.now() + 0.2)
    assert source.now() >= 0.2
    assert time.process_time() - cpu0 < 0.1
    source.close()


def test_describe_pid_mode(child: Child) -> None:
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    source.poll_units()
    info = source.describe()
    assert info["source"] == "perf"
    assert info["target"]["mode"] == "pid"
    assert info["target"]["pid"] == child.pid
    assert info["target"]["threads"] == 1
    assert info["target"]["cmdline"][-1].endswith("perf_child.py")
    assert info["target"]["cpus"] == sorted(os.sched_getaffinity(child.pid))
    assert (info["target"]["pids"], info["target"]["children"]) == ([child.pid], True)
    assert isinstance(info["sector_config"], dict)
    source.close()


def test_probe_delegates(child: Child) -> None:
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    result = source.probe([EventDef("TASK_CLOCK", "task-clock")])
    assert result["TASK_CLOCK"].state == "counts"
    source.close()


def test_sector_config_from_running_process_environment() -> None:
    env = {**os.environ, "FLIB_L2_SECTOR_NWAYS_INIT": "2,4", "FLIB_SCCR_CNTL": "TRUE", "OTHER": "x"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, env=env
    )
    try:
        # Popen returns once exec has closed its CLOEXEC pipe, a moment before the kernel has laid
        # out the new environment: wait for it, as a long-running target would have long done.
        deadline = time.monotonic() + 5
        while not Path(f"/proc/{proc.pid}/environ").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.001)
        source = PerfSource(PidTarget(proc.pid), TWO_CMGS)
        assert source.describe()["sector_config"] == {
            "FLIB_L2_SECTOR_NWAYS_INIT": "2,4",
            "FLIB_SCCR_CNTL": "TRUE",
        }
        source.close()
    finally:
        proc.kill()
        proc.wait()


def test_with_the_real_topology(child: Child) -> None:
    from sectormon.host.topology import load_topology

    topology = load_topology()
    source = PerfSource(PidTarget(child.pid), topology)
    unit = source.poll_units().alive[0]
    assert unit.ident == child.pid
    if source.cmg_unavailable_reason is None:
        cmgs = source.cmg_units()
        assert cmgs and all(u.core in topology.cmgs[u.ident] for u in cmgs)
    source.close()


def test_poll_lists_threads_only_when_the_count_moves_or_a_full_scan_is_due(
    child: Child, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = PidTarget(child.pid)
    listings: list[int] = []
    real_threads = target.threads

    def counted_threads(*, every_thread: bool = False) -> dict[int, Lineage]:
        listings.append(1)
        return real_threads(every_thread=every_thread)

    monkeypatch.setattr(target, "threads", counted_threads)
    source = PerfSource(target, TWO_CMGS)
    source.start()
    first = source.poll_units()
    assert len(listings) == 1
    quiet = [source.poll_units() for _ in range(3)]
    assert len(listings) == 1  # the count stood still: no listing
    assert all(update.alive is first.alive for update in quiet)  # "nothing changed" for the sampler
    spawned = int(child.ask("spawn"))
    grown = source.poll_units()
    assert len(listings) == 2
    assert spawned in {u.ident for u in grown.alive}
    for _ in range(perf_source.FULL_SCAN_POLLS):
        source.poll_units()
    assert len(listings) == 3  # the periodic full scan
    source.close()


def test_a_thread_replaced_within_one_poll_is_found_by_the_full_scan(
    child: Child, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread ends and another starts between two polls: the count cannot see it, the scan does."""
    target = PidTarget(child.pid)
    source = PerfSource(target, TWO_CMGS)
    source.start()
    source.poll_units()  # the first poll's threads are roots, kept while anything runs
    old = int(child.ask("spawn"))
    source.poll_units()
    monkeypatch.setattr(target, "thread_count", lambda: 1000)  # frozen from now on
    source.poll_units()
    child.ask("end")
    new = int(child.ask("spawn"))
    found_at: int | None = None
    ended: list[str] = []
    for poll in range(1, 20 * perf_source.FULL_SCAN_POLLS):
        update = source.poll_units()
        ended += update.ended
        if found_at is None and new in {u.ident for u in update.alive}:
            found_at = poll
        if found_at is not None and ended:
            break
        time.sleep(0.005)  # the ended OS thread may linger a moment after join
    assert found_at is not None and found_at <= perf_source.FULL_SCAN_POLLS
    assert ended == [f"thread:{old}"]
    source.close()


def test_root_groups_inherit_and_count_threads_never_polled() -> None:
    """The first poll's threads count what they start: 50 threads of 5 ms CPU each that come and
    go with no poll in between are all in the root's group."""
    churn = Path(__file__).resolve().parents[2] / "workloads" / "churn.py"
    work = subprocess.Popen(
        [sys.executable, str(churn), "50", "5", "1", "--gate"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert work.stdin is not None and work.stdout is not None
    pid = int(work.stdout.readline())
    source = PerfSource(PidTarget(pid), TWO_CMGS)
    source.start()
    first = source.poll_units()
    (root,) = first.alive
    assert (root.inherit, root.process, root.family) == (True, pid, pid)
    assert [p.pid for p in first.processes] == [pid]
    group = source.open_group(root, EVENTS)
    group.enable()
    work.stdin.write("go\n")
    work.stdin.close()
    work.wait(timeout=60)
    assert group.read().values[0] >= 50 * 5e6
    source.close()


def test_a_thread_that_ended_is_gone_not_unsupported(child: Child) -> None:
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    source.start()
    source.open_group(source.poll_units().alive[0], EVENTS)
    tid = int(child.ask("spawn"))
    child.ask("end")
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{child.pid}/task/{tid}") and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(TargetGone):
        source.open_group(Unit("thread", tid, process=child.pid, family=child.pid), EVENTS)
    source.close()


def test_a_command_tree_is_followed_and_named() -> None:
    """A job script's child process: its threads are units of its own process in the command's
    family, and each process is named once, after the command has exec'd."""
    work = f"{sys.executable} -c 'import time; time.sleep(2)'"
    target = CommandTarget(["sh", "-c", f"{work} & wait"], env=dict(os.environ, PMI_RANK="3"))
    source = PerfSource(target, TWO_CMGS)
    source.start()
    gated = source.poll_units()
    assert gated.processes == ()  # still a copy of sectormon: named once it runs
    source.release()
    seen: dict[int, Unit] = {}
    named = {}
    deadline = time.monotonic() + 10
    while len({u.process for u in seen.values()}) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
        update = source.poll_units()
        seen.update({u.ident: u for u in update.alive})
        named.update({p.pid: p for p in update.processes})
    assert target.pid is not None
    assert {u.family for u in seen.values()} == {target.pid}
    (child_pid,) = {u.process for u in seen.values()} - {target.pid}
    assert named[target.pid].command == "sh" and named[target.pid].rank == 3
    assert named[child_pid].parent == target.pid
    assert seen[target.pid].inherit and not seen[child_pid].inherit
    source.close()


def test_units_cpu_seconds_tell_a_running_thread_from_a_waiting_one(child: Child) -> None:
    source = PerfSource(PidTarget(child.pid), TWO_CMGS)
    source.start()
    spawned = int(child.ask("spawn"))  # waits
    # The main thread runs 0.2 s of CPU time, not of wall-clock time: on a loaded machine a
    # wall-clock spin got only a share of a CPU.
    child.ask("burn 200")
    units = source.poll_units().alive
    seconds = source.units_cpu_seconds(units)
    assert set(seconds) == {f"thread:{child.pid}", f"thread:{spawned}"}
    assert seconds[f"thread:{child.pid}"] >= 0.05
    assert seconds[f"thread:{spawned}"] <= 0.02
    child.finish(0)
    assert source.units_cpu_seconds(units) == {}  # ended threads are left out
    source.close()
    assert PerfSource(CpuTarget([1]), TWO_CMGS).units_cpu_seconds([Unit("cpu", 1, core=1, cmg=1)]) == {}
