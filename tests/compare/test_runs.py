"""sectormon compare: deltas, improvements and effects equal hand-computed values."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.compare.render import render_csv, render_markdown, render_text
from sectormon.compare.runs import compare_runs, ipc_improvement, metric_delta
from sectormon.compare.sides import run_metrics_from_frame
from sectormon.data.frames import ScopeStats, WindowStats
from sectormon.data.readings import Mark, Slice
from sectormon.data.run_metrics import RunMetrics
from sectormon.io import RecordingWriter
from sectormon.profiles.model import MetricDef
from tests.rows import row

INFO = {
    "IPC": MetricDef("IPC", "", unit="inst/cycle", better="higher"),
    "L1D_miss_rate": MetricDef("L1D_miss_rate", "", unit="ratio", better="lower"),
    "SCE_usage_ratio": MetricDef("SCE_usage_ratio", "", unit="ratio", better="none"),
}


def test_metric_delta_sign_conventions() -> None:
    assert metric_delta(0.10, 0.08, "lower") == pytest.approx((-0.02, 0.02, 0.2))
    assert metric_delta(1.0, 1.25, "higher") == pytest.approx((0.25, 0.25, 0.25))
    assert metric_delta(2.0, 1.0, "higher") == pytest.approx((-1.0, -1.0, -0.5))
    delta, improvement, relative = metric_delta(0.5, 0.6, "none")
    assert improvement is None and delta == pytest.approx(0.1) and relative == pytest.approx(0.2)
    assert metric_delta(None, 1.0, "lower") == (None, None, None)
    assert metric_delta(0.0, 1.0, "lower") == (1.0, -1.0, None)
    assert ipc_improvement(1.0, 1.1) == pytest.approx(10.0)
    assert ipc_improvement(0.0, 1.1) is None and ipc_improvement(None, 1.0) is None


def run(label: str, metrics: dict[str, dict[str, float | None]], **kw: Any) -> RunMetrics:
    return RunMetrics(label=label, kind="recording", metrics=metrics, **kw)


def test_compare_runs_by_hand() -> None:
    base = run(
        "base",
        {
            "total": {"IPC": 0.8, "L1D_miss_rate": 0.05, "SCE_usage_ratio": 0.0, "only_base": 3.0},
            "core:12": {"IPC": 0.5},
        },
        coverage={"total": {"IPC": 1.0, "L1D_miss_rate": 0.4}},
        counts={"total": {"L2_MISS_COUNT": 1000.0}},
    )
    other = run(
        "sector",
        {
            "total": {"IPC": 1.0, "L1D_miss_rate": 0.04, "SCE_usage_ratio": 0.6, "only_other": None},
            "cmg:0": {},
        },
        coverage={"total": {"IPC": 0.9}},
        counts={"total": {"L2_MISS_COUNT": 750.0}},
    )
    cmp = compare_runs(base, other, info=INFO)
    assert [s.scope for s in cmp.scopes] == ["total", "cmg:0", "core:12"]
    total = cmp.scope("total")
    ipc = total.row("IPC")
    assert (ipc.base, ipc.other) == (0.8, 1.0)
    assert ipc.delta == pytest.approx(0.2) and ipc.improvement == pytest.approx(0.2)
    assert ipc.relative == pytest.approx(0.25) and ipc.better == "higher"
    assert (ipc.coverage_base, ipc.coverage_other) == (1.0, 0.9)
    miss = total.row("L1D_miss_rate")
    assert miss.delta == pytest.approx(-0.01) and miss.improvement == pytest.approx(0.01)
    assert miss.relative == pytest.approx(0.2)
    assert miss.coverage_other is None  # not reported by that side: unknown, not 0
    sce = total.row("SCE_usage_ratio")
    assert sce.improvement is None and sce.relative is None and sce.delta == pytest.approx(0.6)
    only = total.row("only_base")
    assert only.other is None and only.delta is None
    assert total.row("only_other").base is None
    assert total.ipc_improvement == pytest.approx(25.0)
    assert total.l2_effectiveness == pytest.approx(0.75) and total.l2_source == "L2_MISS_COUNT"
    core = cmp.scope("core:12")
    assert core.row("IPC").other is None and core.ipc_improvement is None and core.l2_effectiveness is None
    assert [s.scope for s in compare_runs(base, other, info=INFO, scopes=["core"]).scopes] == ["core:12"]


def test_l2_effectiveness_prefers_corrected_counts() -> None:
    base = run(
        "b",
        {"total": {"L2_miss_count_corrected": 800.0}},
        counts={"total": {"L2_MISS_COUNT": 1000.0}},
    )
    other = run(
        "o", {"total": {"L2_miss_count_corrected": 600.0}}, counts={"total": {"L2_MISS_COUNT": 900.0}}
    )
    total = compare_runs(base, other).scope("total")
    assert total.l2_effectiveness == pytest.approx(600 / 800) and total.l2_source == "L2_miss_count_corrected"


def test_l2_effectiveness_corrected_only_from_the_profile_metric() -> None:
    """compare has no errata formula of its own: without the metric on both sides, raw counts are used."""
    base = run(
        "b", {"total": {"L2_miss_count_corrected": 800.0}}, counts={"total": {"L2_MISS_COUNT": 1000.0}}
    )
    other = run(
        "o",
        {"total": {}},
        counts={
            "total": {
                "L2_MISS_COUNT": 900.0,
                "L2D_CACHE_SWAP_LOCAL": 200.0,
                "L2_PIPE_COMP_PF_L2MIB_MCH": 100.0,
            }
        },
    )
    total = compare_runs(base, other).scope("total")
    assert total.l2_effectiveness == pytest.approx(900 / 1000) and total.l2_source == "L2_MISS_COUNT"


def test_renderers() -> None:
    base = run("base", {"total": {"IPC": 0.8, "L1D_miss_rate": None}})
    other = run("tuned", {"total": {"IPC": 1.0, "L1D_miss_rate": 0.04}})
    cmp = compare_runs(base, other, info=INFO)
    text = render_text(cmp)
    assert "Metric" in text and "Baseline" in text and "Improvement" in text
    ipc_line = next(line for line in text.splitlines() if line.startswith("IPC "))
    assert "0.8000" in ipc_line and "+0.2000" in ipc_line and "+25.00%" in ipc_line
    miss_line = next(line for line in text.splitlines() if line.startswith("L1D_miss_rate"))
    assert miss_line.split()[1:5] == ["ratio", "n/a", "0.04000", "n/a"]  # unit, base, other, delta
    assert "IPC_improvement: +25.00 %" in text
    rows = list(csv.DictReader(io.StringIO(render_csv(cmp))))
    ipc = next(r for r in rows if r["metric"] == "IPC")
    assert float(ipc["delta"]) == pytest.approx(0.2) and ipc["better"] == "higher"
    assert next(r for r in rows if r["metric"] == "L1D_miss_rate")["baseline"] == ""
    assert float(next(r for r in rows if r["metric"] == "IPC_improvement")["value"]) == pytest.approx(25.0)
    md = render_markdown(cmp)
    assert "### total" in md and "| IPC | inst/cycle | 0.8000 | 1.000 | +0.2000 |" in md
    data = json.loads(json.dumps(cmp.to_json(), allow_nan=False))
    assert data["schema"] == "sectormon/compare/2"
    assert data["scopes"]["total"]["metrics"]["L1D_miss_rate"]["base"] is None
    assert data["scopes"]["total"]["IPC_improvement"] == pytest.approx(25.0)


def test_run_metrics_from_frame_scopes() -> None:
    def scope(ipc: float) -> ScopeStats:
        return ScopeStats(counts={"CYCLES": 10.0}, rates={}, metrics={"IPC": ipc}, coverage={"IPC": 0.5})

    window = WindowStats(
        seconds=5.0, total=scope(1.0), cmgs={"1": scope(2.0), "0": scope(3.0)}, cores={"12": scope(4.0)}
    )
    from sectormon.data.frames import Frame

    frame = Frame(
        t=5, interval=1, overhead=0, total=scope(0), cmgs={}, cores={}, threads={}, recent=window, run=window
    )
    rm = run_metrics_from_frame(frame, label="x")
    assert rm.scopes() == ("total", "cmg:0", "cmg:1", "core:12")
    assert rm.metrics["cmg:1"]["IPC"] == 2.0 and rm.coverage["core:12"]["IPC"] == 0.5
    assert rm.counts["total"]["CYCLES"] == 10.0 and rm.kind == "recording"


# ------------------------------------------------------------------------------- fapp directories


def _pa(dir_: Path, n: int) -> list[dict[str, str]]:
    with (dir_ / f"pa{n}.csv").open() as f:
        return list(csv.DictReader(f))


def test_compare_two_fapp_directories(fapp_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sectormon.fapp.analysis")
    base_dir, other_dir = fapp_dir / "axhelm2.29503716.0", fapp_dir / "axhelm2.29503716.1"
    assert cli.main(["compare", str(base_dir), str(other_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["base"]["kind"] == "fapp" and data["other"]["label"] == "axhelm2.29503716.1"

    # Thread 0's IPC by hand from pa1 (EFFECTIVE_INST_SPEC 0x0121 / PMCCNTR), as the CPU PA report.
    def ipc0(d: Path) -> float:
        row = _pa(d, 1)[0]
        return int(row["0x0121"]) / int(row["PMCCNTR"])

    b, o = ipc0(base_dir), ipc0(other_dir)
    t0 = data["scopes"]["thread:0"]
    assert t0["metrics"]["report:IPC"]["base"] == pytest.approx(b)
    assert t0["metrics"]["report:IPC"]["delta"] == pytest.approx(o - b)
    assert t0["metrics"]["report:IPC"]["improvement"] == pytest.approx(o - b)  # higher is better
    # Section 3's IPC needs INST_RETIRED, which the CPU PA sets lack: the report's, and it says so.
    assert t0["metrics"]["IPC"]["base"] is None
    assert t0["IPC_improvement"] == pytest.approx((o - b) / b * 100)
    assert t0["IPC_improvement_source"] == "report:IPC"

    # L2 effectiveness by hand: errata-corrected L2 miss count (pa16: 0x309 - 0x396 - 0x370), CMG total.
    def l2(d: Path) -> int:
        return sum(int(r["0x0309"]) - int(r["0x0396"]) - int(r["0x0370"]) for r in _pa(d, 16))

    total = data["scopes"]["total"]
    assert total["L2_effectiveness"] == pytest.approx(l2(other_dir) / l2(base_dir))
    assert total["L2_effectiveness_source"] == "L2_miss_count_corrected"

    # Every delta is other - base; metrics one side lacks are n/a (None), never 0.
    for scope in data["scopes"].values():
        for m in scope["metrics"].values():
            if m["base"] is None or m["other"] is None:
                assert m["delta"] is None and m["improvement"] is None
            else:
                assert m["delta"] == pytest.approx(m["other"] - m["base"])
    mem = total["metrics"]["mem_stall_rate"]
    assert mem["better"] == "lower" and mem["improvement"] == pytest.approx(mem["base"] - mem["other"])

    # Fujitsu's report metrics compare by their own direction, with the unit their name gives: the
    # baseline is the expected report's CMG total, the other run was 2.0 s faster.
    expected = json.loads((fapp_dir / "expected" / "axhelm2.29503716.0.json").read_text())["cmg_total"]
    for name, better, unit in [
        ("Execution time (s)", "lower", "s"),
        ("Power total (W)", "lower", "W"),
        ("L2 miss rate", "lower", ""),
        ("GFLOPS", "higher", "GFLOP/s"),
        ("IPC", "higher", "instructions/cycle"),
        ("Memory throughput (GB/s)", "none", "GB/s"),
    ]:
        row = total["metrics"][f"report:{name}"]
        base = expected[name]
        assert (row["better"], row["unit"]) == (better, unit) and row["base"] == pytest.approx(base, rel=1e-9)
        want = {"lower": base - row["other"], "higher": row["other"] - base, "none": None}[better]
        assert row["improvement"] == (None if want is None else pytest.approx(want)), name
    assert total["metrics"]["report:Execution time (s)"]["improvement"] == pytest.approx(2.018801, abs=1e-6)

    assert cli.main(["compare", str(base_dir), str(other_dir), "--scope", "total"]) == 0
    text = capsys.readouterr().out
    assert "  total" in text and "thread:0" not in text and "IPC_improvement" in text


def _two_regions(src: Path, dst: Path) -> Path:
    """A copy of a fapp directory whose CSVs hold its region and a second one, ``twice``, with
    every count doubled (as a profiled program with two instrumented regions exports them)."""
    dst.mkdir()
    for csv_path in src.glob("pa*.csv"):
        lines = csv_path.read_text().splitlines()
        extra = []
        for line in lines[1:]:
            cells = line.split(",")
            if cells[0] == "FAPP-cpupa":
                cells[5], cells[6] = "twice", "1"
                cells[10:] = [str(2 * int(c)) if c.isdigit() else c for c in cells[10:]]
                extra.append(",".join(cells))
        (dst / csv_path.name).write_text("\n".join([*lines, *extra]) + "\n")
    if (src / "info.json").exists():
        (dst / "info.json").write_text((src / "info.json").read_text())
    return dst


def test_compare_picks_the_region_of_multi_region_fapp_directories(
    fapp_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error said 'choose one with --region', which compare did not have."""
    both = _two_regions(fapp_dir / "axhelm2.29503716.0", tmp_path / "both")
    assert cli.main(["compare", str(both), str(both)]) == 2
    assert "choose one with --region" in capsys.readouterr().err
    assert (
        cli.main(
            ["compare", str(fapp_dir / "axhelm2.29503716.0"), str(both), "--region", "axhelm2", "--json"]
        )
        == 0
    )
    same = json.loads(capsys.readouterr().out)["scopes"]["total"]["metrics"]
    assert {m["delta"] for m in same.values()} <= {0.0, None}  # the same region's data
    # Two regions of one run: every count of 'twice' is doubled, its time is the same.
    assert cli.main(["compare", str(both), str(both), "--region", "axhelm2,twice", "--json"]) == 0
    twice = json.loads(capsys.readouterr().out)["scopes"]["total"]["metrics"]
    assert twice["report:Execution time (s)"]["delta"] == 0.0
    gflops = twice["report:GFLOPS"]
    assert gflops["other"] == pytest.approx(2 * gflops["base"], rel=1e-12)
    assert cli.main(["compare", str(both), str(both), "--region", "nope"]) == 2
    assert "no region 'nope'" in capsys.readouterr().err
    rec = _recording(tmp_path / "r.jsonl", 100, 200)
    assert cli.main(["compare", str(rec), str(rec), "--region", "x"]) == 2  # a recording's marked region
    assert "--region x: " + str(rec) + " has no such region; it marked none" in capsys.readouterr().err
    assert cli.main(["compare", str(both), str(both), "--region", "a,b,c"]) == 2
    assert "give NAME (both sides) or BASE_NAME,OTHER_NAME" in capsys.readouterr().err


def test_compare_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", str(tmp_path / "nope"), str(tmp_path)]) == 2
    assert "no such file or directory" in capsys.readouterr().err


# ------------------------------------------------------------------------------ recordings, by hand


def _recording(path: Path, inst: int, cycles: int, slices: int = 100) -> Path:
    """A generic-profile recording where IPC is exactly inst/cycles on one bound thread."""
    pytest.importorskip("sectormon.metrics.engine")
    from sectormon.profiles.codec import profile_to_dict
    from sectormon.profiles.resolve import load_profile
    from tests.io.recording_synth import header

    hdr = header(profile_to_dict(load_profile("generic")))
    te = 20_000_000
    with RecordingWriter(path, hdr) as w:
        for i in range(slices):
            group = "HW1" if i % 2 == 0 else "SW1"
            counts = (
                {"CYCLES": cycles, "INSTRUCTIONS": inst, "CACHE_REFERENCES": 1000, "CACHE_MISSES": 100}
                if group == "HW1"
                else {"TASK_CLOCK": te, "PAGE_FAULTS": 5}
            )
            reading = row("thread:7", 0, 0, group, te, te, counts)
            w.write_slice(Slice(t=(i + 1) * 0.02, index=i, duration=0.02, group=group, rows=(reading,)))
        w.write_mark(Mark(t=slices * 0.02, kind="end"))
    return path


def test_compare_two_recordings_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _recording(tmp_path / "base.jsonl", inst=1_000_000, cycles=2_000_000)
    other = _recording(tmp_path / "sector.jsonl.gz", inst=1_500_000, cycles=2_000_000)
    assert cli.main(["compare", str(base), str(other), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["base"]["kind"] == "recording" and set(data["scopes"]) >= {"total", "cmg:0", "core:0"}
    for scope in ("total", "cmg:0", "core:0"):
        s = data["scopes"][scope]
        ipc = s["metrics"]["IPC"]
        assert ipc["base"] == pytest.approx(0.5) and ipc["other"] == pytest.approx(0.75)
        assert ipc["delta"] == pytest.approx(0.25) and ipc["improvement"] == pytest.approx(0.25)
        assert ipc["relative"] == pytest.approx(0.5)
        assert s["IPC_improvement"] == pytest.approx(50.0)
        miss = s["metrics"]["cache_miss_rate"]
        assert miss["base"] == pytest.approx(0.1) and miss["delta"] == pytest.approx(0.0)
        assert miss["better"] == "lower"
        assert s["L2_effectiveness"] is None  # no L2 miss events in the generic profile: n/a
    assert cli.main(["compare", str(base), str(other), "--markdown"]) == 0
    assert "### core:0" in capsys.readouterr().out


def test_unknown_scope_is_a_usage_error_naming_the_choices() -> None:
    from sectormon.compare.runs import compare_runs
    from sectormon.data.run_metrics import RunMetrics
    from sectormon.errors import UsageError

    run = RunMetrics(label="a", kind="recording", metrics={"total": {"IPC": 1.0}, "cmg:0": {"IPC": 1.0}})
    with pytest.raises(UsageError, match=r"--scope bogus: no such scope .* cmg, total"):
        compare_runs(run, run, scopes=["bogus"])
    assert [s.scope for s in compare_runs(run, run, scopes=["cmg"]).scopes] == ["cmg:0"]
