"""OpenMetrics names from profile metrics: unit suffixes in base units, no collisions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sectormon.errors import UsageError
from sectormon.export.names import UNITS, exported_metrics, openmetrics_unit
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.resolve import load_profile

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


@pytest.mark.parametrize(
    ("metric", "unit", "name", "scale"),
    [
        ("IPC", "inst/cycle", "sectormon_ipc_instructions_per_cycle", 1.0),
        ("L1D_miss_rate", "ratio", "sectormon_l1d_miss_rate_ratio", 1.0),
        ("SCE_usage_ratio", "ratio", "sectormon_sce_usage_ratio", 1.0),
        ("power_total_W", "W", "sectormon_power_total_watts", 1.0),
        ("energy_total", "nJ", "sectormon_energy_total_joules", 1e-9),
        ("energy_per_inst", "nJ/inst", "sectormon_energy_per_inst_joules_per_instruction", 1e-9),
        ("L2_refill_corrected", "count", "sectormon_l2_refill_corrected", 1.0),
        ("L1_hwprf_refill_per_cycle", "1/cycle", "sectormon_l1_hwprf_refill_per_cycle", 1.0),
        ("page_fault_rate", "1/s", "sectormon_page_fault_rate_per_second", 1.0),
        ("flops", "flop/byte", "sectormon_flops_flop_per_byte", 1.0),
    ],
)
def test_names_carry_the_openmetrics_unit(metric: str, unit: str, name: str, scale: float) -> None:
    (exported,) = exported_metrics([{"name": metric, "unit": unit}])
    assert exported.name == name
    assert exported.scale == scale


@pytest.mark.parametrize("profile", ["a64fx", "generic"])
def test_shipped_profiles_export_valid_distinct_names(profile: str) -> None:
    metrics = profile_to_dict(load_profile(profile))["metrics"]
    exported = exported_metrics(metrics)
    assert len({e.name for e in exported}) == len(metrics)
    for e in exported:
        assert NAME.match(e.name), e.name
        assert e.name.startswith("sectormon_")
        assert not e.unit or e.name.endswith("_" + e.unit)


def test_two_metrics_with_one_name_are_refused() -> None:
    with pytest.raises(UsageError, match="IPC and ipc both export as sectormon_ipc_instructions_per_cycle"):
        exported_metrics([{"name": "IPC", "unit": "inst/cycle"}, {"name": "ipc", "unit": "inst/cycle"}])


@given(st.text(max_size=20))
def test_any_unit_gives_a_valid_suffix(unit: str) -> None:
    suffix, scale = openmetrics_unit(unit)
    assert suffix == "" or re.fullmatch(r"[a-z0-9_]+", suffix)
    assert scale > 0


@given(
    st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,30}", fullmatch=True),
    st.sampled_from(sorted(UNITS)),
)
def test_any_metric_name_exports_with_its_unit_once(metric: str, unit: str) -> None:
    (exported,) = exported_metrics([{"name": metric, "unit": unit}])
    assert NAME.match(exported.name)
    if exported.unit:
        assert exported.name.endswith("_" + exported.unit)


def test_cluster_doc_lists_every_a64fx_series() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cluster.md").read_text(encoding="utf-8")
    for exported in exported_metrics(profile_to_dict(load_profile("a64fx"))["metrics"]):
        assert f"| `{exported.name}` | `{exported.metric}` |" in doc, exported.name


BUILTIN_WORDS = [
    "overhead", "info", "frames", "frames_total", "frames_created", "coverage", "events", "events_total",
    "active_group", "frame_time", "frame_interval", "group_coverage", "thread_coverage", "proxy_estimate",
    "proxy_error", "ratio", "sectormon", "IPC",
]  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "unit", "clash"),
    [
        ("overhead", "ratio", "sectormon_overhead_ratio"),
        ("overhead", "%", "sectormon_overhead_ratio"),
        ("info", "", "sectormon_info"),
        ("frames", "count", "sectormon_frames"),
        ("frames_total", "", "sectormon_frames_total"),
        ("coverage", "ratio", "sectormon_coverage_ratio"),
        ("events_total", "count", "sectormon_events_total"),
        ("active_group", "", "sectormon_active_group"),
        ("frame_time", "s", "sectormon_frame_time_seconds"),
        ("proxy_error", "ratio", "sectormon_proxy_error_ratio"),
    ],
)
def test_a_metric_named_as_a_builtin_family_is_refused(metric: str, unit: str, clash: str) -> None:
    """A profile metric `overhead`, `info` or `frames` made Prometheus reject the whole scrape."""
    with pytest.raises(UsageError, match=f"profile metric {metric} exports as {clash}, a name sectormon"):
        exported_metrics([{"name": metric, "unit": unit}])


def _scrape_with(metrics: list[dict[str, str]]) -> str:
    from prometheus_client.openmetrics.exposition import generate_latest
    from prometheus_client.registry import CollectorRegistry

    from sectormon.export.collector import FrameCollector
    from sectormon.io.header_codec import header_from_json, header_to_json
    from tests.export.frames import frame, header

    served = header_to_json(header())
    served["profile"]["metrics"] = metrics
    served["proxy"] = {"per_cmg": 1, "reference": "units", "events": []}  # the proxy family too
    collector = FrameCollector(header_from_json(served))
    collector.publish(frame(1.0))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry).decode()


@given(
    st.lists(
        st.tuples(st.sampled_from(BUILTIN_WORDS), st.sampled_from(["", "ratio", "%", "s", "count", "1/s"])),
        min_size=1,
        max_size=4,
    )
)
@example([("IPC", ""), ("IPC", "ratio")])  # one metric twice: its coverage series twice
def test_every_accepted_profile_scrapes_without_a_clashing_name(pairs: list[tuple[str, str]]) -> None:
    """Prometheus' OpenMetrics parser (prometheus_client's is as strict) accepts every scrape of a
    profile exported_metrics accepts."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    metrics = [{"name": name, "unit": unit} for name, unit in pairs]
    try:
        exported_metrics(metrics)
    except UsageError:
        return
    list(text_string_to_metric_families(_scrape_with(metrics)))  # raises on "Clashing name"


def test_the_reserved_names_cover_every_builtin_family() -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from sectormon.export.names import BUILTIN

    metrics = [{"name": "IPC", "unit": "inst/cycle"}]
    families = {f.name for f in text_string_to_metric_families(_scrape_with(metrics))}
    assert families - {e.name for e in exported_metrics(metrics)} <= set(BUILTIN)
