"""Thread tracking from a fake procfs tree: threads new and ended, child processes, exits, names."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from sectormon.host import roots
from sectormon.host.threads import FollowedProcesses, Lineage, has_ended, task_state


@pytest.fixture
def proc(tmp_path: Path) -> Iterator[Path]:
    """An empty fake procfs that every host/ reader uses for the test."""
    with roots.use(procfs=tmp_path):
        yield tmp_path


def process(
    proc: Path,
    pid: int,
    tids: Sequence[int] = (),
    *,
    children: Mapping[int, str] | None = None,
    state: str = "S",
    comm: str = "app",
) -> None:
    """Process ``pid`` with threads ``tids`` (the main one always) as procfs shows it."""
    base = proc / str(pid)
    for tid in (pid, *tids):
        task = base / "task" / str(tid)
        task.mkdir(parents=True, exist_ok=True)
        (task / "children").write_text((children or {}).get(tid, ""))
    (base / "stat").write_text(f"{pid} ({comm}) {state} 1 {pid} {pid} 0 -1\n")
    (base / "comm").write_text(comm + "\n")
    (base / "cmdline").write_bytes(f"{comm}\0--flag\0".encode())


def end_thread(proc: Path, pid: int, tid: int) -> None:
    shutil.rmtree(proc / str(pid) / "task" / str(tid))


def test_threads_come_and_go(proc: Path) -> None:
    process(proc, 10, (11,))
    followed = FollowedProcesses()
    followed.follow_roots([10], exit_fd=True)
    assert followed.thread_count() is None  # a fake tree keeps nothing open
    assert followed.tids() == (10, 11)
    assert followed.threads() == {10: Lineage(10, 10), 11: Lineage(10, 10)}
    process(proc, 10, (11, 12))
    end_thread(proc, 10, 11)
    assert followed.tids() == (10, 12)
    assert followed.new_processes() == (10,)
    assert followed.new_processes() == ()
    followed.stop_following()
    assert followed.followed_pids() == ()


def test_child_processes_are_found_and_dropped(proc: Path) -> None:
    process(proc, 10, (11,), children={11: "20"})
    process(proc, 20, children={20: "30 "})
    process(proc, 30, (31,))
    followed = FollowedProcesses()
    followed.follow_roots([10], exit_fd=False)
    assert set(followed.threads()) == {10, 11}  # only the main thread is looked under every time
    assert not followed.new_children()
    threads = followed.threads(every_thread=True)
    assert set(threads) == {10, 11, 20, 30, 31}
    assert threads[31] == Lineage(process=30, family=10)  # a grandchild belongs to the target's family
    assert followed.followed_pids() == (10, 20, 30)
    assert followed.new_processes() == (10, 20, 30)
    shutil.rmtree(proc / "30")
    assert set(followed.threads()) == {10, 11, 20}
    assert followed.followed_pids() == (10, 20)
    process(proc, 10, (11,), children={10: "40"})
    process(proc, 40)
    assert followed.new_children()
    assert followed.child_pids([10, 11]) == (40,)


def test_without_children_only_the_targets_threads(proc: Path) -> None:
    process(proc, 10, children={10: "20"})
    process(proc, 20)
    followed = FollowedProcesses(follow_children=False)
    followed.follow_roots([10], exit_fd=False)
    assert set(followed.threads(every_thread=True)) == {10}
    assert not followed.new_children()
    assert followed.child_pids([10]) == (20,)  # still seen, for the warning about them
    assert followed.process_name(20) == "app"
    assert followed.process_name(99) == "99"


def test_finished_once_every_target_process_has_exited(proc: Path) -> None:
    process(proc, 10)
    process(proc, 20)
    followed = FollowedProcesses()
    followed.follow_roots([10, 20], exit_fd=True)
    assert followed.pid == 10 and followed.roots == (10, 20)
    process(proc, 10, state="Z")
    assert not followed.finished()
    shutil.rmtree(proc / "20")
    assert followed.finished()
    process(proc, 20)  # a pid used again is not the target come back
    assert followed.finished()
    assert followed.threads() == {} and followed.tids() == ()


def test_nothing_followed_is_never_finished(proc: Path) -> None:
    followed = FollowedProcesses()
    assert not followed.finished()
    assert followed.threads() == {} and followed.tids() == ()
    assert followed.cmdline() == [] and followed.cpus() == []
    assert followed.thread_count() is None


def test_states_names_and_command_lines(proc: Path) -> None:
    process(proc, 10, comm="a) b", state="R")  # the name may hold spaces and parentheses
    process(proc, 11, state="Z")
    assert task_state(10) == "R" and not has_ended(10)
    assert task_state(11) == "Z" and has_ended(11)
    assert task_state(12) is None and has_ended(12)
    followed = FollowedProcesses()
    followed.follow_roots([10], exit_fd=False)
    assert followed.cmdline() == ["a) b", "--flag"]
    assert followed.process_name(10) == "a) b"
