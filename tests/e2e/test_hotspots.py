"""``sectormon hotspots`` end to end on a C program whose page faults are known exactly.

Three global arrays of 64 MiB, 16 MiB and 1 MiB, each touched once page by page in its own function:
the page faults fall on the arrays 64:16:1. ``perf record -d`` + ``perf report --sort symbol_daddr``
on the same binary is the peer. The arrays are initialised (``.data``): perf 6.1 cannot name
variables in a ``.bss`` larger than the file's last page, which the kernel maps anonymously
(sectormon can: the ``.bss`` test below).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon, sectormon_command

pytestmark = [pytest.mark.e2e, pytest.mark.syscall]

PROGRAM = r"""
#include <stddef.h>
#include <sys/prctl.h>
#define PAGE 4096
#define MIB (1024 * 1024)
char big_array[64 * MIB] INIT;
char mid_array[16 * MIB] INIT;
char small_array[1 * MIB] INIT;
__attribute__((noinline)) void touch_big(void) {
    for (size_t i = 0; i < sizeof big_array; i += PAGE) big_array[i] = 2;
}
__attribute__((noinline)) void touch_mid(void) {
    for (size_t i = 0; i < sizeof mid_array; i += PAGE) mid_array[i] = 2;
}
__attribute__((noinline)) void touch_small(void) {
    for (size_t i = 0; i < sizeof small_array; i += PAGE) small_array[i] = 2;
}
int main(void) {
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);  /* one fault per 4 KiB page */
    touch_big();
    touch_mid();
    touch_small();
    return 0;
}
"""
ARRAYS = {"big_array": 64, "mid_array": 16, "small_array": 1}
FUNCTIONS = {"touch_big": "big_array", "touch_mid": "mid_array", "touch_small": "small_array"}


def build(directory: Path, *, initialised: bool) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the test program")
    source = directory / "arrays.c"
    source.write_text(PROGRAM.replace("INIT", "= {1}" if initialised else ""))
    exe = directory / ("arrays" if initialised else "arrays-bss")
    subprocess.run([cc, "-O1", "-g", "-o", str(exe), str(source)], check=True, capture_output=True)
    return exe


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("arrays"), initialised=True)


def hotspots(*args: str) -> dict[str, Any]:
    proc = run_sectormon("hotspots", *args, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (report,) = read_jsonl(proc.stdout)
    assert report["schema"] == "sectormon/hotspots/1"
    return report


def by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in rows}


def expected_shares(total_samples: int, counts: dict[str, int]) -> dict[str, float]:
    """64:16:1 of the faults on the arrays, as a share of all samples (the loader's own faults
    take a few tenths of a percent)."""
    on_arrays = sum(counts.values())
    return {name: ARRAYS[name] / 81 * on_arrays / total_samples for name in ARRAYS}


def perf_report_objects(program: Path, directory: Path) -> dict[str, int]:
    """Samples per data symbol from ``perf record -e page-faults -c 1 -d`` and ``perf report
    --sort symbol_daddr`` (offsets within a symbol are summed into it)."""
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (apt-get install linux-perf): no peer to compare with")
    data = directory / "perf.data"
    record = subprocess.run(
        ["perf", "record", "-e", "page-faults", "-c", "1", "-d", "-o", str(data), "--", str(program)],
        capture_output=True,
        text=True,
        check=False,
    )
    if record.returncode != 0:
        pytest.skip(f"perf record cannot run here: {record.stderr.strip().splitlines()[-1:]}")
    sort = ("--mem-mode", "--sort", "symbol_daddr", "-F", "sample,symbol_daddr")
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", *sort],
        capture_output=True,
        text=True,
        check=True,
    )
    counts: Counter[str] = Counter()
    for line in report.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0].isdigit() and fields[1].startswith("["):
            counts[re.sub(r"\+0x[0-9a-f]+$", "", fields[2])] += int(fields[0])
    return dict(counts)


@pytest.mark.slow
def test_faults_are_attributed_64_16_1_to_the_arrays_and_their_functions_like_perf(
    program: Path, tmp_path: Path
) -> None:
    report = hotspots("--event", "page-faults", "--period", "1", "--json", "--", str(program))
    samples = report["samples"]
    objects = by_name(report["objects"])
    assert report["lost_samples"] == 0 and report["period"] == 1
    assert report["counted_total"] == pytest.approx(samples, abs=5)
    assert [row["name"] for row in report["objects"][:3]] == list(ARRAYS)
    assert all(objects[name]["detail"] == "symbol" for name in ARRAYS)
    counts = {name: objects[name]["samples"] for name in ARRAYS}
    for name, share in expected_shares(samples, counts).items():
        assert abs(objects[name]["share"] - share) < 0.02, (name, objects[name]["share"], share)
        assert objects[name]["samples"] == pytest.approx(ARRAYS[name] * 256, abs=2)
    functions = by_name(report["functions"])
    for function, array in FUNCTIONS.items():
        assert functions[function]["samples"] == objects[array]["samples"]
        assert functions[function]["detail"].startswith("arrays.c:")

    peer = perf_report_objects(program, tmp_path)
    peer_total = sum(peer.values())
    top = sorted(peer, key=peer.__getitem__, reverse=True)[:3]
    assert top == list(ARRAYS), peer
    for name in ARRAYS:
        assert abs(objects[name]["share"] - peer[name] / peer_total) < 0.02, (name, peer[name], peer_total)


@pytest.mark.slow
def test_estimates_at_period_97_match_the_exact_counts(program: Path) -> None:
    """estimate = scale x sampled x period, against the exact counts of --period 1 in the same test.

    The two large arrays must be within 3 %. The 1 MiB array has 256 faults, 2.6 samples at period
    97: one sample more or less moves its estimate by 38 %, so it is held to what sampling can give,
    one period.
    """
    faults = ("--event", "page-faults", "--json")
    exact = by_name(hotspots(*faults, "--period", "1", "--", str(program))["objects"])
    report = hotspots(*faults, "--period", "97", "--", str(program))
    assert report["period"] == 97 and report["samples"] < exact["big_array"]["samples"] / 50
    sampled = by_name(report["objects"])
    for name in ("big_array", "mid_array"):
        count = exact[name]["samples"]
        assert abs(sampled[name]["estimate"] - count) <= 0.03 * count, (name, sampled[name], count)
    small = exact["small_array"]["samples"]
    assert abs(sampled["small_array"]["estimate"] - small) <= 97 * report["scale"]
    assert sum(r["estimate"] for r in report["functions"]) == pytest.approx(report["counted_total"])


@pytest.mark.slow
def test_a_ring_buffer_too_small_reports_its_lost_samples(program: Path) -> None:
    """A one-page ring, and a reader that cannot keep up for sure: sectormon at nice 19 shares one
    CPU with its target (back at nice 0), which faults through its timeslices while the ring stays
    full. Alone on an idle machine the reader drains one page fast enough to lose nothing (it did in
    half the runs without this), so a small ring alone proves nothing."""
    cpu = str(min(os.sched_getaffinity(0)))
    options = ("--event", "page-faults", "--period", "1", "--mmap-pages", "1", "--json")
    target = ("nice", "-n", "-19", str(program))  # as root; elsewhere nice says so and runs it at 19
    proc = subprocess.run(
        ["taskset", "-c", cpu, "nice", "-n", "19", sectormon_command(), "hotspots", *options, "--", *target],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (report,) = read_jsonl(proc.stdout)
    assert report["lost_samples"] > 0
    # Exact: the lost samples are the sampling events' own (SamplingRings.lost), not every record dropped.
    assert report["samples"] + report["lost_samples"] == report["counted_total"]
    assert "samples lost" in proc.stderr and "--mmap-pages" in proc.stderr
    assert report["scale"] > 1  # the estimates make up for what was lost


@pytest.mark.slow
def test_variables_in_a_large_bss_are_named(tmp_path: Path) -> None:
    """The kernel maps a .bss past the file anonymously; its addresses still belong to the variables."""
    program = build(tmp_path, initialised=False)
    report = hotspots("--event", "page-faults", "--period", "1", "--json", "--", str(program))
    objects = by_name(report["objects"])
    for name, mib in ARRAYS.items():
        assert objects[name]["samples"] == pytest.approx(mib * 256, abs=2), name


def test_the_text_report_names_the_arrays(program: Path) -> None:
    proc = run_sectormon("hotspots", "--event", "page-faults", "--period", "64", "--", str(program))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "sampled every 64 events" in text and "scale = total / (sampled x period)" in text
    assert re.search(r"^\s+\S+%\s+\d+\s+[\d,]+\s+big_array\s+symbol\s+arrays$", text, re.MULTILINE), text
    assert "touch_big" in text and "overhead: sectormon used" in text


def test_a_command_that_fails_passes_its_status_on() -> None:
    proc = run_sectormon("hotspots", "--event", "page-faults", "--json", "--", "sh", "-c", "exit 3")
    assert proc.returncode == 3
    (report,) = read_jsonl(proc.stdout)
    assert "the command exited with status 3" in report["warnings"]


TRAP = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
int main(int argc, char **argv) {
    /* argv[1]: a folder holding a copy of libm.so.6. Load it, move the folder away, and put a
       FIFO where the library was: whoever opens the mapped path to read it waits forever. */
    char lib[4096], moved[4096];
    snprintf(lib, sizeof lib, "%s/libm.so.6", argv[1]);
    snprintf(moved, sizeof moved, "%s.old", argv[1]);
    if (!dlopen(lib, RTLD_NOW)) return 10;
    if (rename(argv[1], moved) || mkdir(argv[1], 0700) || mkfifo(lib, 0600)) return 11;
    size_t n = 16 << 20;
    char *p = malloc(n);
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    return p[4096] - 1;
}
"""


def test_a_fifo_planted_at_a_loaded_librarys_path_cannot_hang_hotspots(tmp_path: Path) -> None:
    """The target replaces a loaded library by a FIFO: the report comes, naming the FIFO."""
    cc = shutil.which("cc") or shutil.which("gcc")
    libm = next(
        (
            p
            for p in map(Path, ("/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib"))
            if (p / "libm.so.6").is_file()
        ),
        None,
    )
    if cc is None or libm is None:
        pytest.skip("needs a C compiler and libm.so.6")
    source = tmp_path / "trap.c"
    source.write_text(TRAP)
    exe = tmp_path / "trap"
    subprocess.run([cc, "-O1", "-o", str(exe), str(source), "-ldl"], check=True, capture_output=True)
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copy(libm / "libm.so.6", folder / "libm.so.6")
    proc = run_sectormon(
        "hotspots", "--event", "page-faults", "--json", "--", str(exe), str(folder), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    (report,) = read_jsonl(proc.stdout)
    fifo = f"{folder}/libm.so.6: is a named pipe (the ELF file must be a regular file)"
    assert any(w.startswith(fifo) for w in report["warnings"]), report["warnings"]
    assert report["samples"] > 4096


SLEEPER = r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    signal(SIGTERM, SIG_IGN);  /* sectormon's SIGTERM to its target must not decide the end */
    FILE *f = fopen(argv[1], "w");
    fputs("ready\n", f);
    fclose(f);
    for (;;) pause();
}
"""


def test_sigterm_ends_hotspots_with_a_report_even_when_the_target_ignores_it(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the test program")
    source = tmp_path / "sleeper.c"
    source.write_text(SLEEPER)
    exe = tmp_path / "sleeper"
    subprocess.run([cc, "-O1", "-o", str(exe), str(source)], check=True, capture_output=True)
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [sectormon_command(), "hotspots", "--event", "page-faults", "--json", "--", str(exe), str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not (ready.exists() and ready.read_text() == "ready\n"):  # the target runs, sampled
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    (report,) = read_jsonl(out)
    assert report["schema"] == "sectormon/hotspots/1"
