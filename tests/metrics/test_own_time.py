"""Scaling by each unit's own time: a unit's rotated counts stand for the time *that unit* ran.

A thread's ``time_enabled`` advances only while it is on a CPU, so it says how much of each slice
the thread really used. The engine weights each slice by it (the unit's own time), not by the
slice's wall duration: a thread that ran a quarter of one group's slice and all of another's, or
one that ended halfway through the last slice of its life, is scaled as ``perf stat`` would scale
it (count * its time / the time the group counted it). Expected numbers assume each event's rate
per CPU-second of the thread is constant, so the truth is the rate times the thread's CPU time.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.io.header_codec import header_from_json
from sectormon.metrics.builder import build_engine
from sectormon.metrics.engine import MetricsEngine
from tests.metrics.metrics_support import NS, Feed, make_profile, reading

approx = pytest.approx


def test_thread_that_ends_mid_slice_is_scaled_by_its_own_time() -> None:
    """Alive 2.5 slices (the last one half): each event is scaled to 2.5 s of the thread's time.
    Scaled by wall time instead, A (counted in a full slice) came out 20 % high and C (counted in
    the half slice) 40 % low."""
    profile = make_profile({"G1": ["A"], "G2": ["B"], "G3": ["C"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    t = "thread:1"
    engine.add_slice(feed.slice("G1", [reading(t, "G1", {"A": 100})]))
    engine.add_slice(feed.slice("G2", [reading(t, "G2", {"B": 200})]))
    engine.add_slice(feed.slice("G3", [reading(t, "G3", {"C": 150}, te=NS // 2)], ended=[t]))
    frame = engine.frame(3.0)
    # rates 100, 200, 300 per CPU-second over 2.5 CPU-seconds
    assert frame.total.counts == approx({"A": 250.0, "B": 500.0, "C": 750.0})
    # each group counted 1 (or 0.5) of the thread's 2.5 s
    assert frame.total.coverage == approx({"A": 0.4, "B": 0.4, "C": 0.2})


def test_slices_weighted_by_how_much_the_thread_ran_in_them() -> None:
    """A thread busy a quarter of G1's slices and all of G2's: A's rate (100/CPU-s) is scaled to
    the thread's 2.5 CPU-seconds, not to 4 wall seconds at the rate of a quarter-busy slice."""
    profile = make_profile({"G1": ["A"], "G2": ["B"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    t = "thread:1"
    for _ in range(2):
        engine.add_slice(feed.slice("G1", [reading(t, "G1", {"A": 25}, te=NS // 4)]))
        engine.add_slice(feed.slice("G2", [reading(t, "G2", {"B": 100})]))
    frame = engine.frame(4.0)
    assert frame.total.counts == approx({"A": 250.0, "B": 250.0})
    assert frame.total.coverage == approx({"A": 0.2, "B": 0.8})


def test_units_are_scaled_by_their_own_times_not_each_others() -> None:
    """Two threads in the same slices: one always busy, one busy only in G2's slices. Each is
    scaled by its own time; the idle thread's zero in G1 is a measured zero."""
    profile = make_profile({"G1": ["A"], "G2": ["B"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    busy, bursty = "thread:1", "thread:2"
    for _ in range(2):
        engine.add_slice(
            feed.slice("G1", [reading(busy, "G1", {"A": 10}), reading(bursty, "G1", {"A": 0}, te=0)])
        )
        engine.add_slice(feed.slice("G2", [reading(busy, "G2", {"B": 10}), reading(bursty, "G2", {"B": 30})]))
    frame = engine.frame(4.0)
    assert frame.threads["1"].counts == approx({"A": 40.0, "B": 40.0})
    # thread 2 ran 2 s, all of them in G2's slices: B 60 stands for itself; A has no chance of
    # having counted anything while it ran, so it is unknown rather than a made-up zero
    assert frame.threads["2"].counts == approx({"B": 60.0})
    assert frame.threads["2"].coverage["B"] == approx(1.0)


def test_kernel_multiplexed_groups_scaled_by_their_running_share() -> None:
    """All groups enabled at once (the kernel rotates them): every slice has a row of each group
    with the unit's own te and the group's tr. The thread runs a varying share of each slice."""
    profile = make_profile({"G1": ["A"], "G2": ["B"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    t = "thread:1"
    for te in (NS, NS // 4):
        # rate 200 per CPU-second for A, 80 for B; each group on the PMU half of the thread's time
        rows = [
            reading(t, "G1", {"A": 200 * te // NS // 2}, te=te, tr=te // 2),
            reading(t, "G2", {"B": 80 * te // NS // 2}, te=te, tr=te // 2),
        ]
        engine.add_slice(feed.slice("kernel", rows))
    frame = engine.frame(2.0)
    assert frame.total.counts == approx({"A": 250.0, "B": 100.0})  # 1.25 CPU-seconds
    assert frame.total.coverage == approx({"A": 0.5, "B": 0.5})


@given(
    rates=st.lists(st.integers(0, 10_000), min_size=3, max_size=3),
    shares=st.lists(st.integers(1, 1000), min_size=6, max_size=12),
)
def test_constant_rates_are_recovered_whatever_the_thread_ran(rates: list[int], shares: list[int]) -> None:
    """Property: with constant per-CPU-second rates, every event's scaled count equals its rate
    times the thread's total CPU time, however the thread's activity varies between slices."""
    profile = make_profile({"G1": ["A"], "G2": ["B"], "G3": ["C"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    names = ("A", "B", "C")
    cpu = 0.0
    for i, share in enumerate(shares):
        te = NS * share // 1000
        cpu += te / NS
        g = i % 3
        engine.add_slice(
            feed.slice(f"G{g + 1}", [reading("thread:1", f"G{g + 1}", {names[g]: rates[g] * share}, te=te)])
        )
    frame = engine.frame(float(len(shares)))
    for g, name in enumerate(names):
        assert frame.total.counts[name] == approx(rates[g] * 1000 * cpu, rel=1e-9, abs=1e-6)


def _ended_thread_counts(header: dict[str, object]) -> dict[str, float]:
    """The first test's thread (alive 2.5 slices) through the engine a recording's header builds."""
    profile = make_profile({"G1": ["A"], "G2": ["B"], "G3": ["C"]})
    engine = build_engine(profile, header_from_json(header))
    feed = Feed()
    t = "thread:1"
    engine.add_slice(feed.slice("G1", [reading(t, "G1", {"A": 100})]))
    engine.add_slice(feed.slice("G2", [reading(t, "G2", {"B": 200})]))
    engine.add_slice(feed.slice("G3", [reading(t, "G3", {"C": 150}, te=NS // 2)], ended=[t]))
    return dict(engine.frame(3.0).total.counts)


ROTATION_HEADER = {"mode": "sync", "timeslice": 1.0, "reason": "requested"}


def test_recordings_that_state_their_rotation_are_scaled_by_own_time() -> None:
    counts = _ended_thread_counts({"rotation": ROTATION_HEADER, "source": {"kind": "perf"}})
    assert counts == approx({"A": 250.0, "B": 500.0, "C": 750.0})


def test_older_recordings_replay_as_first_reported() -> None:
    """No ``rotation`` in the header: a recording from before own-time scaling. Each reading
    stands for its whole slice, as its first report said, so a figure quoted from it does not move
    on a later replay: each group counted one of the three wall slices, so each count is x3."""
    counts = _ended_thread_counts({"source": {"kind": "perf"}})
    assert counts == approx({"A": 300.0, "B": 600.0, "C": 450.0})


def test_fapp_imports_never_use_own_time() -> None:
    """fapp's event sets are separate runs of one region, each row on its own clock."""
    with_rotation = {"rotation": ROTATION_HEADER, "source": {"kind": "fapp"}}
    assert _ended_thread_counts(with_rotation) == approx({"A": 300.0, "B": 600.0, "C": 450.0})
