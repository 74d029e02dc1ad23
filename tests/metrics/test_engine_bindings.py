"""Thread bindings from slices to frames: each thread shows its newest one, by rows and by batches."""

from __future__ import annotations

import json

from sectormon.data.binding import SCHED, ThreadBinding
from sectormon.data.readings import Mark, Slice
from sectormon.metrics.engine import MetricsEngine
from tests.metrics.metrics_support import reading
from tests.metrics.test_batch import frames_by_batches, frames_by_rows
from tests.metrics.test_rows import PROFILE

UNBOUND = ThreadBinding((0, 1), 0, SCHED)
MOVED = ThreadBinding((0, 1), 4, SCHED)
PINNED = ThreadBinding((1,), 0, SCHED)


def slices() -> list[Slice | Mark]:
    def counts(unit: str, core: int | None) -> tuple:  # type: ignore[type-arg]
        return (reading(unit, "G1", {"CYC": 1000, "INS": 500}, core=core, cmg=0),)

    return [
        Slice(
            0.25,
            0,
            0.25,
            "G1",
            counts("thread:10", None) + counts("thread:11", 1),
            bindings=(("thread:10", UNBOUND), ("thread:11", PINNED)),
        ),
        Slice(0.5, 1, 0.25, "G1", counts("thread:10", None) + counts("thread:11", 1)),
        Slice(0.75, 2, 0.25, "G1", counts("thread:10", None), bindings=(("thread:10", MOVED),)),
        Slice(1.0, 3, 0.25, "G1", counts("thread:12", 0)),  # a thread nothing was read of
    ]


def test_each_thread_of_a_frame_shows_its_newest_binding() -> None:
    engine = MetricsEngine(PROFILE)
    for s in slices()[:2]:
        assert isinstance(s, Slice)
        engine.add_slice(s)
    first = engine.frame(0.5)
    assert first.bindings == {"10": UNBOUND, "11": PINNED}
    threads = first.to_json()["threads"]
    assert threads["10"]["binding"] == {
        "bound": False,
        "cpus": [0, 1],
        "migrations": 0,
        "migrations_from": "sched",
    }
    assert threads["11"]["binding"]["bound"] is True
    for s in slices()[2:]:
        assert isinstance(s, Slice)
        engine.add_slice(s)
    second = engine.frame(1.0)
    assert second.bindings == {"10": MOVED, "11": PINNED}  # 11 is there (not ended), with what was read
    assert "binding" not in second.to_json()["threads"]["12"]  # unknown: absent, never made up
    final = engine.final_frame(1.0)
    assert final.bindings == {"10": MOVED, "11": PINNED}


def test_a_replays_reader_processes_carry_them_too() -> None:
    by_rows = frames_by_rows(slices(), 0.5, {})
    assert by_rows == frames_by_batches(slices(), 0.5, {})
    assert by_rows == frames_by_batches(slices(), 0.5, {}, restarts=frozenset({1}))
    assert json.loads(by_rows[-1])["threads"]["10"]["binding"]["migrations"] == 4
