"""``sectormon stat`` through the installed command, beside ``perf stat`` on the same program."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sectormon.perf.probe import probe_events
from tests.e2e.helpers import perf_available, run_sectormon, workload
from tests.regions.regions_helpers import PROGRAMS, build, need_perf

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]

# Touches PAGES fresh pages (one fault each), spread over SECONDS of wall-clock time.
TOUCH = r"""
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long pages = atol(argv[1]);
    double seconds = argc > 2 ? atof(argv[2]) : 0.0;
    long size = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, pages * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    madvise(p, pages * size, MADV_NOHUGEPAGE);
    long chunk = pages / 100 > 0 ? pages / 100 : 1;
    struct timespec pause = {0, (long)(seconds / 100 * 1e9)};
    for (long i = 0; i < pages; i++) {
        p[i * size] = 1;
        if (seconds > 0 && i % chunk == chunk - 1) nanosleep(&pause, NULL);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def touch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_perf()
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("needs cc (Debian: apt-get install gcc)")
    folder = tmp_path_factory.mktemp("touch")
    (folder / "touch.c").write_text(TOUCH)
    subprocess.run([compiler, "-O1", "-o", str(folder / "touch"), str(folder / "touch.c")], check=True)
    return folder / "touch"


def report(stderr: str) -> list[str]:
    """The report's lines (sectormon's own warnings left out)."""
    return [line for line in stderr.splitlines() if not line.startswith("sectormon:")]


def csv_rows(stderr: str) -> dict[str, list[str]]:
    return {fields[2]: fields for line in report(stderr) if len(fields := line.split(",")) == 7 and fields[2]}


def test_csv_rows_are_perfs_and_the_page_faults_equal_perf_stats(touch: Path) -> None:
    if not perf_available():
        pytest.skip("needs perf stat")
    run = run_sectormon("stat", "-e", "page-faults,task-clock", "-x", ",", "--", str(touch), "20000")
    assert run.returncode == 0, run.stderr
    rows = csv_rows(run.stderr)
    faults, clock = rows["page-faults"], rows["task-clock"]
    assert faults[1] == "" and clock[1] == "msec"
    assert float(faults[4]) == 100.0 and int(faults[3]) > 0
    perf = subprocess.run(
        ["perf", "stat", "-e", "page-faults:u", "-x", ",", "--", str(touch), "20000"],
        capture_output=True,
        text=True,
        check=True,
    )
    perf_faults = next(line.split(",")[0] for line in perf.stderr.splitlines() if "page-faults" in line)
    assert float(faults[0]) == pytest.approx(float(perf_faults), rel=0.02)
    assert float(faults[0]) >= 20000


def test_the_summary_is_perfs_with_elapsed_user_and_sys(touch: Path) -> None:
    run = run_sectormon("stat", "-e", "page-faults,task-clock", "--", str(touch), "1000")
    assert run.returncode == 0, run.stderr
    text = "\n".join(report(run.stderr))
    assert f" Performance counter stats for '{touch} 1000':" in text
    assert " msec task-clock" in text
    for tail in ("seconds time elapsed", "seconds user", "seconds sys"):
        assert tail in text


def test_repeats_print_means_with_their_spread(touch: Path) -> None:
    run = run_sectormon("stat", "-r", "3", "-e", "page-faults,task-clock", "--", str(touch), "3000")
    assert run.returncode == 0, run.stderr
    text = "\n".join(report(run.stderr))
    assert "(3 runs):" in text
    assert "+-" in next(line for line in text.splitlines() if "task-clock" in line)
    assert "seconds time elapsed  ( +-" in text


def test_interval_rows_add_up_to_the_final_counts(touch: Path) -> None:
    args = ("stat", "-I", "500", "-x", ",", "-e", "page-faults", "--", str(touch), "20000", "2")
    run = run_sectormon(*args)
    assert run.returncode == 0, run.stderr
    lines = [line.split(",") for line in report(run.stderr)]
    intervals = [fields for fields in lines if len(fields) == 8 and fields[3] == "page-faults"]
    final = next(fields for fields in lines if len(fields) == 7 and fields[2] == "page-faults")
    assert len(intervals) >= 3
    times = [float(fields[0]) for fields in intervals]
    assert times == sorted(times)
    assert sum(float(fields[1]) for fields in intervals) == float(final[0])


def test_an_event_the_host_lacks_is_one_line_and_exit_2() -> None:
    if probe_events([("r0250", "r0250")])["r0250"].state != "unsupported":
        pytest.skip("this host counts r0250")
    run = run_sectormon("stat", "-e", "r0250", "--", "true")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1
    assert run.stderr.startswith("sectormon: -e: event r0250 cannot be counted here")


def test_a_malformed_event_list_is_one_line_and_exit_2() -> None:
    run = run_sectormon("stat", "-e", "{cycles", "--", "true")
    assert (run.returncode, run.stderr.count("\n")) == (2, 1)
    assert "without its '}'" in run.stderr


def test_the_exit_status_is_the_commands_and_the_report_can_go_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    run = run_sectormon("stat", "-e", "page-faults", "-o", str(out), "--", "sh", "-c", "exit 3")
    assert run.returncode == 3
    assert "Performance counter stats for 'sh -c exit 3':" in out.read_text()


def test_a_marked_programs_regions_get_blocks_of_their_own(tmp_path: Path) -> None:
    marked = build(PROGRAMS / "marked.c", tmp_path / "marked", "-DLIKWID_PERFMON")
    run = run_sectormon("stat", "-e", "page-faults", "--", str(marked))
    assert run.returncode == 0, run.stderr
    lines = report(run.stderr)
    start = lines.index(" Performance counter stats for region 'fapp_pages' (calls 4):")
    assert lines.index(next(line for line in lines if "seconds time elapsed" in line)) < start
    faults = next(line for line in lines[start:] if "page-faults" in line)
    assert float(faults.split()[0]) == pytest.approx(24_000, rel=0.01)


def test_k_counts_kernel_mode_alone_as_perfs(touch: Path) -> None:
    run = run_sectormon("stat", "-e", "page-faults:k", "-x", ",", "--", str(touch), "20000")
    if run.returncode == 2 and "EACCES" in run.stderr:
        pytest.skip("kernel-mode counting needs perf_event_paranoid <= 1 here")
    assert run.returncode == 0, run.stderr
    assert float(csv_rows(run.stderr)["page-faults:k"][0]) < 200  # the faults come from user code


def test_a_process_is_counted_until_the_duration_without_user_and_sys(touch: Path) -> None:
    process = subprocess.Popen([str(touch), "200000", "5"])
    try:
        run = run_sectormon("stat", "--pid", str(process.pid), "--duration", "0.5", "-e", "page-faults")
    finally:
        process.kill()
        process.wait()
    assert run.returncode == 0, run.stderr
    text = "\n".join(report(run.stderr))
    assert f" Performance counter stats for process id '{process.pid}':" in text
    assert "seconds time elapsed" in text and "seconds user" not in text


def test_bind_pins_the_threads_and_the_report_says_where_they_ran() -> None:
    if not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    run = run_sectormon("stat", "--bind", "0,1", "-e", "task-clock", "--", *workload("binding.py", 1.0))
    assert run.returncode == 0, run.stderr
    threads = json.loads(run.stdout)
    assert (threads["main"]["cpus"], threads["worker"]["cpus"]) == ([0], [1])
    lines = report(run.stderr)
    head = next(line for line in lines if line.startswith(" Binding (--bind 0,1): "))
    assert " 0 migrated" in head
    named = {line.split()[1]: line.split()[3] for line in lines if line.startswith("   tid ")}
    assert named[str(threads["main"]["tid"])] == "0"
    assert named[str(threads["worker"]["tid"])] == "1"


def test_without_bind_the_report_is_perfs_alone() -> None:
    """A run on a host without sector cache says nothing of binding (stat shows no per-core figure)."""
    run = run_sectormon(
        "stat", "--profile", "generic", "-e", "task-clock", "--", *workload("binding.py", 0.3)
    )
    assert run.returncode == 0, run.stderr
    assert "Binding" not in run.stderr and "not bound" not in run.stderr


def test_bind_needs_a_launched_command() -> None:
    run = run_sectormon("stat", "--bind", "0", "-e", "task-clock", "--pid", str(os.getpid()))
    assert (run.returncode, run.stderr.count("\n")) == (2, 1)
    assert run.stderr.startswith("sectormon: --bind pins the threads of a command sectormon launches")
