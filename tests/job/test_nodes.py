"""Aligning a job's nodes by the wall-clock start in their headers."""

from __future__ import annotations

from typing import Any

import pytest

from sectormon.errors import UsageError
from sectormon.io.header_codec import header_from_json
from sectormon.job.nodes import Node, align


def node(host: str, wall_t0: float | None, first_t: float = 0.0, end_t: float = 10.0, **extra: Any) -> Node:
    header = {"host": host, "options": {"interval": extra.pop("interval", 1.0)}, "wall_t0": wall_t0, **extra}
    return Node(host, f"{host}.jsonl", f"{host}.jsonl", header_from_json(header), first_t, end_t)


def test_offsets_come_from_the_wall_clock_starts() -> None:
    job = align([node("a", 1000.25), node("b", 1000.0), node("c", 1000.5)])
    assert [n.offset for n in job.nodes] == [0.25, 0.0, 0.5]
    assert job.start == 0.0 and job.end == 10.5
    assert job.warnings == ()  # within half an interval: not late


def test_late_and_early_nodes_are_reported() -> None:
    job = align([node("a", 1000.0), node("b", 1003.0), node("c", 1000.0, end_t=6.0)])
    assert job.seconds == 13.0
    assert "node b started 3 s after the job: its missing time shows as coverage" in job.warnings
    assert "node c ended 7 s before the job: its missing time shows as coverage" in job.warnings
    assert "node a ended 3 s before the job: its missing time shows as coverage" in job.warnings


def test_without_wall_clocks_nodes_align_at_their_starts() -> None:
    job = align([node("a", None, source={"simulated": True}), node("b", None, source={"simulated": True})])
    assert [n.offset for n in job.nodes] == [0.0, 0.0]
    assert job.warnings == ("simulated nodes have no wall clock: they are aligned at their starts",)
    mixed = align([node("a", 1000.0), node("b", None)])
    assert [n.offset for n in mixed.nodes] == [0.0, 0.0]
    assert "b.jsonl: no wall-clock start in the header" in mixed.warnings[0]


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([node("a", 0.0)], "at least two node recordings"),
        ([node("a", 0.0), node("a", 1.0)], "host a appears in more than one recording"),
        (
            [node("a", 0.0), node("b", 0.0, interval=2.0)],
            r"different --interval \(a.jsonl: 1.0 s, b.jsonl: 2.0 s\)",
        ),
    ],
)
def test_what_is_not_one_job_is_refused(nodes: list[Node], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        align(nodes)


def test_a_live_header_has_a_precise_wall_clock_start() -> None:
    import time

    from sectormon.profiles.resolve import load_profile
    from sectormon.rotation.plan import plan_rotation, select_groups
    from sectormon.session.header import build_header
    from sectormon.session.options import SessionOptions
    from tests.rotation.fake_source import FakeSource

    profile = load_profile("generic")
    source = FakeSource({}, {})
    plan = plan_rotation(profile, select_groups(profile, None), {})
    before = time.time()
    header = build_header(
        source=source,
        profile=profile,
        plan=plan,
        options=SessionOptions(),
    )
    assert isinstance(header.wall_t0, float)
    assert before - 1.0 <= header.wall_t0 <= time.time()
