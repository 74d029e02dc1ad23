"""The a64fx profile's metrics over fapp data: its formulas, set choice, n/a rules, CMG-wide events."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from sectormon.fapp.measurement import read_measurement
from sectormon.fapp.model import Measurement
from sectormon.fapp.names import a64fx_profile, part_variant
from sectormon.fapp.report import compute_report
from sectormon.fapp.section3 import compute_section3, metric_inputs
from sectormon.metrics.formulas import evaluate_metrics
from sectormon.profiles.model import Profile
from sectormon.profiles.resolve import load_profile

STEM = "axhelm2.29503716.0"
STEMS = (STEM, "dtrn3.29503716.1", "ffx.29503716.0", "nbody.29503716.0")


@pytest.fixture(scope="module")
def m(fapp_dir: Path) -> Measurement:
    return read_measurement(fapp_dir / STEM)


def _sum(m: Measurement, set_name: str, key: int | str) -> int:
    return sum(m.value(set_name, key, t) or 0 for t in m.threads)


def _mean(m: Measurement, set_name: str, code: int) -> float:
    return _sum(m, set_name, code) / len(m.threads)


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
    assert s3.split == ("other_ld_stall_rate",)  # LD_COMP_WAIT (pa2) minus its parts (pa6)
    assert s3.sources["mem_stall_rate"] == {"LD_COMP_WAIT_L2_MISS": "pa6", "CPU_CYCLES": "pa6"}
    assert s3.sources["total_ld_stall_rate"] == {"LD_COMP_WAIT": "pa2", "CPU_CYCLES": "pa2"}
    assert s3.sources["L2D_demand_refill_ratio"] == {"L2D_CACHE_REFILL_DM": "pa4", "L2D_CACHE_REFILL": "pa4"}
    t = 5
    assert s3.threads[str(t)]["mem_stall_rate"] == m.value("pa6", 0x180, t) / m.value("pa6", "PMCCNTR", t)  # type: ignore[operator]
    assert s3.cmg_total["mem_stall_rate"] == _sum(m, "pa6", 0x180) / _sum(m, "pa6", "PMCCNTR")
    assert s3.cmg_total["l2_stall_rate"] == _sum(m, "pa6", 0x182) / _sum(m, "pa6", "PMCCNTR")
    assert s3.cmg_total["L2D_demand_refill_ratio"] == _sum(m, "pa4", 0x300) / _sum(m, "pa4", 0x17)


def test_energy_and_power_use_cmg_means(m: Measurement) -> None:
    s3 = compute_section3(m)
    core = _sum(m, "pa8", 0x1E0) * 8
    # A CMG-wide count: the mean of the thread rows, as a whole count (what the import records too).
    l2 = round(_mean(m, "pa8", 0x3E0)) * 32
    mem = round(_mean(m, "pa8", 0x3E8)) * 256
    assert s3.cmg_total["energy_total"] == core + l2 + mem
    assert s3.cmg_total["mem_energy_ratio"] == pytest.approx(mem / (core + l2 + mem), rel=1e-12)
    # Per thread the CMG-wide EA_L2/EA_MEMORY cannot be attributed: n/a.
    assert s3.threads["0"]["energy_total"] is None and s3.threads["0"]["power_L2_W"] is None
    # Powers divide by the report's CMG time (mean pa1 time); L2 and memory power are the report's
    # (up to that rounding). The report's core power is the sum of the thread powers, not
    # core energy / mean time, so it differs by the spread of the thread times.
    report = compute_report(m)
    seconds = report.cmg_total["Execution time (s)"]
    assert isinstance(seconds, float)
    assert s3.cmg_total["power_core_W"] == pytest.approx(core / 1e9 / seconds, rel=1e-12)
    assert s3.cmg_total["power_total_W"] == pytest.approx((core + l2 + mem) / 1e9 / seconds, rel=1e-12)
    for name in ("L2", "memory"):
        assert s3.cmg_total[f"power_{name}_W"] == pytest.approx(
            report.cmg_total[f"Power {name} (W)"], rel=1e-7
        )
    assert s3.threads["3"]["power_core_W"] == pytest.approx(report.threads["3"]["Power core (W)"], rel=1e-12)


def _independent_counts(
    m: Measurement, profile: Profile, sources: Mapping[str, str], thread: int | None
) -> dict[str, float]:
    """The counts a metric's sources name, read straight from the CSV rows (thread, or CMG total)."""
    counts: dict[str, float] = {}
    for name, set_name in sources.items():
        event = profile.events[name]
        codes = m.sets[set_name].codes
        key: int | str = "PMCCNTR" if name == "CPU_CYCLES" and 0x11 not in codes else event.code  # type: ignore[assignment]
        if thread is not None:
            if event.scope == "cmg":
                continue  # a CMG-wide count is not the thread's
            value = m.value(set_name, key, thread)
            assert value is not None
            counts[name] = float(value)
        elif event.scope == "cmg":
            counts[name] = float(round(_sum(m, set_name, key) / len(m.threads)))
        else:
            counts[name] = float(_sum(m, set_name, key))
    return counts


@pytest.mark.parametrize("stem", STEMS)
def test_values_are_the_profile_formulas(fapp_dir: Path, stem: str) -> None:
    """Every value is evaluate_metrics of the a64fx profile on the counts its sources name: the fapp
    path has no formula of its own, so it cannot drift from the YAML."""
    m = read_measurement(fapp_dir / stem)
    profile = load_profile("a64fx")
    s3 = compute_section3(m)
    assert s3.names == tuple(metric.name for metric in profile.metrics)
    times = {t: m.value("pa1", "CNTVCT", t) / m.cntfrq_hz for t in m.threads}  # type: ignore[operator]
    for metric in profile.metrics:
        name = metric.name
        sources = s3.sources.get(name)
        if sources is None:
            assert s3.cmg_total[name] is None and all(v[name] is None for v in s3.threads.values())
            continue
        assert set(sources) == set(metric_inputs(profile)[name])
        want = evaluate_metrics(
            profile, _independent_counts(m, profile, sources, None), sum(times.values()) / len(times)
        )
        assert s3.cmg_total[name] == want[name], name
        for t in m.threads:
            want = evaluate_metrics(profile, _independent_counts(m, profile, sources, t), times[t])
            expected = want[name] if metric.scope in ("any", "core") else None
            assert s3.threads[str(t)][name] == expected, (name, t)


def test_split_when_no_single_set_has_all_events(tmp_path: Path) -> None:
    header = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,{}"
    (tmp_path / "pa1.csv").write_text(header.format("0x0003") + "\nFAPP-cpupa,Thread,0,0,0,k,0,1,10,100,40\n")
    (tmp_path / "pa2.csv").write_text(
        header.format("0x0004,0x0008") + "\nFAPP-cpupa,Thread,0,0,0,k,0,1,10,200,400,150\n"
    )
    s3 = compute_section3(read_measurement(tmp_path))
    assert s3.cmg_total["L1D_miss_rate"] == 40 / 400
    assert s3.sources["L1D_miss_rate"] == {"L1D_CACHE_REFILL": "pa1", "L1D_CACHE": "pa2"}
    assert "L1D_miss_rate" in s3.split
    # IPC: INST_RETIRED and cycles from the same set (pa2), not split.
    assert s3.cmg_total["IPC"] == 150 / 200
    assert "IPC" not in s3.split


def test_counted_cpu_cycles_wins_over_pmccntr(tmp_path: Path) -> None:
    header = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,"
    (tmp_path / "pa1.csv").write_text(
        header + "0x0008,0x0011\nFAPP-cpupa,Thread,0,0,0,k,0,1,10,999,150,300\n"
    )
    s3 = compute_section3(read_measurement(tmp_path))
    assert s3.cmg_total["IPC"] == 150 / 300


def test_zero_denominator_is_none(tmp_path: Path) -> None:
    header = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,"
    header += "0x0003,0x0004"
    (tmp_path / "pa1.csv").write_text(header + "\nFAPP-cpupa,Thread,0,0,0,k,0,1,10,100,0,0\n")
    s3 = compute_section3(read_measurement(tmp_path))
    assert s3.cmg_total["L1D_miss_rate"] is None


def test_all_profile_metrics_reported(m: Measurement) -> None:
    s3 = compute_section3(m)
    names = tuple(metric.name for metric in load_profile("a64fx").metrics)
    assert tuple(s3.cmg_total) == names
    assert all(tuple(v) == names for v in s3.threads.values())


def test_part_variant() -> None:
    assert part_variant({}) == ""
    assert part_variant({"variant": "24c-2.6GHz", "cores_per_node": 48}) == "24c-2.6GHz"
    assert part_variant({"cores_per_node": 48, "cpu_frequency_ghz": 2.2}) == "48c"
    assert part_variant({"cores_per_node": 24, "cpu_frequency_ghz": 2.6}) == "24c-2.6GHz"
    assert part_variant({"cores_per_node": 24}, cpu_frequency_hz=2.6e9) == "24c-2.6GHz"


def test_energy_factors_follow_the_part(fapp_dir: Path, tmp_path: Path) -> None:
    """A 24-core 2.6 GHz part has other nJ factors: both section 3 and the report take the profile's."""
    src = fapp_dir / STEM
    for name in ("pa1.csv", "pa8.csv"):
        shutil.copy(src / name, tmp_path / name)
    info = json.loads((src / "info.json").read_text())
    info.update(cores_per_node=24, cpu_frequency_ghz=2.6)
    (tmp_path / "info.json").write_text(json.dumps(info))
    m = read_measurement(tmp_path)
    fast = a64fx_profile("24c-2.6GHz")
    assert fast is not None and fast.constants["NJ_EA_CORE"] == 9.0 and fast.constants["NJ_EA_L2"] == 36.0
    s3 = compute_section3(m)
    assert s3.variant == "24c-2.6GHz"
    core = _sum(m, "pa8", 0x1E0) * 9
    l2 = round(_mean(m, "pa8", 0x3E0)) * 36
    mem = round(_mean(m, "pa8", 0x3E8)) * 256
    assert s3.cmg_total["energy_total"] == core + l2 + mem
    report = compute_report(m)
    t0 = m.value("pa1", "CNTVCT", 0) / m.cntfrq_hz  # type: ignore[operator]
    assert report.threads["0"]["Power core (W)"] == pytest.approx(
        m.value("pa8", 0x1E0, 0) * 9 / 1e9 / t0,  # type: ignore[operator]
        rel=1e-12,
    )
    assert report.cmg_total["Power L2 (W)"] == pytest.approx(s3.cmg_total["power_L2_W"], rel=1e-6)


def test_untimed_thread_is_na_and_left_out_of_cmg_time(fapp_dir: Path, tmp_path: Path) -> None:
    """A pa1 row with CNTVCT 0: one warning naming file and line, n/a time metrics, out of the CMG means."""
    src = fapp_dir / STEM
    for name in ("pa1.csv", "pa8.csv", "info.json"):
        shutil.copy(src / name, tmp_path / name)
    lines = (tmp_path / "pa1.csv").read_text().splitlines()
    cells = lines[3].split(",")  # thread 2
    cells[8] = "0"  # CNTVCT
    lines[3] = ",".join(cells)
    (tmp_path / "pa1.csv").write_text("\n".join(lines) + "\n")
    m = read_measurement(tmp_path)
    assert m.untimed == (2,)
    warnings = [w for w in m.warnings if "CNTVCT" in w]
    assert len(warnings) == 1 and warnings[0].startswith(f"{tmp_path / 'pa1.csv'}:4: thread 2 ")
    full = compute_report(read_measurement(src))
    report = compute_report(m)
    for name in ("Execution time (s)", "GFLOPS", "IPC", "Power core (W)", "CA: Total (s)"):
        assert report.threads["2"][name] is None, name
    others = [t for t in m.threads if t != 2]

    def values(name: str) -> list[float]:
        out = [full.threads[str(t)][name] for t in others]
        assert all(isinstance(v, float) for v in out)
        return [float(v or 0) for v in out]

    times, ipcs, powers = values("Execution time (s)"), values("IPC"), values("Power core (W)")
    assert report.cmg_total["Execution time (s)"] == pytest.approx(sum(times) / len(times), rel=1e-12)
    assert report.cmg_total["IPC"] == pytest.approx(sum(ipcs) / len(ipcs), rel=1e-12)
    assert report.cmg_total["Power core (W)"] == pytest.approx(sum(powers), rel=1e-12)
    s3 = compute_section3(m)
    assert s3.threads["2"]["power_core_W"] is None
    assert s3.threads["3"]["power_core_W"] is not None
    seconds = sum(times) / len(times)
    assert s3.cmg_total["power_L2_W"] == pytest.approx(
        round(_mean(m, "pa8", 0x3E0)) * 32 / 1e9 / seconds, rel=1e-12
    )
    assert not math.isnan(report.cmg_total["Power L2 (W)"] or math.nan)


def test_untimed_by_pmccntr_zero(tmp_path: Path) -> None:
    header = (
        "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,0x0003\n"
    )
    rows = "FAPP-cpupa,Thread,0,0,0,k,0,1,100,220,4\nFAPP-cpupa,Thread,0,0,1,k,0,1,300,0,4\n"
    (tmp_path / "pa1.csv").write_text(header + rows)
    m = read_measurement(tmp_path)
    assert m.untimed == (1,)
    assert [w for w in m.warnings if "PMCCNTR 0" in w] != []
    assert m.mean_seconds() == 100 / m.cntfrq_hz
