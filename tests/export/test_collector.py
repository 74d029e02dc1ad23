"""The collector: what a scrape shows of the newest frame, and what it leaves out."""

from __future__ import annotations

import threading
import time

from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from sectormon.export.collector import FOLD_BACKLOG, FrameCollector, sector_state
from tests.export.frames import frame, header


def scrape(collector: FrameCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of one scrape, parsed back from the OpenMetrics text (name, labels) -> value."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def names(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> set[str]:
    return {n for n, _ in samples}


def test_before_the_first_frame_a_scrape_says_what_is_known() -> None:
    samples = scrape(FrameCollector(header()))
    assert names(samples) == {"sectormon_info", "sectormon_frames_total"}
    assert value(samples, "sectormon_info", host="node1", profile="a64fx", source="perf", sector="on") == 1
    assert value(samples, "sectormon_frames_total") == 0


def test_metrics_are_the_last_interval_with_units_and_scope_labels() -> None:
    collector = FrameCollector(header())
    collector.publish(frame(1.0))
    collector.publish(frame(2.0, cycles=300.0))
    samples = scrape(collector)
    assert value(samples, "sectormon_frame_time_seconds") == 2.0
    assert value(samples, "sectormon_ipc_instructions_per_cycle", scope="total", cmg="", core="") == 2.0
    assert value(samples, "sectormon_ipc_instructions_per_cycle", scope="cmg", cmg="1") == 2.5
    # a core is labelled with its CMG (from the header's topology)
    assert value(samples, "sectormon_ipc_instructions_per_cycle", scope="core", core="24", cmg="1") == 2.5
    # nJ/inst in the profile, joules per instruction here
    assert value(samples, "sectormon_energy_per_inst_joules_per_instruction", scope="total") == 0.5e-9
    assert value(samples, "sectormon_coverage_ratio", scope="total", metric="IPC") == 0.5
    assert value(samples, "sectormon_overhead_ratio") == 0.01
    assert value(samples, "sectormon_active_group", sectormon_active_group="SC2") == 1
    assert value(samples, "sectormon_active_group", sectormon_active_group="SC1") == 0
    assert value(samples, "sectormon_group_coverage_ratio", group="SC1") == 0.5
    assert value(samples, "sectormon_frames_total") == 2


def test_na_metrics_are_absent_never_zero() -> None:
    collector = FrameCollector(header())
    collector.publish(frame(1.0))
    samples = scrape(collector)
    assert "sectormon_power_total_watts" not in names(samples)  # n/a everywhere
    energy = [ls for (n, ls), _ in samples.items() if n == "sectormon_energy_per_inst_joules_per_instruction"]
    assert {dict(ls)["scope"] for ls in energy} == {"total", "cmg"}  # n/a on the cores
    coverage = [dict(ls) for (n, ls), _ in samples.items() if n == "sectormon_coverage_ratio"]
    assert not [c for c in coverage if c["metric"] == "power_total_W"]


def test_counters_sum_the_intervals_and_start_again_after_a_seek_back() -> None:
    collector = FrameCollector(header())
    collector.publish(frame(1.0, cycles=100.0))
    collector.publish(frame(2.0, cycles=300.0))
    assert value(scrape(collector), "sectormon_events_total", scope="cmg", cmg="0", event="CPU_CYCLES") == 400
    collector.publish(frame(3.0, cycles=50.0))
    samples = scrape(collector)
    assert value(samples, "sectormon_events_total", scope="total", event="CPU_CYCLES") == 2 * 450
    collector.publish(frame(1.0, cycles=10.0))  # a replay sought back
    assert value(scrape(collector), "sectormon_events_total", scope="total", event="CPU_CYCLES") == 20


def test_a_final_frame_is_not_rendered() -> None:
    collector = FrameCollector(header())
    collector.publish(frame(1.0))
    collector.publish(frame(1.5, cycles=1e9, final=True))
    samples = scrape(collector)
    assert value(samples, "sectormon_frame_time_seconds") == 1.0
    assert value(samples, "sectormon_events_total", scope="total", event="CPU_CYCLES") == 200


def test_threads_only_when_asked() -> None:
    without = FrameCollector(header())
    without.publish(frame(1.0))
    assert not [ls for (_, ls) in scrape(without) if ("scope", "thread") in ls]
    with_threads = FrameCollector(header(), threads=True)
    with_threads.publish(frame(1.0))
    samples = scrape(with_threads)
    assert value(samples, "sectormon_ipc_instructions_per_cycle", scope="thread", thread="4242") == 1.5


def test_source_label_can_say_replay() -> None:
    collector = FrameCollector(header(), source="replay")
    assert value(scrape(collector), "sectormon_info", source="replay") == 1


def test_sector_state_from_the_header() -> None:
    assert sector_state({"FLIB_SCCR_CNTL": "TRUE"}) == "on"
    assert sector_state({"FLIB_SCCR_CNTL": "false"}) == "off"
    assert sector_state({"enabled": True}) == "on"
    assert sector_state({"enabled": False}) == "off"
    assert sector_state({}) == "unknown"


def test_publish_never_waits_for_a_scrape() -> None:
    """A scrape holding the collector (its fold lock) does not hold up the session's thread."""
    collector = FrameCollector(header())
    frames = [frame(float(t)) for t in range(1, 4 * FOLD_BACKLOG)]
    done = threading.Event()
    with collector._fold_lock:  # what a scrape holds while it renders

        def publish_all() -> None:
            for f in frames:
                collector.publish(f)
            done.set()

        threading.Thread(target=publish_all).start()
        assert done.wait(5.0)
    started = time.monotonic()
    samples = scrape(collector)
    assert time.monotonic() - started < 5.0
    assert value(samples, "sectormon_frames_total") == len(frames)
    assert value(samples, "sectormon_events_total", scope="total", event="CPU_CYCLES") == 200 * len(frames)


def test_an_unscraped_endpoint_does_not_keep_frames() -> None:
    collector = FrameCollector(header())
    for t in range(1, 10 * FOLD_BACKLOG):
        collector.publish(frame(float(t)))
    assert len(collector._queue) <= FOLD_BACKLOG
