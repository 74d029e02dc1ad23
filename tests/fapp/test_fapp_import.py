"""``sectormon import fapp``: the recording parses back and holds exactly the CSV counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectormon.cli import main
from sectormon.fapp.csvread import read_measurement
from sectormon.fapp.names import event_def
from sectormon.io.reader import read_recording
from sectormon.profiles.loader import profile_from_dict

STEM = "dtrn3.29503716.1"


@pytest.fixture(scope="module")
def recording(fapp_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fapp") / "dtrn3.jsonl.gz"
    assert main(["import", "fapp", str(fapp_dir / STEM), "-o", str(out)]) == 0
    return out


def test_header(recording: Path) -> None:
    rec = read_recording(recording)
    h = rec.header
    assert h["schema"] == "sectormon/recording/1"
    assert h["source"]["kind"] == "fapp"
    assert h["source"]["node_name"] == "h34-5001c"
    assert h["sector_config"] == {}
    assert set(h["options"]) >= {"interval", "timeslice"}
    profile = profile_from_dict(h["profile"])  # the embedded profile validates
    assert [g.name for g in profile.groups] == [f"pa{i}" for i in range(1, 18)]
    assert profile.group("pa1").events[0] == "CPU_CYCLES"
    assert "r80c0" in profile.events and profile.events["r80c0"].code == 0x80C0
    assert profile.events["EA_L2"].scope == "cmg"
    assert profile.metric("mem_stall_rate").group_hint == "pa6"


def test_slices_hold_the_csv_counts(fapp_dir: Path, recording: Path) -> None:
    m = read_measurement(fapp_dir / STEM)
    rec = read_recording(recording)
    slices = rec.slices
    assert [s.group for s in slices] == list(m.sets)
    assert [s.index for s in slices] == list(range(17))
    t = 0.0
    for s, event_set in zip(slices, m.sets.values(), strict=True):
        rows = event_set.rows
        mean_s = sum(r.cntvct for r in rows) / len(rows) / m.cntfrq_hz
        assert s.duration == pytest.approx(mean_s, rel=1e-12)
        t += s.duration
        assert s.t == pytest.approx(t, rel=1e-12)
        threads = {r.unit: r for r in s.readings if r.unit.startswith("thread:")}
        assert set(threads) == {f"thread:{row.thread}" for row in rows}
        cmg_readings = [r for r in s.readings if r.unit == "cmg:0"]
        for row in rows:
            reading = threads[f"thread:{row.thread}"]
            assert reading.group == event_set.name and reading.core is None and reading.cmg == 0
            assert reading.time_enabled == reading.time_running == round(row.cntvct / m.cntfrq_hz * 1e9)
            assert reading.counts["CPU_CYCLES"] == row.pmccntr
            for code, value in row.counts.items():
                event = event_def(code)
                if event.scope == "pe":
                    assert reading.counts[event.name] == value
                else:
                    assert event.name not in reading.counts
                    assert cmg_readings[0].counts[event.name] == round(
                        sum(r.counts[code] for r in rows) / len(rows)
                    )
        assert len(cmg_readings) == 1  # in every slice, so the CMG unit spans the whole measurement
        if not any(event_def(c).scope == "cmg" for c in event_set.codes):
            assert cmg_readings[0].counts == {}
    assert rec.marks[-1].kind == "end"
    assert rec.marks[-1].t == pytest.approx(t)


def test_plain_jsonl_lines(fapp_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "ax.jsonl"
    assert main(["import", "fapp", str(fapp_dir / "axhelm2.29503716.0"), "-o", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [rec["schema"] for rec in lines] == (
        ["sectormon/recording/1"] + ["sectormon/slice/1"] * 17 + ["sectormon/mark/1"]
    )
    pa8 = lines[8]
    assert pa8["group"] == "pa8"
    cmg = next(r for r in pa8["readings"] if r["unit"] == "cmg:0")
    assert set(cmg["counts"]) == {"EA_L2", "EA_MEMORY"}


def test_import_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "fapp", str(tmp_path / "none"), "-o", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file or directory" in err[0]


def test_replay_of_the_import_agrees_with_the_report(fapp_dir: Path, recording: Path) -> None:
    """Through the live engine's rotation scaling, rates and powers match the report and section 3."""
    from sectormon.fapp import analyze
    from sectormon.io.reader import open_recording
    from sectormon.sources.replay import replay_frames

    with open_recording(recording) as stream:
        frames = list(replay_frames(stream))
    final = frames[-1]
    assert final.final
    metrics = final.run.total.metrics
    a = analyze(fapp_dir / STEM)
    cmg = a.report.cmg_total
    # The report divides pa8's energy by pa1's time; the engine by pa8's own run time.
    m = a.measurement
    run_ratio = sum(r.cntvct for r in m.sets["pa1"].rows) / sum(r.cntvct for r in m.sets["pa8"].rows)
    for ours, report in (("core", "core"), ("L2", "L2"), ("memory", "memory")):
        want = cmg[f"Power {report} (W)"]
        assert want is not None
        assert metrics[f"power_{ours}_W"] == pytest.approx(want * run_ratio, rel=1e-3)
    s3 = a.section3.cmg_total
    for name in ("mem_stall_rate", "l2_stall_rate", "total_ld_stall_rate", "mem_energy_ratio"):
        assert metrics[name] == pytest.approx(s3[name], rel=1e-3), name
    assert metrics["L1D_miss_rate"] is None
