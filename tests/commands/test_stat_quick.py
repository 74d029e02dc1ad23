"""``stat``'s quick start: which command lines it takes, and that it reports what the engine reports.

The engine's way is forced with ``--profile generic`` (on this host the same profile the quick start
uses), so both reports of one program are compared line by line with the figures masked.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from sectormon.commands.stat_quick import QuickRequest, quick_request, run_quick
from tests.e2e.helpers import catches, run_sectormon, sectormon_command, wait_until
from tests.regions.regions_helpers import PROGRAMS, build, need_perf

pytestmark = pytest.mark.skipif(
    os.uname().machine in ("aarch64", "arm64"), reason="the quick start leaves Arm hosts to the engine"
)


def fields(request: QuickRequest | None) -> tuple[object, ...] | None:
    if request is None:
        return None
    return (request.events, request.sep, request.output, request.runs, request.command)


@pytest.mark.parametrize(
    ("argv", "taken"),
    [
        (["-e", "task-clock", "--", "true"], (["task-clock"], None, None, 1, ["true"])),
        (
            ["-etask-clock,page-faults", "-x,", "true", "-x"],
            (["task-clock", "page-faults"], ",", None, 1, ["true", "-x"]),
        ),
        (
            ["--events=page-faults", "-r", "3", "-o", "out.txt", "--", "./a", "b"],
            (["page-faults"], None, "out.txt", 3, ["./a", "b"]),
        ),
        (
            ["--field-separator", ";", "--repeat=100", "-e", "major-faults", "--", "x"],
            (["major-faults"], ";", None, 100, ["x"]),
        ),
    ],
)
def test_perfs_own_options_are_taken(argv: list[str], taken: tuple[object, ...]) -> None:
    assert fields(quick_request(argv)) == taken


@pytest.mark.parametrize(
    "argv",
    [
        ["--", "true"],  # no -e: the profile's groups
        ["-e", "cycles", "--", "true"],  # a hardware event
        ["-e", "context-switches", "--", "true"],  # kernel-side: the engine says how to count it
        ["-e", "page-faults:u", "--", "true"],  # modifiers
        ["-e", "{task-clock,page-faults}", "--", "true"],
        ["-e", "task-clock,task-clock", "--", "true"],
        ["-e", "TASK_CLOCK", "--", "true"],  # the profile's names
        ["-e", "task-clock", "-e", "page-faults", "--", "true"],  # repeated option
        ["-e", "task-clock", "-x", "", "--", "true"],  # refused by the engine
        ["-e", "task-clock", "-r", "0", "--", "true"],
        ["-e", "task-clock", "-r", "101", "--", "true"],
        ["-e", "task-clock", "-r", "x", "--", "true"],
        ["-e", "task-clock", "--"],  # no command
        ["-e", "task-clock", "--", " "],
        ["-e", "task-clock", "-I", "500", "--", "true"],  # anything else
        ["-e", "task-clock", "--json", "--", "true"],
        ["-e", "task-clock", "--pid", "1"],
        ["-e", "task-clock", "--profile", "generic", "--", "true"],
        ["-e", "task-clock", "--no-children", "--", "true"],
        ["-e", "task-clock", "-h"],
        ["-e"],
        ["-e", "task-clock", "-x", "--", "true"],  # argparse reads these otherwise
        ["-e", "task-clock", "-x=,", "true"],
        ["-e=task-clock", "true"],
        ["--event", "task-clock", "true"],  # an abbreviation: argparse's to resolve
    ],
)
def test_anything_else_goes_to_the_engine(argv: list[str]) -> None:
    assert quick_request(argv) is None


NUMBER = re.compile(r" *[-+]?\d[\d.,]*(e[-+]?\d+)?%?")


def masked(stderr: str) -> list[str]:
    """The report's lines with every figure and the padding before it replaced (the runs differ
    in their figures and so in their widths only)."""
    return [NUMBER.sub(" #", line.rstrip()) for line in stderr.splitlines()]


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_perf()
    if shutil.which("cc") is None:
        pytest.skip("needs cc (Debian: apt-get install gcc)")
    return build(PROGRAMS / "marked.c", tmp_path_factory.mktemp("quick") / "marked", "-DLIKWID_PERFMON")


@pytest.mark.e2e
@pytest.mark.syscall
@pytest.mark.parametrize(
    "options",
    [
        ["-e", "task-clock,page-faults"],
        ["-e", "page-faults,minor-faults,major-faults", "-x", ","],
        ["-e", "task-clock", "-r", "3"],
        ["-e", "page-faults,task-clock", "-r", "2", "-x", ";"],
    ],
)
def test_the_quick_report_is_the_engines(options: list[str]) -> None:
    need_perf()
    command = ["--", "sh", "-c", "exit 3"]
    quick = run_sectormon("stat", *options, *command)
    engine = run_sectormon("stat", "--profile", "generic", *options, *command)
    assert (quick.returncode, engine.returncode) == (3, 3)
    assert masked(quick.stderr) == masked(engine.stderr)


@pytest.mark.e2e
@pytest.mark.syscall
def test_a_marked_programs_regions_are_the_engines_exactly(marked: Path) -> None:
    quick = run_sectormon("stat", "-e", "page-faults", "-x", ",", "--", str(marked))
    engine = run_sectormon("stat", "--profile", "generic", "-e", "page-faults", "-x", ",", "--", str(marked))
    assert quick.returncode == engine.returncode == 0, quick.stderr + engine.stderr
    assert masked(quick.stderr) == masked(engine.stderr)
    regions = [line for line in quick.stderr.splitlines() if line.startswith("# region")]
    assert regions == [line for line in engine.stderr.splitlines() if line.startswith("# region")]
    rows = quick.stderr.splitlines()
    pages = rows[rows.index("# region 'fapp_pages' (calls 4)") + 1]
    assert pages.split(",")[:3] == ["24000", "", "page-faults"]


@pytest.mark.e2e
@pytest.mark.syscall
def test_a_command_that_cannot_run_is_the_engines_error() -> None:
    need_perf()
    done = run_sectormon("stat", "-e", "page-faults", "--", "/nonexistent/program")
    assert done.returncode == 2
    assert done.stderr.startswith("sectormon: command '/nonexistent/program' not found")


@pytest.mark.e2e
@pytest.mark.syscall
def test_the_report_goes_to_the_file_and_a_bad_file_is_the_engines_error(tmp_path: Path) -> None:
    need_perf()
    out = tmp_path / "report.csv"
    done = run_sectormon("stat", "-e", "page-faults", "-x", ",", "-o", str(out), "--", "true")
    assert done.returncode == 0 and done.stderr == ""
    assert out.read_text().splitlines()[0].endswith(",,page-faults,") is False
    assert ",,page-faults," in out.read_text()
    bad = run_sectormon("stat", "-e", "page-faults", "-o", str(tmp_path), "--", "true")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


@pytest.mark.e2e
@pytest.mark.syscall
def test_the_page_faults_equal_perf_stats() -> None:
    need_perf()
    if shutil.which("perf") is None:
        pytest.skip("needs perf stat (Debian: apt-get install linux-perf)")
    program = ["python3", "-c", "bytearray(64 << 20)"]
    quick = run_sectormon("stat", "-e", "page-faults", "-x", ",", "--", *program)
    perf = subprocess.run(
        ["perf", "stat", "-e", "page-faults:u", "-x", ",", "--", *program],
        capture_output=True,
        text=True,
        check=True,
    )
    ours = float(quick.stderr.splitlines()[0].split(",")[0])
    theirs = float(next(line for line in perf.stderr.splitlines() if "page-faults" in line).split(",")[0])
    assert ours == pytest.approx(theirs, rel=0.02)


def _running_command(sectormon: int) -> int | None:
    """The pid of the command sectormon launched, once it runs as ``sleep`` (after its exec)."""
    for task in Path(f"/proc/{sectormon}/task").iterdir():
        for child in (task / "children").read_text().split():
            if Path(f"/proc/{child}/comm").read_text().strip() == "sleep":
                return int(child)
    return None


@pytest.mark.e2e
@pytest.mark.syscall
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("way", [[], ["--profile", "generic"]], ids=["quick", "engine"])
def test_a_stop_signal_ends_the_command_and_reports_as_the_engine_does(signum: int, way: list[str]) -> None:
    need_perf()
    process = subprocess.Popen(
        [sectormon_command(), "stat", *way, "-e", "task-clock", "--", "sleep", "60"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        command = wait_until(lambda: _running_command(process.pid), "the command to run")
        wait_until(lambda: catches(process.pid, signum) or None, "sectormon to handle the signal")
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0  # sectormon ended the command: not the command's own status
    assert " Performance counter stats for 'sleep 60':" in stderr
    assert "seconds time elapsed" in stderr
    assert (
        not Path(f"/proc/{command}").exists()
        or "Z" in Path(f"/proc/{command}/stat").read_text().rsplit(")", 1)[1].split()[0]
    )


@pytest.mark.syscall
def test_without_pidfds_the_regions_are_served_all_the_same(
    marked: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A kernel before 5.3 has no pidfd_open: the wait looks at the child between polls."""

    def no_pidfd(_pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    request = quick_request(["-e", "page-faults", "-x", ",", "--", str(marked)])
    assert request is not None
    assert run_quick(request) == 0
    rows = capfd.readouterr().err.splitlines()
    pages = rows[rows.index("# region 'fapp_pages' (calls 4)") + 1]
    assert pages.split(",")[:3] == ["24000", "", "page-faults"]


@pytest.mark.e2e
@pytest.mark.syscall
@pytest.mark.parametrize("way", [[], ["--profile", "generic"]], ids=["quick", "engine"])
def test_a_full_disk_is_one_line_and_exit_1(way: list[str]) -> None:
    need_perf()
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    done = run_sectormon("stat", *way, "-e", "page-faults", "-o", "/dev/full", "--", "true")
    assert done.returncode == 1
    assert done.stderr == "sectormon: cannot write the report to /dev/full: No space left on device\n"
