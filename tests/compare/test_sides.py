"""compare of unlike runs: other profiles or sources are said at the top and in ``warnings``, no
common metric is one error line, and every column of a table keeps one number format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.data.readings import Mark, Slice
from sectormon.io import RecordingWriter
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.resolve import load_profile
from tests.io.recording_synth import header
from tests.rows import row

REPO = Path(__file__).resolve().parent.parent.parent
SIM_OFF = REPO / "recordings" / "scenario-a-sectors-off.jsonl.gz"
SIM_ON = REPO / "recordings" / "scenario-a-sectors-on.jsonl.gz"


def _generic_perf_recording(path: Path, *, groups: tuple[str, ...] = ("HW1", "SW1")) -> Path:
    """A generic-profile recording counted by perf: one thread, IPC 0.5 when HW1 is among ``groups``."""
    hdr = header(profile_to_dict(load_profile("generic")))
    hdr["source"] = {"kind": "perf"}
    te = 20_000_000
    counts = {
        "HW1": {
            "CYCLES": 2_000_000,
            "INSTRUCTIONS": 1_000_000,
            "CACHE_REFERENCES": 1000,
            "CACHE_MISSES": 100,
        },
        "SW1": {"TASK_CLOCK": te, "PAGE_FAULTS": 5},
    }
    with RecordingWriter(path, hdr) as w:
        for i in range(20):
            group = groups[i % len(groups)]
            reading = row("thread:7", 0, 0, group, te, te, counts[group])
            w.write_slice(Slice(t=(i + 1) * 0.02, index=i, duration=0.02, group=group, rows=(reading,)))
        w.write_mark(Mark(t=20 * 0.02, kind="end"))
    return path


def test_other_profiles_and_sources_are_warned_at_the_top_and_in_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A generic perf recording against an a64fx sim recording ran with exit 0 and no word."""
    generic = _generic_perf_recording(tmp_path / "generic.jsonl")
    assert cli.main(["compare", str(generic), str(SIM_ON), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    profiles, sources = data["warnings"][:2]
    assert profiles.startswith("different profiles: generic.jsonl uses generic, ")
    assert "scenario-a-sectors-on.jsonl.gz uses a64fx" in profiles
    assert sources.startswith("different sources: generic.jsonl is counted by perf, ")
    assert "scenario-a-sectors-on.jsonl.gz is the simulated A64FX" in sources
    assert data["scopes"]["total"]["metrics"]["IPC"]["base"] == pytest.approx(0.5)  # IPC: in both
    assert cli.main(["compare", str(generic), str(SIM_ON)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[2] == f"warning: {profiles}" and lines[3] == f"warning: {sources}"
    assert captured.out.count(profiles) == 1  # not said again at the end
    assert f"sectormon: warning: {profiles}" in captured.err  # stdout is not a terminal here
    assert cli.main(["compare", str(generic), str(SIM_ON), "--markdown"]) == 0
    assert "**Warning:** different profiles" in capsys.readouterr().out


def test_alike_sides_have_no_such_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", str(SIM_OFF), str(SIM_ON), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not [w for w in data["warnings"] if w.startswith("different ")]


def test_no_common_metric_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generic = _generic_perf_recording(tmp_path / "sw.jsonl", groups=("SW1",))  # no CYCLES: no IPC
    assert cli.main(["compare", str(generic), str(SIM_ON)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"sectormon: {generic} and {SIM_ON}: no metric has a value on both sides")
    assert "profiles generic and a64fx" in err[0]


def test_the_report_reads_in_plain_decimals_with_both_runs_named(capsys: pytest.CaptureFixture[str]) -> None:
    """Large values (energy_total, 6.8e+07) and small ones read alike: no e-notation, four
    significant digits, thousands separators; the column titles name the two runs."""
    assert cli.main(["compare", str(SIM_OFF), str(SIM_ON), "--scope", "total"]) == 0
    text = capsys.readouterr().out
    assert not re.search(r"\d[eE][+-]?\d", text), text
    energy = next(line for line in text.splitlines() if line.startswith("energy_total "))
    assert energy.split()[2:6] == ["68,050,152", "60,890,434", "-7,159,719", "+7,159,719"]
    l1d = next(line for line in text.splitlines() if line.startswith("L1D_miss_rate "))
    assert l1d.split()[2:4] == ["0.2526", "0.1250"]
    titles = next(line for line in text.splitlines() if line.startswith("Metric "))
    assert titles.split()[2:4] == [
        SIM_OFF.name.removesuffix(".jsonl.gz"),
        SIM_ON.name.removesuffix(".jsonl.gz"),
    ]
    assert "CPU_CYCLES" in text and "20,770,527" in text  # the absolute counts beside the rates
