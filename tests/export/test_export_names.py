"""OpenMetrics names from profile metrics: unit suffixes in base units, no collisions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.errors import UsageError
from sectormon.export.names import UNITS, exported_metrics, openmetrics_unit
from sectormon.profiles.loader import load_profile, profile_to_dict

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
