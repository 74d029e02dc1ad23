"""compare --region on recordings: one region's scopes as a run, named by label or by name alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.compare.regions import region_run_metrics, region_scopes, resolve_region
from sectormon.compare.runs import compare_runs
from sectormon.data.frames import RegionStats, ScopeStats
from sectormon.errors import UsageError
from sectormon.profiles.model import MetricDef


def scope(faults: float, seconds: float = 2.0) -> ScopeStats:
    return ScopeStats(
        counts={"PAGE_FAULTS": faults},
        rates={"PAGE_FAULTS": faults / seconds},
        metrics={"page_fault_rate": faults / seconds},
        coverage={"PAGE_FAULTS": 1.0, "page_fault_rate": 1.0},
    )


def region(name: str, number: int = 0, faults: float = 100.0, *, open_: bool = False) -> RegionStats:
    return RegionStats(
        name=name,
        number=number,
        calls=4,
        thread_count=2,
        open=open_,
        seconds=2.0,
        total=scope(faults),
        threads={"101": scope(faults / 2), "102": scope(faults / 2)},
        cores={"13": scope(faults / 2), "12": scope(faults / 2)},
        cmgs={"0": scope(faults)},
        ranks={"3": scope(faults)},
        procs={"100": scope(faults)},
    )


REGIONS = {"solve#1": region("solve", 1), "solve#2": region("solve", 2), "io": region("io")}


def test_a_region_is_its_label_or_its_name_when_one_number_of_it_was_marked() -> None:
    assert resolve_region(REGIONS, "solve#2", run="a.jsonl") == "solve#2"
    assert resolve_region(REGIONS, "io", run="a.jsonl") == "io"
    assert resolve_region({"solve#1": region("solve", 1)}, "solve", run="a.jsonl") == "solve#1"
    with pytest.raises(UsageError, match=r"a.jsonl has 2 regions of that name \(solve#1, solve#2\)"):
        resolve_region(REGIONS, "solve", run="a.jsonl")


def test_a_missing_region_names_the_run_and_the_regions_it_has() -> None:
    with pytest.raises(UsageError) as caught:
        resolve_region(REGIONS, "kernel", run="base/a.jsonl")
    assert (
        str(caught.value)
        == "--region kernel: base/a.jsonl has no such region; its regions: solve#1, solve#2, io"
    )
    with pytest.raises(UsageError, match=r"base/a\.jsonl has no such region; it marked none"):
        resolve_region({}, "kernel", run="base/a.jsonl")


def test_a_region_side_has_the_whole_run_scope_keys_but_no_threads_or_processes() -> None:
    assert list(region_scopes(REGIONS["io"])) == ["total", "cmg:0", "core:12", "core:13", "rank:3"]
    run, warnings = region_run_metrics(REGIONS, "io", label="a.jsonl", info={"seconds": 9.0, "path": "a"})
    assert warnings == []
    assert run.counts["total"] == {"PAGE_FAULTS": 100.0}
    assert run.info == {
        "path": "a",
        "seconds": 2.0,  # the region's, not the run's
        "region": "io",
        "calls": 4,
        "thread_count": 2,
        "open": False,
    }


def test_a_merged_jobs_region_keeps_its_node_keys() -> None:
    job = RegionStats(
        name="io",
        number=0,
        calls=8,
        thread_count=4,
        open=False,
        seconds=2.0,
        total=scope(200.0),
        cmgs={"node:b/cmg:0": scope(100.0), "node:a/cmg:0": scope(100.0)},
        ranks={"0": scope(100.0), "1": scope(100.0)},
        nodes={"a": scope(100.0), "b": scope(100.0)},
    )
    assert list(region_scopes(job)) == [
        "total",
        "node:a",
        "node:b",
        "node:a/cmg:0",
        "node:b/cmg:0",
        "rank:0",
        "rank:1",
    ]


def test_an_open_region_is_said() -> None:
    _, warnings = region_run_metrics(
        {"io": region("io", open_=True)}, "io", label="a.jsonl", path="runs/a.jsonl"
    )
    assert warnings == [
        "runs/a.jsonl: region io was still open at the end of the run: its counts up to then are in"
    ]


def test_two_region_sides_compare_with_the_whole_run_conventions() -> None:
    base, _ = region_run_metrics({"io": region("io", faults=100.0)}, "io", label="base")
    other, _ = region_run_metrics({"io": region("io", faults=80.0)}, "io", label="other")
    info = {"page_fault_rate": MetricDef("page_fault_rate", "", unit="1/s", better="lower")}
    row = compare_runs(base, other, info=info).scope("total").row("page_fault_rate")
    assert (row.base, row.other, row.delta, row.improvement) == (50.0, 40.0, -10.0, 10.0)
    assert row.relative == pytest.approx(0.2)


def test_a_fapp_import_holds_its_one_region(
    fapp_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An import of a fapp directory is that directory's measured region: asking for another is one line."""
    imported = tmp_path / "import.jsonl"
    assert cli.main(["import", "fapp", str(fapp_dir / "axhelm2.29503716.0"), "-o", str(imported)]) == 0
    directory = str(fapp_dir / "axhelm2.29503716.1")
    assert cli.main(["compare", directory, str(imported), "--region", "axhelm2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["other"]["kind"] == "fapp-import"
    assert cli.main(["compare", directory, str(imported), "--region", "axhelm2,solve"]) == 2
    assert f"--region solve: {imported} is a fapp import of region axhelm2 only" in capsys.readouterr().err
