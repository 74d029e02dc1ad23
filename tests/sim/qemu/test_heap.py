"""A traced program's heap blocks, stacks and marker calls (the shim, shim.c, through the plugin's
ring): names, exact per-object counts on x86_64 and aarch64, address reuse after free(), stacks
per thread, marks in order per thread, a static binary (no shim) and the shim's edges."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sectormon.sim.objects import OTHER, DataObjects
from sectormon.sim.qemu import heap
from sectormon.sim.qemu.heap import HeapObjects, Site, heap_objects
from sectormon.sim.qemu.target import SHIM
from tests.e2e.helpers import run_sectormon
from tests.regions.regions_helpers import marker_flags

PROGRAMS = Path(__file__).parent / "programs"
N = 8192  # heap_sites.c's doubles per array


def test_sites_with_one_name_are_one_object_and_stacks_follow_the_threads() -> None:
    events = None
    objects, tables = heap_objects(
        "/nonexistent/prog", 0, None, [Site(0x10, 1, 10), Site(0x20, 2, 20)], [0, 2], [2, 5], events
    )
    assert objects.names == (OTHER, "heap:lib", "stack:1")  # no image: both sites are outside it
    assert tables == HeapObjects(events, (0x10, 0x20), (1, 1), (0, 0, 2), (("heap:lib", 3, 30),))


def test_past_the_object_limit_the_smallest_sites_are_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "MAX_OBJECTS", 3)
    monkeypatch.setattr(heap, "site_name", lambda image, vaddr, call_line=None: f"heap:s{vaddr}")
    globals_ = DataObjects("prog", (OTHER, "table"), (0x100,), (0x200,), (1,))
    sites = [Site(11, 1, 500), Site(21, 1, 100), Site(31, 1, 900)]
    objects, tables = heap_objects("prog", 0, globals_, sites, [0], [], None)
    assert objects.names == (OTHER, "table", "heap:s10", "heap:s30")  # 3 objects besides [other]
    assert objects.starts == (0x100,) and tables.site_ids == (2, 0, 3)


def _summary(stdout: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return data


def _line_of(source: Path, marker: str) -> int:
    return next(i for i, text in enumerate(source.read_text().splitlines(), 1) if marker in text)


def _build(tmp_path: Path, name: str, compiler: str, *flags: str) -> Path:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} missing")
    out = tmp_path / f"{name}-{compiler}"
    subprocess.run([compiler, *flags, "-o", str(out), str(PROGRAMS / f"{name}.c")], check=True)
    return out


ARCHES = {
    "x86_64": ("gcc", "-O2", "-g"),
    # no SVE: QEMU 7.2 does not report SVE contiguous accesses (docs/sim.md)
    "aarch64": ("aarch64-linux-gnu-gcc", "-O2", "-g", "-march=armv8.2-a"),
}


@pytest.mark.e2e
@pytest.mark.parametrize("arch", ARCHES)
def test_heap_blocks_are_named_by_site_with_exact_counts_and_reused_addresses(
    tmp_path: Path, arch: str
) -> None:
    _need(["qemu-x86_64", "gcc"])
    if arch == "aarch64" and (
        shutil.which("qemu-aarch64") is None or not Path(str(SHIM).format(arch="aarch64")).is_file()
    ):
        pytest.skip("qemu-aarch64 or the aarch64 shim missing (qemu-user, gcc-aarch64-linux-gnu)")
    compiler, *flags = ARCHES[arch]
    program = _build(tmp_path, "heap_sites", compiler, *flags)
    source = PROGRAMS / "heap_sites.c"
    grid, table, reuse = (f"heap:main:{_line_of(source, f'site: {n} ')}" for n in ("grid", "table", "reuse"))
    run = run_sectormon(
        "sim", "--summary", "--sector-cache", "on", "--l1-sectors", "3,1,0,0",
        "--assign", f"{grid}=1", "--", str(program),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("reused 1\n"), "the freed block's address was taken again"
    summary = _summary(run.stdout)
    objects = summary["objects"]
    assert objects[grid]["accesses"] == 9 * N  # N stores, 3 N loads and stores, 2 N loads
    assert objects[table]["accesses"] == N
    assert objects[reuse]["accesses"] == 2 * N + 1  # same addresses as table's, after its free()
    assert objects["stack:0"]["accesses"] > 0
    kernel = summary["kernel"]
    assert kernel["heap_shim"] == "loaded" and kernel["object_sectors"] == {grid: 1}
    assert {o["name"]: o["blocks"] for o in kernel["heap_objects"]}.items() >= {
        grid: 1,
        table: 1,
        reuse: 1,
    }.items()
    assert "heap blocks" not in run.stderr


@pytest.mark.e2e
def test_an_unknown_heap_name_is_refused_after_the_run_naming_the_known_ones(tmp_path: Path) -> None:
    _need(["qemu-x86_64", "gcc"])
    program = _build(tmp_path, "heap_sites", "gcc", "-O2", "-g")
    run = run_sectormon("sim", "--summary", "--assign", "heap:nosuch=1", "--", str(program))
    assert run.returncode == 2
    (line,) = run.stderr.splitlines()
    assert "--assign heap:nosuch=1" in line and "heap:main:" in line and "stack:0" in line


def _need(commands: list[str]) -> None:
    missing = [c for c in commands if shutil.which(c) is None]
    if missing or not Path(str(SHIM).format(arch="x86_64")).is_file():
        pytest.skip(f"needs {', '.join(missing) or 'the x86_64 shim'} (qemu-user, gcc, pip install -e .)")


@pytest.mark.e2e
def test_each_thread_has_its_own_stack_and_sees_the_blocks_of_others(tmp_path: Path) -> None:
    _need(["qemu-x86_64", "gcc"])
    program = _build(tmp_path, "stacks", "gcc", "-O2", "-g", "-pthread")
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    objects = _summary(run.stdout)["objects"]
    stores = 1024 * 64  # each thread's local array, written 64 times
    # and its calls' own traffic; main's also the program's start and end after the shim's
    for name, more in (("stack:0", 12_000), ("stack:1", 6000)):
        assert stores <= objects[name]["accesses"] <= stores + more, name
    assert "stack:2" not in objects
    shared = f"heap:main:{_line_of(PROGRAMS / 'stacks.c', 'site: shared')}"
    assert objects[shared]["accesses"] == 4 * 4096  # main allocated it, the worker wrote it


@pytest.mark.e2e
def test_the_capture_sees_each_threads_marks_in_order(tmp_path: Path) -> None:
    _need(["qemu-x86_64", "gcc"])
    from sectormon.sim.qemu.capture import trace_program
    from sectormon.sim.qemu.workload import program_workload
    from sectormon.sim.stream import RegionMark

    program_path = tmp_path / "marked"
    command = ["gcc", "-O2", *marker_flags("--cflags"), str(PROGRAMS / "marked.c"), "-o", str(program_path)]
    subprocess.run([*command, "-pthread", *marker_flags("--libs")], check=True)
    program = trace_program([str(program_path)])
    workload = program_workload(program, False, False, program.objects, marks=True)
    marks = [[m for m in spec.stream() if isinstance(m, RegionMark)] for spec in workload.specs]
    solve = [RegionMark(True, "solve", 1), RegionMark(False, "solve", 1)]
    assert marks == [
        [RegionMark(True, "setup"), RegionMark(False, "setup"), *solve, *solve],
        [RegionMark(True, "worker"), RegionMark(False, "worker")] * 3,
    ]
    assert program.to_json()["regions"] == [
        {"thread": 0, "name": "setup", "number": 0, "calls": 1},
        {"thread": 0, "name": "solve", "number": 1, "calls": 2},
        {"thread": 1, "name": "worker", "number": 0, "calls": 3},
    ]
    plain = program_workload(program, False, False, program.objects)
    assert not any(isinstance(c, RegionMark) for spec in plain.specs for c in spec.stream())  # opt-in
    for region, calls in (("solve", 2), ("worker", 3)):  # the simulated threads consume them
        run = run_sectormon("sim", "--summary", "--region", region, "--", str(program_path))
        assert run.returncode == 0, run.stderr
        summary = _summary(run.stdout)
        assert (summary["calls"], summary["open"]) == (calls, False)
        assert 0 < summary["counts"]["L1D_CACHE"] < 5000  # a few accesses and the marker calls' own


@pytest.mark.e2e
def test_a_static_binary_warns_once_and_keeps_its_globals(tmp_path: Path) -> None:
    _need(["qemu-x86_64", "gcc"])
    program = _build(tmp_path, "threads", "gcc", "-O2", "-pthread", "-static")
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("heap blocks and stacks are [other]") == 1
    assert "a static binary" in run.stderr
    summary = _summary(run.stdout)
    assert summary["kernel"]["heap_shim"].startswith("not loaded: a static binary")
    assert summary["objects"]["data"]["accesses"] == 2 * 4 * 2 * (
        1 << 17
    )  # each worker: 4 passes, load+store
    assert not any(name.startswith(("heap:", "stack:")) for name in summary["objects"])


@pytest.mark.e2e
def test_the_shims_wrappers_answer_as_glibc_does_at_their_edges(tmp_path: Path) -> None:
    _need(["qemu-x86_64", "gcc"])
    program = _build(tmp_path, "heap_hostile", "gcc", "-O2")
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("ok\n")
    (region,) = _summary(run.stdout)["kernel"]["regions"]
    assert region == {"thread": 0, "name": "n" * 256, "number": 7, "calls": 1}  # cut at 256 bytes


def test_the_shim_outside_qemu_under_ubsan_changes_nothing(tmp_path: Path) -> None:
    """Preloaded natively, each report is an ENOSYS the program never sees; UBSan finds nothing."""
    _need(["gcc"])
    shim = tmp_path / "shim-ubsan.so"
    flags = ["-O1", "-g", "-fsanitize=undefined", "-fno-sanitize-recover=all", "-fPIC", "-shared", "-pthread"]
    flags.append("-fexceptions")
    source = Path(__file__).resolve().parents[3] / "sectormon" / "sim" / "qemu" / "shim.c"
    built = subprocess.run(
        ["gcc", *flags, "-o", str(shim), str(source), "-ldl"], capture_output=True, text=True
    )
    if built.returncode != 0:
        pytest.skip(f"gcc cannot build with UBSan here: {built.stderr[:200]}")
    env = {**os.environ, "LD_PRELOAD": str(shim)}
    hostile = _build(tmp_path, "heap_hostile", "gcc", "-O2")
    run = subprocess.run([str(hostile)], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (run.returncode, run.stdout, run.stderr) == (0, "ok\n", "")
    stacks = _build(tmp_path, "stacks", "gcc", "-O2", "-pthread")
    run = subprocess.run([str(stacks)], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert run.returncode == 0 and run.stderr == ""


@pytest.mark.e2e
def test_fortran_arrays_are_named_by_their_allocate_statement(tmp_path: Path) -> None:
    _need(["qemu-x86_64", "gfortran"])
    source = PROGRAMS / "allocate.f90"
    program = tmp_path / "allocate"
    # -O1: one load or store per element (no vectorized sum)
    subprocess.run(["gfortran", "-O1", "-g", "-o", str(program), str(source)], check=True)
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    objects = _summary(run.stdout)["objects"]
    a, b = (f"heap:MAIN__:{_line_of(source, f'site: {n}')}" for n in "ab")
    assert objects[a]["accesses"] == 2 * 10000  # written, then summed
    assert objects[b]["accesses"] == 2 * 20000


@pytest.mark.e2e
def test_cxx_blocks_are_named_by_the_code_calling_new_and_inlined_calls_by_their_line(tmp_path: Path) -> None:
    _need(["qemu-x86_64", "g++"])
    source = PROGRAMS / "heap_cxx.cc"
    program = tmp_path / "heap_cxx"
    subprocess.run(["g++", "-O2", "-g", "-o", str(program), str(source)], check=True)
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("threw 1\n")  # bad_alloc passed through the shim's operator new[]
    objects = _summary(run.stdout)["objects"]
    cells = f"heap:main:{_line_of(source, 'site: cells')}"
    nodes = f"heap:make_nodes:{_line_of(source, 'site: nodes')}"  # the function that called new
    assert objects[cells]["accesses"] == 3 * 4096
    assert objects[nodes]["accesses"] == 2 * 4096 + 1  # named although the new before it threw
    left, right = (f"heap:main:{_line_of(source, f'site: {n}')}" for n in ("left", "right"))
    # each also has its zero fill's stores (libc's memset: as many as its instructions make)
    assert objects[left]["accesses"] > 2 * 4096 and objects[right]["accesses"] > 4096
    assert objects[left]["accesses"] - objects[right]["accesses"] == pytest.approx(4096, abs=8)


@pytest.mark.e2e
@pytest.mark.parametrize("arch", ARCHES)
def test_the_programs_children_do_not_inherit_the_shim(tmp_path: Path, arch: str) -> None:
    """The user's own LD_PRELOAD passes through; an aarch64 program's shell (a host program)
    would otherwise fail to load the aarch64 shim and say so."""
    _need(["qemu-x86_64", "gcc"])
    if arch == "aarch64" and (
        shutil.which("qemu-aarch64") is None or not Path(str(SHIM).format(arch="aarch64")).is_file()
    ):
        pytest.skip("qemu-aarch64 or the aarch64 shim missing (qemu-user, gcc-aarch64-linux-gnu)")
    compiler, *flags = ARCHES[arch]
    program = _build(tmp_path, "children", compiler, *flags)
    run = run_sectormon("sim", "--summary", "--", str(program))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("LD_PRELOAD=(unset)\nstatus 0\n")
    assert "ld.so" not in run.stderr and _summary(run.stdout)["kernel"]["heap_shim"] == "loaded"
    if arch == "x86_64":
        env = {**os.environ, "LD_PRELOAD": "libm.so.6"}  # loadable by sectormon's Python too
        run = run_sectormon("sim", "--summary", "--", str(program), env=env)
        assert run.stdout.startswith("LD_PRELOAD=libm.so.6\nstatus 0\n"), run.stderr
