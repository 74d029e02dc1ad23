"""Recordings with processes: replay gives their procs scope, compare matches the runs rank by rank
(pids differ from run to run, ranks do not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.data.readings import Mark, ProcessInfo, Slice
from sectormon.io import RecordingWriter
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.resolve import load_profile
from tests.io.recording_synth import header
from tests.rows import row

REPO = Path(__file__).resolve().parent.parent.parent

TE = 20_000_000


def _recording(
    path: Path, pids: tuple[int, int], ipc: tuple[float, float], *, shared_rank: bool = False
) -> Path:
    """Two processes of one thread each, ranks 0 and 1 (both rank 0 with ``shared_rank``), at
    the given IPCs; the first slice names them."""
    hdr = header(profile_to_dict(load_profile("generic")))
    hdr["source"] = {"kind": "perf"}
    ranks = (0, 0) if shared_rank else (0, 1)
    processes = tuple(ProcessInfo(pid, "app", 1, rank) for pid, rank in zip(pids, ranks, strict=True))
    units = tuple((f"thread:{pid}", pid) for pid in pids)
    with RecordingWriter(path, hdr) as w:
        for i in range(20):
            readings = tuple(
                row(unit, n, 0, "HW1", TE, TE, {"CYCLES": 2_000_000, "INSTRUCTIONS": int(2_000_000 * value)})
                for n, ((unit, _), value) in enumerate(zip(units, ipc, strict=True))
            )
            first = i == 0
            w.write_slice(
                Slice(
                    t=(i + 1) * 0.02,
                    index=i,
                    duration=0.02,
                    group="HW1",
                    rows=readings,
                    processes=processes if first else (),
                    unit_processes=units if first else (),
                    target_cpu_s=(i + 1) * 0.04 if i % 5 == 0 or i == 19 else None,
                )
            )
        w.write_mark(Mark(t=20 * 0.02, kind="end"))
    return path


def test_replay_gives_the_recorded_processes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recording(tmp_path / "run.jsonl", (4100, 4200), (0.5, 1.0))
    assert cli.main(["replay", str(path), "--json"]) == 0
    final = [json.loads(line) for line in capsys.readouterr().out.splitlines()][-1]
    assert {p["rank"]: p["pid"] for p in final["procs"].values()} == {0: 4100, 1: 4200}
    assert final["procs"]["4200"]["metrics"]["IPC"] == pytest.approx(1.0)
    assert final["thread_coverage"] == pytest.approx(1.0)


def test_compare_matches_processes_by_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _recording(tmp_path / "base.jsonl", (4100, 4200), (0.5, 1.0))
    other = _recording(tmp_path / "other.jsonl", (7100, 7200), (0.6, 1.0))
    assert cli.main(["compare", str(base), str(other), "--json", "--scope", "rank"]) == 0
    scopes = json.loads(capsys.readouterr().out)["scopes"]
    assert list(scopes) == ["rank:0", "rank:1"]
    assert scopes["rank:0"]["IPC_improvement"] == pytest.approx(20.0)
    assert scopes["rank:1"]["IPC_improvement"] == pytest.approx(0.0)


def test_a_rank_several_processes_carry_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _recording(tmp_path / "base.jsonl", (4100, 4200), (0.5, 1.0), shared_rank=True)
    assert cli.main(["compare", str(base), str(base), "--json"]) == 0
    assert not [s for s in json.loads(capsys.readouterr().out)["scopes"] if s.startswith("rank:")]
