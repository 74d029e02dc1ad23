"""--rotation and --max-overhead through the installed command, on this host's software events.

The kernel does not multiplex software-only groups (they take no PMU counter), so here kernel
rotation runs every group all the time (time_running == time_enabled, coverage 1): these tests
check its plumbing with the real syscalls. Scaling of groups the kernel did multiplex
(time_running < time_enabled) is checked against a fake kernel in
tests/rotation/test_sampler_modes.py and tests/metrics/test_own_time.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon, workload

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]

ROTATING = Path(__file__).resolve().parents[1] / "fixtures" / "profiles" / "generic-rotating.yaml"
PAGES = 30000


def _run(tmp_path: Path, *options: str, seconds: float = 1.5) -> tuple[dict, list[dict], dict, str]:
    """sectormon --json on pagefaults.py; (header, frames, the workload's own truth, stderr)."""
    out = tmp_path / "stream.jsonl"
    proc = run_sectormon(
        "--json", "-o", str(out), "--profile", str(ROTATING), "--interval", "0.5", *options,
        "--", *workload("pagefaults.py", PAGES, seconds),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    header, *frames = read_jsonl(out.read_text())
    return header, frames, truth, proc.stderr


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


def test_kernel_rotation_counts_every_group_all_the_time(tmp_path: Path) -> None:
    header, frames, truth, _ = _run(tmp_path, "--rotation", "kernel")
    rotation = header["rotation"]
    assert (rotation["mode"], rotation["timeslice"]) == ("kernel", 0.5)
    assert rotation["reason"] == "asked for (--rotation kernel)"
    assert rotation["mux_interval_ms"]["software"] > 0  # read from sysfs, per PMU
    assert all(f["rotation"]["mode"] == "kernel" for f in frames)
    final = frames[-1]["total"]
    # software groups are never multiplexed: each group counted the whole run
    assert final["coverage"]["PAGE_FAULTS"] > 0.99 and final["coverage"]["MINOR_FAULTS"] > 0.99
    assert _rel(final["counts"]["PAGE_FAULTS"], truth["minflt_total"]) < 0.02, (final["counts"], truth)
    assert _rel(final["counts"]["MINOR_FAULTS"], truth["minflt_total"]) < 0.02, (final["counts"], truth)


def test_sync_rotation_switches_groups_in_lockstep(tmp_path: Path) -> None:
    header, frames, _, _ = _run(tmp_path, "--rotation", "sync", "--max-overhead", "100")
    assert header["rotation"]["mode"] == "sync" and header["rotation"]["timeslice"] == 0.02
    final = frames[-1]
    assert set(final["groups"]) == {"SW1", "SW2", "SW3"}
    assert 0.2 < final["total"]["coverage"]["PAGE_FAULTS"] < 0.5  # one group in three
    assert final["rotation"] == {"mode": "sync", "timeslice": 0.02, "reason": "asked for (--rotation sync)"}


def test_auto_rotation_takes_the_kernel_here_and_says_why(tmp_path: Path) -> None:
    header, frames, _, _ = _run(tmp_path, seconds=0.5)
    rotation = header["rotation"]
    assert rotation["mode"] == "kernel" and rotation["reason"].startswith("auto: ")
    assert rotation["max_overhead"] == 0.02 and rotation["switch_to_kernel"] is True
    assert frames[-1]["rotation"]["reason"] == rotation["reason"]


def test_over_the_budget_sync_lengthens_its_slice_with_a_warning_and_a_mark(tmp_path: Path) -> None:
    """A budget no sampler meets (0.001 % of a core): every 2 s window over it doubles the
    timeslice; the frames, the stderr warning and the recording's marks all say so, and the
    recording replays with the same rotation fields."""
    record = tmp_path / "run.jsonl.gz"
    header, frames, _, stderr = _run(
        tmp_path, "--rotation", "sync", "--max-overhead", "0.001", "--record", str(record), seconds=5.0
    )
    assert header["rotation"]["timeslice"] == 0.02
    assert "over --max-overhead 0.001 %: slice lengthened from 0.02 s to 0.04 s" in stderr
    slices = [f["rotation"]["timeslice"] for f in frames]
    assert slices[0] == 0.02 and slices[-1] >= 0.04 and slices == sorted(slices)
    with gzip.open(record, "rt") as f:
        marks = [r for r in map(json.loads, f) if r.get("kind") == "rotation"]
    assert marks and marks[0]["data"]["timeslice"] == 0.04 and marks[0]["data"]["mode"] == "sync"
    replay = run_sectormon("replay", "--json", str(record))
    assert replay.returncode == 0, replay.stderr
    replayed = [r["rotation"] for r in read_jsonl(replay.stdout)[1:]]
    assert replayed[-1] == frames[-1]["rotation"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rotation", "fast"], "argument --rotation: invalid choice: 'fast'"),
        (["--max-overhead", "0"], "--max-overhead 0.0: give a percentage of one core > 0 and <= 100"),
        (["--max-overhead", "101"], "--max-overhead 101.0: give a percentage of one core > 0 and <= 100"),
        (["--max-overhead", "two"], "--max-overhead 'two': give a percentage of one core"),
    ],
)
def test_bad_rotation_options_are_one_line_errors(args: list[str], message: str) -> None:
    proc = run_sectormon("--json", *args, "--", "true")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sectormon: ") and message in lines[0], proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rotation", "kernel"], "--rotation kernel: this source has no kernel multiplexer"),
        (["--max-overhead", "5"], "--max-overhead is for live sessions"),
    ],
)
def test_the_simulator_rotates_in_lockstep_only(args: list[str], message: str) -> None:
    proc = run_sectormon("sim", "--json", "--count", "1", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sectormon: {message}"), proc.stderr


def test_the_simulator_says_its_rotation() -> None:
    done = run_sectormon("sim", "--json", "--count", "1")
    assert done.returncode == 0, done.stderr
    header, *frames = read_jsonl(done.stdout)
    assert header["rotation"]["mode"] == "sync" and header["rotation"]["max_overhead"] is None
    assert header["rotation"]["mux_interval_ms"] == {}
    assert frames[-1]["rotation"]["reason"] == "auto: the source has no kernel multiplexer"
