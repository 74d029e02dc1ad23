"""The thread tracker with a binding watch and --bind's pinner: what each update says."""

from __future__ import annotations

from collections.abc import Iterable

from sectormon.data.binding import SCHED, ThreadBinding
from sectormon.host.threads import Lineage
from sectormon.sources.perf.thread_binding import BindingWatch, Pinner
from sectormon.sources.perf.thread_units import ThreadTracker

CMG_OF = {0: 0, 1: 0, 2: 1, 3: 1}


class FakeKernel:
    """Affinities and migration counts the tracker reads, changed by pins as the kernel would."""

    def __init__(self, affinity: dict[int, set[int]]) -> None:
        self.affinity = affinity
        self.count: dict[int, int] = dict.fromkeys(affinity, 0)
        self.pins: list[tuple[int, set[int]]] = []

    def get_affinity(self, tid: int) -> set[int]:
        try:
            return self.affinity[tid]
        except KeyError:
            raise ProcessLookupError(tid) from None

    def set_affinity(self, tid: int, cpus: Iterable[int]) -> None:
        if tid not in self.affinity:
            raise ProcessLookupError(tid)
        self.affinity[tid] = set(cpus)
        self.pins.append((tid, set(cpus)))

    def migrations(self, pid: int | None, tid: int) -> int | None:
        return self.count.get(tid)

    def last_cpu(self, pid: int | None, tid: int) -> int | None:
        cpus = self.affinity.get(tid)
        return min(cpus) if cpus else None


def tracker(kernel: FakeKernel, *, pinner: Pinner | None = None, refresh_every: int = 1) -> ThreadTracker:
    return ThreadTracker(
        CMG_OF,
        kernel.get_affinity,
        refresh_every=refresh_every,
        watch=BindingWatch(kernel.migrations, kernel.last_cpu),
        pinner=pinner,
    )


def test_updates_carry_each_threads_binding_when_first_read_or_changed() -> None:
    kernel = FakeKernel({10: {0}, 11: {0, 1}})
    threads = tracker(kernel)
    lineage = {10: Lineage(process=10), 11: Lineage(process=10)}
    first = threads.update([10, 11], lineage)
    assert first.bindings == (
        ("thread:10", ThreadBinding((0,), 0, SCHED)),
        ("thread:11", ThreadBinding((0, 1), 0, SCHED)),
    )
    assert threads.bindings() == {}  # judged from the next read on: the program may bind them first
    assert threads.update([10, 11], lineage).bindings == ()  # nothing changed
    kernel.count[11] = 2
    assert threads.update([10, 11], lineage).bindings == (("thread:11", ThreadBinding((0, 1), 2, SCHED)),)
    assert threads.bindings() == {
        10: (ThreadBinding((0,), 0, SCHED), 10),
        11: (ThreadBinding((0, 1), 2, SCHED), 10),
    }
    del kernel.affinity[11]
    assert threads.update([10], lineage).ended == ("thread:11",)
    assert set(threads.bindings()) == {10}


def test_known_threads_are_read_again_only_when_a_refresh_is_due() -> None:
    kernel = FakeKernel({10: {0, 1}})
    threads = tracker(kernel, refresh_every=3)
    threads.update([10])
    kernel.count[10] = 5
    assert threads.update([10]).bindings == ()
    assert threads.update([10]).bindings == (("thread:10", ThreadBinding((0, 1), 5, SCHED)),)


def test_bind_pins_new_threads_round_robin_before_reading_them() -> None:
    kernel = FakeKernel({10: {0, 1, 2, 3}, 11: {0, 1, 2, 3}, 12: {0, 1, 2, 3}})
    pinner = Pinner((2, 3), kernel.set_affinity)
    pinner.pin(10)  # the main thread, at launch
    threads = tracker(kernel, pinner=pinner)
    first = threads.update([10, 11])
    assert [(u.ident, u.core, u.cmg) for u in first.alive] == [(10, 2, 1), (11, 3, 1)]
    assert first.warnings == ()  # every thread is bound
    second = threads.update([10, 11, 12])
    assert [(u.ident, u.core) for u in second.alive] == [(10, 2), (11, 3), (12, 2)]
    assert kernel.pins == [(10, {2}), (11, {3}), (12, {2})]  # each thread once
    assert [b.cpus for _, b in second.bindings] == [(2,)]


class EndsWhenPinned(FakeKernel):
    def set_affinity(self, tid: int, cpus: Iterable[int]) -> None:
        super().set_affinity(tid, cpus)
        del self.affinity[tid]  # the thread ended right after its pin, before its affinity was read


def test_a_thread_pinned_as_it_ended_is_forgotten() -> None:
    kernel = EndsWhenPinned({10: {0, 1}})
    pinner = Pinner((0, 1), kernel.set_affinity)
    assert tracker(kernel, pinner=pinner).update([10]).alive == ()
    assert not pinner.pinned(10)  # a new thread given its number is pinned anew
