"""Regions from live sessions to compare, merge, replay and the OpenMetrics endpoint: the marked
program of tests/regions, recorded twice as two nodes, gives the live final frames' region numbers
through each of them."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon, wait_until
from tests.e2e.openmetrics_helpers import Samples, frame_time, scrape, start_serving
from tests.regions.regions_helpers import PROGRAMS, build, need_perf

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REGION = "fapp_pages#1"
HOSTS = ("nodeA", "nodeB")


class Runs:
    """Two recorded runs of the marked program and their live final frames."""

    def __init__(self, folder: Path) -> None:
        program = build(PROGRAMS / "marked.c", folder / "marked", "-DLIKWID_PERFMON")
        self.recordings: list[Path] = []
        self.finals: list[dict[str, Any]] = []
        for host in HOSTS:
            recording = folder / f"{host}.jsonl.gz"
            env = {**os.environ, "SECTORMON_HOST": host}
            # 0.1 s frames; the program idles 0.5 s after its regions, so a replay at 1/50 lasts
            # the test's scrapes out (a run ends when its command does)
            args = ("--json", "--interval", "0.1", "--record", str(recording), "--", str(program), "0.5")
            done = run_sectormon(*args, env=env)
            assert done.returncode == 0, done.stderr
            self.recordings.append(recording)
            self.finals.append(read_jsonl(done.stdout)[-1])

    def region(self, side: int, label: str = REGION) -> dict[str, Any]:
        final = self.finals[side]
        assert final["final"]
        region: dict[str, Any] = final["run"]["regions"][label]
        return region


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    need_perf()
    return Runs(tmp_path_factory.mktemp("marked"))


def test_compare_region_gives_the_live_region_numbers(runs: Runs) -> None:
    base, other = map(str, runs.recordings)
    done = run_sectormon("compare", base, other, "--region", REGION, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["base"]["info"]["region"] == REGION and report["base"]["info"]["calls"] == 4
    total = report["scopes"]["total"]["metrics"]
    for side, key in ((0, "base"), (1, "other")):
        live = runs.region(side)
        assert report[key]["info"]["seconds"] == live["seconds"]
        for metric, value in live["total"]["metrics"].items():
            assert total[metric][key] == value, metric
        assert live["total"]["counts"]["PAGE_FAULTS"] == pytest.approx(24000, rel=0.01)
    rate = total["page_fault_rate"]
    assert rate["delta"] == pytest.approx(rate["other"] - rate["base"])
    assert rate["improvement"] == pytest.approx(-rate["delta"])  # lower is better
    # the name alone names it (one number of it was marked); the text report says which
    text = run_sectormon("compare", base, other, "--region", "fapp_pages")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].startswith(
        f"Baseline: {runs.recordings[0].name} (recording), region {REGION}, "
    )


def test_a_region_one_run_lacks_is_one_line_naming_the_run_and_its_regions(runs: Runs) -> None:
    base, other = map(str, runs.recordings)
    done = run_sectormon("compare", base, other, "--region", "solve")
    assert done.returncode == 2 and done.stdout == ""
    said = [line for line in done.stderr.splitlines() if "warning" not in line]
    regions = "fapp_pages#1, likwid_pages, worker"
    assert said == [f"sectormon: --region solve: {base} has no such region; its regions: {regions}"]


def test_a_merged_job_replays_and_compares_the_regions_per_node(runs: Runs, tmp_path: Path) -> None:
    job = tmp_path / "job.jsonl.gz"
    merged = run_sectormon("merge", *map(str, runs.recordings), "-o", str(job))
    assert merged.returncode == 0, merged.stderr
    replay = run_sectormon("replay", "--json", str(job))
    assert replay.returncode == 0, replay.stderr
    final = read_jsonl(replay.stdout)[-1]
    region = final["run"]["regions"][REGION]
    assert region["calls"] == 8 and set(region["nodes"]) == set(HOSTS)
    live = [runs.region(side)["total"]["counts"]["PAGE_FAULTS"] for side in (0, 1)]
    assert [region["nodes"][host]["counts"]["PAGE_FAULTS"] for host in HOSTS] == live
    assert region["total"]["counts"]["PAGE_FAULTS"] == pytest.approx(sum(live))
    workers = final["run"]["regions"]["worker"]
    assert workers["thread_count"] == 6 and all(k.startswith("node:") for k in workers["threads"])
    done = run_sectormon("compare", str(job), str(job), "--region", "worker", "--json")
    assert done.returncode == 0, done.stderr
    scopes = json.loads(done.stdout)["scopes"]
    assert {f"node:{host}" for host in HOSTS} <= set(scopes)
    assert scopes["total"]["metrics"]["page_fault_rate"]["delta"] == 0.0


def test_replay_serves_the_regions_its_json_frames_carry(runs: Runs) -> None:
    recording = str(runs.recordings[0])  # played at 1/50: its 0.6 s last the test's scrapes out
    frames = [
        f for f in read_jsonl(run_sectormon("replay", "--json", recording).stdout)[1:] if not f["final"]
    ]
    proc, url = start_serving(["replay", recording, "--headless", "--openmetrics", "0", "--speed", "0.02"])

    def region_series(samples: Samples, name: str, **labels: str) -> list[float]:
        wanted = {"region": REGION, **labels}.items()
        return [v for (n, ls), v in samples.items() if n == name and wanted <= dict(ls).items()]

    def with_region() -> Samples | None:
        samples = scrape(url)
        return samples if region_series(samples, "sectormon_region_calls_total") else None

    try:
        samples = wait_until(with_region, "a scrape with the region's calls")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    t = frame_time(samples)
    moved = [f["regions"][REGION] for f in frames if f["t"] <= (t or 0.0) and REGION in f.get("regions", {})]
    assert region_series(samples, "sectormon_region_calls_total") == [sum(r["calls"] for r in moved)]
    faults = region_series(samples, "sectormon_events_total", scope="total", event="PAGE_FAULTS")
    assert faults == [pytest.approx(sum(r["total"]["counts"]["PAGE_FAULTS"] for r in moved))]
    shown = next(f for f in frames if f["t"] == t)
    # the gauges are the last interval's: absent when the region did not run in it
    interval = shown.get("regions", {}).get(REGION)
    got = region_series(samples, "sectormon_page_fault_rate_per_second", scope="total")
    assert got == ([] if interval is None else [interval["total"]["metrics"]["page_fault_rate"]])
