"""The engine against hand-computed tables: scaling, coverage, scopes, n/a, split, frame fields.

Every expected number below is worked out in the comment beside it from the engine's rules
(module docstring of sectormon.metrics.engine): scaled = raw * present / counted per unit, summed
over the units of a scope; coverage = sum(counted) / sum(present).
"""

from __future__ import annotations

import json

import pytest

from sectormon.data.frames import Frame, FrameRotation, ScopeStats, WindowStats
from sectormon.data.readings import Mark, Slice
from sectormon.metrics.engine import MetricsEngine
from tests.metrics.metrics_support import NS, Feed, make_profile, multiplex_scale, reading
from tests.rows import row

approx = pytest.approx


def rotation_engine() -> tuple[MetricsEngine, Frame]:
    """3 groups of 1 event each, one thread on core 0 / CMG 0, 1 s slices, two rotations."""
    profile = make_profile({"G1": ["A"], "G2": ["B"], "G3": ["C"]}, {"ab": ("A / B", "lower")})
    engine = MetricsEngine(profile)
    feed = Feed()
    for group, event, value in [
        ("G1", "A", 100),
        ("G2", "B", 200),
        ("G3", "C", 300),
        ("G1", "A", 110),
        ("G2", "B", 220),
        ("G3", "C", 330),
    ]:
        engine.add_slice(feed.slice(group, [reading("thread:1", group, {event: value})]))
    return engine, engine.frame(6.0)


def test_rotation_scales_each_event_to_the_whole_window() -> None:
    _, frame = rotation_engine()
    # A: raw 100 + 110 = 210 counted in 2 of the 6 present seconds -> 210 * 6 / 2 = 630.
    # B: 420 * 3 = 1260, C: 630 * 3 = 1890.
    expected = {"A": 630.0, "B": 1260.0, "C": 1890.0}
    for scope in (frame.total, frame.threads["1"], frame.cores["0"], frame.cmgs["0"]):
        assert scope.counts == approx(expected)
        assert scope.rates == approx({"A": 105.0, "B": 210.0, "C": 315.0})  # per window second
        assert scope.coverage == approx({"A": 1 / 3, "B": 1 / 3, "C": 1 / 3, "ab": 1 / 3})
        assert scope.metrics == approx({"ab": 0.5})
        assert scope.split == {"ab"}  # A and B never share a group
        assert scope.seconds == 6.0
    assert frame.interval == 6.0
    assert frame.groups == approx({"G1": 1 / 3, "G2": 1 / 3, "G3": 1 / 3})
    assert frame.active_group == "G3"


@pytest.mark.parametrize(
    ("te", "tr", "raw", "scaled", "cov"),
    [
        (NS, NS, 100, 100.0, 1.0),  # no multiplexing
        (NS, NS // 2, 50, 100.0, 0.5),  # on the PMU half the slice: 50 * 2
        (NS, NS // 4, 25, 100.0, 0.25),
        (NS // 2, NS // 2, 100, 100.0, 1.0),  # thread ran half the slice, fully counted while it ran
        (NS // 2, NS // 4, 50, 100.0, 0.5),  # ran half, counted half of that: 50 * 2
        (0, 0, 0, 0.0, 1.0),  # slept the whole slice: a measured zero
    ],
)
def test_kernel_multiplex_correction(te: int, tr: int, raw: int, scaled: float, cov: float) -> None:
    profile = make_profile({"G": ["A", "B"]}, {"ab": "A / B"})
    engine = MetricsEngine(profile)
    engine.add_slice(Feed().slice("G", [reading("thread:1", "G", {"A": raw, "B": 10}, te=te, tr=tr)]))
    frame = engine.frame(1.0)
    assert frame.total.counts["A"] == approx(scaled)
    # One reading alone: exactly perf's correction, count * enabled / running (present = duration).
    assert frame.total.counts["A"] == approx(multiplex_scale(raw, te, tr))
    assert frame.total.coverage["A"] == approx(cov)
    assert frame.total.coverage["ab"] == approx(cov)
    assert frame.total.split == frozenset()


def test_group_never_on_the_pmu_counts_nothing() -> None:
    profile = make_profile({"G": ["A"]}, {"a": "A"})
    engine = MetricsEngine(profile)
    engine.add_slice(Feed().slice("G", [reading("thread:1", "G", {"A": 0}, te=NS, tr=0)]))
    frame = engine.frame(1.0)
    assert "A" not in frame.total.counts  # unknown, not zero
    assert frame.total.metrics == {"a": None}
    assert frame.total.coverage == {"a": 0.0}


def test_multiplexing_weighted_by_measured_time() -> None:
    profile = make_profile({"G": ["A"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 100})]))
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 60}, tr=NS // 2)]))
    frame = engine.frame(2.0)
    # raw 160 in 1.0 + 0.5 counted seconds of 2 present: 160 * 2 / 1.5
    assert frame.total.counts["A"] == approx(160 * 2 / 1.5)
    assert frame.total.coverage["A"] == approx(0.75)


def test_sleeping_thread_is_measured_zero_not_missing() -> None:
    profile = make_profile({"G1": ["A"], "G2": ["B"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    engine.add_slice(feed.slice("G1", [reading("thread:1", "G1", {"A": 100})]))
    engine.add_slice(feed.slice("G2", [reading("thread:1", "G2", {"B": 0}, te=0, tr=0)]))
    engine.add_slice(feed.slice("G1", [reading("thread:1", "G1", {"A": 0}, te=0, tr=0)]))
    engine.add_slice(feed.slice("G2", [reading("thread:1", "G2", {"B": 40})]))
    frame = engine.frame(4.0)
    # A: 100 in 2 counted seconds (one asleep) of 4 -> 200 (not 400); B: 40 * 4 / 2 = 80.
    assert frame.total.counts == approx({"A": 200.0, "B": 80.0})
    assert frame.total.coverage == approx({"A": 0.5, "B": 0.5})


def test_thread_that_ends_mid_window_keeps_its_counts() -> None:
    profile = make_profile({"G1": ["A"], "G2": ["B"]})
    engine = MetricsEngine(profile, recent_seconds=10.0)
    feed = Feed()
    t1 = "thread:1"
    t2 = "thread:2"
    engine.add_slice(feed.slice("G1", [reading(t1, "G1", {"A": 10}), reading(t2, "G1", {"A": 50})]))
    engine.add_slice(
        feed.slice("G2", [reading(t1, "G2", {"B": 20}), reading(t2, "G2", {"B": 70})], ended=[t2])
    )
    engine.add_slice(feed.slice("G1", [reading(t1, "G1", {"A": 10})]))
    engine.add_slice(feed.slice("G2", [reading(t1, "G2", {"B": 20})]))
    frame = engine.frame(4.0)
    # thread 1: present 4 s, A 20 in 2 s -> 40, B 40 -> 80.
    # thread 2: present 2 s (slices 1-2, ended in 2), A 50 in 1 s -> 100, B 70 -> 140.
    assert frame.threads["1"].counts == approx({"A": 40.0, "B": 80.0})
    assert frame.threads["2"].counts == approx({"A": 100.0, "B": 140.0})
    assert frame.total.counts == approx({"A": 140.0, "B": 220.0})
    assert frame.total.coverage == approx({"A": 0.5, "B": 0.5})  # (2 + 1) / (4 + 2)

    engine.add_slice(feed.slice("G1", [reading(t1, "G1", {"A": 10})]))
    engine.add_slice(feed.slice("G2", [reading(t1, "G2", {"B": 20})]))
    later = engine.frame(6.0)
    assert set(later.threads) == {"1"}  # thread 2 is gone from the interval...
    assert later.total.counts == approx({"A": 20.0, "B": 40.0})
    # ... but kept in the run (thread 1: 30 in 3 of 6 s -> 60; + 100) and in the recent window.
    assert later.run.total.counts == approx({"A": 160.0, "B": 260.0})
    assert later.recent.total.counts == approx({"A": 160.0, "B": 260.0})
    final = engine.final_frame(6.0)
    assert set(final.threads) == {"1", "2"}
    assert final.threads["2"].counts == approx({"A": 100.0, "B": 140.0})


def test_unit_present_from_its_first_reading() -> None:
    profile = make_profile({"G": ["A"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 10})]))
    engine.add_slice(
        feed.slice("G", [reading("thread:1", "G", {"A": 10}), reading("thread:3", "G", {"A": 5})])
    )
    frame = engine.frame(2.0)
    assert frame.threads["3"].counts == {"A": 5.0}  # present 1 s, counted 1 s
    assert frame.threads["3"].coverage == {"A": 1.0}
    assert frame.threads["3"].seconds == 2.0  # the window, not the presence
    assert frame.total.counts == {"A": 25.0}


def test_cmg_events_only_in_cmg_and_total_scopes() -> None:
    profile = make_profile(
        {"G1": ["A", "L2"], "G2": ["B"]},
        {
            "l2_per_a": "L2 / A",
            "l2_rate": ("L2 / SECONDS", "none", "cmg"),
            "a_total": ("A", "none", "total"),
            "a_core": ("A", "none", "core"),
        },
        cmg_events=["L2"],
    )
    engine = MetricsEngine(profile)
    feed = Feed()
    engine.add_slice(
        feed.slice(
            "G1",
            [
                reading("thread:1", "G1", {"A": 10, "L2": 5}, core=0, cmg=0),  # L2 from a thread: ignored
                reading("thread:2", "G1", {"A": 20}, core=12, cmg=1),
                reading("cmg:0", "G1", {"L2": 1000, "A": 99}, core=0, cmg=0),  # A from a CMG unit: ignored
                reading("cmg:1", "G1", {"L2": 2000}, core=12, cmg=1),
            ],
        )
    )
    engine.add_slice(
        feed.slice(
            "G2",
            [
                reading("thread:1", "G2", {"B": 1}, core=0, cmg=0),
                reading("thread:2", "G2", {"B": 2}, core=12, cmg=1),
            ],
        )
    )
    frame = engine.frame(2.0)
    # CMG units present 2 s (read in slice 1 only, still there in slice 2), counted 1 s.
    assert frame.cmgs["0"].counts == approx({"A": 20.0, "L2": 2000.0, "B": 2.0})
    assert frame.cmgs["1"].counts == approx({"A": 40.0, "L2": 4000.0, "B": 4.0})
    assert frame.total.counts == approx({"A": 60.0, "L2": 6000.0, "B": 6.0})
    assert frame.total.coverage["L2"] == approx(0.5)
    for scope in (*frame.threads.values(), *frame.cores.values()):
        assert "L2" not in scope.counts
        assert scope.metrics["l2_per_a"] is None
    assert set(frame.cores) == {"0", "12"}  # CMG units are not cores
    assert frame.cmgs["0"].metrics["l2_per_a"] == approx(100.0)
    assert frame.total.metrics["l2_per_a"] == approx(100.0)
    # Scope levels: cmg metrics only in cmgs/total, total metrics only in total, core only per PE.
    assert frame.cmgs["0"].metrics["l2_rate"] == approx(1000.0)
    assert frame.total.metrics == approx({"l2_per_a": 100.0, "l2_rate": 3000.0, "a_total": 60.0})
    assert set(frame.cmgs["1"].metrics) == {"l2_per_a", "l2_rate"}
    assert set(frame.threads["1"].metrics) == {"l2_per_a", "a_core"}
    assert frame.cores["12"].metrics["a_core"] == approx(40.0)


def test_core_keys_unbound_threads_and_cpu_units() -> None:
    profile = make_profile({"G": ["A"]})
    engine = MetricsEngine(profile)
    engine.add_slice(
        Feed().slice(
            "G",
            [
                reading("thread:7", "G", {"A": 1}, core=None, cmg=None),
                reading("cpu:10", "G", {"A": 2}, core=10, cmg=0),
                reading("cpu:2", "G", {"A": 3}, core=2, cmg=0),
            ],
        )
    )
    frame = engine.frame(1.0)
    assert list(frame.cores) == ["2", "10", "unbound"]  # numeric order, then unbound
    assert frame.cores["unbound"].counts == {"A": 1.0}
    assert set(frame.threads) == {"7"}  # CPU units are not threads
    assert frame.cmgs["0"].counts == {"A": 5.0}  # the unbound thread has no CMG
    assert frame.total.counts == {"A": 6.0}


def test_thread_moving_to_another_core_splits_its_counts() -> None:
    profile = make_profile({"G": ["A"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 10}, core=0)]))
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 30}, core=1)]))
    frame = engine.frame(2.0)
    assert frame.cores["0"].counts == {"A": 10.0}
    assert frame.cores["1"].counts == {"A": 30.0}
    assert frame.threads["1"].counts == {"A": 40.0}
    assert frame.threads["1"].coverage == {"A": 1.0}


def test_missing_inputs_zero_denominators_constants_and_unavailable() -> None:
    profile = make_profile(
        {"G": ["A", "B", "U"]},
        {
            "a_over_z": "A / Z",  # Z is never counted
            "a_over_b": "A / B",  # B counted as 0
            "u_metric": "U * 2",  # U unavailable on this host
            "k": "K * 2",  # constants only
            "k_plus_missing": "k + a_over_z",
        },
        extra_events=["Z"],
        constants={"K": 21.0},
    )
    engine = MetricsEngine(profile, unavailable={"U": "ENOENT: not supported"})
    engine.add_slice(Feed().slice("G", [reading("thread:1", "G", {"A": 5, "B": 0, "U": 7})]))
    frame = engine.frame(1.0)
    assert frame.total.counts == {"A": 5.0, "B": 0.0}  # U never enters the counts
    assert frame.total.metrics == {
        "a_over_z": None,
        "a_over_b": None,
        "u_metric": None,
        "k": 42.0,
        "k_plus_missing": None,
    }
    assert frame.total.coverage["a_over_z"] == 0.0
    assert frame.total.coverage["a_over_b"] == 1.0
    assert frame.total.coverage["u_metric"] == 0.0
    assert frame.total.coverage["k"] == 1.0
    assert engine.evaluate_metrics({"A": 4.0, "B": 2.0, "Z": 1.0}, 1.0)["a_over_b"] == 2.0


def test_empty_frame_has_all_metrics_as_na() -> None:
    profile = make_profile({"G": ["A"]}, {"a": "A / SECONDS"})
    frame = MetricsEngine(profile).frame(1.0)
    assert frame.total.metrics == {"a": None}
    assert frame.total.counts == {}
    assert frame.threads == {} and frame.cores == {} and frame.cmgs == {}
    assert frame.recent.total.metrics == {"a": None}


def test_overhead_groups_and_active_group() -> None:
    profile = make_profile({"G1": ["A"], "G2": ["A"]})
    engine = MetricsEngine(profile)
    feed = Feed(duration=0.5)
    for group in ("G1", "G2", "G1", "G1"):
        engine.add_slice(feed.slice(group, [reading("thread:1", group, {"A": 1})], overhead_step=0.01))
    frame = engine.frame(2.0)
    assert frame.overhead == approx(0.04 / 2.0)  # cumulative sampler CPU 0.04 s over 2 s
    assert frame.groups == approx({"G1": 0.75, "G2": 0.25})
    assert frame.active_group == "G1"
    engine.add_slice(feed.slice("G2", [reading("thread:1", "G2", {"A": 1})], overhead_step=0.03))
    second = engine.frame(2.5)
    assert second.interval == approx(0.5)
    assert second.overhead == approx(0.03 / 0.5)
    assert second.groups == approx({"G2": 1.0})
    final = engine.final_frame(2.5)
    assert final.overhead == approx(0.07 / 2.5)
    assert final.groups == approx({"G1": 0.6, "G2": 0.4})


def test_final_frame_covers_the_whole_run() -> None:
    profile = make_profile({"G1": ["A"], "G2": ["B"]}, {"ab": "A / B"})
    engine = MetricsEngine(profile, recent_seconds=2.0)
    feed = Feed()
    for i in range(6):
        group, event = ("G1", "A") if i % 2 == 0 else ("G2", "B")
        engine.add_slice(feed.slice(group, [reading("thread:1", group, {event: 10 * (i + 1)})]))
        engine.frame(float(i + 1))
    final = engine.final_frame(6.0)
    # A: 10 + 30 + 50 = 90 in 3 of 6 s -> 180; B: 20 + 40 + 60 = 120 -> 240.
    assert final.final
    assert final.interval == 6.0
    assert final.total.counts == approx({"A": 180.0, "B": 240.0})
    assert final.total.seconds == 6.0
    assert final.total.metrics == approx({"ab": 0.75})
    assert final.threads["1"].counts == approx({"A": 180.0, "B": 240.0})
    assert final.run.total.counts == approx({"A": 180.0, "B": 240.0})
    assert final.run.seconds == 6.0
    assert final.recent.seconds == 2.0
    # Slices 5 and 6 only: A 50 in 1 of 2 s -> 100, B 60 -> 120.
    assert final.recent.total.counts == approx({"A": 100.0, "B": 120.0})


def test_unknown_unit_key_is_skipped_with_a_warning() -> None:
    profile = make_profile({"G": ["A"]})
    engine = MetricsEngine(profile)
    feed = Feed()
    engine.add_slice(feed.slice("G", [reading("gpu:0", "G", {"A": 1}), reading("thread:1", "G", {"A": 2})]))
    engine.add_slice(feed.slice("G", [reading("gpu:0", "G", {"A": 1})]))
    frame = engine.frame(2.0)
    assert frame.total.counts == {"A": 4.0}
    assert frame.warnings == ("ignored readings of unknown unit 'gpu:0'",)
    assert engine.frame(3.0).warnings == ()


def test_frame_json_round_trip() -> None:
    engine, frame = rotation_engine()
    engine.mark_baseline()
    engine.add_slice(Slice(7.0, 6, 1.0, "G1", (row("thread:1", 0, 0, "G1", NS, NS, {"A": 1}),)))
    second = engine.frame(7.0)
    for f in (frame, second, engine.final_frame(7.0)):
        data = f.to_json()
        text = json.dumps(data, allow_nan=False)
        back = json.loads(text)
        assert back["schema"] == "sectormon/frame/1"
        assert ScopeStats.from_json(back["total"]) == f.total
        assert {k: ScopeStats.from_json(v) for k, v in back["threads"].items()} == dict(f.threads)
        assert WindowStats.from_json(back["recent"]) == f.recent
        assert WindowStats.from_json(back["run"]) == f.run
    assert json.loads(json.dumps(second.to_json()))["baseline"]["total"]["ab"]["base"] == approx(0.5)


def test_every_frame_states_the_rotation_the_header_and_the_marks_give() -> None:
    """The engine starts with the header's rotation, a ``rotation`` mark replaces it, and each
    frame carries the one running at its end, values as written."""
    started = FrameRotation.from_json({"mode": "sync", "timeslice": 0.02, "reason": "asked for"})
    engine = MetricsEngine(make_profile({"G1": ["A"]}), rotation=started)
    feed = Feed()
    engine.add_slice(feed.slice("G1", [reading("thread:1", "G1", {"A": 10})]))
    first = engine.frame(feed.t)
    engine.add_mark(
        Mark(t=feed.t, kind="rotation", data={"mode": "kernel", "timeslice": 1, "reason": "auto"})
    )
    engine.add_slice(feed.slice("G1", [reading("thread:1", "G1", {"A": 10})]))
    second = engine.frame(feed.t)
    assert first.rotation == FrameRotation("sync", 0.02, "asked for")
    assert first.to_json()["rotation"] == {"mode": "sync", "timeslice": 0.02, "reason": "asked for"}
    assert second.rotation == FrameRotation("kernel", 1, "auto")
    assert json.dumps(second.to_json()["rotation"]) == '{"mode": "kernel", "timeslice": 1, "reason": "auto"}'


@pytest.mark.parametrize("data", [None, {}, [], "sync", 3])
def test_no_rotation_from_what_is_not_one(data: object) -> None:
    assert FrameRotation.from_json(data) is None
    engine = MetricsEngine(make_profile({"G1": ["A"]}), rotation=FrameRotation.from_json(data))
    assert "rotation" not in engine.frame(0.0).to_json()


def test_a_rotation_written_in_part_or_oddly_is_shown_as_written() -> None:
    odd = FrameRotation.from_json({"mode": ["x"]})
    assert odd == FrameRotation(["x"], None, None)
    assert odd is not None and odd.to_json() == {"mode": ["x"], "timeslice": None, "reason": None}
