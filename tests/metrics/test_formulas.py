"""A profile's compiled metrics: order, inputs through metric references, split flags, levels."""

from __future__ import annotations

import pytest

from sectormon.errors import DataError
from sectormon.metrics.formulas import LEVELS_OF_SCOPE, MetricSet, evaluate_metrics
from sectormon.profiles.model import Profile
from tests.metrics.metrics_support import make_profile


def _profile() -> Profile:
    return make_profile(
        {"G1": ["CYC", "INST", "L1", "L1M"], "G2": ["CYC", "L2", "L2M"]},
        {
            "ipc": ("INST / CYC", "higher"),
            "l1_miss": ("L1M / L1", "lower"),
            "l2_per_l1": ("L2M / L1M", "lower"),  # L1M in G1, L2M in G2: split
            "mixed": ("ipc * l2_per_l1", "none"),  # split through a referenced metric
            "scaled": ("l1_miss * K", "none"),  # one group through a reference: not split
            "k_only": ("K * 2", "none"),  # no events at all
            "rate": ("INST / SECONDS", "none"),
        },
        constants={"K": 100.0},
    )


def test_inputs_follow_metric_references() -> None:
    mset = MetricSet(_profile())
    assert mset.inputs["ipc"] == ("CYC", "INST")
    assert mset.inputs["mixed"] == ("CYC", "INST", "L1M", "L2M")
    assert mset.inputs["scaled"] == ("L1", "L1M")
    assert mset.inputs["k_only"] == ()
    assert mset.inputs["rate"] == ("INST",)


def test_split_when_no_group_holds_all_inputs() -> None:
    mset = MetricSet(_profile())
    assert mset.split == frozenset({"l2_per_l1", "mixed"})


def test_evaluate_in_order_with_constants_and_seconds() -> None:
    counts = {"CYC": 200.0, "INST": 100.0, "L1": 50.0, "L1M": 5.0, "L2M": 1.0}
    values = MetricSet(_profile()).evaluate(counts, 4.0)
    assert list(values) == ["ipc", "l1_miss", "l2_per_l1", "mixed", "scaled", "k_only", "rate"]
    assert values == pytest.approx(
        {
            "ipc": 0.5,
            "l1_miss": 0.1,
            "l2_per_l1": 0.2,
            "mixed": 0.1,
            "scaled": 10.0,
            "k_only": 200.0,
            "rate": 25.0,
        }
    )


def test_missing_event_propagates_through_references() -> None:
    values = MetricSet(_profile()).evaluate({"CYC": 200.0, "INST": 100.0, "L1": 0.0}, 1.0)
    assert values["ipc"] == 0.5
    assert values["l1_miss"] is None  # L1M missing
    assert values["l2_per_l1"] is None
    assert values["mixed"] is None  # through l2_per_l1
    assert values["scaled"] is None
    assert values["k_only"] == 200.0


def test_zero_denominator_and_zero_seconds_are_none() -> None:
    values = MetricSet(_profile()).evaluate({"CYC": 0.0, "INST": 10.0, "L1": 0.0, "L1M": 0.0}, 0.0)
    assert values["ipc"] is None
    assert values["l1_miss"] is None
    assert values["rate"] is None


def test_coverage_is_min_over_input_events() -> None:
    mset = MetricSet(_profile())
    cov = mset.coverage({"CYC": 1.0, "INST": 0.5, "L1": 0.25, "L1M": 0.5})
    assert cov["ipc"] == 0.5
    assert cov["l1_miss"] == 0.25
    assert cov["l2_per_l1"] == 0.0  # L2M never counted
    assert cov["mixed"] == 0.0
    assert cov["k_only"] == 1.0


@pytest.mark.parametrize(
    ("scope", "levels"),
    [
        ("any", {"thread", "core", "cmg", "total"}),
        ("core", {"thread", "core"}),
        ("cmg", {"cmg", "total"}),
        ("total", {"total"}),
    ],
)
def test_metric_scope_selects_levels(scope: str, levels: set[str]) -> None:
    assert LEVELS_OF_SCOPE[scope] == levels
    profile = make_profile({"G": ["A"]}, {"m": ("A * 2", "none", scope)})
    mset = MetricSet(profile)
    for level in ("thread", "core", "cmg", "total"):
        assert ("m" in mset.evaluate({"A": 1.0}, 1.0, level)) == (level in levels)
    assert mset.evaluate({"A": 1.0}, 1.0) == {"m": 2.0}  # no level: everything


def test_bad_formula_names_profile_and_metric() -> None:
    profile = make_profile({"G": ["A"]}, {"broken": "A / (A"})
    with pytest.raises(DataError) as info:
        MetricSet(profile)
    assert str(info.value).startswith("test.yaml: metric broken: unexpected end of formula")
    assert "column 6" in str(info.value)


def test_module_level_evaluate_metrics() -> None:
    profile = _profile()
    counts = {"CYC": 200.0, "INST": 100.0, "L1": 50.0, "L1M": 5.0, "L2M": 1.0}
    assert evaluate_metrics(profile, counts, 4.0)["scaled"] == pytest.approx(10.0)
    assert evaluate_metrics(profile, counts, 4.0, constants={"K": 10.0})["scaled"] == pytest.approx(1.0)
    assert evaluate_metrics(profile, counts, 4.0)["scaled"] == pytest.approx(10.0)  # cache keyed by constants
