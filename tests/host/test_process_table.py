"""The process table: CPU % between two snapshots (n/a at the first), filtering, ordering, the tree,
and htop's memory units; read from a real process (this one) and from fixed rows."""

from __future__ import annotations

import os

from hypothesis import example, given
from hypothesis import strategies as st

from sectormon.host.process_table import (
    ProcessRow,
    ProcessTable,
    as_tree,
    command_line,
    human_bytes,
    matching,
)


def row(pid: int, parent: int | None = None, cpu: float | None = 0.0) -> ProcessRow:
    return ProcessRow(pid, parent, "u", cpu, 1, 0, f"cmd{pid}")


def test_cpu_percent_is_unknown_at_the_first_snapshot_then_measured() -> None:
    ticks = iter([0.0, 1.0])
    table = ProcessTable(clock=lambda: next(ticks))
    first = {r.pid: r for r in table.snapshot()}
    assert first[os.getpid()].cpu_percent is None
    sum(range(200_000))  # some CPU time of our own
    second = {r.pid: r for r in table.snapshot()}
    me = second[os.getpid()]
    assert me.cpu_percent is not None and me.cpu_percent >= 0 and me.threads >= 1 and me.rss > 0


def test_filter_matches_command_user_and_pid() -> None:
    rows = [
        ProcessRow(10, None, "alice", 1.0, 1, 0, "./stream"),
        ProcessRow(20, None, "bob", 1.0, 1, 0, "vim"),
    ]
    assert [r.pid for r in matching(rows, "STREAM")] == [10]
    assert [r.pid for r in matching(rows, "bob")] == [20]
    assert [r.pid for r in matching(rows, "20")] == [20]
    assert len(matching(rows, "")) == 2


def test_the_tree_puts_children_under_parents_and_orphans_at_the_top() -> None:
    rows = [row(1), row(5, 1), row(6, 5), row(7, 99), row(8, 8)]
    assert [(d, r.pid) for d, r in as_tree(rows, "pid")] == [(0, 1), (1, 5), (2, 6), (0, 7), (0, 8)]


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 40)), max_size=60, unique_by=lambda t: t[0]))
@example([(1, 2), (2, 1)])  # a parent loop: pids reused between two reads
def test_the_tree_lists_every_row_once_whatever_the_parents(pairs: list[tuple[int, int]]) -> None:
    rows = [row(pid, parent or None) for pid, parent in pairs]
    assert sorted(r.pid for _d, r in as_tree(rows, "cpu")) == sorted(r.pid for r in rows)


def test_command_lines_and_memory_units_read_as_htop_writes_them() -> None:
    assert command_line(["a", "b"], "x") == "a b" and command_line([], "kthreadd") == "[kthreadd]"
    assert command_line(None, None) == "?"
    assert [human_bytes(n) for n in (512 << 10, 38 << 20, 3 << 29)] == ["512K", "38.0M", "1.5G"]
