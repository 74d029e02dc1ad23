"""The live monitor end to end through the installed command, on this host's software events."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import (
    catches,
    first_frame,
    jsonl_records,
    perf_available,
    read_jsonl,
    read_records,
    run_sectormon,
    sectormon_command,
    wait_until,
    workload,
)

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]

PAGES = 60000
ROTATING = Path(__file__).resolve().parents[1] / "fixtures" / "profiles" / "generic-rotating.yaml"


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


@pytest.mark.timing
def test_command_mode_page_faults_are_accurate_through_rotation(tmp_path: Path) -> None:
    """page-faults counted 1/3 of the time (three rotated groups, as counter events rotate in
    sectormon's lock-step rotation, at 20 ms slices throughout) still scales to the truth (+-5%).

    The workload faults one page at a time, evenly over its own CPU time (``--cpu-paced``): the
    scaling extrapolates by the thread's running time, and under load the default 5 ms chunks of
    wall-clock time came in bursts of about one per slice (docs/perf.md, sync rotation under load)."""
    out = tmp_path / "stream.jsonl"
    paced = workload("pagefaults.py", PAGES, 3, "--cpu-paced")
    proc = run_sectormon(
        "--json",
        "-o",
        str(out),
        "--profile",
        str(ROTATING),
        "--interval",
        "0.5",
        "--rotation",
        "sync",
        "--max-overhead",
        "100",
        "--",
        *paced,
    )
    assert proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    records = read_jsonl(out.read_text())
    header, frames = records[0], records[1:]
    assert header["schema"] == "sectormon/header/1"
    assert sorted(header["groups"]) == ["SW1", "SW2", "SW3"]  # no hardware PMU here: HW groups dropped
    assert frames and frames[-1]["final"] is True
    assert all(f["schema"] == "sectormon/frame/1" for f in frames)
    final = frames[-1]["total"]
    measured = final["counts"]["PAGE_FAULTS"]
    assert 0.2 < final["coverage"]["PAGE_FAULTS"] < 0.5  # one group in three
    assert _rel(measured, truth["minflt_total"]) < 0.05, (measured, truth)
    if perf_available():
        peer = subprocess.run(
            ["perf", "stat", "-x,", "-e", "page-faults", "--", *paced],
            capture_output=True,
            text=True,
            check=True,
        )
        perf_count = next(
            float(line.split(",")[0]) for line in peer.stderr.splitlines() if "page-faults" in line
        )
        assert _rel(measured, perf_count) < 0.05, (measured, perf_count)


def test_software_events_are_counted_all_the_time(tmp_path: Path) -> None:
    """Events that take no PMU counter are never rotated: page-faults are counted the whole run
    (coverage 1) and match the kernel's count of the workload's faults within 2 %."""
    out = tmp_path / "stream.jsonl"
    proc = run_sectormon(
        "--json", "-o", str(out), "--profile", "generic", "--interval", "0.5",
        "--", *workload("pagefaults.py", PAGES, 3),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    header, *frames = read_jsonl(out.read_text())
    assert header["groups"] == {} and "PAGE_FAULTS" in header["always_on"]["pe"]
    final = frames[-1]["total"]
    assert final["coverage"]["PAGE_FAULTS"] == pytest.approx(1.0, abs=1e-12)  # own-time sums: float noise
    assert _rel(final["counts"]["PAGE_FAULTS"], truth["minflt_total"]) < 0.02, (final["counts"], truth)


def _attach(
    out: Path, interval: float, *workload_args: object, gate: bool = False
) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
    """Start threads.py (which prints its pid first), then ``sectormon --json -o OUT --pid`` on it.
    ``gate``: the workload's threads start once the test writes a line to its stdin."""
    target = subprocess.Popen(
        workload("threads.py", *workload_args),
        stdin=subprocess.PIPE if gate else None,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, WORKLOAD_GATE="1") if gate else None,
    )
    assert target.stdout is not None
    pid = int(target.stdout.readline())
    command = [sectormon_command(), "--json", "-o", str(out), "--profile", "generic"]
    monitor = subprocess.Popen(
        [*command, "--interval", str(interval), "--pid", str(pid)], stderr=subprocess.PIPE, text=True
    )
    return target, monitor


def test_pid_mode_keeps_counts_of_threads_that_exit(tmp_path: Path) -> None:
    out = tmp_path / "stream.jsonl"
    target, monitor = _attach(out, 0.25, 3, 3, 0.6, gate=True)
    assert target.stdin is not None and target.stdout is not None
    wait_until(lambda: jsonl_records(out), "the header: sectormon counts the process")
    target.stdin.write("go\n")
    target.stdin.close()
    summary = json.loads(target.stdout.readline())
    target.wait(timeout=60)
    _, stderr = monitor.communicate(timeout=60)
    assert monitor.returncode == 0, stderr
    frames = read_jsonl(out.read_text())[1:]
    final = frames[-1]
    assert final["final"] is True
    threads = final["threads"]
    for tid in summary["tids"]:
        assert str(tid) in threads, f"thread {tid} missing from the final frame"
        assert threads[str(tid)]["counts"].get("TASK_CLOCK", 0) > 0
    # workers were not pinned: they are grouped as unbound, with a warning
    assert "unbound" in final["cores"]
    assert "binding" in stderr


def test_target_killed_mid_run_ends_with_a_final_frame(tmp_path: Path) -> None:
    out = tmp_path / "stream.jsonl"
    target, monitor = _attach(out, 0.2, 1, 2, 30)
    # Killed once sectormon has counted some of its work (under load the header alone took 1.7 s:
    # a kill after a fixed 2 s could come before the attach, "no such process").
    first_frame(out, lambda frame: frame["total"]["counts"].get("TASK_CLOCK", 0) > 0)
    target.kill()
    target.wait()
    _, stderr = monitor.communicate(timeout=60)
    assert monitor.returncode == 0, stderr
    frames = read_jsonl(out.read_text())[1:]
    assert frames[-1]["final"] is True
    assert frames[-1]["total"]["counts"]["TASK_CLOCK"] > 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_gives_final_frame_and_exit_0(tmp_path: Path, signum: int) -> None:
    target = subprocess.Popen(workload("threads.py", 1, 1, 30), stdout=subprocess.PIPE, text=True)
    assert target.stdout is not None
    pid = int(target.stdout.readline())
    try:
        monitor = subprocess.Popen(
            [sectormon_command(), "--json", "--profile", "generic", "--interval", "0.2", "--pid", str(pid)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert monitor.stdout is not None
        records = read_records(monitor.stdout, 2)  # the header, then a first frame: it counts
        monitor.send_signal(signum)
        stdout, stderr = monitor.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    assert monitor.returncode == 0, stderr
    records += read_jsonl(stdout)
    assert records[0]["schema"] == "sectormon/header/1"
    assert records[-1]["final"] is True
    assert "Traceback" not in stderr


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.parametrize("moment", ["handlers in", "command forked"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_start_up_ends_cleanly_and_runs_no_command(signum: int, moment: str) -> None:
    """A signal during start-up (long before the header under load: imports, the probe, the
    command forked and held at its gate, the counters opened), from the moment sectormon's
    handlers are in: exit 0, no traceback, and nothing on stdout or a header with its final frame;
    the held command never runs (it gave exit 130, or -15 killed by SIGTERM, the command left)."""
    marker = f"30.{os.getpid()}{signum}"  # `sleep` takes fractions: this one names our command
    monitor = subprocess.Popen(
        [sectormon_command(), "--json", "--profile", "generic", "--interval", "0.2", "--", "sleep", marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if moment == "handlers in":
        wait_until(lambda: catches(monitor.pid, signal.SIGTERM) or monitor.poll() is not None, moment)
    else:
        wait_until(lambda: _children(monitor.pid) or monitor.poll() is not None, moment)
    monitor.send_signal(signum)
    stdout, stderr = monitor.communicate(timeout=60)
    assert monitor.returncode == 0, stderr
    assert "Traceback" not in stderr
    records = read_jsonl(stdout)
    assert records == [] or (records[0]["schema"] == "sectormon/header/1" and records[-1]["final"] is True)

    def command_gone() -> bool:
        return not any(
            p.name.isdigit() and _cmdline(p) == f"sleep\0{marker}\0".encode() for p in Path("/proc").iterdir()
        )

    wait_until(command_gone, "the launched command ended", timeout=10)


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_closed_pipe_exits_quietly() -> None:
    shell = (
        f"'{sectormon_command()}' --json --profile generic --interval 0.1 -- "
        f"'{sys.executable}' -c 'import time; time.sleep(5)' | head -n 2"
    )
    proc = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=30, check=False)
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["schema"] == "sectormon/header/1"
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_cpus_mode_counts_each_cpu_system_wide() -> None:
    proc = run_sectormon("--json", "--profile", "generic", "--cpus", "0", "--interval", "0.2", "--count", "3")
    if proc.returncode != 0 and "paranoid" in proc.stderr:
        pytest.skip("CPU-wide counting is not allowed for this user here")
    assert proc.returncode == 0, proc.stderr
    records = read_jsonl(proc.stdout)
    assert records[0]["target"]["mode"] == "cpus"
    frames = records[1:]
    assert len(frames) == 4 and frames[-1]["final"] is True  # three frames, then the final one
    assert set(frames[0]["cores"]) == {"0"}
    assert frames[0]["cores"]["0"]["counts"]["TASK_CLOCK"] > 0


def test_a_session_that_cannot_open_any_event_writes_nothing_on_stdout(tmp_path: Path) -> None:
    """As an unprivileged user, CPU-wide counting is refused: the run fails with one line, exit 2,
    and stdout stays empty (it had a header and an empty final frame, as if something was counted)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to drop to an unprivileged user")
    if int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) <= 0:
        pytest.skip("perf_event_paranoid <= 0: an unprivileged user may count CPUs here")
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    proc = subprocess.run(
        [*drop, sectormon_command(), "--json", "--profile", "generic", "--cpus", "0", "--count", "2"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    if "Permission denied" in proc.stderr or "No such file" in proc.stderr:
        pytest.skip(f"cannot run sectormon as uid 65534 here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("sectormon: cannot open") and "cpu 0" in last, proc.stderr


def test_bad_target_options_are_one_line_errors() -> None:
    for args, needle in (
        (("--pid", "999999999"), "--pid 999999999"),
        (("--cpus", "0-1", "--pid", "1"), "choose one target"),
        (("--profile", "a64fx", "--", "true"), "needs an A64FX"),
        (("--cpus", "abc"), "--cpus"),
    ):
        proc = run_sectormon("--json", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("sectormon: ") and needle in lines[0], (args, lines)


def test_child_processes_are_warned_about_only_where_they_are_not_counted(tmp_path: Path) -> None:
    """A shell that runs the work in a child process: counted with it by default (no warning), and
    with --no-children one warning names the child and how to count it."""
    child = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(1.0)'"
    for flags, warnings in (((), 0), (("--no-children",), 1)):
        forks = run_sectormon(
            "--json", "-o", str(tmp_path / "a.jsonl"), "--profile", "generic", "--interval", "0.3",
            *flags, "--", "sh", "-c", f"{child}; true",
        )  # fmt: skip
        assert forks.returncode == 0, forks.stderr
        warned = [line for line in forks.stderr.splitlines() if "started child processes" in line]
        assert len(warned) == warnings, (flags, forks.stderr)
        assert all("drop --no-children" in line and "(pid " in line for line in warned), forks.stderr


def _perf_fds(pid: int) -> int:
    fd_dir = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fd_dir.iterdir():
        with contextlib.suppress(OSError):
            count += "perf_event" in os.readlink(fd)
    return count


def test_a_thread_that_finds_no_fd_left_is_skipped_and_the_run_goes_on(tmp_path: Path) -> None:
    """sectormon opens counters per thread; a thread that starts after the fd limit is reached gets
    no row of its own, with one warning (the main thread's inherited groups, which take no fd,
    still count it), and neither the run nor the launched command ends."""
    go, done = tmp_path / "go", tmp_path / "done"
    target = (
        "import os, threading, time\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        "def burn():\n"
        "    end = time.time() + 0.4\n"
        "    while time.time() < end: pass\n"
        "threads = [threading.Thread(target=burn) for _ in range(3)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        f"open({str(done)!r}, 'w').close()\n"
    )
    out, recording = tmp_path / "frames.jsonl", tmp_path / "run.jsonl"
    proc = subprocess.Popen(
        [sectormon_command(), "--json", "-o", str(out), "--record", str(recording), "--profile", "generic",
         "--interval", "0.2", "--", sys.executable, "-c", target],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        # The header, then a first frame: the sampler runs, the main thread's counters are open
        # (the probe before the header opens and closes counters too).
        while (not out.exists() or out.read_text().count("\n") < 2) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _perf_fds(proc.pid) > 0, "sectormon opened no counter"
        limit = len(os.listdir(f"/proc/{proc.pid}/fd")) + 1  # one fd to spare: no group fits
        resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (limit, limit))
        go.touch()
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert done.exists()  # the command ran to its end
    warned = [line for line in stderr.splitlines() if "EMFILE" in line]
    assert len(warned) == 1 and f"soft {limit} / hard {limit}" in warned[0]
    assert "has no row of its own: its counts are in pid " in warned[0]
    final = read_jsonl(out.read_text())[-1]
    assert final["final"] is True
    assert len(final["threads"]) == 1  # the main thread; the three that came after the limit have no row
    assert final["thread_coverage"] > 0.9  # their work is in the main thread's inherited counts
    # The recording keeps the warning: its replay says which threads its figures leave out.
    replay = subprocess.run(
        [sectormon_command(), "replay", str(recording), "--json"], capture_output=True, text=True, timeout=60
    )
    assert replay.returncode == 0, replay.stderr
    recorded = [line for line in replay.stderr.splitlines() if "the live session warned at" in line]
    assert len(recorded) > 1  # the start's warnings too (this host counts no hardware event)
    recorded_fds = [line for line in recorded if "EMFILE" in line]
    assert len(recorded_fds) == 1 and recorded_fds[0].endswith(warned[0].split("warning: ", 1)[1])


@pytest.mark.parametrize("limit", [5, 6, 7, 8, 9])
def test_too_few_fds_at_the_start_is_one_line_not_a_traceback(limit: int) -> None:
    """Wherever the start runs out (a pipe for the command's gate, a counter), one line says so."""

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    run = subprocess.run(
        [sectormon_command(), "--json", "--profile", "generic", "--", "true"],
        capture_output=True, text=True, timeout=60, preexec_fn=low_limit, close_fds=True,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("sectormon: ") and "out of file descriptors" in last and f"soft {limit}" in last


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--bogus"], "sectormon: unrecognized arguments: --bogus (see 'sectormon --help')"),
        (["sim", "--threads", "x"], "sectormon: --threads 'x': give a whole number from 1 to 48"),
        (["replay"], "sectormon replay: the following arguments are required: FILE (see "),
        (
            ["replai", "x.jsonl"],
            "'replai' is neither a subcommand nor a program on PATH: did you mean 'sectormon replay'?",
        ),
        (["comapre", "a", "b"], "did you mean 'sectormon compare'?"),
        (["sim", "--loop", "--once"], "sectormon sim: argument --once: not allowed with argument --loop"),
        (
            ["--threads", "4", "--kernel", "random", "--json", "--", "true"],
            "--kernel, --threads set the simulated A64FX, and -- CMD counts this host",
        ),
        (["--once", "--pid", "1"], "--once set the simulated A64FX, and --pid counts this host"),
    ],
)
def test_bad_arguments_are_one_line_with_where_to_look(args: list[str], said: str) -> None:
    """The monitor's usage is a screenful: printed before the message, it buried it."""
    proc = run_sectormon(*args, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
    assert "usage:" not in proc.stderr


def test_a_program_named_like_a_subcommand_still_runs_by_path(tmp_path: Path) -> None:
    """Only a near-miss that names no program is refused: a path (or `--`) always launches."""
    program = tmp_path / "replai"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    proc = run_sectormon("--json", "--profile", "generic", str(program), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert read_jsonl(proc.stdout)[-1]["final"] is True


def test_dash_output_is_stdout(tmp_path: Path) -> None:
    proc = run_sectormon("--json", "-o", "-", "--profile", "generic", "--", "true", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert read_jsonl(proc.stdout)[-1]["final"] is True and not (tmp_path / "-").exists()
