"""``sectormon import fapp``: one slice of the region's time; a replay ends with exactly the CSV counts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sectormon.cli import main
from sectormon.compare.sides import compare_paths
from sectormon.data.readings import Slice
from sectormon.fapp.counts import measurement_counts
from sectormon.fapp.measurement import read_measurement
from sectormon.fapp.names import event_def
from sectormon.fapp.to_recording import write_recording
from sectormon.io import MARK_SCHEMA, RECORDING_SCHEMA, SLICE_SCHEMA
from sectormon.io.header_codec import header_to_json
from sectormon.io.reader import read_recording
from sectormon.profiles.codec import profile_from_dict
from sectormon.session.replay import final_frame
from tests.e2e.helpers import sectormon_command
from tests.rows import readings_of

STEM = "dtrn3.29503716.1"


@pytest.fixture(scope="module")
def recording(fapp_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fapp") / "dtrn3.jsonl.gz"
    assert main(["import", "fapp", str(fapp_dir / STEM), "-o", str(out)]) == 0
    return out


def test_header(recording: Path) -> None:
    rec = read_recording(recording)
    h = header_to_json(rec.header)
    assert h["schema"] == RECORDING_SCHEMA
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
    assert profile.constants["NJ_EA_CORE"] == 8.0


def test_one_slice_holds_every_set(fapp_dir: Path, recording: Path) -> None:
    m = read_measurement(fapp_dir / STEM)
    rec = read_recording(recording)
    assert len(rec.slices) == 1
    s = rec.slices[0]
    pa1 = m.sets["pa1"].rows
    mean_t = sum(r.cntvct for r in pa1) / len(pa1) / m.cntfrq_hz
    assert s.duration == pytest.approx(mean_t, rel=1e-12) and s.t == s.duration
    assert rec.marks[-1].kind == "end" and rec.marks[-1].t == s.t
    by_key = {(r.unit, r.group): r for r in readings_of(s)}
    assert len(by_key) == len(readings_of(s))  # one reading per (unit, set)
    for event_set in m.sets.values():
        for row in event_set.rows:
            reading = by_key[(f"thread:{row.thread}", event_set.name)]
            assert reading.core is None and reading.cmg == 0
            assert reading.time_enabled == reading.time_running  # no multiplexing correction
            assert reading.counts["CPU_CYCLES"] == row.pmccntr
            # The row whole, its CMG-wide columns too (the engine takes those from the CMG unit only).
            assert reading.counts == {"CPU_CYCLES": row.pmccntr} | {
                event_def(code).name: value for code, value in row.counts.items()
            }
        cmg_codes = [c for c in event_set.codes if event_def(c).scope == "cmg"]
        cmg = by_key.get(("cmg:0", event_set.name))
        if not cmg_codes:
            assert cmg is None
            continue
        assert cmg is not None
        rows = event_set.rows
        for code in cmg_codes:
            assert cmg.counts[event_def(code).name] == round(sum(r.counts[code] for r in rows) / len(rows))


def test_plain_jsonl_lines(fapp_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "ax.jsonl"
    assert main(["import", "fapp", str(fapp_dir / "axhelm2.29503716.0"), "-o", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [rec["schema"] for rec in lines] == [RECORDING_SCHEMA, SLICE_SCHEMA, MARK_SCHEMA]
    m = read_measurement(fapp_dir / "axhelm2.29503716.0")
    # a v2 row: [unit, core, cmg, group, te, tr, layout, values], values in events[layout] order
    events = lines[1]["events"]
    cmg = [row for row in lines[1]["readings"] if row[0] == "cmg:0"]
    with_cmg_events = {s.name for s in m.sets.values() if any(event_def(c).scope == "cmg" for c in s.codes)}
    assert [row[3] for row in cmg] == [name for name in m.sets if name in with_cmg_events]
    pa8 = next(row for row in cmg if row[3] == "pa8")
    assert set(events[pa8[6]]) == {"EA_L2", "EA_MEMORY"}


def test_import_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "fapp", str(tmp_path / "none"), "-o", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file or directory" in err[0]


def test_dash_writes_the_recording_to_stdout(
    fapp_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-o -`` is stdout, as in most Unix tools (it wrote a file named ``-``)."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "stdout.jsonl"
    proc = subprocess.run(
        [sectormon_command(), "import", "fapp", str(fapp_dir / STEM), "-o", "-"],
        stdout=out.open("wb"), stderr=subprocess.PIPE, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "wrote the recording to stdout" in proc.stderr
    assert not (tmp_path / "-").exists()
    assert read_recording(out).header.schema == RECORDING_SCHEMA


def test_a_reader_that_goes_away_is_a_broken_pipe(fapp_dir: Path) -> None:
    """``-o - | head``: the closed pipe reaches the CLI as BrokenPipeError, which ends quietly."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        with pytest.raises(BrokenPipeError):
            write_recording(read_measurement(str(fapp_dir / STEM)), f"/dev/fd/{write_end}")
    finally:
        os.close(write_end)


def test_unwritable_output_is_one_line(
    fapp_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no-such-dir" / "x.jsonl"
    assert main(["import", "fapp", str(fapp_dir / STEM), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0] == (
        f"sectormon: -o {out}: cannot write there (No such file or directory); give a writable file path"
    )
    assert "goes on" not in err[0] and not out.exists()


def test_replay_ends_with_the_csv_counts(fapp_dir: Path, recording: Path) -> None:
    """Every event at its raw count (the mean where several sets counted it), coverage 1, window = T̄."""
    _, frame, _ = final_frame(recording)
    m = read_measurement(fapp_dir / STEM)
    want = measurement_counts(m)
    for t, counts in want.threads.items():
        got = frame.threads[str(t)].counts
        assert got.keys() == counts.keys()
        for name, value in counts.items():
            assert got[name] == pytest.approx(value, rel=1e-12), (t, name)
    for got, expected in ((frame.run.cmgs["0"].counts, want.total), (frame.run.total.counts, want.total)):
        assert got.keys() == expected.keys()
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=1e-12), name
    # By hand: an event of one set is its raw sum; CPU_CYCLES (every set) the mean of the 17 sums.
    ea_core = sum(m.value("pa8", 0x1E0, t) or 0 for t in m.threads)
    assert frame.run.total.counts["EA_CORE"] == pytest.approx(ea_core, rel=1e-12)
    cycles = [sum(m.value(s, "PMCCNTR", t) or 0 for t in m.threads) for s in m.sets]
    assert frame.run.total.counts["CPU_CYCLES"] == pytest.approx(sum(cycles) / len(cycles), rel=1e-12)
    coverage = frame.run.total.coverage
    assert {coverage[name] for name in want.total} == {1.0}  # was 1/17 per event with a slice per set
    assert {coverage[name] for name in ("energy_total", "mem_stall_rate", "L2_miss_count_corrected")} == {1.0}
    assert frame.run.seconds == pytest.approx(m.mean_seconds(), rel=1e-12)


MEASUREMENTS = (
    "axhelm2.29503716.0",
    "axhelm2.29503716.1",
    "dtrn3.29503716.1",
    "dtrn3.29503716.2",
    "elecur.29503716.0",
    "elecur.29503716.2",
    "ffx.29503716.0",
    "ffx.29503716.1",
    "nbody.29503716.0",
    "nbody.29503716.2",
)


@pytest.mark.parametrize("stem", MEASUREMENTS)
def test_a_folder_and_its_import_give_the_same_metrics(fapp_dir: Path, tmp_path: Path, stem: str) -> None:
    """compare of a fapp folder with its own import: every metric of every scope the same to 1e-9,
    n/a on both sides or neither (nbody.0 showed L2D_demand_refill_ratio +32.77 % and
    L2_refill_corrected 690 -> 531.8: the engine averaged the runs where the folder takes one)."""
    out = tmp_path / f"{stem}.jsonl.gz"
    assert main(["import", "fapp", str(fapp_dir / stem), "-o", str(out)]) == 0
    cmp = compare_paths(str(fapp_dir / stem), str(out))
    assert cmp.other.kind == "fapp-import" and cmp.mixed == ()
    threads = read_measurement(fapp_dir / stem).threads
    assert [s.scope for s in cmp.scopes] == ["total", "cmg:0", *(f"thread:{t}" for t in threads)]
    for sc in cmp.scopes:
        assert len(sc.rows) > 80  # the report's metrics and the profile's
        for row in sc.rows:
            assert (row.base is None) == (row.other is None), (sc.scope, row.metric)
            if row.base is not None:
                assert row.other == pytest.approx(row.base, rel=1e-9), (sc.scope, row.metric)
                assert row.coverage_base == row.coverage_other == 1.0
        assert sc.ipc_improvement == pytest.approx(0.0, abs=1e-9) or sc.ipc_improvement is None
    total = cmp.scope("total")
    assert total.l2_effectiveness == pytest.approx(1.0, rel=1e-12)
    assert total.ipc_source == "report:IPC"
    assert cmp.other.counts.keys() == cmp.base.counts.keys()
    for scope, counts in cmp.base.counts.items():
        assert cmp.other.counts[scope] == pytest.approx(counts, rel=1e-12), scope


def test_a_replay_of_the_import_still_averages_the_runs(fapp_dir: Path, tmp_path: Path) -> None:
    """The engine (replay) has one count per event, the mean over the runs; compare of the same
    file takes each metric's inputs from one run, as the folder does (docs/fapp.md)."""
    stem = "nbody.29503716.0"
    out = tmp_path / "nbody.jsonl"
    assert main(["import", "fapp", str(fapp_dir / stem), "-o", str(out)]) == 0
    _, frame, _ = final_frame(out)
    m = read_measurement(fapp_dir / stem)
    refills = [sum(m.value(s, 0x17, t) or 0 for t in m.threads) for s in ("pa1", "pa4")]
    assert frame.run.total.counts["L2D_CACHE_REFILL"] == pytest.approx(sum(refills) / 2)
    total = compare_paths(str(fapp_dir / stem), str(out)).scope("total")
    assert total.row("L2_refill_corrected").other == total.row("L2_refill_corrected").base == 690


def test_untimed_thread_is_left_out_of_the_slice_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = (
        "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,0x01e0\n"
    )
    rows = "FAPP-cpupa,Thread,0,0,0,k,0,1,100000000,220,4\nFAPP-cpupa,Thread,0,0,1,k,0,1,0,0,6\n"
    (tmp_path / "pa1.csv").write_text(header + rows)
    out = tmp_path / "x.jsonl"
    assert main(["import", "fapp", str(tmp_path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("thread 1 has CNTVCT and PMCCNTR 0 in pa1") == 1
    assert f"{tmp_path / 'pa1.csv'}:3:" in err
    (s,) = read_recording(out).slices
    assert s.duration == 1.0  # thread 0's time alone, not (1 s + 0 s) / 2
    _, frame, _ = final_frame(out)
    assert frame.run.total.counts["EA_CORE"] == 10  # its counts still count


def test_no_time_at_all_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header = (
        "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,0x01e0\n"
    )
    (tmp_path / "pa1.csv").write_text(header + "FAPP-cpupa,Thread,0,0,0,k,0,1,0,0,4\n")
    assert main(["import", "fapp", str(tmp_path), "-o", str(tmp_path / "x.jsonl")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("sectormon: ") and "no thread has a time in pa1" in lines[-1]


def test_without_pa1_the_time_set_is_named(
    fapp_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fapp's report takes every time from pa1; without it the recording uses the first set's and
    says so (it claimed 'the mean pa1 time')."""
    partial = tmp_path / "partial"
    shutil.copytree(fapp_dir / STEM, partial)
    (partial / "pa1.csv").unlink()
    out = tmp_path / "partial.jsonl"
    assert main(["import", "fapp", str(partial), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "no pa1 set: the recording takes the region's time from pa2" in err
    assert "(the mean pa2 time)" in err and "pa1 time" not in err
    measurement = read_measurement(str(partial))
    first = read_recording(out).items[0]
    assert isinstance(first, Slice) and first.duration == pytest.approx(measurement.mean_seconds())
