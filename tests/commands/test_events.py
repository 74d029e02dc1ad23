"""``sectormon events``: the catalog as a table and as JSON, with and without a (faked) probe."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.perf.probe import ProbeResult
from tests.e2e.helpers import sectormon_command

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs"


def roots(name: str) -> list[str]:
    return ["--sysfs-root", str(FIXTURES / name / "sys"), "--procfs-root", str(FIXTURES / name / "proc")]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_catalog_of_the_a64fx(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["events", "--json", *roots("fx1000")], capsys)
    assert code == 0
    record = json.loads(out)
    assert record["schema"] == "sectormon/events/1"
    assert record["profile"]["name"] == "a64fx" and record["profile"]["counters"] == 8
    events = {e["name"]: e for e in record["events"]}
    assert events["CPU_CYCLES"]["groups"] == ["SC1", "SC2", "SC3", "SC4", "SC5", "SC6"]
    assert events["CPU_CYCLES"]["code_hex"] == "0x0011" and events["CPU_CYCLES"]["spec"] == "r11"
    assert events["EA_L2"] == {
        "name": "EA_L2",
        "code": 0x3E0,
        "code_hex": "0x03e0",
        "spec": "r3e0",
        "scope": "cmg",
        "unit": "count",
        "groups": ["SC5"],
        "nj_per_count": 32.0,
        "description": events["EA_L2"]["description"],
    }
    assert events["L1_PIPE0_VAL_IU_TAG_ADRS_PFE"]["groups"] == []
    assert "probe" not in events["CPU_CYCLES"]
    assert [g["name"] for g in record["groups"]] == ["SC1", "SC2", "SC3", "SC4", "SC5", "SC6"]
    assert any(m["name"] == "IPC" for m in record["metrics"])


def test_text_table_with_probe(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def probe(events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True) -> dict[str, ProbeResult]:
        return {
            name: ProbeResult(name, "counts" if name.startswith("TASK") else "unsupported")
            for name, _ in events
        }

    monkeypatch.setattr("sectormon.perf.probe.probe_events", probe)
    code, out, _ = run(["events", "--probe", *roots("x86")], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Profile generic (builtin:generic)")
    header = lines[2]
    assert header.split() == ["CODE/SPEC", "NAME", "SCOPE", "UNIT", "GROUPS", "NJ", "HERE", "DESCRIPTION"]
    task = next(line for line in lines if line.startswith("task-clock"))
    assert task.split()[:7] == ["task-clock", "TASK_CLOCK", "pe", "ns", "SW1,SW2,SW3", "-", "counts"]
    assert task.index("counts") == header.index("HERE")
    cycles = next(line for line in lines if line.startswith("cycles "))
    assert "unsupported" in cycles
    assert any(line.split() == ["SW2", "TASK_CLOCK", "CONTEXT_SWITCHES", "CPU_MIGRATIONS"] for line in lines)


def test_json_probe_and_profile_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def probe(events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True) -> dict[str, ProbeResult]:
        return {name: ProbeResult(name, "zero", reason="opened, counted nothing") for name, _ in events}

    monkeypatch.setattr("sectormon.perf.probe.probe_events", probe)
    path = Path(__file__).resolve().parents[2] / "sectormon" / "profiles" / "a64fx.yaml"
    code, out, _ = run(["events", "--json", "--probe", "--profile", str(path), *roots("x86")], capsys)
    assert code == 0
    record = json.loads(out)
    assert record["profile"]["source"] == str(path)
    assert record["probe_error"] == ""
    assert record["events"][0]["probe"] == {"state": "zero", "value": 0, "reason": "opened, counted nothing"}


@pytest.mark.e2e
def test_e2e_events_json() -> None:
    proc = subprocess.run(
        [sectormon_command(), "events", "--json", "--profile", "a64fx"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert len(record["events"]) == 39
    assert {e["code"] for e in record["events"] if e["scope"] == "cmg"} == {
        0x308,
        0x309,
        0x370,
        0x396,
        0x3E0,
        0x3E8,
    }


@pytest.mark.e2e
def test_e2e_events_probe_on_this_host() -> None:
    proc = subprocess.run(
        [sectormon_command(), "events", "--json", "--probe", "--profile", "generic"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    states = {e["name"]: e["probe"]["state"] for e in json.loads(proc.stdout)["events"]}
    assert set(states.values()) <= {"counts", "zero", "unsupported"}
    assert states["TASK_CLOCK"] == "counts"  # a software event: every Linux host counts it


@pytest.mark.e2e
def test_e2e_events_bad_profile(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ncounters: 2\nevents: {A: {code: 1}}\ngroups: {G: {events: [A]}}\n"
        "metrics:\n  m: {formula: A / B}\n"
    )
    proc = subprocess.run(
        [sectormon_command(), "events", "--profile", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.strip() == (
        f"sectormon: {bad}:6: metric m: unknown name 'B' in formula "
        "(use an event, a constant, NJ_<EVENT>, SECONDS or an earlier metric)"
    )
