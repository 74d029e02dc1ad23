"""Rolling windows, baseline deltas, and properties of the engine under random feeds."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.data.frames import MetricDelta
from sectormon.data.readings import Mark, Slice
from sectormon.metrics.baseline import metric_delta
from sectormon.metrics.engine import MetricsEngine
from sectormon.profiles.model import Profile
from tests.metrics.metrics_support import NS, Feed, make_profile, reading, running_fraction
from tests.rows import readings_of, row

approx = pytest.approx


def counting_engine(recent: float) -> tuple[MetricsEngine, Feed]:
    return MetricsEngine(make_profile({"G": ["A"]}, {"a_rate": "A / SECONDS"}), recent_seconds=recent), Feed()


def test_recent_window_drops_old_intervals() -> None:
    engine, feed = counting_engine(recent=3.0)
    frames = []
    for i in range(1, 8):
        engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 10 * i})]))
        frames.append(engine.frame(float(i)))
    f5 = frames[4]
    # Intervals starting at or after 5 - 3 = 2: (2,3], (3,4], (4,5] -> 30 + 40 + 50.
    assert f5.recent.seconds == 3.0
    assert f5.recent.total.counts == approx({"A": 120.0})
    assert f5.recent.total.metrics == approx({"a_rate": 40.0})
    assert f5.run.total.counts == approx({"A": 150.0})
    assert f5.run.seconds == 5.0
    assert frames[1].recent.seconds == 2.0  # young run: the window is what exists
    assert frames[1].recent.total.counts == approx({"A": 30.0})
    assert frames[6].recent.total.counts == approx({"A": 50.0 + 60.0 + 70.0})


def test_recent_window_is_made_of_whole_intervals() -> None:
    engine, feed = counting_engine(recent=3.0)
    for i in range(1, 7):
        engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 10})]))
        if i % 2 == 0:
            frame = engine.frame(float(i))
    # Intervals (0,2], (2,4], (4,6]: the middles of (2,4] and (4,6] lie within the last 3 s, so
    # the window is 4 s (2 s and 4 s are equally near 3 s: the longer is taken).
    assert frame.recent.seconds == 4.0
    assert frame.recent.total.counts == approx({"A": 40.0})


def test_late_frames_keep_the_recent_window_full() -> None:
    """Live frames come a little after their time (each waits for the slice that ends after it):
    the 10 s window still holds 10 one-second intervals, not 9 (it showed 9.03 s)."""
    engine, feed = counting_engine(recent=10.0)
    t = 0.0
    for i in range(1, 31):
        t = i * 1.003
        engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 1})], duration=1.003))
        frame = engine.frame(t)
        assert frame.recent.seconds == approx(min(i, 10) * 1.003)
        assert frame.recent.total.counts == approx({"A": float(min(i, 10))})
    # Frames 1.5 intervals apart: 6 of them (9 s) or 7 (10.5 s) in 10 s; 7 is nearer.
    engine, feed = counting_engine(recent=10.0)
    for i in range(1, 21):
        engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 1})], duration=1.5))
        frame = engine.frame(i * 1.5)
    assert frame.recent.seconds == approx(10.5)


def test_recent_deque_stays_bounded() -> None:
    engine, feed = counting_engine(recent=2.0)
    for i in range(1, 501):
        engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 1})], duration=0.1))
        engine.frame(i * 0.1)
    assert len(engine._recent) <= 21  # 2 s of 0.1 s intervals (+1 at the edge)
    engine2, feed2 = counting_engine(recent=1e9)
    for i in range(1, 601):
        engine2.add_slice(feed2.slice("G", [reading("thread:1", "G", {"A": 1})]))
        frame = engine2.frame(float(i))
    assert len(engine2._recent) <= engine2._recent.max_intervals
    assert frame.recent.total.counts == approx({"A": 600.0})  # merging keeps the totals


def test_long_interval_alone_fills_the_recent_window() -> None:
    engine, feed = counting_engine(recent=1.0)
    for _ in range(5):
        engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"A": 1})]))
    frame = engine.frame(5.0)
    assert frame.recent.seconds == 5.0
    assert frame.recent.total.counts == approx({"A": 5.0})


# ----------------------------------------------------------------------------- baseline


@pytest.mark.parametrize(
    ("base", "now", "better", "expected"),
    [
        # lower is better: improvement = base - now (the document's ΔL1D_miss_rate = off - on)
        (0.10, 0.02, "lower", MetricDelta(0.10, 0.02, -0.08, 0.08, 0.8)),
        (0.10, 0.15, "lower", MetricDelta(0.10, 0.15, 0.05, -0.05, -0.5)),
        # higher is better: improvement = now - base (ΔIPC = on - off; IPC_improvement % = relative * 100)
        (0.5, 0.75, "higher", MetricDelta(0.5, 0.75, 0.25, 0.25, 0.5)),
        (-2.0, -1.0, "higher", MetricDelta(-2.0, -1.0, 1.0, 1.0, 0.5)),  # relative over |base|
        (0.5, 0.75, "none", MetricDelta(0.5, 0.75, 0.25, None, None)),
        (0.0, 0.5, "higher", MetricDelta(0.0, 0.5, 0.5, 0.5, None)),  # no relative change from 0
        (None, 0.5, "higher", MetricDelta(None, 0.5, None, None, None)),
        (0.5, None, "lower", MetricDelta(0.5, None, None, None, None)),
    ],
)
def test_metric_delta_sign_conventions(
    base: float | None, now: float | None, better: str, expected: MetricDelta
) -> None:
    got = metric_delta(base, now, better)
    for field in ("base", "now", "delta", "improvement", "relative"):
        want = getattr(expected, field)
        assert getattr(got, field) == (None if want is None else approx(want)), field


def phase_profile() -> Profile:
    return make_profile(
        {"G": ["INST", "CYC", "MISS"]},
        {"ipc": ("INST / CYC", "higher"), "miss_rate": ("MISS / INST", "lower"), "cyc": ("CYC", "none")},
    )


def phase(engine: MetricsEngine, feed: Feed, inst: int, cyc: int, miss: int, frames: int) -> None:
    for _ in range(frames):
        counts = {"INST": inst, "CYC": cyc, "MISS": miss}
        engine.add_slice(feed.slice("G", [reading("thread:1", "G", counts, core=3, cmg=0)]))
        engine.frame(feed.t)


def test_baseline_deltas_follow_the_pmu_document() -> None:
    engine = MetricsEngine(phase_profile(), recent_seconds=2.0)
    feed = Feed()
    phase(engine, feed, inst=100, cyc=200, miss=10, frames=2)  # "off": IPC 0.5, miss 0.1
    engine.add_mark(Mark(2.0, "baseline"))
    phase(engine, feed, inst=150, cyc=200, miss=3, frames=1)
    engine.add_slice(
        feed.slice("G", [reading("thread:1", "G", {"INST": 150, "CYC": 200, "MISS": 3}, core=3)])
    )
    frame = engine.frame(4.0)  # recent = (2, 4]: "on": IPC 0.75, miss 0.02
    assert frame.baseline is not None
    assert (frame.baseline.t_from, frame.baseline.t_to) == (0.0, 2.0)
    ipc = frame.baseline.total["ipc"]
    assert (ipc.base, ipc.now) == (approx(0.5), approx(0.75))
    assert ipc.improvement == approx(0.25)  # ΔIPC = IPC_on - IPC_off
    assert ipc.relative is not None
    assert ipc.relative * 100 == approx(50.0)  # IPC_improvement [%]
    miss = frame.baseline.total["miss_rate"]
    assert miss.delta == approx(-0.08)
    assert miss.improvement == approx(0.08)  # Δmiss_rate = off - on
    assert frame.baseline.total["cyc"].improvement is None
    assert frame.baseline.cores["3"]["ipc"].improvement == approx(0.25)
    assert frame.baseline.cmgs["0"]["miss_rate"].improvement == approx(0.08)

    engine.add_mark(Mark(4.0, "bookmark", "ignored by the engine"))
    assert engine.frame(4.0).baseline is not None
    engine.add_mark(Mark(4.0, "baseline-clear"))
    assert engine.frame(4.0).baseline is None


def test_baseline_includes_the_open_interval() -> None:
    engine = MetricsEngine(phase_profile(), recent_seconds=10.0)
    feed = Feed()
    phase(engine, feed, inst=100, cyc=200, miss=10, frames=1)
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"INST": 300, "CYC": 200, "MISS": 0})]))
    engine.mark_baseline()  # recent up to t=2 including the unframed slice: IPC 400/400
    frame = engine.frame(2.0)
    assert frame.baseline is not None
    assert frame.baseline.t_to == 2.0
    assert frame.baseline.total["ipc"].base == approx(1.0)
    assert frame.baseline.total["ipc"].now == approx(1.0)


def test_baseline_before_any_data_is_taken_at_the_next_frame() -> None:
    engine = MetricsEngine(phase_profile(), recent_seconds=10.0)
    feed = Feed()
    engine.mark_baseline()
    assert engine.baseline_set
    phase(engine, feed, inst=100, cyc=200, miss=10, frames=1)
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", {"INST": 300, "CYC": 200, "MISS": 0})]))
    frame = engine.frame(2.0)
    assert frame.baseline is not None
    assert frame.baseline.total["ipc"].base == approx(0.5)  # taken at the first frame
    assert frame.baseline.total["ipc"].now == approx(1.0)


def test_baseline_only_for_scopes_present_in_both() -> None:
    engine = MetricsEngine(phase_profile(), recent_seconds=1.0)
    feed = Feed()
    counts = {"INST": 100, "CYC": 200, "MISS": 10}
    engine.add_slice(feed.slice("G", [reading("thread:1", "G", counts, core=3)], ended=["thread:1"]))
    engine.frame(1.0)
    engine.mark_baseline()
    engine.add_slice(
        feed.slice("G", [reading("thread:2", "G", {"INST": 100, "CYC": 100, "MISS": 1}, core=5)])
    )
    frame = engine.frame(2.0)
    assert frame.baseline is not None
    assert set(frame.baseline.cores) == set()  # core 3 (base) vs core 5 (now)
    assert frame.baseline.total["ipc"].improvement == approx(0.5)


# ----------------------------------------------------------------------------- properties

readings_st = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=3),  # which thread
        st.integers(min_value=0, max_value=10**6),  # count of A
        st.sampled_from([(NS, NS), (NS, NS // 2), (NS, NS // 3), (0, 0), (NS // 2, NS // 2)]),
    ),
    min_size=0,
    max_size=4,
    unique_by=lambda r: r[0],
)
feeds = st.lists(
    st.tuples(st.sampled_from([0.25, 0.5, 1.0]), readings_st, st.booleans()),
    min_size=1,
    max_size=20,
)


Feed_ = list[tuple[float, list[tuple[int, int, tuple[int, int]]], bool]]


def build_slices(feed: Feed_) -> list[Slice]:
    out = []
    t = 0.0
    for i, (dur, rs, _) in enumerate(feed):
        t += dur
        readings = tuple(row(f"thread:{tid}", tid, 0, "G", te, tr, {"A": a}) for tid, a, (te, tr) in rs)
        out.append(Slice(t, i, dur, "G", readings))
    return out


def expected_totals(slices: list[Slice]) -> dict[str, float]:
    """Per unit, directly from the rules: sum(raw) * present / counted, where counted is the own
    time the event ran (sum of time_running) times known / active (the wall seconds the unit was
    read in per second of its own time), or the seconds read when the unit never ran."""
    raw: dict[str, float] = defaultdict(float)
    read: dict[str, float] = defaultdict(float)
    active: dict[str, float] = defaultdict(float)
    ran: dict[str, float] = defaultdict(float)
    first: dict[str, float] = {}
    elapsed = 0.0
    for s in slices:
        for r in readings_of(s):
            first.setdefault(r.unit, elapsed)
            raw[r.unit] += r.counts["A"]
            read[r.unit] += s.duration
            active[r.unit] += r.time_enabled / NS
            ran[r.unit] += r.time_enabled / NS * running_fraction(r.time_enabled, r.time_running)
        elapsed += s.duration
    out = {}
    for unit in first:
        counted = ran[unit] * read[unit] / active[unit] if active[unit] > 0 else read[unit]
        if counted > 0:
            out[unit.split(":")[1]] = raw[unit] * (elapsed - first[unit]) / counted
    return out


@settings(max_examples=120, deadline=None)
@given(feed=feeds)
def test_run_totals_do_not_depend_on_frame_cadence(feed: Feed_) -> None:
    profile = make_profile({"G": ["A"]}, {"a": "A / SECONDS"})
    slices = build_slices(feed)
    expected = expected_totals(slices)

    framed = MetricsEngine(profile)
    once = MetricsEngine(profile)
    for s, (_, _, frame_here) in zip(slices, feed, strict=True):
        framed.add_slice(s)
        once.add_slice(s)
        if frame_here:
            framed.frame(s.t)
    t = slices[-1].t
    a = framed.final_frame(t)
    b = once.final_frame(t)
    for final in (a, b):
        assert {k: v.counts.get("A") for k, v in final.threads.items() if "A" in v.counts} == approx(expected)
        total = sum(expected.values())
        if expected:
            assert final.total.counts["A"] == approx(total)
            assert final.run.total.counts["A"] == approx(total)
            assert 0.0 <= final.total.coverage["A"] <= 1.0
        else:
            assert "A" not in final.total.counts
    assert a.total.counts == approx(b.total.counts)
    assert a.total.coverage == approx(b.total.coverage)


@settings(max_examples=60, deadline=None)
@given(feed=feeds)
def test_recent_window_covering_the_run_equals_the_run(feed: Feed_) -> None:
    profile = make_profile({"G": ["A"]}, {"a": "A / SECONDS"})
    engine = MetricsEngine(profile, recent_seconds=1e6)
    slices = build_slices(feed)
    for s, (_, _, frame_here) in zip(slices, feed, strict=True):
        engine.add_slice(s)
        if frame_here:
            engine.frame(s.t)
    frame = engine.frame(slices[-1].t)
    assert frame.recent.seconds == frame.run.seconds
    assert frame.recent.total.counts == approx(frame.run.total.counts)
    assert frame.recent.total.coverage == approx(frame.run.total.coverage)
    assert frame.recent.cores.keys() == frame.run.cores.keys()


def test_event_leaving_the_recent_window_is_absent_not_zero() -> None:
    profile = make_profile({"G1": ["A", "B"], "G2": ["A"]}, {"b": "B"})
    engine = MetricsEngine(profile, recent_seconds=0.3)
    feed = Feed(duration=0.1)
    # B is counted once, a third of a 0.1 s slice (awkward floats), then never again.
    engine.add_slice(feed.slice("G1", [reading("thread:1", "G1", {"A": 1, "B": 7}, tr=NS // 3)]))
    engine.frame(feed.t)
    for _ in range(6):
        engine.add_slice(feed.slice("G2", [reading("thread:1", "G2", {"A": 1})]))
        frame = engine.frame(feed.t)
    assert "B" not in frame.recent.total.counts
    assert "B" not in frame.recent.total.coverage
    assert frame.recent.total.metrics == {"b": None}
    assert frame.recent.total.coverage["b"] == 0.0
    assert frame.run.total.counts["B"] > 0  # still in the run


def test_recent_sums_match_a_rebuild_from_the_intervals() -> None:
    engine, feed = counting_engine(recent=0.35)
    engine._recent.rebuild_every = 5
    other, feed2 = counting_engine(recent=0.35)
    other._recent.rebuild_every = 10**9
    for i in range(1, 40):
        r = [reading("thread:1", "G", {"A": i}, tr=NS // (1 + i % 3))]
        engine.add_slice(feed.slice("G", r, duration=0.1))
        other.add_slice(feed2.slice("G", r, duration=0.1))
        a = engine.frame(feed.t)
        b = other.frame(feed2.t)
        assert a.recent.total.counts == approx(b.recent.total.counts)
        assert a.recent.total.coverage == approx(b.recent.total.coverage)
        assert a.recent.seconds == approx(b.recent.seconds)
