"""Real programs through the installed command: ``sectormon sim -- ./prog`` under qemu-x86_64.

The first check of issue 32: with the sector cache off and no prefetch, the model's L1D accesses
and refills of a program are within 2 % of cachegrind's D refs and D1 misses (its D1 set to the
A64FX's L1D: 64 KiB, 4 ways, 256-byte lines) on the same binary. Then the program's own output
and exit status pass through, and threads are the simulated threads.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import run_sectormon

PROGRAMS = Path(__file__).parent / "programs"
# The stream-and-table program is the worked example users read (examples/README.md).
EXAMPLE = Path(__file__).parents[3] / "examples" / "stream_table.c"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="qemu-x86_64 missing (install qemu-user)"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc missing (it builds the traced programs)"),
]


def _source(name: str) -> Path:
    return EXAMPLE if name == "stream_table" else PROGRAMS / f"{name}.c"


def _build(tmp_path: Path, name: str, *flags: str) -> Path:
    out = tmp_path / name
    subprocess.run(["gcc", "-O2", "-o", str(out), str(_source(name)), *flags], check=True)
    return out


def _summary(stdout: str) -> dict[str, Any]:
    """The summary: the last line (the program's own output comes first)."""
    data: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return data


def _cachegrind(program: Path) -> tuple[int, int]:
    options = ["--tool=cachegrind", "--cache-sim=yes", "--D1=65536,4,256", "--cachegrind-out-file=/dev/null"]
    run = subprocess.run(["valgrind", *options, str(program)], capture_output=True, text=True, check=True)

    def figure(label: str) -> int:
        match = re.search(rf"{label}:\s+([\d,]+)", run.stderr)
        assert match, run.stderr
        return int(match.group(1).replace(",", ""))

    return figure(r"D\s+refs"), figure(r"D1\s+misses")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind missing (the reference counts)")
def test_l1d_accesses_and_refills_are_within_2_percent_of_cachegrind(tmp_path: Path) -> None:
    program = _build(tmp_path, "stream_table")
    run = run_sectormon("sim", "--summary", "--sector-cache", "off", "--no-prefetch", "--", str(program))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("passes 2, checksum "), "the program's stdout passes through first"
    counts = _summary(run.stdout)["counts"]
    refs, misses = _cachegrind(program)
    assert refs > 17_000_000 and misses > 300_000  # the stream and the table were traced
    assert counts["L1D_CACHE"] == pytest.approx(refs, rel=0.02)
    assert counts["L1D_CACHE_REFILL"] == pytest.approx(misses, rel=0.02)


def test_a_programs_threads_are_the_simulated_threads(tmp_path: Path) -> None:
    program = _build(tmp_path, "threads", "-pthread")
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    summary = _summary(run.stdout)
    threads = summary["threads"]
    assert len(threads) == 3  # main and its two workers
    per_thread = [t["counts"]["L1D_CACHE"] for t in threads.values()]
    assert sum(per_thread) == summary["counts"]["L1D_CACHE"]
    workers = sorted(per_thread)[1:]
    assert all(w > 2 * 4 * (1 << 17) for w in workers)  # each streamed its array 4 times, load and store
    assert [t["cpu"] for t in threads.values()] == [0, 12, 24]  # spread over the CMGs like kernels'
    traced = summary["kernel"]["traced_threads"]
    assert [t["accesses"] for t in traced] == per_thread


def test_a_faulting_programs_output_and_status_pass_through(tmp_path: Path) -> None:
    program = _build(tmp_path, "hostile")
    run = run_sectormon("sim", "--summary", "--", str(program), "segv")
    assert run.returncode == 139  # 128 + SIGSEGV, as a shell reports it
    assert run.stdout.startswith("before the fault\n")
    assert _summary(run.stdout)["counts"]["L1D_CACHE"] > 0  # what ran before the fault is simulated
    assert "SIGSEGV" in run.stderr


def test_an_exit_status_passes_through(tmp_path: Path) -> None:
    program = _build(tmp_path, "hostile")
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 3
    assert run.stderr.startswith("to stderr\n")
    assert "exited with status 3" in run.stderr


def test_the_json_stream_runs_a_program(tmp_path: Path) -> None:
    program = _build(tmp_path, "hostile")
    run = run_sectormon("sim", "--json", "--", str(program))
    assert run.returncode == 3
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert lines[0]["schema"].startswith("sectormon/header/")
    assert len(lines) >= 2


def test_assign_names_the_programs_global_arrays(tmp_path: Path) -> None:
    program = _build(tmp_path, "stream_table")
    base = ["sim", "--summary", "--no-prefetch", "--", str(program)]
    off = _summary(run_sectormon(*base[:-2], "--sector-cache", "off", *base[-2:]).stdout)
    on = run_sectormon(
        "sim", "--summary", "--no-prefetch", "--sector-cache", "on", "--l1-sectors", "3,1,0,0",
        "--assign", "table=0,stream=1", "--", str(program),
    )  # fmt: skip
    assert on.returncode == 0, on.stderr
    protected = _summary(on.stdout)
    assert protected["kernel"]["object_sectors"] == {"table": 0, "stream": 1}
    table_off, table_on = off["objects"]["table"], protected["objects"]["table"]
    assert table_off["accesses"] == table_on["accesses"] == 5120 + 2 * (32 << 20) // 64  # init + 2 passes
    assert off["objects"]["stream"]["accesses"] == 2 * 2 * (32 << 20) // 8  # a load and a store each
    assert table_off["l1d_demand_refills"] > 50_000  # the stream evicts the table...
    assert table_on["l1d_demand_refills"] < 200  # ...unless it is confined to one way: its 160 lines, cold


def test_an_unknown_variable_is_refused_before_the_program_runs(tmp_path: Path) -> None:
    program = _build(tmp_path, "stream_table")
    run = run_sectormon("sim", "--summary", "--assign", "nosuch=1", "--", str(program))
    assert run.returncode == 2
    assert run.stdout == ""
    assert f"--assign nosuch=1: {program} has no object 'nosuch'" in run.stderr
    assert len(run.stderr.splitlines()) == 1


def _build_aarch64(tmp_path: Path, name: str, *flags: str) -> Path:
    if shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("qemu-aarch64") is None:
        pytest.skip(
            "aarch64-linux-gnu-gcc or qemu-aarch64 missing (install gcc-aarch64-linux-gnu and qemu-user)"
        )
    out = tmp_path / f"{name}-aarch64"
    subprocess.run(["aarch64-linux-gnu-gcc", *flags, "-o", str(out), str(_source(name))], check=True)
    return out


def test_an_aarch64_program_runs_as_an_a64fx_with_its_arrays_named(tmp_path: Path) -> None:
    program = _build_aarch64(tmp_path, "stream_table", "-O2", "-march=armv8.2-a")  # dynamic: runs with -L
    run = run_sectormon(
        "sim", "--summary", "--no-prefetch", "--sector-cache", "on", "--l1-sectors", "3,1,0,0",
        "--assign", "table=0,stream=1", "--", str(program),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = _summary(run.stdout)
    assert summary["kernel"]["arch"] == "aarch64" and summary["kernel"]["dynamic"]
    objects = summary["objects"]
    assert objects["stream"]["accesses"] == pytest.approx(2 * 2 * (32 << 20) // 8, abs=8)
    assert objects["table"]["accesses"] == pytest.approx(5120 + 2 * (32 << 20) // 64, abs=8)
    assert objects["table"]["l1d_demand_refills"] < 200  # its own way: the stream cannot evict it
    assert "sve_memory" not in summary["kernel"]


def test_sve_loads_qemu_does_not_report_are_said_not_hidden(tmp_path: Path) -> None:
    program = _build_aarch64(tmp_path, "stream_table", "-O3", "-march=armv8.2-a+sve", "-static")
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    sve = _summary(run.stdout)["kernel"]["sve_memory"]
    assert sve["instructions"] > sve["accesses_reported"]
    assert "QEMU 7.2 does not report SVE contiguous loads and stores to plugins" in run.stderr
