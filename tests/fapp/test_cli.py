"""``sectormon fapp`` (text and --json) and ``run_metrics`` for compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectormon.cli import main
from sectormon.fapp import analyze, run_metrics
from sectormon.fapp.measurement import read_measurement
from sectormon.fapp.report import CMG_METRICS
from sectormon.fapp.table import format_value

STEM = "axhelm2.29503716.0"


def test_json_matches_expected_file(fapp_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fapp", str(fapp_dir / STEM), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = json.loads((fapp_dir / "expected" / f"{STEM}.json").read_text())
    assert list(data)[:2] == ["threads", "cmg_total"]
    assert data["threads"].keys() == expected["threads"].keys()
    assert data["cmg_total"].keys() == expected["cmg_total"].keys()
    for key, want in expected["cmg_total"].items():
        assert data["cmg_total"][key] == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert data["section3"]["cmg_total"]["L1D_miss_rate"] is None
    assert "L1D miss rate" in data["split"]
    assert data["info"]["cntfrq_hz_used"] == 100_000_000


def test_text_table_fits_and_shows_everything(fapp_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fapp", str(fapp_dir / STEM), "--width", "160"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 160
    assert "CMG total" in out and "thread 11" in out
    assert "Power total (W)" in out and "energy_total (nJ)" in out
    assert "n/a" in out
    # CMG total is the last column of the last block of the report table.
    header_lines = [line for line in lines if line.startswith("metric")]
    assert header_lines[1].rstrip().endswith("CMG total")


def test_narrow_width_wraps(fapp_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fapp", str(fapp_dir / STEM), "--width", "90"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 90


@pytest.mark.parametrize("args", [["fapp", "/nonexistent/dir"], ["fapp", "/"]])
def test_bad_dir_is_one_line(args: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    if args[1] == "/":
        args = ["fapp", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sectormon: ")


def test_bad_csv_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pa1.csv").write_text(
        "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,0x0003\n"
        "FAPP-cpupa,Thread,0,0,0,k,0,1,10,oops,4\n"
    )
    assert main(["fapp", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'pa1.csv'}:2: PMCCNTR: 'oops' is not an integer" in err


def test_run_metrics(fapp_dir: Path) -> None:
    rm = run_metrics(fapp_dir / STEM)
    assert rm.kind == "fapp"
    assert rm.label == STEM
    assert rm.scopes() == (*(f"thread:{t}" for t in range(12)), "total", "cmg:0")
    expected = json.loads((fapp_dir / "expected" / f"{STEM}.json").read_text())
    total = rm.metrics["total"]
    assert total["report:IPC"] == pytest.approx(expected["cmg_total"]["IPC"], rel=1e-12)
    assert rm.metrics["thread:3"]["report:GFLOPS"] == pytest.approx(
        expected["threads"]["3"]["GFLOPS"], rel=1e-12
    )
    assert rm.metrics["cmg:0"] == total
    # The profile's metrics by their own names, the report's as report:<name>: the profile's IPC
    # (INST_RETIRED / CPU_CYCLES) is n/a on the CPU PA sets (no 0x8), never the report's 0x121 one.
    assert total["IPC"] is None
    assert total["mem_stall_rate"] is not None and total["L1D_miss_rate"] is None
    assert set(total) == {f"report:{n}" for n in CMG_METRICS} | set(analyze(fapp_dir / STEM).section3.names)
    # A CPU PA report: its metrics first, in the report's order.
    assert list(total)[: len(CMG_METRICS)] == [f"report:{n}" for n in CMG_METRICS]
    # The profile's errata-corrected L2 miss count (what compare's L2_effectiveness uses): CMG only.
    assert rm.metrics["total"]["L2_miss_count_corrected"] is not None
    assert rm.metrics["thread:0"]["L2_miss_count_corrected"] is None
    # Counts by a64fx profile name, as a replay of the import ends with: per-PE events summed over
    # the threads, CMG-wide ones once (mean of the rows) and never per thread; an event counted in
    # several sets is their mean.
    m = read_measurement(fapp_dir / STEM)
    counts = rm.counts
    assert "L2_MISS_COUNT" not in counts["thread:0"]
    rows = [m.value("pa16", 0x309, t) or 0 for t in m.threads]
    assert (
        counts["total"]["L2_MISS_COUNT"] == round(sum(rows) / len(rows)) == counts["cmg:0"]["L2_MISS_COUNT"]
    )
    assert counts["total"]["LD_COMP_WAIT"] == sum(counts[f"thread:{t}"]["LD_COMP_WAIT"] for t in range(12))
    # EFFECTIVE_INST_SPEC (not in the profile: raw name) in pa1 and pa16: the mean of the two runs.
    assert counts["thread:0"]["r121"] == (m.value("pa1", 0x121, 0) + m.value("pa16", 0x121, 0)) / 2  # type: ignore[operator]
    cycles = [m.value(s, "PMCCNTR", 0) or 0 for s in m.sets]
    assert counts["thread:0"]["CPU_CYCLES"] == pytest.approx(sum(cycles) / len(cycles), rel=1e-15)
    assert rm.info["node_name"] == "h34-5001c"
    assert "report:L1D miss rate" in rm.info["split"]
    assert rm.coverage["total"]["report:IPC"] == 1.0 and "L1D_miss_rate" not in rm.coverage["total"]


def test_format_value() -> None:
    assert format_value(None) == "n/a"
    assert format_value(0.0) == "0"
    assert format_value(123456789012) == "123456789012"
    assert format_value(1234567890123) == "1.23457e+12"
    assert format_value(0.123456) == "0.12346"
    assert format_value(2.5e-7) == "2.5000e-07"
