"""Marked regions in a scrape: the same families with a ``region`` label, and the regions' calls and
time as counters; a session that marks nothing serves what it served before."""

from __future__ import annotations

import dataclasses

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from sectormon.data.frames import Frame, ProcessScope, RegionStats
from sectormon.export.collector import FrameCollector
from sectormon.export.exposition import Format
from tests.export.frames import frame, header, scope
from tests.export.test_collector import scrape, value
from tests.export.test_exposition import ACCEPTS, registered, served

IPC = "sectormon_ipc_instructions_per_cycle"


def solve(ipc: float, cycles: float, *, calls: int = 2) -> RegionStats:
    return RegionStats(
        name="solve",
        number=1,
        calls=calls,
        thread_count=2,
        open=False,
        seconds=0.25,
        total=scope(ipc, cycles),
        threads={"4242": scope(ipc, cycles)},
        cores={"24": scope(ipc, cycles)},
        cmgs={"1": scope(ipc, cycles)},
        procs={"300": scope(ipc, cycles)},
    )


def marked(t: float, regions: dict[str, RegionStats]) -> Frame:
    base = frame(t)
    return dataclasses.replace(base, regions=regions, processes={"300": ProcessScope(300, "app", 1, 3)})


def test_a_region_s_scopes_carry_its_label_beside_the_whole_run_s() -> None:
    collector = FrameCollector(header())
    collector.publish(marked(1.0, {"solve#1": solve(3.0, 10.0)}))
    samples = scrape(collector)
    assert value(samples, IPC, scope="total", region="solve#1") == 3.0
    assert value(samples, IPC, scope="total", region="") == 2.0  # the whole frame's, unlabelled
    assert value(samples, IPC, scope="cmg", cmg="1", region="solve#1") == 3.0
    assert value(samples, IPC, scope="core", cmg="1", core="24", region="solve#1") == 3.0
    assert value(samples, IPC, scope="proc", pid="300", comm="app", rank="3", region="solve#1") == 3.0
    assert value(samples, "sectormon_coverage_ratio", scope="total", region="solve#1", metric="IPC") == 0.5
    assert not [labels for (name, labels), _ in samples.items() if ("thread", "4242") in labels]
    assert value(samples, "sectormon_region_calls_total", region="solve#1") == 2.0
    assert value(samples, "sectormon_region_seconds_total", region="solve#1") == 0.25


def test_region_counters_sum_the_intervals_and_gauges_are_absent_when_the_region_did_not_run() -> None:
    collector = FrameCollector(header(), threads=True)
    collector.publish(marked(1.0, {"solve#1": solve(3.0, 10.0, calls=2)}))
    collector.publish(marked(2.0, {"solve#1": solve(4.0, 30.0, calls=1)}))
    collector.publish(marked(3.0, {}))  # the region did not run in this interval
    samples = scrape(collector)
    counted = value(samples, "sectormon_events_total", scope="total", region="solve#1", event="CPU_CYCLES")
    assert counted == 40.0
    assert value(samples, "sectormon_region_calls_total", region="solve#1") == 3.0
    assert value(samples, "sectormon_region_seconds_total", region="solve#1") == 0.5
    assert (
        value(
            samples,
            "sectormon_events_total",
            scope="thread",
            thread="4242",
            region="solve#1",
            event="CPU_CYCLES",
        )
        == 40.0
    )
    assert not [
        labels for (name, labels), _ in samples.items() if name == IPC and ("region", "solve#1") in labels
    ]
    # a replay sought back: the region's counters start again with the others
    collector.publish(marked(0.5, {"solve#1": solve(3.0, 5.0, calls=1)}))
    again = scrape(collector)
    assert value(again, "sectormon_region_calls_total", region="solve#1") == 1.0
    assert value(again, "sectormon_events_total", scope="total", region="solve#1", event="CPU_CYCLES") == 5.0


def test_without_regions_no_series_has_the_region_label() -> None:
    collector = FrameCollector(header())
    collector.publish(frame(1.0))
    samples = scrape(collector)
    assert not any("region" in dict(labels) for _, labels in samples)
    assert not any(name.startswith("sectormon_region_") for name, _ in samples)


@pytest.mark.parametrize("accept", ACCEPTS)
def test_the_endpoint_s_own_writer_serves_prometheus_client_s_bytes_with_regions(accept: str) -> None:
    collector = FrameCollector(header())
    registry = registered(collector)
    for t, regions in ((1.0, {"solve#1": solve(3.0, 10.0)}), (2.0, {})):
        collector.publish(marked(t, regions))
        ours, reference = served(collector, registry, accept)
        assert ours == reference
    families = {
        f.name for f in text_string_to_metric_families(collector.scrape().body(Format.OPENMETRICS).decode())
    }
    assert {"sectormon_region_calls", "sectormon_region_seconds"} <= families
