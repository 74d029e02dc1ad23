"""The CPU PA report against Fujitsu's own values, and invariants on the measurements without them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sectormon.errors import DataError
from sectormon.fapp.measurement import read_measurement
from sectormon.fapp.report import (
    BETTER,
    CA_ITEMS,
    CLAMPED_RATES,
    CMG_METRICS,
    THREAD_METRICS,
    Report,
    compute_report,
    hi,
    lo,
)
from sectormon.fapp.section3 import compute_section3
from sectormon.fapp.to_recording import convert

EXPECTED = ("axhelm2.29503716.0", "dtrn3.29503716.1")
OTHERS = (
    "axhelm2.29503716.1",
    "dtrn3.29503716.2",
    "elecur.29503716.0",
    "elecur.29503716.2",
    "ffx.29503716.0",
    "ffx.29503716.1",
    "nbody.29503716.0",
    "nbody.29503716.2",
)
_CACHE: dict[str, Report] = {}


def report_of(fapp_dir: Path, stem: str) -> Report:
    if stem not in _CACHE:
        _CACHE[stem] = compute_report(read_measurement(fapp_dir / stem))
    return _CACHE[stem]


def close(got: float | int | None, want: float | int) -> bool:
    if got is None:
        return False
    if abs(want) < 1e-12:
        return abs(got - want) <= 1e-12
    return abs(got - want) <= 1e-9 * abs(want)


@pytest.mark.parametrize("stem", EXPECTED)
def test_reproduces_fujitsu_report(fapp_dir: Path, stem: str) -> None:
    expected = json.loads((fapp_dir / "expected" / f"{stem}.json").read_text())
    got = report_of(fapp_dir, stem).to_json()
    assert list(got) == ["threads", "cmg_total"]
    assert list(got["threads"]) == list(expected["threads"])
    bad: list[str] = []
    for thread, values in expected["threads"].items():
        assert list(got["threads"][thread]) == list(values), "metric names and order as in the report"
        bad += [f"{thread}:{k}" for k, v in values.items() if not close(got["threads"][thread][k], v)]
    assert list(got["cmg_total"]) == list(expected["cmg_total"])
    bad += [f"cmg:{k}" for k, v in expected["cmg_total"].items() if not close(got["cmg_total"][k], v)]
    assert bad == []


def test_metric_name_lists_match_the_expected_files(fapp_dir: Path) -> None:
    expected = json.loads((fapp_dir / "expected" / f"{EXPECTED[0]}.json").read_text())
    assert tuple(expected["threads"]["0"]) == THREAD_METRICS
    assert tuple(expected["cmg_total"]) == CMG_METRICS


def test_counts_stay_integers(fapp_dir: Path) -> None:
    r = report_of(fapp_dir, EXPECTED[0])
    for name in (
        "Floating-point operation",
        "Effective instruction",
        "Load-store instruction",
        "L1D miss",
        "L2 miss",
    ):
        assert isinstance(r.cmg_total[name], int)


def numbers(values: Mapping[str, float | int | None]) -> dict[str, float]:
    """The scope's values, all present and finite (every input set exists in the reference data)."""
    assert all(v is not None and math.isfinite(v) for v in values.values())
    return {k: float(v) for k, v in values.items() if v is not None}


@pytest.mark.parametrize("stem", EXPECTED + OTHERS)
def test_invariants(fapp_dir: Path, stem: str) -> None:
    r = report_of(fapp_dir, stem)
    threads = [numbers(v) for v in r.threads.values()]
    cmg = numbers(r.cmg_total)
    for values in [*threads, cmg]:
        for name in CLAMPED_RATES:
            assert 0.0 <= values[name] <= 1.0, name
        assert values["L1D miss software prefetch rate"] <= 1.0
        # Demand + HW prefetch + SW prefetch shares of the L1D misses add up to 1 (no clamp acted).
        shares = [values[f"L1D miss {k} rate"] for k in ("demand", "hardware prefetch", "software prefetch")]
        if all(s < 1 for s in shares):
            assert sum(shares) == pytest.approx(1.0, rel=1e-9)
        for name in CA_ITEMS:
            assert values[name] >= 0, name
        assert values["CA: Total (s)"] == values["Execution time (s)"]
        for name in ("IPC", "GFLOPS", "GIPS", "Memory throughput (GB/s)", "L1 busy rate"):
            assert values[name] > 0
    parts = cmg["Power core (W)"] + cmg["Power L2 (W)"] + cmg["Power memory (W)"]
    assert cmg["Power total (W)"] == pytest.approx(parts, rel=1e-12)
    assert cmg["Power core (W)"] == pytest.approx(sum(t["Power core (W)"] for t in threads), rel=1e-12)
    assert cmg["Memory busy rate"] == cmg["Memory throughput peak ratio"]
    times = [t["Execution time (s)"] for t in threads]
    assert cmg["Execution time (s)"] == pytest.approx(sum(times) / len(times), rel=1e-12)
    assert cmg["Effective instruction"] == sum(t["Effective instruction"] for t in threads)
    assert 0 < cmg["L2 busy rate"] < 1
    assert 0 < cmg["Memory throughput peak ratio"] < 1


@pytest.mark.parametrize("stem", EXPECTED + OTHERS)
def test_cycle_accounting_sums_to_the_cycles(fapp_dir: Path, stem: str) -> None:
    """The CA items partition pa2's cycles (up to the clamps and the other sets' run-to-run noise)."""
    r = report_of(fapp_dir, stem)
    for values in [*map(numbers, r.threads.values()), numbers(r.cmg_total)]:
        total = sum(values[name] for name in CA_ITEMS)
        assert total == pytest.approx(values["CA: Total (s)"], rel=0.01)


def test_thread_only_metrics_are_absent_per_thread(fapp_dir: Path) -> None:
    r = report_of(fapp_dir, EXPECTED[0])
    for name in ("L2 busy rate", "Power L2 (W)", "Memory throughput peak ratio"):
        assert name not in r.threads["0"]
        assert name in r.cmg_total


def test_sources_and_split(fapp_dir: Path) -> None:
    r = report_of(fapp_dir, EXPECTED[0])
    assert r.sources["IPC"] == ("pa1",)
    assert r.sources["L1D miss rate"] == ("pa4", "pa5")
    assert r.sources["CA: Other wait (s)"] == ("pa1", "pa2", "pa7")
    assert r.sources["Power L2 (W)"] == ("pa1", "pa8")
    assert "L1D miss rate" in r.split
    assert "GFLOPS" not in r.split


def test_missing_sets_give_none(fapp_dir: Path, tmp_path: Path) -> None:
    """Only the sets present are used: metrics needing the others are n/a, never 0."""
    src = fapp_dir / "axhelm2.29503716.0"
    for name in ("pa1.csv", "pa3.csv", "info.json"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    r = compute_report(read_measurement(tmp_path))
    full = report_of(fapp_dir, EXPECTED[0])
    assert r.cmg_total["IPC"] == full.cmg_total["IPC"]
    assert r.cmg_total["L1 busy rate"] == full.cmg_total["L1 busy rate"]
    assert r.cmg_total["L1D miss rate"] is None
    assert r.cmg_total["Power total (W)"] is None
    assert r.threads["3"]["CA: Other wait (s)"] is None


def test_clamps() -> None:
    assert hi(1.5) == 1.0 and hi(-0.5) == -0.5
    assert lo(-2.0) == 0.0 and lo(0.25) == 0.25


_COUNT = st.integers(min_value=0, max_value=2**64 - 1) | st.integers(min_value=0, max_value=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_valid_counts_compute_without_error(
    fapp_dir: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Zeros, huge values and inconsistent runs give numbers or n/a, never an exception."""
    src = fapp_dir / "axhelm2.29503716.0"
    out = tmp_path_factory.mktemp("fuzzset")
    threads = data.draw(st.integers(min_value=1, max_value=3))
    for n in range(1, 10):
        header = (src / f"pa{n}.csv").read_text().splitlines()[0]
        width = len(header.split(",")) - 8
        rows = [header]
        for t in range(threads):
            cells = [str(data.draw(_COUNT)) for _ in range(width)]
            rows.append(f"FAPP-cpupa,Thread,0,0,{t},k,0,1," + ",".join(cells))
        (out / f"pa{n}.csv").write_text("\n".join(rows) + "\n")
    m = read_measurement(out)
    r = compute_report(m)
    s3 = compute_section3(m)
    try:
        convert(m)
    except DataError as exc:  # no time in pa1, or a time no recording holds (issue 34 item 8)
        assert any(
            why in str(exc)
            for why in ("no thread has a time", "longer than a recording holds", "shorter than")
        ), exc
    scopes: list[Mapping[str, float | int | None]] = [*r.threads.values(), r.cmg_total]
    scopes += [*s3.threads.values(), s3.cmg_total]
    for scope in scopes:
        for v in scope.values():
            assert v is None or isinstance(v, (int, float))


def test_better_directions() -> None:
    assert BETTER["IPC"] == "higher"
    assert BETTER["L2 miss rate"] == "lower"
    assert BETTER["CA: Other wait (s)"] == "lower"
    assert BETTER["CA: 4 instruction commit (s)"] == "none"
    assert BETTER["L2 miss demand rate"] == "none"
    assert set(BETTER) == set(CMG_METRICS)
