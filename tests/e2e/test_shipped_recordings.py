"""The shipped recordings: simulated Scenario A with the sector cache off and on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon

pytestmark = pytest.mark.e2e

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
OFF = RECORDINGS / "scenario-a-sectors-off.jsonl.gz"
ON = RECORDINGS / "scenario-a-sectors-on.jsonl.gz"


@pytest.mark.parametrize("path", [OFF, ON], ids=["off", "on"])
def test_shipped_recording_replays_and_says_it_is_simulated(path: Path) -> None:
    proc = run_sectormon("replay", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    records = read_jsonl(proc.stdout)
    header, frames = records[0], records[1:]
    assert header["source"]["kind"] == "sim" and header["source"]["simulated"] is True
    assert header["cpu"] == "simulated A64FX"
    assert len(frames) >= 10 and frames[-1]["final"] is True
    assert frames[-1]["total"]["metrics"]["IPC"] > 0


def test_compare_shows_the_sector_cache_effect_of_scenario_a() -> None:
    proc = run_sectormon("compare", str(OFF), str(ON), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    text = json.dumps(result)
    assert "L1D_demand_refill_ratio" in text
    total = _scope(result, "total")
    # PMU document section 5, Scenario A: fewer demand refills and fewer load stalls with sectors on
    assert total["L1D_demand_refill_ratio"]["improvement"] > 0.1
    assert total["total_ld_stall_rate"]["improvement"] > 0.05
    assert total["IPC"]["improvement"] > 0


def _scope(result: dict[str, object], name: str) -> dict[str, dict[str, float]]:
    scopes = result["scopes"]
    assert isinstance(scopes, dict)
    metrics: dict[str, dict[str, float]] = scopes[name]["metrics"]
    return metrics
