"""Aggregation: the Caliper scale factor, shares, latency buckets, and the JSON/text forms."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.attribution.aggregate import HotspotAggregator
from sectormon.attribution.report import HotspotReport, Overhead, render_text
from sectormon.data.samples import AttributedSample, CodeLocation, DataLocation, LatencyBucket

BUCKETS = (LatencyBucket("L1 hit", 21), LatencyBucket("L2 hit", 148), LatencyBucket("memory"))
FUNCTIONS = [CodeLocation(f"f{i}", "prog", f"prog.c:{10 + i}" if i % 2 else None) for i in range(4)]
OBJECTS = [
    DataLocation("a", "symbol", "prog"),
    DataLocation("b", "symbol", "prog"),
    DataLocation("[heap]", "heap"),
]


def attributed(
    code: CodeLocation, data: DataLocation | None, period: int = 1, weight: int | None = None, addr: int = 0
) -> AttributedSample:
    return AttributedSample(0, 1, 0, period, weight, code, data, addr if data is not None else None)


SAMPLES = st.builds(
    attributed,
    st.sampled_from(FUNCTIONS),
    st.one_of(st.none(), st.sampled_from(OBJECTS)),
    st.integers(1, 10_000),
    st.one_of(st.none(), st.integers(1, 1000)),
    st.integers(0, 2**20),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(SAMPLES, min_size=1, max_size=60), st.integers(1, 10**9))
def test_estimates_add_up_to_the_counted_total(samples: list[AttributedSample], total: int) -> None:
    """scale = total / (sampled x period), estimate = scale x sampled x period per location, so each
    view's estimates sum to the total (objects: over the samples that have a data address)."""
    aggregator = HotspotAggregator(BUCKETS, lines=True)
    for s in samples:
        aggregator.add(s)
    table = aggregator.table(total=total)
    periods = sum(s.period for s in samples)
    assert table.sampled_events == periods and table.scale == pytest.approx(total / periods)
    assert sum(r.estimate or 0 for r in table.functions) == pytest.approx(total)
    assert sum(r.share for r in table.functions) == pytest.approx(1)
    with_address = sum(s.period for s in samples if s.data is not None)
    assert sum(r.estimate or 0 for r in table.objects) == pytest.approx(total * with_address / periods)
    assert sum(r.samples for r in table.lines) == table.with_address
    for row in table.functions:
        assert row.estimate == pytest.approx(table.scale * row.periods)
    weighted = sum(1 for s in samples if s.weight)
    if weighted:
        assert table.bucket_names == ("L1 hit", "L2 hit", "memory")
        assert sum(sum(r.buckets or ()) for r in table.functions) == weighted
        for row in table.objects:
            assert row.buckets is not None and sum(row.buckets) <= row.samples
    else:
        assert table.bucket_names == () and all(r.buckets is None for r in table.functions)


def test_the_caliper_example_with_a_period() -> None:
    """40 samples every 100 events, 5000 counted: scale 1.25; 30 samples at f0 estimate 3750."""
    aggregator = HotspotAggregator()
    for i in range(40):
        aggregator.add(attributed(FUNCTIONS[0 if i < 30 else 1], OBJECTS[0], period=100))
    table = aggregator.table(total=5000)
    assert table.scale == 1.25
    assert [(r.name, r.samples, r.estimate, r.share) for r in table.functions] == [
        ("f0", 30, 3750.0, 0.75),
        ("f1", 10, 1250.0, 0.25),
    ]


def test_without_a_counted_total_there_are_no_estimates() -> None:
    aggregator = HotspotAggregator()
    aggregator.add(attributed(FUNCTIONS[0], None))
    table = aggregator.table(total=None)
    assert table.scale is None and table.functions[0].estimate is None
    assert json.loads(json.dumps(table.to_json()))["functions"][0]["estimate"] is None


def test_bucket_bounds_are_inclusive_and_the_last_is_open() -> None:
    aggregator = HotspotAggregator(BUCKETS)
    assert [aggregator.bucket_of(w) for w in (1, 21, 22, 148, 149, 10**6)] == [0, 0, 1, 1, 2, 2]
    closed = HotspotAggregator((LatencyBucket("fast", 10),))
    assert closed.bucket_of(10) == 0 and closed.bucket_of(11) is None


def test_lines_group_addresses_by_cache_line_and_top_keeps_the_hottest() -> None:
    assert HotspotAggregator().table(total=None).lines == ()
    aggregator = HotspotAggregator(line_size=256, lines=True)
    for addr in (0x1000, 0x10FF, 0x1100, 0x1000):
        aggregator.add(attributed(FUNCTIONS[0], OBJECTS[0], addr=addr))
    table = aggregator.table(total=4, top=1)
    assert [(r.name, r.samples, r.detail) for r in table.lines] == [("0x1000", 3, "a")]
    assert table.counts["cache_lines"] == 2
    assert "cache_lines" in table.to_json(lines=True) and "cache_lines" not in table.to_json()
    with pytest.raises(ValueError, match="power of two"):
        HotspotAggregator(line_size=100)


def test_lost_samples_are_carried_and_the_scale_makes_up_for_them() -> None:
    aggregator = HotspotAggregator()
    for _ in range(75):
        aggregator.add(attributed(FUNCTIONS[0], None))
    aggregator.add_lost(25)
    table = aggregator.table(total=100)
    assert table.lost == 25 and table.scale == pytest.approx(100 / 75)
    assert table.functions[0].estimate == pytest.approx(100)


@given(SAMPLES)
def test_attributed_samples_round_trip_through_json(sample: AttributedSample) -> None:
    assert AttributedSample.from_json(json.loads(json.dumps(sample.to_json()))) == sample


def report(total: int | None, **kwargs: object) -> HotspotReport:
    aggregator = HotspotAggregator(BUCKETS, lines=True)
    aggregator.add(attributed(FUNCTIONS[1], OBJECTS[0], period=10, weight=30, addr=0x40))
    aggregator.add(attributed(FUNCTIONS[2], None, period=10))
    defaults: dict[str, object] = {
        "event": "L1D_CACHE_REFILL",
        "spec": "r3",
        "period": 10,
        "freq": 0,
        "table": aggregator.table(total=total),
        "overhead": Overhead(2.0, 0.01, 1.5),
        "target": {"mode": "command", "argv": ["./a.out"]},
    }
    defaults.update(kwargs)
    return HotspotReport(**defaults)  # type: ignore[arg-type]


def test_the_json_report_says_how_the_numbers_were_made() -> None:
    data = json.loads(json.dumps(report(40, lines=True).to_json()))
    assert data["schema"] == "sectormon/hotspots/1"
    assert (data["period"], data["freq_hz"], data["counted_total"], data["scale"]) == (10, None, 40, 2.0)
    assert data["samples"] == 2 and data["lost_samples"] == 0
    assert data["latency_buckets"] == ["L1 hit", "L2 hit", "memory"]
    buckets = [(f["name"], f["latency_buckets"]) for f in data["functions"]]
    assert buckets == [("f1", [0, 1, 0]), ("f2", [0, 0, 0])]
    assert data["objects"] == [
        {
            "name": "a",
            "module": "prog",
            "detail": "symbol",
            "samples": 1,
            "sampled_events": 10,
            "estimate": 20.0,
            "share": 0.5,
            "latency_buckets": [0, 1, 0],
        }
    ]
    assert data["overhead"]["sectormon_cpu_fraction"] == 0.005
    assert data["cache_line_bytes"] == 64 and data["cache_lines"][0]["name"] == "0x40"


def test_the_text_report_shows_na_without_a_total_and_the_buckets() -> None:
    text = render_text(report(None, warnings=("something to say",)))
    assert "counted total: n/a" in text
    assert "every 10 events" in text and "n/a" in text.split("Functions")[1]
    assert "L1 hit" in text and "warning: something to say" in text
    assert not math.isnan(report(40).overhead.fraction or 0)
    assert "scale = total / (sampled x period) = 40 / 20 = 2.000" in render_text(report(40))
