"""Marked regions through the installed command: `sectormon --json -- ./prog` counts each region
a C or Fortran program marks exactly, per thread too, with and without rotation; a recording and
its replay give the same region numbers as the live run.

The programs touch known numbers of fresh pages (tests/regions/programs): marked.c's fapp region
4 x 6,000 pages, its LIKWID region 1,500 and three pthreads 800 each; steady.c one long region at
an even pace. The page faults are software events, counted on any Linux machine.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import perf_available, read_jsonl, run_sectormon
from tests.regions.regions_helpers import FORTRAN, PROGRAMS, build, need_compiler, need_perf

pytestmark = pytest.mark.syscall

ROTATING = Path(__file__).resolve().parents[1] / "fixtures" / "profiles" / "generic-rotating.yaml"


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_perf()
    return build(PROGRAMS / "marked.c", tmp_path_factory.mktemp("marked") / "marked", "-DLIKWID_PERFMON")


def final_frame(*args: str) -> dict[str, Any]:
    run = run_sectormon("--json", *args, timeout=300)
    assert run.returncode == 0, run.stderr
    frames = [r for r in read_jsonl(run.stdout) if r.get("final")]
    assert len(frames) == 1
    return frames[0]


def faults(region: dict[str, Any]) -> float:
    return float(region["total"]["counts"]["PAGE_FAULTS"])


def test_each_region_gives_its_exact_page_faults_and_calls_per_thread(marked: Path) -> None:
    regions = final_frame("--", str(marked))["run"]["regions"]
    assert list(regions) == ["fapp_pages#1", "likwid_pages", "worker"]
    fapp, likwid, worker = regions["fapp_pages#1"], regions["likwid_pages"], regions["worker"]
    assert (fapp["calls"], fapp["thread_count"], fapp["open"]) == (4, 1, False)
    assert faults(fapp) == pytest.approx(24_000, rel=0.01)
    assert (likwid["calls"], faults(likwid)) == (1, pytest.approx(1_500, rel=0.01))
    assert (worker["calls"], worker["thread_count"]) == (3, 3)
    assert (
        sorted(s["counts"]["PAGE_FAULTS"] for s in worker["threads"].values())
        == [pytest.approx(800, rel=0.01)] * 3
    )
    assert faults(worker) == pytest.approx(2_400, rel=0.01)
    assert fapp["total"]["coverage"]["PAGE_FAULTS"] == 1.0


@pytest.mark.skipif(not perf_available(), reason="needs perf (linux-perf) allowed to count page-faults")
def test_the_whole_run_still_equals_perf_stat(marked: Path) -> None:
    ours = final_frame("--", str(marked))["run"]["total"]["counts"]["PAGE_FAULTS"]
    theirs = subprocess.run(
        ["perf", "stat", "-x,", "-e", "page-faults:u", str(marked)],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(row for row in theirs.stderr.splitlines() if "page-faults" in row)
    assert ours == pytest.approx(float(line.split(",")[0]), rel=0.02)


def test_under_sync_rotation_a_region_is_scaled_by_its_groups_share(tmp_path: Path) -> None:
    need_perf()
    steady = build(PROGRAMS / "steady.c", tmp_path / "steady")
    pages = 20_000
    frame = final_frame(
        "--rotation",
        "sync",
        "--timeslice",
        "0.01",
        "--profile",
        str(ROTATING),
        "--",
        str(steady),
        str(pages),
        "20000",
    )
    region = frame["run"]["regions"]["steady"]
    coverage = region["total"]["coverage"]["PAGE_FAULTS"]
    assert 0.0 < coverage < 0.9  # page faults share the slices with the other groups
    assert faults(region) == pytest.approx(pages, rel=0.05)


def test_a_gfortran_program_gets_its_regions_exact_faults(tmp_path: Path) -> None:
    need_perf()
    need_compiler("gfortran")
    pages = 5_000
    source = tmp_path / "kernel.f90"
    source.write_text(FORTRAN.format(pages=pages, stride=os.sysconf("SC_PAGESIZE") // 8))
    program = build(source, tmp_path / "kernel", compiler="gfortran")
    region = final_frame("--", str(program))["run"]["regions"]["kernel#1"]
    assert region["calls"] == 1 and faults(region) == pytest.approx(pages, rel=0.01)


def test_a_recording_replays_the_live_region_numbers(marked: Path, tmp_path: Path) -> None:
    recording = tmp_path / "marked.jsonl.gz"
    live = final_frame("--record", str(recording), "--", str(marked))
    with gzip.open(recording, "rt") as text:
        lines = [json.loads(line) for line in text]
    assert any(line.get("schema") == "sectormon/regions/2" for line in lines)
    replayed = run_sectormon("replay", "--json", str(recording))
    assert replayed.returncode == 0, replayed.stderr
    final = next(r for r in read_jsonl(replayed.stdout) if r.get("final"))
    assert final["run"]["regions"] == live["run"]["regions"]
