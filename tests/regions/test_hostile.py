"""Marker use the library must survive: unpaired calls, too many regions, threads and programs that
end inside a region, nesting, many threads, rotation, a bad table, a refusing sectormon.

Each case runs programs/hostile.c under the endpoint; the program must always exit 0, and what did
not fit or did not pair is counted, flagged and said once on stderr, never a crash.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sectormon.perf.errors import PermissionDenied
from sectormon.perf.events import parse_event
from sectormon.perf.group import PerfGroup
from sectormon.regions import layout
from tests.regions.regions_helpers import (
    EVENTS,
    PROGRAMS,
    SoftwareOpener,
    build,
    counting,
    faults,
    region_totals,
    run_marked,
)

pytestmark = pytest.mark.syscall


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(PROGRAMS / "hostile.c", tmp_path_factory.mktemp("hostile") / "hostile")


def test_unpaired_calls_are_warned_once_per_region_and_ignored(hostile: Path) -> None:
    with counting() as endpoint:
        run = run_marked(endpoint, hostile, "unpaired")
        snapshot = endpoint.read()
    assert run.returncode == 0 and run.stdout == "done unpaired\n"
    lines = run.stderr.splitlines()
    assert len(lines) == 3, run.stderr
    assert '"never_started" (number 0) stopped without a start' in lines[0]
    assert '"fapp_never" (number 2) stopped without a start' in lines[1]
    assert '"twice" (number 0) started again before its stop' in lines[2]
    assert snapshot.unpaired == 5  # never_started x2, fapp_never, twice started and stopped again
    (twice,) = snapshot.of("twice")
    assert (twice.calls, twice.open) == (1, False)
    assert twice.counts()["page-faults"] == pytest.approx(100, rel=0.01)
    assert snapshot.of("never_started") == () and snapshot.of("(null)")[0].calls == 1


def test_outside_sectormon_unpaired_calls_say_nothing(hostile: Path) -> None:
    run = run_marked(None, hostile, "unpaired")
    assert (run.returncode, run.stdout, run.stderr) == (0, "done unpaired\n", "")


def test_ten_thousand_region_names_fill_the_table_and_say_so(hostile: Path) -> None:
    with counting() as endpoint:
        run = run_marked(endpoint, hostile, "names", "10000")
        snapshot = endpoint.read()
    assert run.returncode == 0 and run.stdout == "done names\n"
    assert run.stderr.count("more regions x threads than the region table holds") == 1
    assert len(snapshot.threads) == 4096 and snapshot.overflow == {"regions"}
    assert snapshot.dropped == 2 * (10_001 - 4096)  # every start and stop of a region left out
    assert {r.name for r in snapshot.threads} == {f"region_{i}" for i in range(4096)}


def test_a_long_name_is_truncated_and_flagged(hostile: Path) -> None:
    with counting() as endpoint:
        assert run_marked(endpoint, hostile, "names", "0").returncode == 0
        snapshot = endpoint.read()
    (long,) = snapshot.threads
    assert long.name == "x" * (layout.NAME_BYTES - 1) and snapshot.overflow == {"names"}


def test_a_thread_that_exits_inside_a_region_leaves_it_open_with_its_counts(hostile: Path) -> None:
    with counting() as endpoint:
        assert run_marked(endpoint, hostile, "thread-exit").returncode == 0
        (inside,) = endpoint.read().of("inside")
    assert (inside.open, inside.open_counted, inside.thread_exited, inside.calls) == (True, True, True, 1)
    assert inside.counts()["page-faults"] == pytest.approx(500, rel=0.01)


def test_a_region_open_when_the_program_exits_is_reported_open(hostile: Path) -> None:
    with counting() as endpoint:
        assert run_marked(endpoint, hostile, "open-at-exit").returncode == 0
        snapshot = endpoint.read()
    (region,) = snapshot.of("open_at_exit")
    assert region.open and region.open_counted and region_totals(snapshot)["open_at_exit"].open
    assert region.counts()["page-faults"] == pytest.approx(700, rel=0.01)


def test_nested_regions_each_count_their_own_span(hostile: Path) -> None:
    with counting() as endpoint:
        assert run_marked(endpoint, hostile, "nested").returncode == 0
        snapshot = endpoint.read()
    assert [r.calls for r in snapshot.of("outer", 1) + snapshot.of("inner", 1)] == [3, 3]
    assert faults(snapshot, "outer", 1) == [pytest.approx(1_500, rel=0.01)]
    assert faults(snapshot, "inner", 1) == [pytest.approx(600, rel=0.01)]


def test_a_forked_child_counts_its_own_regions_not_its_parents_thread(hostile: Path) -> None:
    with counting() as endpoint:
        assert run_marked(endpoint, hostile, "fork", env={"OMPI_COMM_WORLD_RANK": "3"}).returncode == 0
        snapshot = endpoint.read()
    (parent,) = snapshot.of("parent")
    (child,) = snapshot.of("child")
    assert child.pid != parent.pid and child.tid == child.pid and (parent.rank, child.rank) == (3, 3)
    assert child.counts()["page-faults"] == pytest.approx(300, rel=0.01)
    # the parent's own 200 pages, not the child's, plus the copy-on-write faults of the few pages
    # (stack, libc data) the parent writes after the fork
    assert 200 <= parent.counts()["page-faults"] <= 210


def test_likwid_get_and_reset_answer_for_the_calling_thread(hostile: Path) -> None:
    with counting() as endpoint:
        run = run_marked(endpoint, hostile, "likwid-get")
        (region,) = endpoint.read().of("get")
    assert run.returncode == 0
    # GET: both events of the one group (page-faults first), 2 calls, a time; after RESET only
    # the new entry, and only as many events as asked for
    assert run.stdout.splitlines()[:2] == ["get 2 2 200 1", "get 1 1 50"]
    assert (region.calls, region.counts()["page-faults"]) == (1, 50.0)
    alone = run_marked(None, hostile, "likwid-get")
    assert alone.stdout.splitlines()[:2] == ["get 0 0 0 0", "get 0 0 0"]


def test_a_region_leaves_out_the_threads_it_starts(hostile: Path) -> None:
    with counting() as endpoint:
        assert run_marked(endpoint, hostile, "spawn").returncode == 0
        assert faults(endpoint.read(), "spawner") == [pytest.approx(100, abs=5)]


def test_an_opener_that_inherits_would_mix_the_threads_in(hostile: Path) -> None:
    """Why the groups handed over must not inherit: the same region then counts the thread it started."""

    def inheriting(tid: int) -> list[PerfGroup]:
        group = PerfGroup([parse_event(e) for e in EVENTS], pid=tid, names=EVENTS, inherit=True)
        group.enable()
        opened.append(group)
        return [group]

    opened: list[PerfGroup] = []
    try:
        with counting(inheriting) as endpoint:
            assert run_marked(endpoint, hostile, "spawn").returncode == 0
            spawner = faults(endpoint.read(), "spawner")
    finally:
        for group in opened:
            group.close()
    assert spawner == [pytest.approx(500, abs=10)]


def test_eight_threads_entering_a_region_many_times(hostile: Path) -> None:
    with counting() as endpoint:
        assert run_marked(endpoint, hostile, "threads", "200").returncode == 0
        snapshot = endpoint.read()
    loops = snapshot.of("loop")
    assert len(loops) == 8 and {r.calls for r in loops} == {200}
    assert faults(snapshot, "loop") == [pytest.approx(2_000, rel=0.01)] * 8
    assert region_totals(snapshot)["loop"].total.counts["page-faults"] == pytest.approx(16_000, rel=0.01)


class Rotator:
    """Plays the sampler's rotation: one of each thread's two groups counts at a time."""

    def __init__(self, opener: SoftwareOpener) -> None:
        self.opener = opener
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        turn = 0
        while not self.stop.wait(0.002):
            groups: list[PerfGroup] = list(self.opener.opened)
            for index, group in enumerate(groups):
                if index % 2 == turn:
                    group.enable()
                else:
                    group.disable()
            turn ^= 1

    def __enter__(self) -> Rotator:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join()


@pytest.mark.timing  # the rotating thread must get its turns while the region runs
def test_under_rotation_each_group_is_scaled_by_its_own_times(hostile: Path) -> None:
    opener = SoftwareOpener(groups_per_thread=2, enabled=False)
    try:
        with counting(opener, rotated=True) as endpoint, Rotator(opener):
            assert run_marked(endpoint, hostile, "long", "60000").returncode == 0
            (region,) = endpoint.read().of("long")
    finally:
        opener.close()
    assert len(region.groups) == 2
    for group in region.groups:
        assert 0.0 < group.coverage < 1.0
        assert group.scaled()[0] == pytest.approx(60_000, rel=0.05)
    assert region.coverage()["page-faults"] < 1


def test_a_table_that_is_not_a_region_table_is_said_once_and_ignored(hostile: Path, tmp_path: Path) -> None:
    bad = tmp_path / "table"
    bad.write_bytes(b"\0" * 4096)
    env = {layout.ENV_SOCKET: str(tmp_path / "socket"), layout.ENV_TABLE: str(bad)}
    run = run_marked(None, hostile, "nested", env=env)
    assert run.returncode == 0 and run.stdout == "done nested\n"
    assert run.stderr.count("cannot use the region table") == 1


def test_a_refusing_sectormon_leaves_calls_counted_without_counters(hostile: Path) -> None:
    def refuse(tid: int) -> list[PerfGroup]:
        raise PermissionDenied(f"no counters for {tid} in this test")

    with counting(refuse) as endpoint:
        run = run_marked(endpoint, hostile, "nested")
        snapshot = endpoint.read()
        errors = list(endpoint.server.errors)
    assert run.returncode == 0 and "its regions count calls only" in run.stderr
    assert [r.calls for r in snapshot.of("outer", 1)] == [3] and snapshot.of("outer", 1)[0].groups == ()
    assert snapshot.overflow == {"no counters"} and "no counters for" in errors[0]
