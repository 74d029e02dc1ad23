"""Section-3 metrics of the PMU document over fapp data: set choice, n/a rules, CMG-wide events."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon.fapp.csvread import Measurement, read_measurement
from sectormon.fapp.section3 import METRIC_NAMES, compute_section3

STEM = "axhelm2.29503716.0"


@pytest.fixture(scope="module")
def m(fapp_dir: Path) -> Measurement:
    return read_measurement(fapp_dir / STEM)


def _sum(m: Measurement, set_name: str, key: int | str) -> int:
    return sum(m.value(set_name, key, t) or 0 for t in m.threads)


def test_absent_events_give_none(m: Measurement) -> None:
    s3 = compute_section3(m)
    for name in (
        "L1D_miss_rate",
        "L2D_miss_rate",
        "L1D_demand_refill_ratio",
        "avg_L1_miss_penalty",
        "avg_L2_miss_penalty",
        "SCE_usage_ratio",
        "non_sec0_ratio",
        "L1D_WB_per_access",
        "L2D_WB_per_access",
        "energy_per_inst",
        "IPC",
    ):
        assert s3.cmg_total[name] is None, name
        assert s3.threads["0"][name] is None, name
        assert name not in s3.sources


def test_single_set_metrics(m: Measurement) -> None:
    s3 = compute_section3(m)
    assert s3.split == ()
    assert s3.sources["mem_stall_rate"] == {"0x0180": "pa6", "CPU_CYCLES": "pa6"}
    assert s3.sources["total_ld_stall_rate"] == {"0x0184": "pa2", "CPU_CYCLES": "pa2"}
    assert s3.sources["L2D_demand_refill_ratio"] == {"0x0300": "pa4", "0x0017": "pa4"}
    t = 5
    assert s3.threads[str(t)]["mem_stall_rate"] == m.value("pa6", 0x180, t) / m.value("pa6", "PMCCNTR", t)  # type: ignore[operator]
    assert s3.cmg_total["mem_stall_rate"] == _sum(m, "pa6", 0x180) / _sum(m, "pa6", "PMCCNTR")
    assert s3.cmg_total["l2_stall_rate"] == _sum(m, "pa6", 0x182) / _sum(m, "pa6", "PMCCNTR")
    assert s3.cmg_total["L2D_demand_refill_ratio"] == _sum(m, "pa4", 0x300) / _sum(m, "pa4", 0x17)


def test_energy_uses_cmg_means(m: Measurement) -> None:
    s3 = compute_section3(m)
    n = len(m.threads)
    core = _sum(m, "pa8", 0x1E0) * 8
    l2 = _sum(m, "pa8", 0x3E0) / n * 32
    mem = _sum(m, "pa8", 0x3E8) / n * 256
    assert s3.cmg_total["energy_total"] == pytest.approx(core + l2 + mem, rel=1e-12)
    assert s3.cmg_total["mem_energy_ratio"] == pytest.approx(mem / (core + l2 + mem), rel=1e-12)
    # Per thread the CMG-wide EA_L2/EA_MEMORY cannot be attributed: n/a.
    assert s3.threads["0"]["energy_total"] is None


def test_split_when_no_single_set_has_all_events(tmp_path: Path) -> None:
    header = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,{}"
    (tmp_path / "pa1.csv").write_text(header.format("0x0003") + "\nFAPP-cpupa,Thread,0,0,0,k,0,1,10,100,40\n")
    (tmp_path / "pa2.csv").write_text(
        header.format("0x0004,0x0008") + "\nFAPP-cpupa,Thread,0,0,0,k,0,1,10,200,400,150\n"
    )
    s3 = compute_section3(read_measurement(tmp_path))
    assert s3.cmg_total["L1D_miss_rate"] == 40 / 400
    assert s3.sources["L1D_miss_rate"] == {"0x0003": "pa1", "0x0004": "pa2"}
    assert "L1D_miss_rate" in s3.split
    # IPC: INST_RETIRED and cycles from the same set (pa2), not split.
    assert s3.cmg_total["IPC"] == 150 / 200
    assert "IPC" not in s3.split


def test_zero_denominator_is_none(tmp_path: Path) -> None:
    header = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,"
    header += "0x0003,0x0004"
    (tmp_path / "pa1.csv").write_text(header + "\nFAPP-cpupa,Thread,0,0,0,k,0,1,10,100,0,0\n")
    s3 = compute_section3(read_measurement(tmp_path))
    assert s3.cmg_total["L1D_miss_rate"] is None


def test_all_metrics_reported(m: Measurement) -> None:
    s3 = compute_section3(m)
    assert tuple(s3.cmg_total) == METRIC_NAMES
    assert all(tuple(v) == METRIC_NAMES for v in s3.threads.values())
