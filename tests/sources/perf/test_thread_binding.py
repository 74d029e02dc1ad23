"""--bind's round robin, and each thread's migrations as BindingWatch counts them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from sectormon.data.binding import LAST_CPU, SCHED, ThreadBinding
from sectormon.host import roots
from sectormon.sources.perf.thread_binding import BindingWatch, Pinner


class FakeThreads:
    """Each thread's migration count (None: no sched file) and last CPU, set by the test."""

    def __init__(self) -> None:
        self.count: dict[int, int | None] = {}
        self.cpu: dict[int, int | None] = {}

    def migrations(self, pid: int | None, tid: int) -> int | None:
        return self.count.get(tid)

    def last_cpu(self, pid: int | None, tid: int) -> int | None:
        return self.cpu.get(tid)

    def watch(self) -> BindingWatch:
        return BindingWatch(self.migrations, self.last_cpu)


def test_pinner_goes_round_robin_and_pins_each_thread_once() -> None:
    calls: list[tuple[int, set[int]]] = []

    def set_affinity(tid: int, cpus: Iterable[int]) -> None:
        calls.append((tid, set(cpus)))

    pinner = Pinner((4, 6), set_affinity)
    assert [pinner.pin(tid) for tid in (100, 101, 102, 101)] == [True] * 4
    assert calls == [(100, {4}), (101, {6}), (102, {4})]
    assert pinner.pinned(101) and not pinner.pinned(103)
    pinner.forget(101)  # ended; a new thread with its number is pinned anew, to the next CPU
    pinner.pin(101)
    assert calls[-1] == (101, {6})


def test_a_thread_that_ended_before_its_pin_is_not_pinned() -> None:
    def gone(tid: int, cpus: Iterable[int]) -> None:
        raise ProcessLookupError(3, "No such process")

    pinner = Pinner((0,), gone)
    assert pinner.pin(5) is False and not pinner.pinned(5)
    with pytest.raises(ValueError, match="at least one CPU"):
        Pinner(())


def test_the_kernels_count_since_the_thread_was_found() -> None:
    fake = FakeThreads()
    watch = fake.watch()
    fake.count[7], fake.cpu[7] = 40, 0
    assert watch.read(7, 1, {0, 1}) == ThreadBinding((0, 1), 0, SCHED)
    assert watch.read(7, 1, {1, 0}) is None  # unchanged: nothing to say
    fake.count[7] = 43
    assert watch.read(7, 1, {0, 1}) == ThreadBinding((0, 1), 3, SCHED)
    assert watch.bindings() == {7: ThreadBinding((0, 1), 3, SCHED)}
    watch.forget(7)
    assert watch.bindings() == {}


def test_without_a_sched_file_a_changed_last_cpu_is_one_move_at_least() -> None:
    fake = FakeThreads()
    watch = fake.watch()
    fake.cpu[7] = 0
    assert watch.read(7, 1, {0, 1}) == ThreadBinding((0, 1), 0, LAST_CPU)
    fake.cpu[7] = 1
    assert watch.read(7, 1, {0, 1}) == ThreadBinding((0, 1), 1, LAST_CPU)
    assert watch.read(7, 1, {0, 1}) is None  # still there: no move seen
    fake.cpu[7] = 0
    binding = watch.read(7, 1, {0, 1})
    assert binding is not None and (binding.migrations, binding.migrations_from) == (2, LAST_CPU)


def test_a_thread_nothing_can_be_read_of_has_no_count() -> None:
    fake = FakeThreads()
    watch = fake.watch()
    assert watch.read(7, 1, {0}) == ThreadBinding((0,), None, None)
    fake.cpu[7] = 0  # readable now: counting starts here
    assert watch.read(7, 1, {0}) == ThreadBinding((0,), 0, LAST_CPU)


def test_moves_a_new_binding_forces_are_not_migrations() -> None:
    fake = FakeThreads()
    watch = fake.watch()
    fake.count[7], fake.cpu[7] = 10, 0
    watch.read(7, 1, {0, 1})
    fake.count[7] = 12  # moved twice while unbound ...
    assert watch.read(7, 1, {0, 1}) == ThreadBinding((0, 1), 2, SCHED)
    fake.count[7], fake.cpu[7] = 13, 0  # ... then bound itself to CPU 1 and has not run there yet
    assert watch.read(7, 1, {1}) == ThreadBinding((1,), 2, SCHED)
    fake.count[7], fake.cpu[7] = 14, 1  # the move onto CPU 1 is the binding's
    assert watch.read(7, 1, {1}) is None
    fake.count[7] = 15  # a move after it has settled is a migration again
    assert watch.read(7, 1, {1}) == ThreadBinding((1,), 3, SCHED)


def test_a_thread_sectormon_pinned_counts_from_when_it_runs_on_its_cpu() -> None:
    fake = FakeThreads()
    watch = fake.watch()
    fake.count[7], fake.cpu[7] = 5, 0  # pinned to CPU 1 while asleep on CPU 0
    assert watch.read(7, 1, {1}, pinned=True) == ThreadBinding((1,), 0, SCHED)
    fake.count[7], fake.cpu[7] = 6, 1  # woke up on CPU 1: the kernel counted that move
    assert watch.read(7, 1, {1}) is None
    fake.count[7] = 6
    assert watch.read(7, 1, {1}) is None


def test_the_readings_of_a_fake_procfs(tmp_path: Path) -> None:
    folder = tmp_path / "4242" / "task" / "4243"
    folder.mkdir(parents=True)

    def write(count: int | None, cpu: int) -> None:
        if count is not None:
            (folder / "sched").write_text(f"se.nr_migrations : {count}\n")
        fields = ["S"] + ["0"] * 35 + [str(cpu)]
        (folder / "stat").write_text(f"4243 (app) {' '.join(fields)}\n")

    watch = BindingWatch()
    with roots.use(procfs=tmp_path):
        write(3, 0)
        assert watch.read(4243, 4242, {0, 1}) == ThreadBinding((0, 1), 0, SCHED)
        write(9, 1)
        assert watch.read(4243, 4242, {0, 1}) == ThreadBinding((0, 1), 6, SCHED)
        (folder / "sched").unlink()  # the thread ended between its affinity read and this one
        assert watch.read(4243, 4242, {0, 1}) is None

        other = tmp_path / "4242" / "task" / "4244"
        other.mkdir()
        folder = other
        write(None, 0)  # no CONFIG_SCHED_DEBUG
        assert watch.read(4244, 4242, {0, 1}) == ThreadBinding((0, 1), 0, LAST_CPU)
        write(None, 1)
        assert watch.read(4244, 4242, {0, 1}) == ThreadBinding((0, 1), 1, LAST_CPU)
