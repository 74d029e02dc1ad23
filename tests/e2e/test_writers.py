"""Every writer of the installed command: a full disk or a closed stdout is one line and exit 1, a
stream's file cut by a full disk is kept as FILE.partial, a job file is written whole or not at
all; the TUI without a terminal stops at once; an unwritable --record stops before the run."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon, sectormon_command

pytestmark = pytest.mark.e2e

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
SECTORS_ON = str(RECORDINGS / "scenario-a-sectors-on.jsonl.gz")
SECTORS_OFF = str(RECORDINGS / "scenario-a-sectors-off.jsonl.gz")

WRITERS = {
    "replay --json": ["replay", "--json", SECTORS_ON],
    "events": ["events"],
    "events --json": ["events", "--json"],
    "check": ["check"],
    "check --json": ["check", "--json"],
    "sim --summary": ["sim", "--summary", "--warmup", "0", "--size", "passes=2"],
    "sim --json": ["sim", "--json", "--count", "2"],
    "demo --json": ["--json", "--count", "2"],
    "hotspots": ["hotspots", "--event", "page-faults", "--", "true"],
    "hotspots --json": ["hotspots", "--event", "page-faults", "--json", "--", "true"],
    "markers --cflags --libs": ["markers", "--cflags", "--libs"],
}
STREAMS = {"replay --json", "sim --json", "demo --json"}


def _run(
    argv: list[str], *, stdout: int | None, close_stdout: bool = False
) -> subprocess.CompletedProcess[str]:
    cmd = [sectormon_command(), *argv]
    if close_stdout:  # `sectormon ... >&-`
        cmd = ["sh", "-c", 'exec "$0" "$@" >&-', *cmd]
    return subprocess.run(
        cmd,
        stdout=stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=120,
        check=False,
    )


def _errors(stderr: str) -> list[str]:
    """stderr without the run's own warnings (a perf target warns about events this host lacks)."""
    return [line for line in stderr.splitlines() if not line.startswith("sectormon: warning:")]


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_full_disk_is_one_line_and_exit_1(name: str) -> None:
    """replay --json > /dev/full exited 0 with nothing written; events, check, sim --summary and
    hotspots ended in an OSError traceback."""
    with open("/dev/full", "w") as full:
        proc = _run(WRITERS[name], stdout=full.fileno())
    what = "JSON stream" if name in STREAMS else "report"
    assert _errors(proc.stderr) == [
        f"sectormon: cannot write the {what} to stdout: No space left on device "
        "(free space or write it elsewhere)"
    ], proc.stderr
    assert proc.returncode == 1


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_closed_stdout_is_one_line_and_exit_1(name: str) -> None:
    """>&- ended in AttributeError tracebacks ('NoneType' object has no attribute 'write'); sim --json
    started the TUI on stderr."""
    proc = _run(WRITERS[name], stdout=None, close_stdout=True)
    what = "JSON stream" if name in STREAMS else "report"
    assert _errors(proc.stderr) == [
        f"sectormon: cannot write the {what}: stdout is closed (redirect it to a file or a pipe)"
    ], proc.stderr
    assert proc.returncode == 1


@pytest.mark.slow
def test_compare_of_recordings_to_a_full_disk() -> None:
    with open("/dev/full", "w") as full:
        proc = _run(["compare", "--json", SECTORS_OFF, SECTORS_ON], stdout=full.fileno())
    assert proc.returncode == 1 and len(_errors(proc.stderr)) == 1, proc.stderr


def _limit_file_size(limit: int) -> None:
    """Files of the child grow to ``limit`` bytes at most; then writes fail with EFBIG (a full disk)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_stream_file_on_a_full_disk_is_kept_as_partial(tmp_path: Path) -> None:
    """--json -o FILE on a full disk ended in an OSError traceback at _run_json (the close)."""
    out = tmp_path / "frames.jsonl"
    proc = subprocess.run(
        [sectormon_command(), "sim", "--json", "--count", "50", "-o", str(out)],
        capture_output=True, text=True, timeout=120, check=False, preexec_fn=lambda: _limit_file_size(8192),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"sectormon: cannot write the JSON stream to {out}: File too large (free space or write it "
        f"elsewhere; the stream up to the failure is in {out}.partial)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frames.jsonl.partial"]
    partial = (tmp_path / "frames.jsonl.partial").read_text()
    assert len(partial) == 8192 and partial.startswith('{"schema":"sectormon/header/1"')


def test_a_job_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """merge -o on a full disk left a cut job file, and said so with exit 2 (the input was fine)."""
    nodes = []
    for host in ("n1", "n2"):
        node = tmp_path / f"{host}.jsonl"
        done = run_sectormon(
            "sim", "--json", "--count", "8", "--record", str(node), env={**os.environ, "SECTORMON_HOST": host}
        )
        assert done.returncode == 0, done.stderr
        nodes.append(str(node))
    job = tmp_path / "job.jsonl"
    job.write_text("an older job\n")
    proc = subprocess.run(
        [sectormon_command(), "merge", *nodes, "-o", str(job)],
        capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=lambda: _limit_file_size(os.path.getsize(nodes[0])),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert _errors(proc.stderr) == [
        f"sectormon: cannot write {job}: File too large (free space or write it elsewhere; "
        f"nothing was written to {job})"
    ]
    assert job.read_text() == "an older job\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.jsonl", "n1.jsonl", "n2.jsonl"]
    done = run_sectormon("merge", *nodes, "-o", str(job))
    assert done.returncode == 0, done.stderr
    assert read_jsonl(run_sectormon("replay", "--json", str(job)).stdout)[-1]["final"]


NO_TERMINAL = "sectormon: no terminal: use --json for a headless stream"


@pytest.mark.parametrize(
    "argv",
    [[], ["sim"], ["replay", SECTORS_ON], ["--pid", str(os.getpid())], ["--", "touch", "launched"]],
    ids=["demo", "sim", "replay", "pid", "command"],
)
def test_the_tui_without_a_terminal_stops_at_once(argv: list[str], tmp_path: Path) -> None:
    """`sectormon --pid P > out 2> err` wrote escape codes until killed."""
    out = tmp_path / "out"
    with out.open("w") as handle:
        proc = subprocess.run(
            [sectormon_command(), *argv], stdout=handle, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True, timeout=30, check=False, cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == NO_TERMINAL
    assert out.read_text() == ""
    assert not (tmp_path / "launched").exists()  # the command was not started


@pytest.mark.parametrize("argv", [["--json", "--count", "1"], ["sim", "--json", "--count", "1"]])
def test_an_unwritable_record_path_stops_before_the_run(argv: list[str], tmp_path: Path) -> None:
    """--record into a missing folder ran to the end, exit 0, and no file."""
    record = tmp_path / "missing" / "run.jsonl"
    proc = run_sectormon(*argv, "--record", str(record))
    assert proc.returncode == 2
    assert proc.stdout == ""  # nothing ran
    assert proc.stderr.strip() == (
        f"sectormon: --record {record}: cannot write there (No such file or directory); "
        "give a writable file path"
    )
    proc = run_sectormon(*argv, "--record", str(tmp_path))
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == f"sectormon: --record {tmp_path}: is a folder; give a file path"
    )


def test_the_record_check_leaves_no_file_behind(tmp_path: Path) -> None:
    """The check creates the file to know it can, and removes it when the run then fails."""
    record = tmp_path / "run.jsonl"
    proc = run_sectormon(
        "sim", "--json", "--count", "1", "--kernel", "scenario-b", "--size", "n=100", "--record", str(record)
    )
    assert proc.returncode == 2 and "multiple of" in proc.stderr
    assert not record.exists()
