"""The binding rule of a sector-cache run, on an FX700's topology (the fake tree): what it finds,
what it says and that it says each thread once per kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon.data.binding import LAST_CPU, SCHED, ThreadBinding
from sectormon.host import roots
from sectormon.host.topology import Topology, load_topology
from sectormon.sources.perf.binding_check import (
    MAX_NAMED,
    BindingCheck,
    Problems,
    ThreadFacts,
    binding_problems,
)

FX700 = Path(__file__).resolve().parents[2] / "fixtures" / "sysfs" / "fx700"
NAMES = {4242: "app", 4243: "worker", 4244: "worker", 4245: "helper"}


@pytest.fixture(scope="module")
def fx700() -> Topology:
    with roots.use(sysfs=FX700 / "sys", procfs=FX700 / "proc"):
        topology = load_topology()
    assert topology.is_a64fx and len(topology.cmgs) == 4
    return topology


def bound(cpu: int, migrations: int = 0) -> ThreadBinding:
    return ThreadBinding((cpu,), migrations, SCHED)


def check(topology: Topology) -> BindingCheck:
    return BindingCheck(topology.cmg_of, topology.cmg_label, lambda pid, tid: NAMES.get(tid))


def test_threads_bound_in_one_cmg_break_nothing(fx700: Topology) -> None:
    threads: ThreadFacts = {4242: (bound(0), 4242), 4243: (bound(1), 4242), 4244: (bound(2), 4242)}
    assert binding_problems(threads, fx700.cmg_of) == Problems()
    assert check(fx700).review(threads) == ()


def test_each_kind_is_found(fx700: Topology) -> None:
    threads: ThreadFacts = {
        4242: (bound(0), 4242),
        4243: (ThreadBinding(tuple(range(12)), 0, SCHED), 4242),  # free within CMG0: unbound, not spread
        4244: (bound(12, migrations=2), 4242),  # moved (it was rebound by hand), and in CMG1
        4245: (ThreadBinding(tuple(range(48)), 1, LAST_CPU), 4300),  # anywhere: unbound, not spread
    }
    found = binding_problems(threads, fx700.cmg_of)
    assert found.unbound == (4243, 4245)
    assert found.migrating == (4244, 4245)
    assert found.spread == {4242: {0: (4242, 4243), 1: (4244,)}}


def test_the_warnings_name_threads_and_say_what_to_do(fx700: Topology) -> None:
    threads: ThreadFacts = {
        4242: (bound(0), 4242),
        4243: (ThreadBinding((0, 1), 0, SCHED), 4242),
        4244: (bound(13, migrations=3), 4242),
    }
    unbound, migrating, spread = check(fx700).review(threads)
    assert "not bound to one CPU: 4243 (worker) on CPUs 0-1" in unbound
    assert "OMP_PROC_BIND=close OMP_PLACES=cores" in unbound and "--bind LIST" in unbound
    assert "section 6.7, note 1" in unbound
    assert "4244 (worker) 3 times (by the kernel's count)" in migrating
    assert "process 4242 (app) has threads in 2 CMGs (CMG0: 4242, 4243; CMG1: 4244)" in spread
    assert "notes 1 and 6" in spread and "one MPI rank per CMG" in spread


def test_each_thread_is_named_once_per_kind(fx700: Topology) -> None:
    rule = check(fx700)
    first: ThreadFacts = {4243: (ThreadBinding((0, 1), 0, SCHED), 4242)}
    assert len(rule.review(first)) == 1
    assert rule.review(first) == ()  # said already
    later: ThreadFacts = {
        4243: (ThreadBinding((0, 1), 4, SCHED), 4242),  # now it moved too: a new kind
        4244: (ThreadBinding((2, 3), 0, SCHED), 4242),  # a new unbound thread
    }
    unbound, migrating = rule.review(later)
    assert "4244 (worker)" in unbound and "4243" not in unbound
    assert "4243 (worker) 4 times" in migrating


def test_a_polled_count_is_a_lower_bound_and_an_ended_thread_says_so(fx700: Topology) -> None:
    (warning,) = check(fx700).review({9999: (ThreadBinding((5,), 1, LAST_CPU), None)})
    assert "9999 (ended) 1 time (seen by polling, at least)" in warning


def test_a_long_list_is_cut(fx700: Topology) -> None:
    threads: ThreadFacts = {tid: (ThreadBinding((0, 1)), 4242) for tid in range(5000, 5020)}
    (warning,) = check(fx700).review(threads)
    assert f"and {20 - MAX_NAMED} more" in warning
    assert "5007" in warning and "5008" not in warning
