"""Hot spots per frame window: what a window holds, the whole run, totals, and the header record."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.attribution.window import HotspotWindows
from sectormon.data.hotspots import HotspotSettings
from sectormon.data.samples import AttributedSample, CodeLocation, DataLocation, LatencyBucket, SampleBatch

BUCKETS = (LatencyBucket("L1 hit", 21), LatencyBucket("L2 hit", 148), LatencyBucket("memory"))
SETTINGS = HotspotSettings("L1D_CACHE_REFILL", "sim:0x0003", "sim", period=10, buckets=BUCKETS)
LOOP = CodeLocation("s += a[i]", "k", "k:1")
OTHER_LOOP = CodeLocation("s += b[i]", "k", "k:2")
A = DataLocation("a", "symbol", "k")
B = DataLocation("b", "symbol", "k")


def sample(
    code: CodeLocation = LOOP, data: DataLocation | None = A, weight: int | None = 37
) -> AttributedSample:
    return AttributedSample(0, 1, 0, 10, weight, code, data, 0x1000)


def test_a_window_holds_its_own_samples_and_the_run_all_of_them() -> None:
    windows = HotspotWindows(SETTINGS)
    windows.add(SampleBatch(1.0, (sample(), sample()), lost=1, counted=30))
    first = windows.cut()
    windows.add(SampleBatch(2.0, (sample(OTHER_LOOP, B),), counted=10))
    second = windows.cut()
    assert (first.interval.samples, first.interval.lost, first.interval.total) == (2, 1, 30)
    assert first.interval.scale == pytest.approx(30 / 20)
    assert (second.interval.samples, second.interval.lost, second.interval.total) == (1, 0, 10)
    assert [r.name for r in second.interval.functions] == ["s += b[i]"]
    assert (second.run.samples, second.run.lost, second.run.total) == (3, 1, 40)
    assert {r.name: r.samples for r in second.run.objects} == {"a": 2, "b": 1}


def test_the_final_window_is_the_whole_run() -> None:
    windows = HotspotWindows(SETTINGS)
    windows.add(SampleBatch(1.0, (sample(),), counted=10))
    windows.cut()
    windows.add(SampleBatch(2.0, (sample(),), counted=10))
    final = windows.cut(final=True)
    assert final.interval is final.run
    assert final.run.samples == 2


def test_an_unread_count_leaves_the_window_and_the_run_without_estimates() -> None:
    windows = HotspotWindows(SETTINGS)
    windows.add(SampleBatch(1.0, (sample(),), counted=None))
    first = windows.cut()
    windows.add(SampleBatch(2.0, (sample(),), counted=10))
    second = windows.cut()
    assert first.interval.total is None and first.interval.scale is None
    assert all(r.estimate is None for r in first.interval.functions)
    assert second.interval.total == 10  # the next window was counted
    assert second.run.total is None  # the run misses a window's count


def test_json_keeps_the_top_rows_and_says_how_many_there_were() -> None:
    settings = HotspotSettings("E", "e", "perf", period=1, top=1)
    windows = HotspotWindows(settings)
    windows.add(SampleBatch(1.0, (sample(), sample(OTHER_LOOP, B), sample()), counted=3))
    data = windows.cut().to_json()
    assert data["period"] == 1 and data["freq_hz"] is None
    assert [r["name"] for r in data["interval"]["functions"]] == ["s += a[i]"]
    assert data["interval"]["locations"]["functions"] == 2


@given(st.lists(st.tuples(st.sampled_from([LOOP, OTHER_LOOP]), st.one_of(st.none(), st.integers(1, 400)))))
def test_buckets_add_up_to_the_samples_with_a_latency(entries: list[tuple[CodeLocation, int | None]]) -> None:
    windows = HotspotWindows(SETTINGS)
    windows.add(SampleBatch(1.0, tuple(sample(code, A, weight) for code, weight in entries), counted=0))
    table = windows.cut().interval
    with_latency = sum(1 for _, weight in entries if weight is not None)
    assert table.with_weight == with_latency
    for row in table.functions:
        if row.buckets is not None:
            assert sum(row.buckets) <= row.samples
    assert sum(sum(r.buckets or ()) for r in table.functions) == with_latency


settings_strategy = st.builds(
    HotspotSettings,
    event=st.text(max_size=12),
    spec=st.text(max_size=12),
    source=st.sampled_from(["perf", "sim"]),
    period=st.integers(1, 10**6),
    top=st.integers(1, 100),
    buckets=st.lists(
        st.builds(LatencyBucket, st.text(max_size=8), st.one_of(st.none(), st.floats(0, 1e6))), max_size=4
    ).map(tuple),
    carries=st.text(max_size=20),
)


@given(settings_strategy)
def test_settings_round_trip_through_json(settings: HotspotSettings) -> None:
    assert HotspotSettings.from_json(settings.to_json()) == settings


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"event": "x"}, "'event' must be an object"),
        ({"period": None}, "exactly one of 'period' and 'freq_hz'"),
        ({"freq_hz": 99}, "exactly one of 'period' and 'freq_hz'"),
        ({"period": -1}, "'period' must be a whole number"),
        ({"top": 0}, "'top' must be a whole number >= 1"),
        ({"latency_buckets": [{"name": "x", "max_cycles": "10"}]}, "'latency_buckets'[0]"),
        ({"source": 3}, "'source' and 'carries' must be strings"),
    ],
)
def test_broken_settings_say_which_field(change: dict[str, object], message: str) -> None:
    data = {**SETTINGS.to_json(), **change}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        HotspotSettings.from_json(data)
