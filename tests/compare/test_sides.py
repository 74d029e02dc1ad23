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


def _columns(text: str) -> list[tuple[list[str], list[str]]]:
    """Per table: the Baseline/Sector cells and the Delta/Improvement cells."""
    tables: list[tuple[list[str], list[str]]] = []
    inside = False
    for line in text.splitlines():
        if line and set(line) == {"-"}:
            tables.append(([], []))
            inside = True
        elif line.startswith(("(", "IPC_improvement")):
            inside = False
        elif inside:
            cells = line.split()
            tables[-1][0].extend(cells[-7:-5])
            tables[-1][1].extend(cells[-5:-3])
    return tables


def _kind(cell: str) -> str:
    return "sci" if re.fullmatch(r"[+-]?\d\.\d{6}e[+-]\d\d", cell) else "fixed"


def test_one_number_format_per_column(capsys: pytest.CaptureFixture[str]) -> None:
    """Large values (energy_total, 6.8e+07) and changes (-7.1e+06) share the column format of small ones."""
    assert cli.main(["compare", str(SIM_OFF), str(SIM_ON), "--scope", "total"]) == 0
    tables = _columns(capsys.readouterr().out)
    assert len(tables) == 1
    values, changes = tables[0]
    assert len(values) > 60 and len(changes) > 60
    for column in (values, changes):
        cells = [c for c in column if c != "n/a"]
        assert len({_kind(c) for c in cells}) == 1, cells
        if _kind(cells[0]) == "fixed":
            assert all(re.fullmatch(r"[+-]?\d+\.\d{6}", c) for c in cells), cells
    assert "6.805015e+07" in values and "-7.159719e+06" in changes
