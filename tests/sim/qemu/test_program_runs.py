"""How a traced program's run goes through the installed command: simulated while it runs (its
main thread waiting in pthread_join or on I/O, its workers ended), stopped by
``--count``/``--duration``, its threads placed by ``--bind``, 1,000 threads, and programs that end
badly (a fault, an exec, a fork), or cannot run here (another architecture, no QEMU)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import first_frame, read_jsonl, run_sectormon, sectormon_command, wait_until
from tests.sim.qemu.test_programs import _build, _build_aarch64, _summary

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="qemu-x86_64 missing (install qemu-user)"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc missing (it builds the traced programs)"),
]

SIMULATED = re.compile(r"simulated ([\d,]+) of its ([\d,]+) traced accesses in (\d+) thread")


def _simulated(stderr: str) -> tuple[int, int, int]:
    """(accesses simulated, accesses traced, threads simulated) from the run's closing line."""
    match = SIMULATED.search(stderr)
    assert match, stderr
    simulated, traced, threads = (int(g.replace(",", "")) for g in match.groups())
    return simulated, traced, threads


def _running(program: Path, under: str = "") -> list[int]:
    """Processes whose command line names ``program`` (sectormon, the QEMU running it, or the
    program), and starts with ``under`` when given."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            command = os.path.basename(cmdline.split(b"\0")[0])
            if str(program).encode() in cmdline and command.startswith(under.encode()):
                pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("bound", [("--count", "3"), ("--duration", "0.0005")], ids=["count", "duration"])
def test_the_frames_come_while_the_program_runs_and_their_budget_stops_it(
    tmp_path: Path, bound: tuple[str, str]
) -> None:
    program = _build(tmp_path, "hostile", "-pthread")
    run = run_sectormon("sim", "--json", *bound, "--", str(program), "spin")  # 10^9 accesses
    assert run.returncode == 0, run.stderr  # stopped with the session: not the program's status
    lines = read_jsonl(run.stdout)
    assert lines[0]["schema"].startswith("sectormon/header/")
    assert lines[0]["source"]["kernel"]["live"] is True
    assert len(lines) >= 3
    assert "stopped with the session (SIGTERM)" in run.stderr
    simulated, traced, threads = _simulated(run.stderr)
    assert simulated > 0 and traced < 10**9 and threads == 1  # the frames did not wait for its end
    assert _running(program) == []  # and it does not outlive sectormon


@pytest.mark.parametrize(
    ("arch", "core", "passes"),
    [("x86_64", "c", "40"), ("aarch64", "c", "40"), ("x86_64", "python", "10")],
    ids=["x86_64", "aarch64", "python-core"],
)
def test_frames_come_while_main_joins_its_workers_and_go_on_once_they_ended(
    tmp_path: Path, arch: str, core: str, passes: str
) -> None:
    """Main joins two workers, works on alone, then waits on its stdin (held here): the frames
    come while it provably runs, its workers' units end before it does, and every traced access
    is simulated once it is released."""
    if arch == "aarch64":
        program = _build_aarch64(tmp_path, "joins", "-O2", "-pthread", "-march=armv8.2-a")
    else:
        program = _build(tmp_path, "joins", "-pthread")
    out, err = tmp_path / "out", tmp_path / "err"
    stdin, release = os.pipe()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sectormon_command(), "sim", "--json", "--", str(program), passes],
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "SECTORMON_SIM_CORE": core},
        )
    os.close(stdin)
    try:
        first_frame(out)  # main waits in pthread_join, then on its stdin: it has not ended
        alone = first_frame(out, lambda f: set(f["threads"]) == {"0"})  # the workers ended, main works
        assert process.poll() is None and _running(program, "qemu-")
        assert alone["final"] is False
    finally:
        os.write(release, b"x")
        os.close(release)
        process.wait(timeout=120)
    assert process.returncode == 0, err.read_text()
    assert read_jsonl(out.read_text())[-1]["final"] is True
    assert "released\n" in err.read_text()  # its own output (on stderr: the JSON owns stdout), once released
    simulated, traced, threads = _simulated(err.read_text())
    assert simulated == traced and threads == 3


def test_a_program_cannot_say_one_of_its_threads_ended(tmp_path: Path) -> None:
    """Main makes the events' system call with the kind of the plugin's thread end, then works
    on: its thread goes on (a forged end would split it in two simulated threads)."""
    program = _build(tmp_path, "joins", "-pthread")
    run = run_sectormon("sim", "--json", "--", str(program), "2", "forge", input="x")
    assert run.returncode == 0, run.stderr
    simulated, traced, threads = _simulated(run.stderr)
    assert simulated == traced and threads == 3


def test_a_program_that_ends_first_ends_the_frames_as_a_monitored_command_does(tmp_path: Path) -> None:
    program = _build(tmp_path, "shared", "-pthread")
    run = run_sectormon("sim", "--json", "--count", "1000", "--", str(program))
    assert run.returncode == 0, run.stderr
    frames = read_jsonl(run.stdout)[1:]
    assert frames[-1]["final"] is True and len(frames) < 1000
    simulated, traced, threads = _simulated(run.stderr)
    assert simulated == traced and threads == 3  # once: its records did not loop


def test_a_live_programs_fault_output_and_status_pass_through(tmp_path: Path) -> None:
    program = _build(tmp_path, "hostile", "-pthread")
    run = run_sectormon("sim", "--json", "--", str(program), "segv")
    assert run.returncode == 139  # 128 + SIGSEGV, as a shell reports it
    assert "before the fault\n" in run.stderr  # the JSON stream owns stdout: its output goes to stderr
    assert read_jsonl(run.stdout)[-1]["final"] is True
    assert "killed by SIGSEGV" in run.stderr
    assert _simulated(run.stderr)[0] > 0


@pytest.mark.parametrize(
    ("mode", "output"), [("exec", "exec /bin/true\n"), ("fork", "child exited 5\n")], ids=["exec", "fork"]
)
def test_an_exec_or_a_fork_ends_cleanly_with_what_the_program_itself_did(
    tmp_path: Path, mode: str, output: str
) -> None:
    program = _build(tmp_path, "hostile", "-pthread")
    run = run_sectormon("sim", "--summary", "--", str(program), mode)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(output)
    summary = _summary(run.stdout)
    assert len(summary["threads"]) == 1
    # Its own 4,096 increments (a load and a store each) and its start; not the 65,536 of the
    # forked child, nor the exec'd /bin/true's: they run untraced.
    assert 2 * 4096 < summary["counts"]["L1D_CACHE"] < 2 * 4096 + 60_000
    live = run_sectormon("sim", "--json", "--", str(program), mode)
    assert live.returncode == 0, live.stderr
    assert output in live.stderr
    assert "exited with status 0" in live.stderr


def test_a_thousand_threads_run_and_those_past_the_cores_are_said_not_simulated(tmp_path: Path) -> None:
    program = _build(tmp_path, "hostile", "-pthread")
    run = run_sectormon("sim", "--summary", "--", str(program), "threads", "1000")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("1000 threads joined\n")
    summary = _summary(run.stdout)
    kernel = summary["kernel"]
    assert kernel["threads"] == 1001  # main and its 1,000, all alive at once: a vCPU each
    assert len(summary["threads"]) == 48
    left_out = kernel["not_simulated"]
    assert left_out["threads"] == 1001 - 48
    simulated = sum(t["counts"]["L1D_CACHE"] for t in summary["threads"].values())
    assert simulated == summary["counts"]["L1D_CACHE"]
    assert simulated + left_out["accesses"] == sum(t["accesses"] for t in kernel["traced_threads"])
    warnings = [line for line in run.stderr.splitlines() if "were not simulated" in line]
    assert len(warnings) == 1 and f"{1001 - 48} thread(s) past the 48 simulated CPU(s)" in warnings[0]

    live = run_sectormon("sim", "--json", "--", str(program), "threads", "1000")
    assert live.returncode == 0, live.stderr
    # A frame shows the threads of its interval; over the run, the 48 simulated ones.
    assert len({key for frame in read_jsonl(live.stdout)[1:] for key in frame["threads"]}) == 48
    assert f"{1001 - 48} thread(s) past the 48 simulated CPU(s) were not simulated" in live.stderr
    assert _simulated(live.stderr)[2] == 48


def _bound_summary(program: Path, cpus: str) -> dict[str, Any]:
    run = run_sectormon("sim", "--summary", "--no-prefetch", "--bind", cpus, "--", str(program))
    assert run.returncode == 0, run.stderr
    return _summary(run.stdout)


def test_bind_places_the_threads_and_two_on_one_cmg_share_its_l2(tmp_path: Path) -> None:
    program = _build(tmp_path, "shared", "-pthread")
    together, apart = _bound_summary(program, "0,1,2"), _bound_summary(program, "0,12,24")
    assert [t["cpu"] for t in together["threads"].values()] == [0, 1, 2]
    assert [t["cpu"] for t in apart["threads"].values()] == [0, 12, 24]
    assert list(together["cmgs"]) == ["0"] and sorted(apart["cmgs"]) == ["0", "1", "2"]
    for summary in (together, apart):
        per_thread = [t["counts"]["L1D_CACHE"] for t in summary["threads"].values()]
        assert sum(per_thread) == summary["counts"]["L1D_CACHE"]
        assert per_thread == [t["accesses"] for t in summary["kernel"]["traced_threads"]]
    # The 2 MiB array main wrote is 8,192 lines: on one CMG the workers find it in the L2, on
    # three each CMG's L2 fetches it once more.
    lines = (2 << 20) // 256
    assert together["counts"]["L2D_CACHE_REFILL"] < 1.2 * lines
    assert apart["counts"]["L2D_CACHE_REFILL"] > 2.5 * lines


def test_a_warm_up_runs_the_programs_first_thread(tmp_path: Path) -> None:
    program = _build(tmp_path, "shared", "-pthread")
    run = run_sectormon("sim", "--json", "--warmup", "0.00001", "--", str(program))
    assert run.returncode == 0, run.stderr  # it was "the workload ended within the --warmup"
    assert read_jsonl(run.stdout)[0]["source"]["warmup_s"] == 0.00001
    assert _simulated(run.stderr)[2] == 3


def test_threads_that_join_while_it_runs_are_sampled(tmp_path: Path) -> None:
    program = _build(tmp_path, "shared", "-pthread")
    run = run_sectormon("sim", "--json", "--sample", "L1D_CACHE_REFILL:101", "--", str(program))
    assert run.returncode == 0, run.stderr
    hotspots = read_jsonl(run.stdout)[-1]["hotspots"]["run"]
    assert hotspots["counted_total"] > 50_000  # the workers' 2 MiB array, read from L2 by each
    assert hotspots["scale"] == pytest.approx(1.0, abs=0.1)  # every thread's refills were sampled
    assert hotspots["objects"][0]["name"] == "shared"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bind", "0,48"], "--bind 0,48: CPU 48 is not a simulated core; the simulated A64FX has CPUs"),
        (["--bind", "0-x"], "--bind: bad CPU list '0-x'"),
    ],
)
def test_a_bad_bind_is_one_line_before_the_program_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    program = _build(tmp_path, "hostile", "-pthread")
    run = run_sectormon("sim", "--json", *args, "--", str(program))
    assert run.returncode == 2
    assert run.stdout == "" and "to stderr" not in run.stderr  # refused before it ran
    assert len(run.stderr.splitlines()) == 1 and message in run.stderr


def test_the_help_says_what_bind_does() -> None:
    run = run_sectormon("sim", "--help")  # a help text is %-formatted: a bare % broke it
    assert run.returncode == 0, run.stderr
    assert "run the program's t-th thread on the t-th" in run.stdout
    assert "thread t on CMG t % 4" in " ".join(run.stdout.split())


def test_bind_without_a_program_says_what_it_is_for() -> None:
    run = run_sectormon("sim", "--summary", "--bind", "0,1")
    assert run.returncode == 2
    assert len(run.stderr.splitlines()) == 1
    assert "--bind 0,1: places the threads of a traced program" in run.stderr


def _elf_header(elf_class: int, machine: int) -> bytes:
    """The first 64 bytes of a little-endian ELF executable for ``machine`` (no program headers)."""
    ident = b"\x7fELF" + bytes([elf_class, 1, 1]) + bytes(9)
    return (ident + struct.pack("<HHI", 2, machine, 1)).ljust(64, b"\0")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (_elf_header(2, 243), "a riscv64 binary; sectormon sim runs x86_64 and aarch64 programs"),
        (_elf_header(1, 40), "not a 64-bit little-endian ELF program (use x86_64 or aarch64)"),
    ],
    ids=["riscv64", "arm32"],
)
@pytest.mark.parametrize("output", ["--summary", "--json"])
def test_another_architectures_binary_is_one_line(
    tmp_path: Path, header: bytes, message: str, output: str
) -> None:
    program = tmp_path / "other"
    program.write_bytes(header)
    program.chmod(0o755)
    run = run_sectormon("sim", output, "--", str(program))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == f"sectormon: sim -- {program}: {message}\n"


@pytest.mark.parametrize("output", ["--summary", "--json"])
def test_a_missing_qemu_names_the_package_to_install(tmp_path: Path, output: str) -> None:
    program = _build(tmp_path, "hostile", "-pthread")
    bin_dir = tmp_path / "bin"  # the interpreter alone: no qemu-x86_64 on this PATH
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    run = run_sectormon("sim", output, "--", str(program), env={**os.environ, "PATH": str(bin_dir)})
    assert run.returncode == 2
    assert run.stderr == (
        f"sectormon: sim -- {program}: qemu-x86_64 is not installed (install the package qemu-user)\n"
    )


@pytest.mark.slow
def test_a_program_that_waits_forever_still_ends_with_sigterm(tmp_path: Path) -> None:
    """The model needs a thread's records; a program blocked on its stdin before its first batch
    hands over none, so no session can start: the stop latch ends sectormon and the program."""
    program = _build(tmp_path, "waits", "-static", "-nostdlib")
    stdin, keep_open = os.pipe()  # it waits on it while the write end is open
    err = tmp_path / "err"
    with err.open("wb") as stderr:
        process = subprocess.Popen(
            [sectormon_command(), "sim", "--json", "--", str(program)],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_until(lambda: _running(program, "qemu-"), "the program runs under QEMU")  # the latch is set
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        os.close(keep_open)
        os.close(stdin)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + signal.SIGTERM
    assert "sectormon: the session did not end within 10 s of SIGTERM" in err.read_text()
    assert _running(program) == []
