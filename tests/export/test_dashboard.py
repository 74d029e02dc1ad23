"""The Grafana dashboard asks only for series the exporter makes (the real queries run against a
live Prometheus in tests/e2e/test_prometheus.py)."""

from __future__ import annotations

import json
import re

from sectormon.export.names import exported_metrics
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.resolve import load_profile
from tests.export.dashboard import DASHBOARD, dashboard_queries

FIXED = {
    "sectormon_info",
    "sectormon_frames_total",
    "sectormon_frame_time_seconds",
    "sectormon_frame_interval_seconds",
    "sectormon_overhead_ratio",
    "sectormon_active_group",
    "sectormon_group_coverage_ratio",
    "sectormon_coverage_ratio",
    "sectormon_events_total",
}


def test_dashboard_series_are_exported() -> None:
    names = {e.name for e in exported_metrics(profile_to_dict(load_profile("a64fx"))["metrics"])} | FIXED
    used = {name for query in dashboard_queries() for name in re.findall(r"sectormon_[a-z0-9_]+", query)}
    assert used
    assert used <= names, used - names


def test_dashboard_has_job_and_host_selectors_and_per_cmg_panels() -> None:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert {v["name"] for v in data["templating"]["list"]} >= {"job", "host", "cmg"}
    per_cmg = [t["expr"] for p in data["panels"] for t in p.get("targets", []) if 'scope="cmg"' in t["expr"]]
    for metric in (
        "l1d_miss_rate",
        "l2d_miss_rate",
        "demand_refill",
        "stall_rate",
        "sce_usage",
        "non_sec0",
        "energy_per_inst",
        "power_total",
    ):
        assert any(metric in expr for expr in per_cmg), metric
