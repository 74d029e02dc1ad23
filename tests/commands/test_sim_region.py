"""``sim --summary --region NAME`` (sectormon/commands/sim_region.py): one marked region's counts and
metrics instead of the whole run's, a kernel's measured phase or a workload's marked regions; an
unknown region is one line naming the regions seen, exit 2; the frames of a marked workload carry
its regions."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from sectormon import cli
from sectormon.sim.kernels import KernelSpec
from sectormon.sim.stream import Chunks, Record, RegionMark
from sectormon.sim.workload import Workload, kernel_workload
from sectormon.sources.sim import source as sim_source

# Three threads, one per CMG; the warm-up short enough for a small workload (a test sets its own).
KERNEL = ("--kernel", "scenario-a", "--size", "passes=60", "--threads", "3", "--warmup", "10e-6")
CLOCKED = {"EA_L2", "EA_MEMORY"}  # a CMG's static energy: the whole run counts an idle CMG's too


def _sim(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert cli.main(["sim", *argv]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _marked(stream: Callable[[], Chunks]) -> Callable[[], Chunks]:
    """The kernel's stream inside region "solve", every other chunk also in region ("step", 1)."""

    def marked() -> Iterator[list[Record] | RegionMark]:
        yield RegionMark(True, "solve")
        for i, chunk in enumerate(stream()):
            step = i % 2 == 1
            if step:
                yield RegionMark(True, "step", 1)
            yield chunk
            if step:
                yield RegionMark(False, "step", 1)
        yield RegionMark(False, "solve")

    return lambda: cast(Chunks, marked())


@pytest.fixture
def marked_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels whose threads mark regions, as a traced program's marker calls do."""

    def workload(kernel: KernelSpec, threads: int, tag_override: bool, prefetch: bool) -> Workload:
        plain = kernel_workload(kernel, threads, tag_override, prefetch)
        return replace(plain, specs=tuple(replace(s, stream=_marked(s.stream)) for s in plain.specs))

    monkeypatch.setattr(sim_source, "kernel_workload", workload)


def test_a_kernels_region_is_its_measured_phase(capsys: pytest.CaptureFixture[str]) -> None:
    (region,) = _sim(capsys, "--summary", "--region", "scenario-a", *KERNEL)
    (whole,) = _sim(capsys, "--summary", *KERNEL)
    assert (region["region"], region["calls"], region["open"]) == ("scenario-a", 3, False)
    assert "region" not in whole
    assert {k: v for k, v in region["counts"].items() if k not in CLOCKED} == {
        k: v for k, v in whole["counts"].items() if k not in CLOCKED
    }
    assert all(region["counts"][k] <= whole["counts"][k] for k in CLOCKED)
    assert region["threads"] == whole["threads"] and region["objects"] == whole["objects"]
    assert region["metrics"]["IPC"] == whole["metrics"]["IPC"]
    assert 0 < region["seconds"] <= whole["seconds"]


@pytest.mark.usefixtures("marked_kernel")
def test_a_marked_regions_summary(capsys: pytest.CaptureFixture[str]) -> None:
    options = (*KERNEL, "--warmup", "0")
    (whole,) = _sim(capsys, "--summary", *options)
    (solve,) = _sim(capsys, "--summary", "--region", "solve", *options)
    (step,) = _sim(capsys, "--summary", "--region", "step", *options)  # the one number of "step"
    assert solve["region"] == "solve" and step["region"] == "step#1"
    assert _sim(capsys, "--summary", "--region", "step#1", *options) == [step]
    assert solve["counts"]["L1D_CACHE"] == whole["counts"]["L1D_CACHE"]
    assert solve["counts"]["INST_RETIRED"] == whole["counts"]["INST_RETIRED"]
    assert 0 < step["counts"]["L1D_CACHE"] < solve["counts"]["L1D_CACHE"]
    assert solve["calls"] == 3 and step["calls"] % 3 == 0 and step["calls"] > 3
    for summary in (solve, step):
        objects = summary["objects"]
        assert sum(o["accesses"] for o in objects.values()) == summary["counts"]["L1D_CACHE"]
        assert (
            sum(o["l1d_demand_refills"] for o in objects.values()) == summary["counts"]["L1D_CACHE_REFILL_DM"]
        )
        threads = summary["threads"].values()
        assert sum(t["counts"]["L1D_CACHE"] for t in threads) == summary["counts"]["L1D_CACHE"]
        assert summary["metrics"]["IPC"] == pytest.approx(
            summary["counts"]["INST_RETIRED"] / summary["counts"]["CPU_CYCLES"]
        )


@pytest.mark.usefixtures("marked_kernel")
def test_the_frames_of_a_marked_workload_carry_its_regions(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _sim(capsys, "--json", *KERNEL, "--warmup", "0")
    regions = [x for x in lines if x["schema"].startswith("sectormon/frame/")][-1]["run"]["regions"]
    assert list(regions) == ["scenario-a", "solve", "step#1"]
    assert (regions["solve"]["calls"], regions["solve"]["thread_count"], regions["solve"]["open"]) == (
        3,
        3,
        False,
    )
    assert set(regions["step#1"]["total"]["coverage"].values()) == {1.0}


@pytest.mark.usefixtures("marked_kernel")
def test_marked_regions_replay_as_live_and_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {sectors: tmp_path / f"{sectors}.jsonl.gz" for sectors in ("off", "on")}
    live = {
        sectors: _sim(capsys, "--json", *KERNEL, "--sector-cache", sectors, "--record", str(path))
        for sectors, path in runs.items()
    }
    assert cli.main(["replay", "--json", str(runs["on"])]) == 0
    replayed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert replayed[-1]["run"]["regions"] == live["on"][-1]["run"]["regions"]
    assert cli.main(["compare", str(runs["off"]), str(runs["on"]), "--region", "step", "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)["scopes"]["total"]["metrics"]["L1D_demand_refill_ratio"]
    assert compared["base"] > compared["other"]  # the reused array keeps its ways inside "step" too
    assert (compared["coverage_base"], compared["coverage_other"]) == (1, 1)


def test_a_trace_marks_no_region(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.din"
    trace.write_text("0 1000\n0 2000\n")
    assert cli.main(["sim", "--summary", "--trace", str(trace), "--region", "solve"]) == 2
    assert capsys.readouterr().err == (
        "sectormon: --region solve: a --trace marks no region (it holds a program's accesses, "
        "not its marker calls); drop --region\n"
    )


@pytest.mark.usefixtures("marked_kernel")
def test_an_unknown_region_names_the_regions_seen(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sim", "--summary", "--region", "nope", *KERNEL]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "sectormon: --region nope: the simulated run has no such region; "
        "its regions: scenario-a, solve, step#1\n"
    )


def test_region_goes_with_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sim", "--json", "--region", "scenario-a", *KERNEL]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "--region scenario-a picks the region --summary or --advise reports" in err
    )


def test_the_advisor_follows_the_region(capsys: pytest.CaptureFixture[str]) -> None:
    """The advisor ranks on summarize(), which reports the region: an unknown one stops it at once."""
    assert cli.main(["sim", "--advise", "--region", "nope", "--budget", "1", *KERNEL]) == 2
    assert (
        "--region nope: the simulated run has no such region; its regions: scenario-a"
        in capsys.readouterr().err
    )


@pytest.mark.usefixtures("marked_kernel")
def test_the_advisors_rows_carry_the_region_they_rank(capsys: pytest.CaptureFixture[str]) -> None:
    """Each row's options, run with --summary, give the row's figures: the region's, so they name it."""
    (advice,) = _sim(capsys, "--advise", "--region", "step#1", "--budget", "2", "--json", *KERNEL)
    assert advice["region"] == "step#1"
    assert advice["baseline"]["options"][-2:] == ["--region", "step#1"]
    assert advice["rows"] and all(row["options"][-2:] == ["--region", "step#1"] for row in advice["rows"])
    (row,) = advice["rows"][:1]
    (direct,) = _sim(capsys, "--summary", *row["options"], *KERNEL)
    assert direct["region"] == "step#1"
    assert {m: direct["metrics"].get(m) for m in row["metrics"]} == row["metrics"]
