"""--proxy in a scrape: every proxied metric and event of a scope is flagged by a
``sectormon_proxy_estimate`` series a Prometheus user can filter on; a session without a proxy
serves no such family."""

from __future__ import annotations

import dataclasses
import math

from sectormon.data.frames import Frame, ScopeStats
from sectormon.data.header import Header
from sectormon.export.collector import FrameCollector
from sectormon.io.header_codec import header_from_json, header_to_json
from tests.export.frames import frame, header
from tests.export.test_collector import names, scrape, value

PROXIED = frozenset({"CPU_CYCLES", "INST_RETIRED", "IPC"})


BOUNDS = {"CPU_CYCLES": 0.04, "INST_RETIRED": None, "IPC": None}
"""Each estimate's error bound (relative 95 % half-width; ``None``: unknown)."""


def _proxied(stats: ScopeStats) -> ScopeStats:
    return ScopeStats(
        counts=stats.counts,
        rates={},
        metrics=stats.metrics,
        coverage=stats.coverage,
        proxy=PROXIED,
        proxy_error=BOUNDS,
    )


def _proxy_frame(t: float) -> Frame:
    """The CMG and total scopes are estimates (as --proxy makes them); the cores were counted."""
    plain = frame(t)
    return dataclasses.replace(
        plain, total=_proxied(plain.total), cmgs={c: _proxied(s) for c, s in plain.cmgs.items()}
    )


def _proxy_header() -> Header:
    proxy = {"per_cmg": 1, "reference": "task-time", "events": ["CPU_CYCLES"]}
    return header_from_json({**header_to_json(header()), "proxy": proxy})


def test_proxied_metrics_and_events_are_flagged_per_scope() -> None:
    collector = FrameCollector(_proxy_header())
    collector.publish(_proxy_frame(1.0))
    samples = scrape(collector)
    flagged = {
        (dict(labels)["scope"], dict(labels)["cmg"], dict(labels)["metric"], dict(labels)["event"])
        for name, labels in samples
        if name == "sectormon_proxy_estimate"
    }
    assert flagged == {
        (scope, cmg, metric, event)
        for scope, cmg in (("total", ""), ("cmg", "0"), ("cmg", "1"))
        for metric, event in (("IPC", ""), ("", "CPU_CYCLES"), ("", "INST_RETIRED"))
    }
    assert value(samples, "sectormon_proxy_estimate", scope="cmg", cmg="1", metric="IPC") == 1.0
    # the flagged gauge itself keeps its series (its labels do not change with the flag)
    assert value(samples, "sectormon_ipc_instructions_per_cycle", scope="cmg", cmg="1") == 2.5


def test_a_scope_whose_figures_turn_counted_loses_its_flags_not_its_series() -> None:
    collector = FrameCollector(_proxy_header())
    collector.publish(_proxy_frame(1.0))
    first = scrape(collector)
    collector.publish(frame(2.0))  # nothing estimated in this interval
    second = scrape(collector)
    assert "sectormon_proxy_estimate" in names(first) and "sectormon_proxy_estimate" not in names(second)
    gauges = {key for key in first if key[0] == "sectormon_ipc_instructions_per_cycle"}
    assert gauges == {key for key in second if key[0] == "sectormon_ipc_instructions_per_cycle"}


def test_a_session_without_proxy_serves_no_proxy_family() -> None:
    collector = FrameCollector(header())
    collector.publish(_proxy_frame(1.0))  # flags without a proxy setting in the header are not served
    assert not any(name.startswith("sectormon_proxy") for name in names(scrape(collector)))


def test_each_estimate_carries_its_error_bound_nan_where_unknown() -> None:
    """``sectormon_proxy_error_ratio`` beside each flag, with the same labels: the relative
    half-width of the estimate's 95 % interval, NaN where it is unknown (never 0)."""
    collector = FrameCollector(_proxy_header())
    collector.publish(_proxy_frame(1.0))
    samples = scrape(collector)
    flags = {labels for name, labels in samples if name == "sectormon_proxy_estimate"}
    assert flags == {labels for name, labels in samples if name == "sectormon_proxy_error_ratio"}
    ratio = "sectormon_proxy_error_ratio"
    assert value(samples, ratio, scope="cmg", cmg="1", event="CPU_CYCLES") == 0.04
    assert math.isnan(value(samples, ratio, scope="cmg", cmg="1", metric="IPC"))
    assert math.isnan(value(samples, ratio, scope="total", event="INST_RETIRED"))
