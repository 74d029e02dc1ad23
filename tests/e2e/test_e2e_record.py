"""Recording through the installed command: round trip with replay, and survival of crashes."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sectormon.io import MARK_SCHEMA, RECORDING_SCHEMA, SLICE_SCHEMA
from tests.e2e.helpers import read_jsonl, run_sectormon, sectormon_command, workload

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]


def _lines(path: Path) -> list[dict[str, object]]:
    raw = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_live_json_record_replays_to_identical_frames(tmp_path: Path, name: str) -> None:
    recording = tmp_path / name
    live = run_sectormon(
        "--json",
        "--profile",
        "generic",
        "--interval",
        "0.2",
        "--baseline-after",
        "0.5",
        "--record",
        str(recording),
        "--",
        *workload("pagefaults.py", 20000, 1.5),
    )
    assert live.returncode == 0, live.stderr
    live_records = [r for r in read_jsonl(live.stdout) if r.get("schema", "").startswith("sectormon/")]
    live_frames = [r for r in live_records if r["schema"] == "sectormon/frame/1"]
    assert len(live_frames) >= 5
    for worker in ("0", "1"):  # read in this process, then by the reader process
        env = {**os.environ, "SECTORMON_REPLAY_WORKER": worker}
        replay = run_sectormon("replay", str(recording), "--json", env=env)
        assert replay.returncode == 0, replay.stderr
        replay_frames = [r for r in read_jsonl(replay.stdout) if r["schema"] == "sectormon/frame/1"]
        assert replay_frames == live_frames, f"SECTORMON_REPLAY_WORKER={worker}"
    assert any(f["baseline"] for f in live_frames)  # the baseline mark replays at the same place
    kinds = [r["schema"] for r in _lines(recording)]
    assert kinds[0] == RECORDING_SCHEMA
    assert SLICE_SCHEMA in kinds and kinds[-1] == MARK_SCHEMA


def _start_recording(tmp_path: Path, name: str) -> tuple[subprocess.Popen[str], subprocess.Popen[str], Path]:
    target = subprocess.Popen(workload("threads.py", 1, 2, 60), stdout=subprocess.PIPE, text=True)
    assert target.stdout is not None
    pid = int(target.stdout.readline())
    recording = tmp_path / name
    monitor = subprocess.Popen(
        [
            sectormon_command(),
            "--json",
            "-o",
            str(tmp_path / "stream.jsonl"),
            "--profile",
            "generic",
            "--interval",
            "0.2",
            "--pid",
            str(pid),
            "--record",
            str(recording),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # wait for some slices to be on disk
        if recording.exists() and recording.stat().st_size > 20000:
            break
        time.sleep(0.1)
    return target, monitor, recording


@pytest.mark.parametrize("name", ["crash.jsonl", "crash.jsonl.gz"])
def test_sigkill_leaves_a_readable_recording(tmp_path: Path, name: str) -> None:
    target, monitor, recording = _start_recording(tmp_path, name)
    try:
        monitor.send_signal(signal.SIGKILL)
        monitor.wait(timeout=10)
    finally:
        target.kill()
        target.wait()
    replay = run_sectormon("replay", str(recording), "--json")
    assert replay.returncode == 0, replay.stderr
    frames = [r for r in read_jsonl(replay.stdout) if r["schema"] == "sectormon/frame/1"]
    assert frames and frames[-1]["final"] is True
    assert frames[-1]["total"]["counts"]["TASK_CLOCK"] > 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_leave_a_complete_recording(tmp_path: Path, signum: int) -> None:
    target, monitor, recording = _start_recording(tmp_path, "clean.jsonl.gz")
    try:
        monitor.send_signal(signum)
        _, stderr = monitor.communicate(timeout=20)
    finally:
        target.kill()
        target.wait()
    assert monitor.returncode == 0, stderr
    records = _lines(recording)
    assert records[-1]["schema"] == MARK_SCHEMA and records[-1]["kind"] == "end"


def test_unwritable_recording_path_warns_once_and_monitoring_goes_on(tmp_path: Path) -> None:
    proc = run_sectormon(
        "--json",
        "--profile",
        "generic",
        "--interval",
        "0.2",
        "--record",
        "/proc/no/such/dir/run.jsonl",
        "--",
        *workload("pagefaults.py", 2000, 0.6),
    )
    assert proc.returncode == 0, proc.stderr
    frames = [r for r in read_jsonl(proc.stdout) if r.get("schema") == "sectormon/frame/1"]
    assert frames and frames[-1]["final"] is True
    assert proc.stderr.count("recording stopped") == 1
