"""A real Prometheus ingests a scrape whose profile metrics are named like sectormon's own series.

A profile metric ``overhead`` (ratio) exported a second ``sectormon_overhead_ratio`` family: invalid
OpenMetrics, which a strict parser rejects whole ("Clashing name", prometheus_client's), and whose
series Prometheus 2.42 mixes with sectormon's own under one name. Such names are now refused;
names next to them (``ratio``, ``frames`` per second, ``info_rate``) are served, and Prometheus
takes every scrape, marked regions' series and label too.
"""

from __future__ import annotations

import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from sectormon.errors import UsageError
from sectormon.export.server import OpenMetricsExporter
from tests.e2e.test_prometheus import Prometheus, prometheus_binary
from tests.export.frames import METRICS, frame, header
from tests.export.test_regions import marked, solve

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NEAR_BUILTINS = [
    {"name": "ratio", "unit": "%"},
    {"name": "frames", "unit": "1/s"},
    {"name": "info_rate", "unit": ""},
    {"name": "overhead_share", "unit": "ratio"},
]


def _served(metrics: list[dict[str, Any]]) -> OpenMetricsExporter:
    exporter = OpenMetricsExporter(port=0)
    exporter.start(header(metrics=metrics))
    exporter.publish(frame(1.0))
    return exporter


def test_a_builtin_name_is_refused_before_serving() -> None:
    exporter = OpenMetricsExporter(port=0)
    served = header(metrics=[*METRICS, {"name": "overhead", "unit": "ratio"}])
    try:
        with pytest.raises(UsageError, match="exports as sectormon_overhead_ratio"):
            exporter.start(served)
    finally:
        exporter.close()


def test_prometheus_takes_every_scrape_of_names_next_to_the_builtin_ones(tmp_path: Path) -> None:
    binary = prometheus_binary()
    exporter = _served([*METRICS, *NEAR_BUILTINS])
    prometheus = None
    try:
        target = urllib.parse.urlsplit(exporter.url).netloc
        prometheus = Prometheus(binary, tmp_path, {"node1": target})
        deadline = time.monotonic() + 60
        while True:  # until Prometheus has scraped twice (up is 0 for a rejected scrape)
            up = prometheus.query("up", time.time())
            scrapes = prometheus.query("count_over_time(up[1m])", time.time())
            if scrapes and float(scrapes[0]["value"][1]) >= 2:
                break
            assert time.monotonic() < deadline, "Prometheus did not scrape twice in 60 s"
            time.sleep(0.5)
        assert [float(r["value"][1]) for r in up] == [1.0], up
        assert prometheus.query("min_over_time(up[1m])", time.time())[0]["value"][1] == "1"
        assert prometheus.query('sectormon_overhead_ratio{host="node1"}', time.time())
    finally:
        if prometheus is not None:
            prometheus.close()
        exporter.close()


def test_prometheus_takes_the_region_series_and_their_label(tmp_path: Path) -> None:
    """Region scopes add the ``region`` label to every series and two counter families."""
    binary = prometheus_binary()
    exporter = OpenMetricsExporter(port=0)
    exporter.start(header())
    exporter.publish(marked(1.0, {"solve#1": solve(3.0, 10.0)}))
    prometheus = None
    try:
        target = urllib.parse.urlsplit(exporter.url).netloc
        prometheus = Prometheus(binary, tmp_path, {"node1": target})

        def calls() -> list[dict[str, Any]]:
            return prometheus.query('sectormon_region_calls_total{region="solve#1"}', time.time())

        deadline = time.monotonic() + 60
        while not calls():  # until Prometheus has taken a scrape with the region
            assert time.monotonic() < deadline, "no region series in Prometheus after 60 s"
            time.sleep(0.5)
        assert [float(r["value"][1]) for r in prometheus.query("up", time.time())] == [1.0]
        assert float(calls()[0]["value"][1]) == 2.0
        ipc = prometheus.query(
            'sectormon_ipc_instructions_per_cycle{scope="total",region="solve#1"}', time.time()
        )
        assert [float(r["value"][1]) for r in ipc] == [3.0]
        whole = prometheus.query('sectormon_ipc_instructions_per_cycle{scope="total",region=""}', time.time())
        assert [float(r["value"][1]) for r in whole] == [2.0]
        seconds = prometheus.query('sectormon_region_seconds_total{region="solve#1"}', time.time())
        assert [float(r["value"][1]) for r in seconds] == [0.25]
    finally:
        if prometheus is not None:
            prometheus.close()
        exporter.close()
