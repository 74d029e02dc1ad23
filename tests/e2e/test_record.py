"""Recording through the installed command: round trip with replay, and survival of crashes."""

from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import subprocess
import sys
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


def test_a_recording_that_fails_mid_run_warns_once_monitoring_goes_on_and_exits_1(tmp_path: Path) -> None:
    """A full disk mid-run stops the recording, not the monitor; the run then exits 1, as every
    failed write does (it exited 0, so a script took the cut recording as whole). A path that
    cannot be written at all is refused before the run: tests/e2e/test_writers.py."""

    def small_files() -> None:  # the recording can grow to 16 KiB; then writes fail with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))

    # sync rotation: a slice (and a recording line) every 20 ms, so the file outgrows the limit
    proc = subprocess.run(
        [sectormon_command(), "--json", "--profile", "generic", "--interval", "0.2", "--rotation", "sync",
         "--record", str(tmp_path / "run.jsonl"), "--", *workload("pagefaults.py", 2000, 0.6)],
        capture_output=True, text=True, timeout=120, check=False, preexec_fn=small_files,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    frames = [r for r in read_jsonl(proc.stdout) if r.get("schema") == "sectormon/frame/1"]
    assert frames and frames[-1]["final"] is True
    assert proc.stderr.count("recording stopped") == 1
    assert (tmp_path / "run.jsonl").stat().st_size <= 16384


@pytest.mark.parametrize("same", ["run.jsonl", "./sub/../run.jsonl", "link.jsonl"])
def test_frame_stream_and_recording_into_one_file_are_refused(tmp_path: Path, same: str) -> None:
    """They would truncate and interleave each other: one line says so before anything starts."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "run.jsonl").write_text("")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "run.jsonl")
    proc = run_sectormon(
        "--json", "--profile", "generic", "-o", str(tmp_path / "run.jsonl"),
        "--record", str(tmp_path / same), "--", "true",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "name the same file" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert (tmp_path / "run.jsonl").read_text() == ""  # nothing was written


@pytest.mark.parametrize(
    ("code", "status", "said"),
    [
        ("import sys; sys.exit(3)", 3, "the command exited with status 3"),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
            137,
            "the command was killed by SIGKILL (exit status 137)",
        ),
        ("pass", 0, None),
    ],
)
def test_the_command_exit_status_is_sectormons_and_is_recorded(
    tmp_path: Path, code: str, status: int, said: str | None
) -> None:
    """As with perf stat and time: a job script running `sectormon -- ./app` sees a failed app fail."""
    recording = tmp_path / "run.jsonl"
    proc = run_sectormon(
        "--json", "--profile", "generic", "--interval", "0.2", "--record", str(recording),
        "--", sys.executable, "-c", f"import time; time.sleep(0.3); {code}",
    )  # fmt: skip
    assert proc.returncode == status, proc.stderr
    frames = [r for r in read_jsonl(proc.stdout) if r.get("schema") == "sectormon/frame/1"]
    assert frames and frames[-1]["final"] is True  # the run itself went to its end as usual
    if said is None:
        assert "the command" not in proc.stderr
    else:
        assert f"sectormon: warning: {said}" in proc.stderr
    end = _lines(recording)[-1]
    assert end["kind"] == "end" and end["data"] == {"exit_status": status if status < 128 else 128 - status}


def test_a_command_the_session_stops_does_not_give_its_status(tmp_path: Path) -> None:
    """--duration ends the command with SIGTERM: that status is sectormon's doing, not the command's."""
    recording = tmp_path / "run.jsonl"
    proc = run_sectormon(
        "--json", "--profile", "generic", "--interval", "0.2", "--duration", "0.4",
        "--record", str(recording), "--", "sleep", "30",
    )  # fmt: skip
    assert proc.returncode == 0 and "the command" not in proc.stderr, proc.stderr
    end = _lines(recording)[-1]
    assert end["kind"] == "end" and end["data"] == {}
